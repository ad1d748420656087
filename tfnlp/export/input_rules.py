"""Optional signature inputs and their allowed ranges, recorded beside a
SavedModel for the REST server.

A SavedModel signature takes every input it declares. Some inputs are
options a client should be free to leave out (a language model's
temperature, top-p, seed ...), and some values are requests to refuse with
a clear error rather than run (a temperature of 0, more new tokens than
the export can generate). An export records both, per signature, in
`assets.extra/tfnlp_signature_inputs.json` (TensorFlow Serving's folder
for files beside the model, which it leaves alone):

    {"generate_with_options": {
        "defaults": {"temperature": 0.8, "seed": -1, ...},
        "ranges": {"temperature": {"above": 0}, "top_p": {"above": 0, "at_most": 1},
                   "max_new_tokens": {"at_least": 1, "at_most": 192}}}}

`python -m tfnlp.serve` fills a left-out input with its default and answers
a value outside its range with 400. TensorFlow Serving itself reads neither:
its clients send every input.
"""

import dataclasses
import json
import os

import numpy as np

INPUT_RULES_FILE = "tfnlp_signature_inputs.json"
EXTRA_ASSETS_DIRECTORY = "assets.extra"
# How a range bound reads in an error message.
BOUNDS = {"above": ">", "at_least": ">=", "below": "<", "at_most": "<="}


@dataclasses.dataclass(frozen=True)
class InputRules:
    """A signature's optional inputs (their defaults) and value ranges.

    Args:
        defaults: `{input: JSON value}`, used for a row that leaves the input
            out.
        ranges: `{input: {bound: number}}` with bounds "above", "at_least",
            "below" and "at_most".

    Example:

    >>> rules = InputRules(defaults={"top_p": 0.9}, ranges={"top_p": {"above": 0, "at_most": 1}})
    >>> rules.violation("top_p", np.array([0.5, 1.5]))
    'top_p=1.5 must be <= 1'
    """

    defaults: dict = dataclasses.field(default_factory=dict)
    ranges: dict = dataclasses.field(default_factory=dict)

    def violation(self, name, values):
        """The first broken bound of `values` of input `name`, as
        "NAME=VALUE must be OP BOUND", or None."""
        values = np.asarray(values)
        for bound, limit in self.ranges.get(name, {}).items():
            broken = {"above": values <= limit, "at_least": values < limit,
                      "below": values >= limit, "at_most": values > limit}[bound]
            if np.any(broken):
                value = values[broken].flat[0]
                return f"{name}={value.item()} must be {BOUNDS[bound]} {limit}"
        return None

    def to_dict(self):
        return {"defaults": dict(self.defaults), "ranges": dict(self.ranges)}


def input_rules_file(rules):
    """`{file name: bytes}` for `write_next_version`'s `extra_files`, from
    `{signature name: InputRules}`."""
    record = {name: signature_rules.to_dict() for name, signature_rules in rules.items()}
    return {INPUT_RULES_FILE: json.dumps(record, indent=2, sort_keys=True).encode()}


def read_input_rules(saved_model_dir, read_bytes):
    """`{signature name: InputRules}` of a SavedModel directory (empty when
    it records none).

    Args:
        saved_model_dir: the SavedModel's directory.
        read_bytes: `path -> bytes or None` (None: no such file), e.g. over
            `tf.io.gfile`.

    Raises:
        ValueError: the file is not a JSON object of rules.
    """
    path = os.path.join(saved_model_dir, EXTRA_ASSETS_DIRECTORY, INPUT_RULES_FILE)
    contents = read_bytes(path)
    if contents is None:
        return {}
    try:
        record = json.loads(contents)
        return {name: InputRules(dict(rules.get("defaults", {})), dict(rules.get("ranges", {})))
                for name, rules in record.items()}
    except (ValueError, AttributeError, TypeError) as error:
        raise ValueError(
            f"{path} is not a JSON object of signature input rules ({error}); re-export "
            "the model, or remove the file to serve it without optional inputs."
        ) from error

"""Averages the model weights of the last N checkpoints of a run.

    python -m trainer.average_checkpoints --model_dir=RUN --num_checkpoints=5 \\
        [--output=RUN/averaged/ckpt-STEP]

Averaging the weights of the last checkpoints of a training run usually
gives a better model than the last one alone (Vaswani et al. average the
last 5 or 20 checkpoints; fairseq's `average_checkpoints.py`). The output is
a TensorFlow checkpoint with the object graph of the run's latest one,
holding its model variables (every variable the object graph reaches from
its `model` object, whatever path names its tensor), each the element-wise
mean over the checkpoints, and the latest step. The optimizer
slots and the input iterator are left out (averaging them means nothing,
and the iterator's state cannot be copied), so the averaged checkpoint is
for evaluating and exporting, not for resuming: anything that restores the
model alone (`tf.train.Checkpoint(model=...).read(path).expect_partial()`)
reads it, for example `python -m trainer.export
--checkpoint=RUN/averaged/ckpt-STEP`.

The checkpoints are those that `model_dir/checkpoint` lists (the ones the
trainer kept: `--keep_checkpoints`), newest last.
"""

import logging
import os

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    check_input_directory,
    check_output_file,
    run_main,
    usage_errors,
)
from trainer.runtime import configure_logging

LOGGER = logging.getLogger("trainer.average_checkpoints")

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def checkpoint_paths(model_dir, num_checkpoints):
    """The last `num_checkpoints` checkpoint prefixes of `model_dir`, oldest first."""
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None or not state.all_model_checkpoint_paths:
        raise FileNotFoundError(
            f"No checkpoint in {model_dir} (no 'checkpoint' file listing ckpt-N). Pass "
            "the --model_dir of a training run that has saved checkpoints."
        )
    paths = list(state.all_model_checkpoint_paths)
    if len(paths) < num_checkpoints:
        raise UsageError(
            f"--num_checkpoints={num_checkpoints} but {model_dir} keeps only "
            f"{len(paths)}: {', '.join(os.path.basename(p) for p in paths)}. Ask for at "
            "most that many, or train with a larger --keep_checkpoints."
        )
    return [path if os.path.isabs(path) else os.path.join(model_dir, path)
            for path in paths[-num_checkpoints:]]


def average_checkpoints(paths, output):
    """Writes the checkpoint `output` whose model tensors are the mean of
    those in `paths` (with the last one's object graph and step); returns
    `output`.

    Args:
        paths: checkpoint prefixes, the last one the base of the output.
        output: the prefix of the averaged checkpoint.

    Example:

    >>> import tempfile, os
    >>> directory = tempfile.mkdtemp()
    >>> weights = tf.Variable([0.0, 2.0])
    >>> checkpoint = tf.train.Checkpoint(model=tf.train.Checkpoint(w=weights))
    >>> first = checkpoint.write(os.path.join(directory, "ckpt-1"))
    >>> _ = weights.assign([2.0, 4.0])
    >>> second = checkpoint.write(os.path.join(directory, "ckpt-2"))
    >>> averaged = average_checkpoints([first, second], os.path.join(directory, "avg"))
    >>> _ = checkpoint.read(averaged)
    >>> weights.numpy().tolist()
    [1.0, 3.0]

    References:
        - [Vaswani et al., 2017. Attention Is All You Need, section 6.1](
          https://arxiv.org/abs/1706.03762)
    """
    readers = [tf.train.load_checkpoint(path) for path in paths]
    dtypes = readers[-1].get_variable_to_dtype_map()
    for path, reader in zip(paths, readers):
        if set(reader.get_variable_to_dtype_map()) != set(dtypes):
            raise UsageError(
                f"{path} does not hold the same variables as {paths[-1]}: the "
                "checkpoints come from different models. Average checkpoints of one run."
            )
    names, tensors = [], []
    model_keys = object_keys(readers[-1], "model")
    if not model_keys:
        raise UsageError(
            f"{paths[-1]} has no 'model' object: it was not written by a tfnlp trainer "
            "(tf.train.Checkpoint(model=..., ...))."
        )
    kept = sorted(model_keys | object_keys(readers[-1], "step") | {OBJECT_GRAPH_KEY})
    for name in kept:
        value = readers[-1].get_tensor(name)
        if name in model_keys and dtypes[name].is_floating:
            value = np.mean([reader.get_tensor(name).astype(np.float64)
                             for reader in readers], axis=0).astype(value.dtype)
        names.append(name)
        tensors.append(tf.constant(value, dtype=dtypes[name]))
    tf.io.gfile.makedirs(os.path.dirname(output) or ".")
    tf.raw_ops.SaveV2(prefix=output, tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=tensors)
    return output


def object_keys(reader, child):
    """The tensor keys of every variable that the checkpoint's object graph
    reaches from the root's `child` object (for example "model"); empty if
    the root has no such child.

    A variable's tensor is named by the first path that reaches it from the
    root, which may go through another object (an optimizer tracks the
    model's variables too), so the key's prefix alone does not say whose
    variable it is; the object graph does.
    """
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
    roots = [reference.node_id for reference in graph.nodes[0].children
             if reference.local_name == child]
    keys, seen, pending = set(), set(roots), list(roots)
    while pending:
        node = graph.nodes[pending.pop()]
        keys.update(attribute.checkpoint_key for attribute in node.attributes)
        for reference in node.children:
            if reference.node_id not in seen:
                seen.add(reference.node_id)
                pending.append(reference.node_id)
    return keys


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = ArgumentParser(
        prog="python -m trainer.average_checkpoints",
        description="Averages the model weights of the last N checkpoints of a run.",
        allow_abbrev=False,
    )
    parser.add_argument("--model_dir", required=True, help="The training run's directory.")
    parser.add_argument("--num_checkpoints", type=int, default=5,
                        help="How many of the run's latest checkpoints are averaged.")
    parser.add_argument("--output", default="",
                        help="The averaged checkpoint's prefix (default: "
                             "MODEL_DIR/averaged/ckpt-STEP, STEP the latest's).")
    flags = parser.parse_args(argv)
    if flags.num_checkpoints < 1:
        parser.error(f"--num_checkpoints must be at least 1, got {flags.num_checkpoints}.")
    return flags


def main(argv=None):
    configure_logging()
    flags = parse_flags(argv)
    check_input_directory("--model_dir", flags.model_dir, "the model_dir of a training run")
    if flags.output:
        check_output_file("--output", flags.output)
    with usage_errors(ValueError):  # More checkpoints asked for than kept.
        paths = checkpoint_paths(flags.model_dir, flags.num_checkpoints)
    output = flags.output or os.path.join(
        flags.model_dir, "averaged", os.path.basename(paths[-1]))
    average_checkpoints(paths, output)
    LOGGER.info("Averaged %s into %s.", ", ".join(os.path.basename(p) for p in paths), output)
    return output


if __name__ == "__main__":
    run_main(main)

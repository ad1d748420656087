"""Looking up decoders by name or config."""

import keras

from tfnlp.decoding.beam_search import BeamSearch
from tfnlp.decoding.contract import Decoder
from tfnlp.decoding.greedy_search import GreedySearch
from tfnlp.decoding.sampling import RandomSampling

DECODERS = {
    "greedy": GreedySearch,
    "greedy_search": GreedySearch,
    "beam": BeamSearch,
    "beam_search": BeamSearch,
    "sampling": RandomSampling,
    "random_sampling": RandomSampling,
}


def serialize(decoder):
    """The config dict of `decoder` (`{"class_name": ..., "config": ...}`)."""
    return keras.saving.serialize_keras_object(decoder)


def deserialize(config, custom_objects=None):
    """Rebuilds a decoder from `serialize()`'s output."""
    objects = dict(DECODERS)
    objects.update({cls.__name__: cls for cls in (GreedySearch, BeamSearch, RandomSampling)})
    return keras.saving.deserialize_keras_object(
        config, module_objects=objects, custom_objects=custom_objects,
        printable_module_name="decoder",
    )


def get(identifier):
    """A decoder from a name, a config dict or a decoder.

    Names: `"greedy"` (or `"greedy_search"`), `"beam"` (`"beam_search"`),
    `"sampling"` (`"random_sampling"`), each with its default arguments. A
    dict is read as `serialize()`'s output; a `Decoder` is returned as it
    is; `None` gives `None`.

    Args:
        identifier: a string, a config dict, a `Decoder` or `None`.

    Returns:
        A `Decoder` (or `None`).

    Example:

    >>> from tfnlp import decoding
    >>> decoding.get("beam").get_config()["length_penalty"]
    'gnmt'
    >>> decoding.get("greedy")  # doctest: +NORMALIZE_WHITESPACE
    GreedySearch(min_length=0, no_repeat_ngram_size=0, repetition_penalty=1.0,
                 suppressed_token_ids=())
    >>> config = decoding.serialize(decoding.BeamSearch(beam_size=8))
    >>> decoding.get(config).beam_size
    8
    """
    if identifier is None or isinstance(identifier, Decoder):
        return identifier
    if isinstance(identifier, str):
        if identifier not in DECODERS:
            raise ValueError(
                f"Unknown decoder {identifier!r}; expected one of {sorted(DECODERS)}, "
                "a config dict from `tfnlp.decoding.serialize`, or a decoder object."
            )
        return DECODERS[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(
        f"Could not interpret the decoder identifier {identifier!r}: expected a "
        f"name among {sorted(DECODERS)}, a config dict or a `Decoder`."
    )

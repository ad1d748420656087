"""The contract between a generative model and a decoder, and their base class.

A model exposes one step of incremental decoding as a function

```python
def step_fn(token_ids, cache, index):
    # token_ids: int32 (batch,), the tokens at position `index` (the start
    #     token at index 0);
    # cache: a nested structure (dict / list / tuple) of tensors, EVERY leaf
    #     with the batch as axis 0 (encoder outputs, padding masks, key/value
    #     caches, LSTM states ...);
    # index: int32 scalar tensor, the position of `token_ids`.
    ...
    return logits, cache  # float (batch, vocabulary) for position index + 1,
                          # and the updated cache (same structure, shapes and
                          # dtypes as the cache passed in).
```

and a decoder, configured at construction, drives it:

```python
result = decoder(step_fn, cache, start_ids, end_id, max_length, max_lengths=None)
```

- `start_ids`: int32 `(batch,)`; `end_id`: a Python int; `max_length`: a
  Python int, the static bound on the number of generated tokens;
  `max_lengths`: optional int32 `(batch,)` per-example bounds
  (clipped to `[1, max_length]`).
- `result["ids"]`: int32 `(batch, num_sequences, max_length)`, the generated
  tokens after the start token, ending with `end_id` when finished, `0` after.
- `result["lengths"]`: int32 `(batch, num_sequences)`, the number of tokens
  including `end_id`.
- `result["scores"]`: float32 `(batch, num_sequences)`, the ranking score (the
  log-probability, length-normalised by beam search with a length penalty),
  best first.

The decoding runs in one `keras.ops.while_loop` with static shapes, written
with `keras.ops` only: it compiles with XLA, exports to a SavedModel made of
stock TensorFlow ops, and runs on the JAX backend. Rows never interact: the
outputs for an example do not depend on the other examples of its batch
(sampling excepted, whose random draws depend on the row's position).
"""

import keras
from keras import ops

NEGATIVE_INFINITY = float("-inf")


class Decoder:
    """Base class of the decoders: greedy search, beam search and sampling.

    A decoder holds its configuration (the constructor arguments, kept as
    attributes) and nothing else, so one object can decode for any model
    that follows the step-function contract described in
    `tfnlp.decoding.contract`. Subclasses implement `decode()` and
    `get_config()`; `__call__` checks the arguments first.

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`, one
            step of the model (see `tfnlp.decoding.contract`).
        cache: the initial cache, a nested structure of tensors whose leaves
            all have the batch as axis 0, or `None`.
        start_ids: int32 `(batch,)`, the token at position 0.
        end_id: Python int, the token that ends a sequence.
        max_length: Python int, the static bound on generated tokens.
        max_lengths: optional int32 `(batch,)`, per-example bounds; values
            are clipped to `[1, max_length]`.

    Returns:
        A dict with `"ids"` int32 `(batch, num_sequences, max_length)`,
        `"lengths"` int32 `(batch, num_sequences)` and `"scores"` float32
        `(batch, num_sequences)`, best first.

    Example:

    A model with an LSTM-like state in its cache (here a running sum of the
    tokens), decoded by any decoder:

    >>> import numpy as np
    >>> from keras import ops
    >>> from tfnlp import decoding
    >>> def step_fn(token_ids, cache, index):
    ...     state = cache["state"] + ops.cast(token_ids, "float32")
    ...     logits = ops.stack([-state, ops.zeros_like(state), state - 2.0], axis=-1)
    ...     return logits, {"state": state}
    >>> cache = {"state": np.zeros((2,), "float32")}
    >>> for name in ("greedy", "beam"):
    ...     result = decoding.get(name)(step_fn, cache, start_ids=[0, 2], end_id=1, max_length=5)
    ...     print(name, ops.convert_to_numpy(result["ids"])[:, 0].tolist())
    greedy [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0]]
    beam [[1, 0, 0, 0, 0], [2, 2, 2, 2, 2]]
    """

    #: How many sequences are returned per example.
    num_sequences = 1

    def __call__(
        self, step_fn, cache, start_ids, end_id, max_length, max_lengths=None, **options
    ):
        if not callable(step_fn):
            raise TypeError(
                f"`step_fn` must be a callable `step_fn(token_ids, cache, index) -> "
                f"(logits, cache)`; received {step_fn!r}."
            )
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            raise ValueError(
                f"`max_length` must be a Python int >= 1 (the static bound on the "
                f"number of generated tokens); received {max_length!r}. Pass "
                "per-example bounds, as a tensor, through `max_lengths`."
            )
        if isinstance(end_id, bool) or not isinstance(end_id, int) or end_id < 0:
            raise ValueError(
                f"`end_id` must be a non-negative Python int (a token id); received "
                f"{end_id!r}."
            )
        start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")
        if len(start_ids.shape) != 1:
            raise ValueError(
                "`start_ids` must have shape (batch,), one start token per example; "
                f"received shape {tuple(start_ids.shape)}."
            )
        batch_size = ops.shape(start_ids)[0]
        cache = () if cache is None else cache
        check_cache_batch(cache, start_ids.shape[0])
        if max_lengths is None:
            max_lengths = ops.full((batch_size,), max_length, dtype="int32")
        else:
            max_lengths = ops.cast(ops.convert_to_tensor(max_lengths), "int32")
            if len(max_lengths.shape) != 1:
                raise ValueError(
                    "`max_lengths` must have shape (batch,), one bound per example; "
                    f"received shape {tuple(max_lengths.shape)}."
                )
            max_lengths = ops.clip(max_lengths, 1, max_length)
        return self.decode(step_fn, cache, start_ids, end_id, max_length, max_lengths, **options)

    def decode(self, step_fn, cache, start_ids, end_id, max_length, max_lengths, **options):
        """Decodes; the arguments are checked and `max_lengths` is a tensor.

        `options` are the subclass' extra call arguments (e.g. the `seed` of
        `RandomSampling`).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `decode()`.")

    def get_config(self):
        """The constructor arguments, as a dict of Python values."""
        raise NotImplementedError(f"{type(self).__name__} must implement `get_config()`.")

    @classmethod
    def from_config(cls, config):
        """Rebuilds a decoder from `get_config()`."""
        return cls(**config)

    def __repr__(self):
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.get_config().items())
        return f"{type(self).__name__}({arguments})"


def check_cache_batch(cache, batch_size):
    """Raises if a cache leaf does not have the batch as axis 0 (when known)."""
    for path, leaf in _leaves_with_paths(cache):
        shape = tuple(getattr(leaf, "shape", ()))
        if len(shape) == 0:
            raise ValueError(
                f"Every cache leaf must have the batch as axis 0, but the leaf at "
                f"{path} is a scalar. Give it a batch axis (e.g. repeat it for "
                "every example) so decoders can tile and reorder it."
            )
        if shape[0] is not None and batch_size is not None and shape[0] != batch_size:
            raise ValueError(
                f"Every cache leaf must have the batch as axis 0: `start_ids` has "
                f"{batch_size} examples but the cache leaf at {path} has shape "
                f"{shape}. Put the batch first in every leaf of the cache."
            )


def match_cache(cache, new_cache):
    """Returns `new_cache` in the exact structure of `cache`, or raises.

    A while loop needs the cache returned by the step function to have the
    structure, dtypes and shapes of the cache passed in; a list returned for a
    tuple is accepted and repacked.
    """
    leaves = keras.tree.flatten(cache)
    new_leaves = keras.tree.flatten(new_cache)
    if len(leaves) != len(new_leaves):
        raise ValueError(
            f"`step_fn` must return a cache of the same structure as the cache it "
            f"receives: it received {len(leaves)} tensors and returned "
            f"{len(new_leaves)}. Return the updated cache, with every leaf, as the "
            "second output."
        )
    for position, (leaf, new_leaf) in enumerate(zip(leaves, new_leaves)):
        dtype = keras.backend.standardize_dtype(leaf.dtype)
        new_dtype = keras.backend.standardize_dtype(new_leaf.dtype)
        if dtype != new_dtype or len(leaf.shape) != len(new_leaf.shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(leaf.shape, new_leaf.shape)
        ):
            raise ValueError(
                f"`step_fn` must return cache leaves with the shapes and dtypes it "
                f"receives, but leaf {position} went from {dtype} "
                f"{tuple(leaf.shape)} to {new_dtype} {tuple(new_leaf.shape)}. Keep "
                "the cache at a fixed size (preallocate max_length positions and "
                "write with `keras.ops.slice_update`)."
            )
    return keras.tree.pack_sequence_as(cache, new_leaves)


def _leaves_with_paths(structure, path="cache"):
    if isinstance(structure, dict):
        for key in sorted(structure):
            yield from _leaves_with_paths(structure[key], f"{path}[{key!r}]")
    elif isinstance(structure, (list, tuple)):
        for position, item in enumerate(structure):
            yield from _leaves_with_paths(item, f"{path}[{position}]")
    elif structure is not None:
        yield path, structure

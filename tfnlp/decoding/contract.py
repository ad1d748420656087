"""The contract between a generative model and a decoder, and their base class.

`Decoder` says what a model's step function takes and returns, what a
decoder call takes and returns, and the rules every decoder keeps; the
module also holds the checked call arguments (`Prompt`, `StopSequences`)
and the helpers that check them and the cache.
"""

from typing import Any, NamedTuple

import keras
import numpy as np
from keras import ops

NEGATIVE_INFINITY = float("-inf")


class Decoder:
    """Base class of the decoders: greedy search, beam search and sampling.

    A decoder holds its configuration (the constructor arguments, kept as
    attributes) and nothing else, so one object can decode for any model
    that follows the step-function contract below. Subclasses implement
    `decode()` and `get_config()`; `__call__` checks the arguments first.

    A model exposes one step of incremental decoding as a function

    ```python
    def step_fn(token_ids, cache, index):
        # token_ids: int32 (batch,), the tokens at position `index` (the
        #     start token, or the prompt's first token, at index 0);
        # cache: a nested structure (dict / list / tuple) of tensors, EVERY
        #     leaf with the batch as axis 0 (encoder outputs, padding masks,
        #     key/value caches, LSTM states ...);
        # index: int32 scalar tensor, the position of `token_ids`.
        ...
        return logits, cache  # float (batch, vocabulary) for position
                              # index + 1, and the updated cache (same
                              # structure, shapes and dtypes as the cache
                              # passed in).
    ```

    and a decoder drives it:

    ```python
    result = decoder(step_fn, cache, start_ids, end_id, max_length, max_lengths=None)
    result = decoder(step_fn, cache, end_id=end_id, max_length=max_length,
                     prompt_ids=prompt_ids, prompt_lengths=prompt_lengths,
                     first_index=0)
    ```

    Every decoder takes the next-token constraints `min_length` (counting
    generated tokens), `no_repeat_ngram_size` and `repetition_penalty` (both
    of which see the prompt) and `suppressed_token_ids` (ids never
    generated, such as a tokenizer's padding and unknown ids), applied in
    `tfnlp.decoding.constraints` before the decoder chooses.

    The decoding runs in one `keras.ops.while_loop` with static shapes,
    written with `keras.ops` only: it compiles with XLA, exports to a
    SavedModel made of stock TensorFlow ops, and runs on the JAX backend.
    Rows never interact: the outputs for an example do not depend on the
    other examples of its batch (sampling with one seed per example
    included; with one seed for the batch a row's random draws depend on
    its position).

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`, one
            step of the model (above).
        cache: the initial cache, a nested structure of tensors whose leaves
            all have the batch as axis 0, or `None`.
        start_ids: int32 `(batch,)`, the token at position 0 (an
            encoder-decoder's start token); or `None` with a prompt. A start
            token is the prompt of length 1 (`start_ids[:, None]`).
        end_id: Python int, the token that ends a sequence.
        max_length: Python int, the static bound on generated tokens (after
            the prompt).
        max_lengths: optional int32 `(batch,)`, per-example bounds on
            generated tokens; values are clipped to `[1, max_length]`.
        prompt_ids: optional int32 `(batch, prompt_length)` (a static
            `prompt_length`), each row's prompt, right-padded (the padding
            is ignored), instead of `start_ids` (a decoder-only language
            model). The step function is fed `prompt_ids[:, index]` while a
            row is inside its prompt and its last token from then on: the
            prompt tokens after position 0 are forced (not chosen, not
            scored, not counted, never taken for the end), and a row's first
            generated token is the one after its last prompt token, so rows
            of different prompt lengths decode side by side and each gives
            what it gives alone. `max_length` and `max_lengths` count only
            the generated tokens (Hugging Face's `max_new_tokens`): the loop
            runs for at most `prompt_length - first_index + max_length - 1`
            steps, with `index` up to `prompt_length + max_length - 2`, so
            the model's cache must hold `prompt_length + max_length - 1`
            positions.
        prompt_lengths: optional int32 `(batch,)`, the prompts' lengths
            (default: all `prompt_length`; clipped to `[first_index + 1,
            prompt_length]`).
        first_index: Python int >= 0, 0 by default, below every prompt
            length: the cache already holds positions `0..first_index - 1`
            (a prefill pass over the prompts' common part), and the loop
            starts at `index = first_index`, feeding
            `prompt_ids[:, first_index]`. With `first_index =
            min(prompt_lengths) - 1` the prefill covers all of the shortest
            prompt but its last token.
        stop_sequence_ids: optional int32 `(batch, width)`, each example's
            stop sequence, right-padded to a static `width` (decoders whose
            `supports_stop_sequences` is True: greedy search and sampling;
            beam search refuses them). A row finishes as soon as its
            generated tokens end with its stop sequence, which stays in
            `ids` and counts in `lengths` (no `end_id` follows). A stop
            sequence that begins inside the prompt does not count
            (`tfnlp.decoding.stop_sequences`).
        stop_sequence_lengths: optional int32 `(batch,)`, the stop
            sequences' lengths in `[0, width]` (0: none; default: all
            `width`).

    Returns:
        A dict, best sequence first:

        - `"ids"`: int32 `(batch, num_sequences, max_length)`, the generated
          tokens only (without the prompt or start token, from column 0
          whatever the prompt's length), ending with `end_id` when
          finished, `0` after.
        - `"lengths"`: int32 `(batch, num_sequences)`, the number of
          generated tokens including `end_id`.
        - `"scores"`: float32 `(batch, num_sequences)`, the ranking score
          (the log-probability of the generated tokens, under the model's
          distribution as the repetition penalty and the forbidden tokens
          shaped it; length-normalised by beam search with a length
          penalty).

    Example:

    A model with an LSTM-like state in its cache (here a running sum of the
    tokens), decoded by any decoder, from start tokens and from prompts:

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
    >>> result = decoding.GreedySearch()(
    ...     step_fn, cache, end_id=1, max_length=3,
    ...     prompt_ids=[[2, 1, 2], [2, 0, 0]], prompt_lengths=[3, 1])
    >>> ops.convert_to_numpy(result["ids"])[:, 0].tolist()  # the prompt's 1 ends nothing
    [[2, 2, 2], [1, 0, 0]]
    """

    #: How many sequences are returned per example.
    num_sequences = 1
    #: Whether the decoder takes `stop_sequence_ids` (one hypothesis per row).
    supports_stop_sequences = False

    def __call__(
        self,
        step_fn,
        cache,
        start_ids=None,
        end_id=None,
        max_length=None,
        max_lengths=None,
        *,
        prompt_ids=None,
        prompt_lengths=None,
        first_index=0,
        stop_sequence_ids=None,
        stop_sequence_lengths=None,
        **options,
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
        prompt = make_prompt(start_ids, prompt_ids, prompt_lengths, first_index)
        batch_size = ops.shape(prompt.ids)[0]
        cache = () if cache is None else cache
        check_cache_batch(cache, prompt.ids.shape[0])
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
        if stop_sequence_ids is not None:
            if not self.supports_stop_sequences:
                raise ValueError(
                    f"{type(self).__name__} does not take `stop_sequence_ids`: its "
                    "hypotheses share rows, so one cannot stop alone. Use `GreedySearch` "
                    "or `RandomSampling`, or cut the output at the stop sequence after "
                    "decoding."
                )
            options["stop_sequences"] = make_stop_sequences(
                stop_sequence_ids, stop_sequence_lengths, prompt.ids.shape[0])
        elif stop_sequence_lengths is not None:
            raise ValueError(
                "`stop_sequence_lengths` goes with `stop_sequence_ids`; pass the stop "
                "sequences' ids too."
            )
        return self.decode(step_fn, cache, prompt, end_id, max_length, max_lengths, **options)

    def decode(self, step_fn, cache, prompt, end_id, max_length, max_lengths, **options):
        """Decodes; the arguments are checked and `max_lengths` is a tensor.

        `prompt` is a `Prompt` (a start token is a prompt of length 1);
        `options` are the subclass' extra call arguments (e.g. the `seed` of
        `RandomSampling`), and `stop_sequences`, a `StopSequences`, when the
        call gives stop sequences.
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


class Prompt(NamedTuple):
    """The checked start of every row's sequence.

    Attributes:
        ids: int32 `(batch, width)`, each row's prompt, zeros after its
            length (`width` static).
        lengths: int32 `(batch,)`, in `[first_index + 1, width]`.
        first_index: Python int, the first position fed to the step
            function (the cache holds the positions before it).
    """

    ids: Any
    lengths: Any
    first_index: int

    @property
    def width(self):
        return self.ids.shape[1]


class StopSequences(NamedTuple):
    """The checked stop sequence of every row, padded to a static width.

    Attributes:
        ids: int32 `(batch, width)`, each row's stop sequence, right-padded
            (`width` static; the padding is ignored).
        lengths: int32 `(batch,)`, in `[0, width]`; 0: the row has none.
    """

    ids: Any
    lengths: Any

    def repeat(self, copies):
        """Each row's stop sequence `copies` times in a row, for decoders
        that tile their rows (`num_return_sequences`)."""
        if copies == 1:
            return self
        return StopSequences(ops.repeat(self.ids, copies, axis=0),
                             ops.repeat(self.lengths, copies, axis=0))


def make_prompt(start_ids, prompt_ids, prompt_lengths, first_index):
    """The `Prompt` of a decoder call, or a `ValueError` saying what is wrong."""
    if isinstance(first_index, bool) or not isinstance(first_index, int) or first_index < 0:
        raise ValueError(
            f"`first_index` must be a Python int >= 0, the first position to feed "
            f"(the cache holds the ones before it); received {first_index!r}."
        )
    if (start_ids is None) == (prompt_ids is None):
        raise ValueError(
            "Pass either `start_ids` (one start token per example) or `prompt_ids` "
            "(one prompt per example, with `prompt_lengths`), not "
            f"{'both' if start_ids is not None else 'neither'}."
        )
    if start_ids is not None:
        if prompt_lengths is not None:
            raise ValueError(
                "`prompt_lengths` goes with `prompt_ids`; with `start_ids` every "
                "row starts from one token. Pass the prompts as `prompt_ids`."
            )
        start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")
        if len(start_ids.shape) != 1:
            raise ValueError(
                "`start_ids` must have shape (batch,), one start token per example; "
                f"received shape {tuple(start_ids.shape)}."
            )
        prompt_ids = start_ids[:, None]
        prompt_lengths = ops.ones_like(start_ids)
    else:
        prompt_ids, prompt_lengths = padded_rows(
            "prompt", prompt_ids, prompt_lengths, "prompt_length")
    width = prompt_ids.shape[1]
    if first_index >= width:
        raise ValueError(
            f"`first_index` ({first_index}) must be below the prompt length "
            f"({width}): the loop starts by feeding the token at `first_index`. "
            "Prefill the cache for fewer positions (at most the shortest prompt "
            "but its last token)."
        )
    known = known_values(prompt_lengths)
    if known is not None and known.size and not (
        (known > first_index) & (known <= width)
    ).all():
        raise ValueError(
            f"Every prompt length must be in [first_index + 1, prompt_length] = "
            f"[{first_index + 1}, {width}]; received {known.tolist()}. A prompt "
            "needs at least one token, and the cache may be prefilled only for "
            "positions before every prompt's last token."
        )
    prompt_lengths = ops.clip(prompt_lengths, first_index + 1, width)
    in_prompt = ops.arange(width)[None, :] < prompt_lengths[:, None]
    return Prompt(ops.where(in_prompt, prompt_ids, 0), prompt_lengths, first_index)


def make_stop_sequences(stop_sequence_ids, stop_sequence_lengths, batch_size):
    """The `StopSequences` of a decoder call, or a `ValueError` saying what
    is wrong.

    Args:
        stop_sequence_ids: int `(batch, width)` with a static `width`,
            right-padded.
        stop_sequence_lengths: optional int `(batch,)` (default: all
            `width`); clipped to `[0, width]`.
        batch_size: the static batch size of the prompts, or None.

    Returns:
        A `StopSequences`.

    Example:

    >>> stops = make_stop_sequences([[4, 2], [7, 0]], [2, 1], batch_size=2)
    >>> ops.convert_to_numpy(stops.lengths).tolist()
    [2, 1]
    """
    ids, lengths = padded_rows(
        "stop_sequence", stop_sequence_ids, stop_sequence_lengths, "width")
    if None not in (ids.shape[0], batch_size) and ids.shape[0] != batch_size:
        raise ValueError(
            f"`stop_sequence_ids` has {ids.shape[0]} rows but the prompts {batch_size}: "
            "give one stop sequence per example (length 0 for none)."
        )
    width = ids.shape[1]
    known = known_values(lengths)
    if known is not None and known.size and not ((known >= 0) & (known <= width)).all():
        raise ValueError(
            f"Every stop sequence length must be in [0, width] = [0, {width}]; received "
            f"{known.tolist()}. Use 0 for an example without a stop sequence, and "
            "pad `stop_sequence_ids` to the longest one."
        )
    return StopSequences(ids, ops.clip(lengths, 0, width))


def padded_rows(name, ids, lengths, width_name):
    """int32 `(ids, lengths)` of right-padded rows, or a `ValueError`.

    Args:
        name: what the rows are, as the call arguments `{name}_ids` and
            `{name}_lengths` name them ("prompt", "stop_sequence").
        ids: int `(batch, width)` with a static `width`.
        lengths: optional int `(batch,)`; default: all `width`.
        width_name: the name of the width in the messages.
    """
    what = name.replace("_", " ")
    ids = ops.cast(ops.convert_to_tensor(ids), "int32")
    if len(ids.shape) != 2 or ids.shape[1] is None:
        raise ValueError(
            f"`{name}_ids` must have shape (batch, {width_name}) with a static "
            f"{width_name}; received shape {tuple(ids.shape)}. Pad the {what}s on the "
            f"right to a fixed length and pass `{name}_lengths`."
        )
    if lengths is None:
        lengths = ops.full(ops.shape(ids)[:1], ids.shape[1], "int32")
    lengths = ops.cast(ops.convert_to_tensor(lengths), "int32")
    if len(lengths.shape) != 1:
        raise ValueError(
            f"`{name}_lengths` must have shape (batch,), one length per {what}; "
            f"received shape {tuple(lengths.shape)}."
        )
    return ids, lengths


def known_values(tensor):
    """The values of `tensor` as a NumPy array when they are known (eager), else None."""
    try:
        return np.asarray(ops.convert_to_numpy(tensor))
    except (TypeError, ValueError, RuntimeError):
        return None  # symbolic: a graph or a traced function


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

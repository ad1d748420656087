"""Random sampling with temperature, top-k and top-p (nucleus) filtering."""

import keras
import numpy as np
from keras import ops

from tfnlp.decoding.cache import tile_cache
from tfnlp.decoding.constraints import check_non_negative_int
from tfnlp.decoding.contract import NEGATIVE_INFINITY, Decoder
from tfnlp.decoding.step import best_tokens, decode_one_per_row, sort_sequences

# Uniform draws start here, so that -log(-log(u)) is finite.
_SMALLEST_UNIFORM = float(np.finfo("float32").tiny)
# The second seed word is call_counter * _STEPS_PER_SEED + index, so the
# seeds of successive calls (seed=None) do not overlap for shorter outputs.
_STEPS_PER_SEED = 65536


@keras.saving.register_keras_serializable(package="tfnlp")
class RandomSampling(Decoder):
    """Samples each next token from the model's (filtered) distribution.

    At each step the log-probabilities are divided by `temperature`, cut to
    the `top_k` most probable tokens (Fan et al., 2018) and then to the
    nucleus, the smallest set of most probable tokens whose probability
    (renormalised over the top k) reaches `top_p` (Holtzman et al., 2020),
    and a token is drawn from what remains (renormalised). The draw is
    `argmax(logits + Gumbel noise)`, with noise from `keras.random.uniform`
    under a stateless seed derived from the decoder's seed and the step
    index, so the loop needs no random state: it compiles with XLA, exports
    to a SavedModel and runs under `jax.jit`.

    With an integer `seed`, every call with the same inputs returns the same
    samples (Keras' convention for integer seeds). With `seed=None`, each
    call draws a fresh seed from the decoder's `keras.random.SeedGenerator`
    `seed_generator`, a variable: under `jax.jit`, or in a SavedModel, pass
    the `seed` call argument instead (e.g. as an input of the signature).
    The draws of a row depend on its position in the batch, and the random
    numbers of a seed differ between backends and between XLA-compiled and
    plain TensorFlow (their stateless generators differ).

    Args:
        top_k: keep only the `top_k` most probable tokens (0: all).
        top_p: keep only the nucleus of probability `top_p` (1.0: all).
        temperature: divides the log-probabilities (> 0); lower is closer to
            greedy search.
        seed: int >= 0, or `None` for a different sample at every call.
        num_return_sequences: independent samples per example, returned best
            (highest log-probability) first.
        min_length: `end_id` is forbidden among the first `min_length`
            generated tokens.

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`.
        cache: the model's initial cache (nested tensors, batch first) or
            `None`; it is tiled `num_return_sequences` times.
        start_ids: int32 `(batch,)`.
        end_id: Python int.
        max_length: Python int, the static bound on generated tokens.
        max_lengths: optional int32 `(batch,)` per-example bounds.
        seed: optional, overrides the decoder's seed for this call: an int
            or an integer tensor of shape `(2,)` (e.g. an input of a serving
            signature).

    Returns:
        A dict: `"ids"` int32 `(batch, num_return_sequences, max_length)`,
        `"lengths"` int32 `(batch, num_return_sequences)` (including
        `end_id`) and `"scores"` float32 `(batch, num_return_sequences)`,
        the log-probability of each sample under the model (before
        temperature and filtering), best first.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> table = np.log(np.array([[0.1, 0.2, 0.7],
    ...                          [0.3, 0.3, 0.4],
    ...                          [0.6, 0.3, 0.1]], "float32"))
    >>> def step_fn(token_ids, cache, index):
    ...     return ops.take(table, token_ids, axis=0), cache
    >>> sampler = RandomSampling(top_p=0.9, seed=7, num_return_sequences=3)
    >>> result = sampler(step_fn, None, start_ids=[0, 2], end_id=1, max_length=5)
    >>> tuple(result["ids"].shape)
    (2, 3, 5)
    >>> again = sampler(step_fn, None, start_ids=[0, 2], end_id=1, max_length=5)
    >>> bool(np.all(ops.convert_to_numpy(result["ids"]) == ops.convert_to_numpy(again["ids"])))
    True

    References:
        - [Fan et al., 2018. Hierarchical Neural Story Generation](
          https://arxiv.org/abs/1805.04833) (top-k sampling)
        - [Holtzman et al., 2020. The Curious Case of Neural Text
          Degeneration](https://arxiv.org/abs/1904.09751) (nucleus sampling)
    """

    def __init__(
        self,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        seed=None,
        num_return_sequences=1,
        min_length=0,
    ):
        check_non_negative_int("top_k", top_k)
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
            raise ValueError(
                f"`top_p` must be a number in (0, 1]; received {top_p!r}. Use 1.0 to "
                "sample from the whole distribution."
            )
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not temperature > 0
        ):
            raise ValueError(
                f"`temperature` must be a number > 0; received {temperature!r}. For "
                "the most probable tokens use `GreedySearch`."
            )
        if seed is not None:
            check_non_negative_int("seed", seed)
        if (
            isinstance(num_return_sequences, bool)
            or not isinstance(num_return_sequences, int)
            or num_return_sequences < 1
        ):
            raise ValueError(
                f"`num_return_sequences` must be a Python int >= 1; received "
                f"{num_return_sequences!r}."
            )
        check_non_negative_int("min_length", min_length)
        self.top_k = top_k
        self.top_p = float(top_p)
        self.temperature = float(temperature)
        self.seed = seed
        self.num_return_sequences = num_return_sequences
        self.min_length = min_length
        # The draws read their seed from this generator's state, mapped in a
        # `keras.StatelessScope`; with seed=None it also draws a seed per call.
        self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def num_sequences(self):
        return self.num_return_sequences

    def _call_seed(self, seed):
        dtype = self.seed_generator.state.dtype
        if seed is None:
            if self.seed is None:
                return ops.cast(self.seed_generator.next(), dtype)
            seed = self.seed
        if isinstance(seed, int) and not isinstance(seed, bool):
            return ops.convert_to_tensor([seed, 0], dtype=dtype)
        seed = ops.convert_to_tensor(seed)
        if tuple(seed.shape) != (2,):
            raise ValueError(
                f"The `seed` call argument must be an int or an integer tensor of "
                f"shape (2,); received shape {tuple(seed.shape)}."
            )
        return ops.cast(seed, dtype)

    def _gumbel_noise(self, shape, seed):
        """Gumbel(0, 1) noise drawn under the stateless seed `seed`."""
        state = self.seed_generator.state
        with keras.StatelessScope(state_mapping=[(state, ops.cast(seed, state.dtype))]):
            uniform = keras.random.uniform(
                shape, minval=_SMALLEST_UNIFORM, maxval=1.0, dtype="float32",
                seed=self.seed_generator,
            )
        return -ops.log(-ops.log(uniform))

    def _choose_tokens(self, log_probs, index, call_seed):
        step_seed = ops.stack(
            [call_seed[0], call_seed[1] * _STEPS_PER_SEED + ops.cast(index, call_seed.dtype)]
        )
        logits = log_probs / self.temperature
        if self.top_k == 0 and self.top_p >= 1.0:
            return best_tokens(logits + self._gumbel_noise(ops.shape(logits), step_seed))
        vocabulary_size = log_probs.shape[-1]
        if vocabulary_size is None:
            raise ValueError(
                "top-k and top-p sampling need the vocabulary size statically: "
                "`step_fn` returned logits of shape "
                f"{tuple(log_probs.shape)}. Give the logits a static last axis."
            )
        k = vocabulary_size if self.top_k == 0 else min(self.top_k, vocabulary_size)
        values, candidates = ops.top_k(logits, k)  # sorted, lower id first on ties
        if self.top_p < 1.0:
            probabilities = ops.softmax(values, axis=-1)
            mass_before = ops.cumsum(probabilities, axis=-1) - probabilities
            values = ops.where(mass_before < self.top_p, values, NEGATIVE_INFINITY)
        choices = best_tokens(values + self._gumbel_noise(ops.shape(values), step_seed))
        return ops.take_along_axis(candidates, choices[:, None], axis=1)[:, 0]

    def decode(self, step_fn, cache, start_ids, end_id, max_length, max_lengths, seed=None):
        call_seed = self._call_seed(seed)
        copies = self.num_return_sequences
        if copies > 1:
            cache = tile_cache(cache, copies)
            start_ids = ops.repeat(start_ids, copies, axis=0)
            max_lengths = ops.repeat(max_lengths, copies, axis=0)
        ids, lengths, scores = decode_one_per_row(
            step_fn,
            cache,
            start_ids,
            end_id,
            max_length,
            max_lengths,
            choose_tokens=lambda log_probs, index: self._choose_tokens(log_probs, index, call_seed),
            min_length=self.min_length,
        )
        return sort_sequences(ids, lengths, scores, copies)

    def get_config(self):
        return {
            "top_k": self.top_k,
            "top_p": self.top_p,
            "temperature": self.temperature,
            "seed": self.seed,
            "num_return_sequences": self.num_return_sequences,
            "min_length": self.min_length,
        }

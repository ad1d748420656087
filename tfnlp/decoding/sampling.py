"""Random sampling with temperature, top-k and top-p (nucleus) filtering."""

import keras
from keras import ops

from tfnlp.decoding.cache import tile_cache
from tfnlp.decoding.constraints import (
    check_constraints,
    check_non_negative_int,
    check_positive_number,
    checked_token_ids,
    constraints_of,
)
from tfnlp.decoding.contract import NEGATIVE_INFINITY, Decoder
from tfnlp.decoding.gumbel import gumbel_noise, row_keys
from tfnlp.decoding.step import best_tokens, decode_one_per_row, sort_sequences


@keras.saving.register_keras_serializable(package="tfnlp")
class RandomSampling(Decoder):
    """Samples each next token from the model's (filtered) distribution.

    At each step the log-probabilities are divided by `temperature`, cut to
    the `top_k` most probable tokens (Fan et al., 2018) and then to the
    nucleus, the smallest set of most probable tokens whose probability
    (renormalised over the top k) reaches `top_p` (Holtzman et al., 2020),
    and a token is drawn from what remains (renormalised). The draw is
    `argmax(logits + Gumbel noise)` (the Gumbel-max trick), with the noise
    of each token a counter-based hash of the row's seed, its sample
    number, the step index and the token id (`tfnlp.decoding.gumbel`): the
    loop needs no random state, so it compiles with XLA, exports to a
    SavedModel and runs under `jax.jit`, and a seed draws the same numbers
    on TensorFlow (eager or XLA) and JAX.

    Seeds: with an integer `seed`, every call with the same inputs returns
    the same samples (Keras' convention for integer seeds). With
    `seed=None`, each call draws a fresh seed from the decoder's
    `keras.random.SeedGenerator` `seed_generator`, a variable: under
    `jax.jit`, or in a SavedModel, pass the `seed` call argument instead
    (e.g. as an input of the signature). One seed for the batch (an int or
    a `(2,)` tensor) gives row `b` its own stream, so the draws of a row
    depend on its position in the batch. One seed per example (a
    `(batch, 2)` tensor) makes each example's samples depend only on its
    own inputs and seed: the same alone or in any batch, in any position,
    at every call.

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
        no_repeat_ngram_size: if > 0, a token that would repeat an n-gram of
            this size (the prompt or start token included) is forbidden.
        repetition_penalty: > 0; the logits of the tokens already in the
            sequence (the prompt included) are divided by it when positive
            and multiplied by it when negative (Keskar et al., 2019), before
            temperature and filtering; 1.0 for none.
        suppressed_token_ids: token ids never generated (their
            log-probability is -inf at every step), e.g. a tokenizer's
            padding and unknown ids, which stand for no text; empty for
            none.

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`.
        cache: the model's initial cache (nested tensors, batch first) or
            `None`; it is tiled `num_return_sequences` times.
        start_ids: int32 `(batch,)`, or `None` with `prompt_ids`.
        end_id: Python int.
        max_length: Python int, the static bound on generated tokens.
        max_lengths: optional int32 `(batch,)` per-example bounds.
        prompt_ids, prompt_lengths, first_index: optional prompts (see
            `tfnlp.decoding.contract`).
        seed: optional, overrides the decoder's seed for this call: an int,
            an integer tensor of shape `(2,)` (one seed for the batch, e.g.
            an input of a serving signature) or of shape `(batch, 2)` (one
            seed per example). Seed words are taken modulo 2**32.
        temperature, top_k, top_p: optional, override the decoder's for
            this call, one value per example (float `(batch,)`, int
            `(batch,)`, float `(batch,)`; e.g. the per-request inputs of a
            serving signature). Values are not checked inside a traced
            function: clip them before (a temperature > 0, a `top_k` >= 0,
            a `top_p` in (0, 1]). Per-example filtering ranks the whole
            vocabulary at each step.
        stop_sequence_ids, stop_sequence_lengths: optional per-example stop
            sequences, int32 `(batch, width)` right-padded and `(batch,)`
            (0: none): each sample stops once its generated tokens end with
            its example's stop sequence, which is kept in `"ids"`.

    Returns:
        A dict: `"ids"` int32 `(batch, num_return_sequences, max_length)`
        (the generated tokens), `"lengths"` int32
        `(batch, num_return_sequences)` (including `end_id`) and `"scores"`
        float32 `(batch, num_return_sequences)`, the log-probability of each
        sample under the model (with the repetition penalty and the
        forbidden tokens, before temperature and filtering), best first.

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

    One seed per example: the second prompt samples the same alone.

    >>> prompts, seeds = np.array([[0, 2], [2, 0]]), np.array([[1, 0], [2, 0]])
    >>> batch = sampler(step_fn, None, end_id=1, max_length=5, prompt_ids=prompts,
    ...                 prompt_lengths=[2, 1], seed=seeds)
    >>> alone = sampler(step_fn, None, end_id=1, max_length=5, prompt_ids=prompts[1:, :1],
    ...                 seed=seeds[1:])
    >>> bool(np.all(ops.convert_to_numpy(batch["ids"])[1] == ops.convert_to_numpy(alone["ids"])[0]))
    True

    References:
        - [Fan et al., 2018. Hierarchical Neural Story Generation](
          https://arxiv.org/abs/1805.04833) (top-k sampling)
        - [Holtzman et al., 2020. The Curious Case of Neural Text
          Degeneration](https://arxiv.org/abs/1904.09751) (nucleus sampling)
        - [Keskar et al., 2019. CTRL: A Conditional Transformer Language
          Model for Controllable Generation](https://arxiv.org/abs/1909.05858)
          (repetition penalty)
    """

    supports_stop_sequences = True

    def __init__(
        self,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        seed=None,
        num_return_sequences=1,
        min_length=0,
        no_repeat_ngram_size=0,
        repetition_penalty=1.0,
        suppressed_token_ids=(),
    ):
        check_non_negative_int("top_k", top_k)
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
            raise ValueError(
                f"`top_p` must be a number in (0, 1]; received {top_p!r}. Use 1.0 to "
                "sample from the whole distribution."
            )
        check_positive_number(
            "temperature", temperature, "For the most probable tokens use `GreedySearch`."
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
        check_constraints(min_length, no_repeat_ngram_size, repetition_penalty)
        self.top_k = top_k
        self.top_p = float(top_p)
        self.temperature = float(temperature)
        self.seed = seed
        self.num_return_sequences = num_return_sequences
        self.min_length = min_length
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.repetition_penalty = float(repetition_penalty)
        self.suppressed_token_ids = checked_token_ids("suppressed_token_ids",
                                                      suppressed_token_ids)
        # With seed=None, a new seed for every call.
        self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def num_sequences(self):
        return self.num_return_sequences

    def _row_keys(self, seed, prompt_ids):
        """int32 `(batch * num_return_sequences,)`: each row's key for the noise."""
        copies = self.num_return_sequences
        batch_size = ops.shape(prompt_ids)[0]
        if seed is None:
            seed = self.seed if self.seed is not None else self.seed_generator.next()
        if isinstance(seed, int) and not isinstance(seed, bool):
            seed = [seed, 0]
        seed = ops.convert_to_tensor(seed)
        if tuple(seed.shape) == (2,):
            # One seed for the batch: row b, sample j is stream b * copies + j.
            rows = batch_size * copies
            return row_keys(ops.broadcast_to(seed[None, :], (rows, 2)), ops.arange(rows))
        if len(seed.shape) == 2 and seed.shape[1] == 2:
            static_batch_size = prompt_ids.shape[0]
            if None not in (seed.shape[0], static_batch_size) and (
                seed.shape[0] != static_batch_size
            ):
                raise ValueError(
                    f"One seed per example needs a `seed` of shape (batch, 2) = "
                    f"({static_batch_size}, 2); received shape {tuple(seed.shape)}."
                )
            # One seed per example: its sample j is stream j, whatever the batch.
            streams = ops.tile(ops.arange(copies), (ops.shape(seed)[0],))
            return row_keys(ops.repeat(seed, copies, axis=0), streams)
        raise ValueError(
            f"The `seed` call argument must be an int, an integer tensor of shape "
            f"(2,) (one seed for the batch) or (batch, 2) (one seed per example); "
            f"received shape {tuple(seed.shape)}."
        )

    def _choose_tokens(self, log_probs, index, keys, settings=None):
        if settings is not None:
            return self._choose_tokens_per_row(log_probs, index, keys, settings)
        logits = log_probs / self.temperature
        if self.top_k == 0 and self.top_p >= 1.0:
            token_ids = ops.arange(ops.shape(logits)[-1], dtype="int32")[None, :]
            return best_tokens(logits + gumbel_noise(keys, index, token_ids))
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
        # Each candidate's noise is its token's, whatever its rank.
        choices = best_tokens(values + gumbel_noise(keys, index, candidates))
        return ops.take_along_axis(candidates, choices[:, None], axis=1)[:, 0]

    def _choose_tokens_per_row(self, log_probs, index, keys, settings):
        """`_choose_tokens` with each row's own temperature `(rows, 1)`,
        top-k `(rows, 1)` (0: all) and top-p `(rows, 1)`."""
        temperature, top_k, top_p = settings
        vocabulary_size = log_probs.shape[-1]
        if vocabulary_size is None:
            raise ValueError(
                "Per-example top-k and top-p need the vocabulary size statically: "
                f"`step_fn` returned logits of shape {tuple(log_probs.shape)}."
            )
        values, candidates = ops.top_k(log_probs / temperature, vocabulary_size)
        ranks = ops.arange(vocabulary_size, dtype="int32")[None, :]
        keep = ops.logical_or(top_k <= 0, ranks < top_k)
        values = ops.where(keep, values, NEGATIVE_INFINITY)
        probabilities = ops.softmax(values, axis=-1)
        mass_before = ops.cumsum(probabilities, axis=-1) - probabilities
        values = ops.where(mass_before < top_p, values, NEGATIVE_INFINITY)
        choices = best_tokens(values + gumbel_noise(keys, index, candidates))
        return ops.take_along_axis(candidates, choices[:, None], axis=1)[:, 0]

    def _row_settings(self, temperature, top_k, top_p, batch_size):
        """The per-example settings as `(rows, 1)` columns (the decoder's own
        where a call leaves one out), or None when the call gives none."""
        if temperature is None and top_k is None and top_p is None:
            return None

        def column(value, default, dtype):
            if value is None:
                value = ops.full((batch_size,), default, dtype=dtype)
            value = ops.cast(ops.reshape(value, (-1,)), dtype)
            return ops.repeat(value, self.num_return_sequences, axis=0)[:, None]

        return (column(temperature, self.temperature, "float32"),
                column(top_k, self.top_k, "int32"),
                column(top_p, self.top_p, "float32"))

    def decode(self, step_fn, cache, prompt, end_id, max_length, max_lengths, seed=None,
               temperature=None, top_k=None, top_p=None, stop_sequences=None):
        copies = self.num_return_sequences
        keys = self._row_keys(seed, prompt.ids)
        settings = self._row_settings(temperature, top_k, top_p, ops.shape(prompt.ids)[0])
        if copies > 1:
            cache = tile_cache(cache, copies)
            prompt = prompt._replace(
                ids=ops.repeat(prompt.ids, copies, axis=0),
                lengths=ops.repeat(prompt.lengths, copies, axis=0),
            )
            max_lengths = ops.repeat(max_lengths, copies, axis=0)
            if stop_sequences is not None:
                stop_sequences = stop_sequences.repeat(copies)
        ids, lengths, scores = decode_one_per_row(
            step_fn,
            cache,
            prompt,
            end_id,
            max_length,
            max_lengths,
            choose_tokens=lambda log_probs, index: self._choose_tokens(
                log_probs, index, keys, settings),
            constraints=constraints_of(self),
            stop_sequences=stop_sequences,
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
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "repetition_penalty": self.repetition_penalty,
            "suppressed_token_ids": self.suppressed_token_ids,
        }

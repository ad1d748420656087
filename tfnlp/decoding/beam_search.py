"""Beam search with length penalties, n-best lists and exact early stopping."""

import keras
from keras import ops

from tfnlp.decoding.cache import reorder_cache, tile_cache
from tfnlp.decoding.constraints import (
    check_constraints,
    checked_token_ids,
    constraints_of,
    next_token_log_probs,
)
from tfnlp.decoding.contract import NEGATIVE_INFINITY, Decoder, match_cache
from tfnlp.decoding.length_penalty import check_length_penalty, length_penalty
from tfnlp.decoding.step import generated_part, start_sequences, take_column, write_column


@keras.saving.register_keras_serializable(package="tfnlp")
class BeamSearch(Decoder):
    """Beam search: keeps the `beam_size` most probable partial sequences.

    At every step each of the `beam_size` alive hypotheses of an example is
    extended by every token; of the `2 * beam_size` best extensions (by
    log-probability; ties go to the lower beam, then the lower token id),
    those ending with `end_id` join the example's finished hypotheses and
    the `beam_size` best others stay alive, so the beam never shrinks. A
    finished hypothesis is ranked by `log P(y) / lp(|y|)` (see
    `tfnlp.decoding.length_penalty`), computed once when it finishes and
    never changed. At an example's maximum length its alive hypotheses are
    finished as they are (without `end_id`) and compete with the others, so
    an example with no hypothesis that generated `end_id` still returns its
    best alive ones, with their scores.

    With `early_stopping`, an example stops as soon as no alive hypothesis
    can still beat the worst of its `num_return_sequences` kept finished
    ones: the log-probability of an alive hypothesis only decreases, so its
    best possible score is its log-probability divided by the largest
    penalty of a length it can still reach (the example's maximum length
    when `alpha > 0`, the next length when `alpha < 0`). This gives exactly
    the results of running every example to its maximum length.

    The cache is tiled `beam_size` times along axis 0 at the start (example
    `b`'s beams are rows `b * beam_size` to `b * beam_size + beam_size - 1`)
    and reordered after each step with one `keras.ops.take` per leaf; the
    loop is a `keras.ops.while_loop` with static shapes, so it compiles with
    XLA and exports to a SavedModel of stock TensorFlow ops (no
    `Addons>GatherTree`). Examples never interact: an example's results do
    not depend on the batch it is decoded in.

    With a prompt (see `tfnlp.decoding.contract`), every beam of an example
    follows the prompt's tokens, unscored, and the beams part at the first
    generated token, from one live beam as they do after a start token;
    lengths, length penalties and `max_lengths` count the generated tokens.

    Beam search takes no stop sequences (`stop_sequence_ids`, see
    `tfnlp.decoding.contract`): a beam's row holds different hypotheses
    from step to step, so no row can stop alone; cut its outputs after
    decoding instead.

    Args:
        beam_size: the number of alive hypotheses per example.
        length_penalty: `"gnmt"` (`((5 + length) / 6) ** alpha`),
            `"average"` (`length ** alpha`) or `"none"`.
        alpha: the length penalty's exponent.
        num_return_sequences: how many hypotheses to return per example
            (the n-best list, at most `beam_size`).
        min_length: `end_id` is forbidden among the first `min_length`
            generated tokens.
        no_repeat_ngram_size: if > 0, a token that would repeat an n-gram of
            this size within a hypothesis (the prompt or start token
            included) is forbidden.
        repetition_penalty: > 0; the logits of the tokens already in a
            hypothesis (the prompt included) are divided by it when positive
            and multiplied by it when negative (Keskar et al., 2019), before
            the log-probabilities that rank the beams; 1.0 for none.
        early_stopping: stop an example when its n-best list can no longer
            change (exact); `False` runs every example to its maximum length.
        suppressed_token_ids: token ids never generated (their
            log-probability is -inf at every step), e.g. a tokenizer's
            padding and unknown ids, which stand for no text; empty for
            none.

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`.
        cache: the model's initial cache (nested tensors, batch first) or
            `None`; it is tiled to `batch * beam_size` rows.
        start_ids: int32 `(batch,)`, or `None` with `prompt_ids`.
        end_id: Python int.
        max_length: Python int, the static bound on generated tokens.
        max_lengths: optional int32 `(batch,)` per-example bounds.
        prompt_ids, prompt_lengths, first_index: optional prompts (see
            `tfnlp.decoding.contract`).

    Returns:
        A dict, best hypothesis first: `"ids"` int32
        `(batch, num_return_sequences, max_length)` (the generated tokens),
        `"lengths"` int32 `(batch, num_return_sequences)` (including
        `end_id`) and `"scores"` float32 `(batch, num_return_sequences)`,
        the log-probabilities divided by the length penalty. A slot for which the example has no
        hypothesis (only when fewer distinct sequences exist) has score
        `-inf`, length 0 and ids 0.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> table = np.log(np.array([[0.1, 0.2, 0.7],   # after token 0
    ...                          [0.3, 0.3, 0.4],   # after token 1
    ...                          [0.5, 0.45, 0.05]],  # after token 2
    ...                         "float32"))
    >>> def step_fn(token_ids, cache, index):
    ...     return ops.take(table, token_ids, axis=0), cache
    >>> decoder = BeamSearch(beam_size=2, length_penalty="none", num_return_sequences=2)
    >>> result = decoder(step_fn, None, start_ids=[0], end_id=1, max_length=3)
    >>> ops.convert_to_numpy(result["ids"]).tolist()
    [[[2, 1, 0], [2, 0, 2]]]
    >>> [round(float(score), 4) for score in ops.convert_to_numpy(result["scores"])[0]]
    [-1.1552, -1.4065]
    >>> prompted = decoder(step_fn, None, end_id=1, max_length=2, prompt_ids=[[0, 2, 0]])
    >>> ops.convert_to_numpy(prompted["ids"]).tolist()
    [[[2, 0], [2, 1]]]

    References:
        - [Wu et al., 2016. Google's Neural Machine Translation System:
          Bridging the Gap between Human and Machine Translation](
          https://arxiv.org/abs/1609.08144) (length penalty)
        - [Paulus et al., 2017. A Deep Reinforced Model for Abstractive
          Summarization](https://arxiv.org/abs/1705.04304) (n-gram blocking)
        - [Keskar et al., 2019. CTRL: A Conditional Transformer Language
          Model for Controllable Generation](https://arxiv.org/abs/1909.05858)
          (repetition penalty)
    """

    def __init__(
        self,
        beam_size=4,
        length_penalty="gnmt",
        alpha=0.6,
        num_return_sequences=1,
        min_length=0,
        no_repeat_ngram_size=0,
        early_stopping=True,
        repetition_penalty=1.0,
        suppressed_token_ids=(),
    ):
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise ValueError(f"`beam_size` must be a Python int >= 1; received {beam_size!r}.")
        if (
            isinstance(num_return_sequences, bool)
            or not isinstance(num_return_sequences, int)
            or not 1 <= num_return_sequences <= beam_size
        ):
            raise ValueError(
                f"`num_return_sequences` must be an int between 1 and `beam_size` "
                f"({beam_size}); received {num_return_sequences!r}. Raise `beam_size` "
                "to return more hypotheses."
            )
        check_length_penalty(length_penalty, alpha)
        check_constraints(min_length, no_repeat_ngram_size, repetition_penalty)
        if not isinstance(early_stopping, bool):
            raise ValueError(f"`early_stopping` must be a bool; received {early_stopping!r}.")
        self.beam_size = beam_size
        self.length_penalty = length_penalty
        self.alpha = alpha
        self.num_return_sequences = num_return_sequences
        self.min_length = min_length
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.early_stopping = early_stopping
        self.repetition_penalty = float(repetition_penalty)
        self.suppressed_token_ids = checked_token_ids("suppressed_token_ids",
                                                      suppressed_token_ids)

    @property
    def num_sequences(self):
        return self.num_return_sequences

    def _penalty(self, lengths):
        return length_penalty(lengths, self.length_penalty, self.alpha)

    def decode(self, step_fn, cache, prompt, end_id, max_length, max_lengths):
        beam, kept = self.beam_size, self.num_return_sequences
        batch_size = ops.shape(prompt.ids)[0]
        width = prompt.width + max_length  # the prompt, then max_length tokens
        last_index = width - 1
        cache = tile_cache(cache, beam)
        sequences = start_sequences(ops.repeat(prompt.ids, beam, axis=0), max_length)
        prompt_lengths = ops.repeat(prompt.lengths, beam, axis=0)
        # Only the first beam is real at the start; the others are copies
        # that must not produce duplicate hypotheses.
        first_beam = ops.arange(beam) == 0
        alive_log_probs = ops.broadcast_to(
            ops.cast(ops.where(first_beam, 0.0, NEGATIVE_INFINITY), "float32")[None, :],
            (batch_size, beam),
        )
        finished_sequences = ops.zeros((batch_size, kept, width), dtype="int32")
        finished_scores = ops.full((batch_size, kept), NEGATIVE_INFINITY, dtype="float32")
        finished_lengths = ops.zeros((batch_size, kept), dtype="int32")
        done = ops.zeros((batch_size,), dtype="bool")
        index = ops.convert_to_tensor(prompt.first_index, dtype="int32")
        # The largest penalty of a length in [length, max_lengths]: the bound
        # of early stopping (penalties are monotonic in the length).
        last_penalty = self._penalty(max_lengths)
        example_offsets = ops.arange(batch_size)[:, None] * beam
        rows = ops.arange(batch_size * beam)

        def condition(index, *state):
            done = state[-1]
            return ops.logical_and(index < last_index, ops.logical_not(ops.all(done)))

        def body(
            index,
            sequences,
            cache,
            alive_log_probs,
            finished_sequences,
            finished_scores,
            finished_lengths,
            done,
        ):
            logits, new_cache = step_fn(take_column(sequences, index), cache, index)
            new_cache = match_cache(cache, new_cache)
            log_probs = next_token_log_probs(
                logits,
                sequences,
                index,
                end_id,
                num_generated=index + 1 - prompt_lengths,
                **constraints_of(self),
            )
            # Each example's generated length after this step; <= 0 while
            # the next token is a prompt token (forced).
            new_length = index + 2 - prompt.lengths
            forced = new_length <= 0
            vocabulary_size = ops.shape(log_probs)[-1]
            candidate_log_probs = ops.reshape(
                ops.reshape(alive_log_probs, (-1, 1)) + log_probs, (-1, beam * vocabulary_size)
            )
            # (batch, 2 * beam), best first; at most `beam` of them end.
            top_log_probs, top_indices = ops.top_k(candidate_log_probs, 2 * beam)
            parent_rows = top_indices // vocabulary_size + example_offsets
            tokens = ops.cast(top_indices % vocabulary_size, "int32")
            valid = top_log_probs > NEGATIVE_INFINITY
            is_end = tokens == end_id
            last_step = (new_length >= max_lengths)[:, None]
            # Lengths below 1 (forced steps) are scored as 1; never kept.
            scored_length = ops.maximum(new_length, 1)

            # Finished hypotheses: the kept ones first, so they win ties.
            candidate_sequences = write_column(
                ops.take(sequences, ops.reshape(parent_rows, (-1,)), axis=0),
                index + 1,
                ops.reshape(tokens, (-1,)),
            )
            finishes = ops.logical_and(
                ops.logical_and(ops.logical_or(is_end, last_step), valid),
                ops.logical_not(ops.logical_or(done, forced))[:, None],
            )
            new_scores = ops.where(
                finishes,
                top_log_probs / self._penalty(scored_length)[:, None],
                NEGATIVE_INFINITY,
            )
            finished_scores, kept_indices = ops.top_k(
                ops.concatenate([finished_scores, new_scores], axis=1), kept
            )
            finished_sequences = ops.take_along_axis(
                ops.concatenate(
                    [finished_sequences, ops.reshape(candidate_sequences, (-1, 2 * beam, width))],
                    axis=1,
                ),
                kept_indices[:, :, None],
                axis=1,
            )
            finished_lengths = ops.take_along_axis(
                ops.concatenate(
                    [
                        finished_lengths,
                        ops.broadcast_to(scored_length[:, None], ops.shape(tokens)),
                    ],
                    axis=1,
                ),
                kept_indices,
                axis=1,
            )

            # Alive hypotheses: the `beam` best that did not end; inside the
            # prompt, every beam extended by the prompt's token instead.
            selected_log_probs, alive_indices = ops.top_k(
                ops.where(is_end, NEGATIVE_INFINITY, top_log_probs), beam
            )
            candidate_offsets = ops.arange(batch_size)[:, None] * (2 * beam)
            selected_sequences = ops.take(
                candidate_sequences, ops.reshape(alive_indices + candidate_offsets, (-1,)), axis=0
            )
            forced_rows = ops.repeat(forced, beam, axis=0)
            # (A forced token is already in `sequences`, written with the prompt.)
            sequences = ops.where(forced_rows[:, None], sequences, selected_sequences)
            alive_log_probs = ops.where(forced[:, None], alive_log_probs, selected_log_probs)
            alive_rows = ops.where(
                forced_rows,
                rows,
                ops.reshape(ops.take_along_axis(parent_rows, alive_indices, axis=1), (-1,)),
            )
            new_cache = reorder_cache(new_cache, alive_rows)

            best_alive = alive_log_probs[:, 0]
            no_alive = best_alive == NEGATIVE_INFINITY
            done = ops.logical_or(done, ops.logical_or(last_step[:, 0], no_alive))
            if self.early_stopping:
                largest_penalty = ops.maximum(self._penalty(scored_length + 1), last_penalty)
                cannot_improve = best_alive / largest_penalty < finished_scores[:, -1]
                done = ops.logical_or(done, cannot_improve)
            return (
                index + 1,
                sequences,
                new_cache,
                alive_log_probs,
                finished_sequences,
                finished_scores,
                finished_lengths,
                done,
            )

        state = ops.while_loop(
            condition,
            body,
            (
                index,
                sequences,
                cache,
                alive_log_probs,
                finished_sequences,
                finished_scores,
                finished_lengths,
                done,
            ),
            maximum_iterations=last_index - prompt.first_index,
        )
        finished_sequences, finished_scores, finished_lengths = state[4:7]
        found = finished_scores > NEGATIVE_INFINITY
        ids = generated_part(finished_sequences, prompt.lengths, max_length)
        return {
            "ids": ops.where(found[:, :, None], ids, 0),
            "lengths": ops.where(found, finished_lengths, 0),
            "scores": finished_scores,
        }

    def get_config(self):
        return {
            "beam_size": self.beam_size,
            "length_penalty": self.length_penalty,
            "alpha": self.alpha,
            "num_return_sequences": self.num_return_sequences,
            "min_length": self.min_length,
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "early_stopping": self.early_stopping,
            "repetition_penalty": self.repetition_penalty,
            "suppressed_token_ids": self.suppressed_token_ids,
        }

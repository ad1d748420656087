"""Greedy search: the most probable token at every step."""

import keras

from tfnlp.decoding.constraints import check_constraints, checked_token_ids, constraints_of
from tfnlp.decoding.contract import Decoder
from tfnlp.decoding.step import best_tokens, decode_one_per_row, sort_sequences


@keras.saving.register_keras_serializable(package="tfnlp")
class GreedySearch(Decoder):
    """Greedy decoding: appends the most probable next token at every step.

    Each example is extended by its most probable token (the lowest id on
    ties) until it generates `end_id` or reaches its maximum length; the
    model runs incrementally on its cache, in one `keras.ops.while_loop`
    that compiles with XLA and exports to a SavedModel. It starts from a
    start token or from a prompt. See `tfnlp.decoding.contract` for the step
    function, the prompts and the result.

    Args:
        min_length: `end_id` is forbidden among the first `min_length`
            generated tokens.
        no_repeat_ngram_size: if > 0, a token that would repeat an n-gram of
            this size (the prompt or start token included) is forbidden
            (Paulus et al., 2017).
        repetition_penalty: > 0; the logits of the tokens already in the
            sequence (the prompt included) are divided by it when positive
            and multiplied by it when negative (Keskar et al., 2019); 1.0
            for none, above 1 to discourage repetitions.
        suppressed_token_ids: token ids never generated (their
            log-probability is -inf at every step), e.g. a tokenizer's
            padding and unknown ids, which stand for no text; empty for
            none.

    Call arguments:
        step_fn: `step_fn(token_ids, cache, index) -> (logits, cache)`.
        cache: the model's initial cache (nested tensors, batch first) or
            `None`.
        start_ids: int32 `(batch,)`, or `None` with `prompt_ids`.
        end_id: Python int.
        max_length: Python int, the static bound on generated tokens.
        max_lengths: optional int32 `(batch,)` per-example bounds.
        prompt_ids, prompt_lengths, first_index: optional prompts (see
            `tfnlp.decoding.contract`).
        stop_sequence_ids, stop_sequence_lengths: optional per-example stop
            sequences, int32 `(batch, width)` right-padded and `(batch,)`
            (0: none): a row stops once its generated tokens end with its
            stop sequence, which is kept in `"ids"`.

    Returns:
        A dict: `"ids"` int32 `(batch, 1, max_length)` (the generated
        tokens), `"lengths"` int32 `(batch, 1)` (including `end_id`),
        `"scores"` float32 `(batch, 1)` (their log-probability).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> table = np.log(np.array([[0.1, 0.2, 0.7],   # after token 0
    ...                          [0.3, 0.3, 0.4],   # after token 1
    ...                          [0.6, 0.3, 0.1]],  # after token 2
    ...                         "float32"))
    >>> def step_fn(token_ids, cache, index):
    ...     return ops.take(table, token_ids, axis=0), cache
    >>> result = GreedySearch()(step_fn, None, start_ids=[0], end_id=1, max_length=4)
    >>> ops.convert_to_numpy(result["ids"]).tolist()
    [[[2, 0, 2, 0]]]
    >>> result = GreedySearch(repetition_penalty=5.0)(
    ...     step_fn, None, end_id=1, max_length=3, prompt_ids=[[2, 0, 2]])
    >>> ops.convert_to_numpy(result["ids"]).tolist()
    [[[1, 0, 0]]]
    >>> result = GreedySearch(suppressed_token_ids=[0])(
    ...     step_fn, None, start_ids=[0], end_id=1, max_length=4)
    >>> ops.convert_to_numpy(result["ids"]).tolist()  # 0 never comes: 1 ends
    [[[2, 1, 0, 0]]]

    Per-example stop sequences: the first row stops after `0, 2`, the
    second after `2`.

    >>> result = GreedySearch()(step_fn, None, start_ids=[0, 0], end_id=1, max_length=4,
    ...                         stop_sequence_ids=[[0, 2], [2, 0]],
    ...                         stop_sequence_lengths=[2, 1])
    >>> ops.convert_to_numpy(result["ids"]).tolist()
    [[[2, 0, 2, 0]], [[2, 0, 0, 0]]]
    >>> ops.convert_to_numpy(result["lengths"]).tolist()
    [[3], [1]]
    >>> decoder = GreedySearch(min_length=1)
    >>> GreedySearch.from_config(decoder.get_config()).min_length
    1

    References:
        - [Paulus et al., 2017. A Deep Reinforced Model for Abstractive
          Summarization](https://arxiv.org/abs/1705.04304) (n-gram blocking)
        - [Keskar et al., 2019. CTRL: A Conditional Transformer Language
          Model for Controllable Generation](https://arxiv.org/abs/1909.05858)
          (repetition penalty)
    """

    supports_stop_sequences = True

    def __init__(self, min_length=0, no_repeat_ngram_size=0, repetition_penalty=1.0,
                 suppressed_token_ids=()):
        check_constraints(min_length, no_repeat_ngram_size, repetition_penalty)
        self.min_length = min_length
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.repetition_penalty = float(repetition_penalty)
        self.suppressed_token_ids = checked_token_ids("suppressed_token_ids",
                                                      suppressed_token_ids)

    def decode(self, step_fn, cache, prompt, end_id, max_length, max_lengths,
               stop_sequences=None):
        ids, lengths, scores = decode_one_per_row(
            step_fn,
            cache,
            prompt,
            end_id,
            max_length,
            max_lengths,
            choose_tokens=lambda log_probs, index: best_tokens(log_probs),
            constraints=constraints_of(self),
            stop_sequences=stop_sequences,
        )
        return sort_sequences(ids, lengths, scores, 1)

    def get_config(self):
        return {
            "min_length": self.min_length,
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "repetition_penalty": self.repetition_penalty,
            "suppressed_token_ids": self.suppressed_token_ids,
        }

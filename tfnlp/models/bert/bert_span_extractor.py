"""BERT for extractive question answering (SQuAD-style spans)."""

import keras
from keras import ops

from tfnlp.models.bert.bert_classifier import BertFinetuningModel

# The logit of a padding position: far below any real logit, so that its
# softmax probability is 0 in float32, and still finite (no inf - inf NaNs).
MASKED_LOGIT = -1e9


@keras.saving.register_keras_serializable(package="tfnlp")
class BertSpanExtractor(BertFinetuningModel):
    """BERT that points at the start and the end of an answer span.

    A dense layer of 2 units on every position of the encoder's
    `sequence_output` gives a start and an end logit per token (no dropout
    in the head, as the original `run_squad.py`). Padding positions
    (`input_mask` 0) get the logit `MASKED_LOGIT` (-1e9), so a softmax over
    the positions never picks them. The logits are float32, also under
    mixed precision.

    Pack `[CLS] question [SEP] context [SEP]`; the answer is the span
    `start <= end` with the largest `start_logits[start] + end_logits[end]`
    inside the context. Train with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)` on each
    output (labels: the start and end token positions), for example
    `model.fit(x, {"start_logits": starts, "end_logits": ends})`; the
    original's loss is the mean of the two. The encoder's `pooled_dense`
    layer gets no gradient here (Keras' fit warns that its gradients do not
    exist; that is expected).

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        dtype: dtype or policy of the head; defaults to the encoder's.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict of int32 `[batch, length]` `input_ids`,
            `input_mask` and `segment_ids`; other keys are ignored.
        training: whether dropout (of the encoder) is active.

    Returns:
        A dict of float32 `[batch, length]` tensors: `start_logits` and
        `end_logits`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> reader = BertSpanExtractor(encoder)
    >>> outputs = reader({
    ...     "input_ids": np.array([[2, 7, 3, 9, 8, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 1, 1, 0]], "int32"),
    ...     "segment_ids": np.array([[0, 0, 0, 1, 1, 1, 0]], "int32"),
    ... })
    >>> tuple(outputs["start_logits"].shape), float(outputs["end_logits"][0, 6])
    ((1, 7), -1000000000.0)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 4.2)
        - [Rajpurkar et al., 2016. SQuAD: 100,000+ Questions for Machine
          Comprehension of Text](https://arxiv.org/abs/1606.05250)
    """

    def __init__(self, encoder, dtype=None, **kwargs):
        super().__init__(encoder, dtype=dtype, **kwargs)
        self.span_dense = keras.layers.Dense(
            2,
            kernel_initializer=self.head_initializer(),
            dtype=self.dtype_policy,
            name="span_dense",
        )
        self.span_dense.build((None, None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        sequence_output = self.encode(inputs, training)["sequence_output"]
        logits = ops.cast(self.span_dense(sequence_output), "float32")
        is_real = ops.not_equal(inputs["input_mask"], 0)
        masked = ops.full_like(logits[..., 0], MASKED_LOGIT)
        return {
            "start_logits": ops.where(is_real, logits[..., 0], masked),
            "end_logits": ops.where(is_real, logits[..., 1], masked),
        }

"""BERT for token classification (a label per token: tagging, NER)."""

import keras
from keras import ops

from tfnlp.models.bert.bert_classifier import BertFinetuningModel
from tfnlp.models.model_config import check_dropout, check_num_classes


@keras.saving.register_keras_serializable(package="tfnlp")
class BertTokenClassifier(BertFinetuningModel):
    """BERT with a label per token.

    The encoder's `sequence_output` goes through dropout and a dense layer
    of `num_classes` units at every position; the result is float32 logits
    (no softmax), also under mixed precision. The logits of padding
    positions are computed too: leave them out of the loss with the input
    mask as sample weight, for example `model.fit(x, labels,
    sample_weight=x["input_mask"])` with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`. For
    WordPiece-split words, the original labels the first piece of each word.
    The encoder's `pooled_dense` layer gets no gradient here (Keras' fit
    warns that its gradients do not exist; that is expected).

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        num_classes: the number of labels (tags).
        dropout: dropout rate before the dense layer (training only).
        dtype: dtype or policy of the head; defaults to the encoder's.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict of int32 `[batch, length]` `input_ids`,
            `input_mask` and `segment_ids`; other keys are ignored.
        training: whether dropout is active.

    Returns:
        float32 logits `[batch, length, num_classes]`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> tagger = BertTokenClassifier(encoder, num_classes=5)
    >>> logits = tagger({
    ...     "input_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...     "segment_ids": np.zeros((1, 5), "int32"),
    ... })
    >>> tuple(logits.shape)
    (1, 5, 5)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 5.3, CoNLL-2003 NER)
    """

    def __init__(self, encoder, num_classes, dropout=0.1, dtype=None, **kwargs):
        check_num_classes(num_classes, "BertTokenClassifier")
        check_dropout(dropout, "BertTokenClassifier")
        super().__init__(encoder, dtype=dtype, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.token_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="token_dropout"
        )
        self.token_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=self.head_initializer(),
            dtype=self.dtype_policy,
            name="token_dense",
        )
        self.token_dense.build((None, None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        sequence_output = self.encode(inputs, training)["sequence_output"]
        hidden = self.token_dropout(sequence_output, training=training)
        return ops.cast(self.token_dense(hidden), "float32")

    def _head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

"""BERT for sequence classification, and the base of the fine-tuning heads.

`BertFinetuningModel` holds what `BertClassifier`, `BertTokenClassifier`
and `BertSpanExtractor` share: the encoder, the input dict, the dtype policy
and the config (the encoder as a nested Keras object, plus the head's own
arguments).
"""

import keras
from keras import ops

from tfnlp.models.bert.bert_encoder import (
    ENCODER_INPUTS,
    BertEncoder,
    encoder_model_config,
    encoder_model_from_config,
)
from tfnlp.models.model_config import check_dropout, check_num_classes


class BertFinetuningModel(keras.Model):
    """Base of the models that put a fine-tuning head on a `BertEncoder`.

    A subclass creates and builds its head layers in its constructor (so
    the weights exist before the first call and `.keras` files load without
    a build step), calls `self.encode(inputs, training)` in `call`, and
    lists its own constructor arguments in `_head_config()`.

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        dtype: dtype or `keras.DTypePolicy` of the head; defaults to the
            encoder's policy.
        **kwargs: standard `keras.Model` arguments, such as `name`.
    """

    def __init__(self, encoder, dtype=None, **kwargs):
        if not isinstance(encoder, BertEncoder):
            raise ValueError(
                f"`encoder` of {type(self).__name__} must be a "
                f"tfnlp.models.BertEncoder. Received a {type(encoder).__name__}; "
                "make one with BertEncoder(BertConfig.preset('base')) or "
                "BertEncoder.from_huggingface(path)."
            )
        if dtype is None:
            dtype = encoder.dtype_policy
        super().__init__(dtype=dtype, **kwargs)
        self.encoder = encoder

    @property
    def config(self):
        """The encoder's `BertConfig`."""
        return self.encoder.config

    def head_initializer(self):
        """The initializer of a head's weight matrix: the encoder's
        `TruncatedNormal(stddev=config.initializer_range)`."""
        return keras.initializers.TruncatedNormal(
            stddev=self.encoder.config.initializer_range
        )

    def encode(self, inputs, training=None):
        """The encoder's outputs for the `input_ids`, `input_mask` and
        `segment_ids` of the dict `inputs` (other keys are ignored)."""
        if not isinstance(inputs, dict):
            raise ValueError(
                f"{type(self).__name__} takes a dict with "
                f"{', '.join(ENCODER_INPUTS)} (as tfnlp.text.pack_inputs makes "
                f"it). Received a {type(inputs).__name__}."
            )
        missing = [key for key in ENCODER_INPUTS if key not in inputs]
        if missing:
            raise ValueError(
                f"{type(self).__name__}: the inputs lack {', '.join(missing)}; "
                f"they have {sorted(inputs)}. Pack the text with "
                "tfnlp.text.pack_inputs, which gives input_ids, input_mask and "
                "segment_ids."
            )
        return self.encoder(
            {key: inputs[key] for key in ENCODER_INPUTS}, training=training
        )

    def _head_config(self):
        return {}

    def get_config(self):
        return encoder_model_config(self, **self._head_config())

    @classmethod
    def from_config(cls, config):
        return encoder_model_from_config(cls, config)


@keras.saving.register_keras_serializable(package="tfnlp")
class BertClassifier(BertFinetuningModel):
    """BERT for sequence (or sentence-pair) classification.

    A sentence vector goes through dropout and a dense layer of
    `num_classes` units; the result is float32 logits (no softmax), also
    under mixed precision. Train with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`. The
    sentence vector is the encoder's `pooled_output` (the tanh dense layer
    on the [CLS] state), as in BERT and keras-hub's `BertTextClassifier`,
    or with `pooling="mean"` the mean of the real tokens' final states:
    the sentence embedding of sentence-transformers models such as
    all-MiniLM-L6-v2, which were trained for it and whose pooler layer was
    never trained.

    Args:
        encoder: a `tfnlp.models.BertEncoder` (for example
            `BertEncoder.from_huggingface(path)`).
        num_classes: the number of labels.
        dropout: dropout rate before the dense layer (training only).
        pooling: "pooled_output" or "mean" (see above).
        dtype: dtype or policy of the head; defaults to the encoder's.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict of int32 `[batch, length]` `input_ids`,
            `input_mask` and `segment_ids` (`tfnlp.text.pack_inputs`);
            other keys are ignored.
        training: whether dropout is active.

    Returns:
        float32 logits `[batch, num_classes]`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> classifier = BertClassifier(encoder, num_classes=3)
    >>> logits = classifier({
    ...     "input_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...     "segment_ids": np.zeros((1, 5), "int32"),
    ... })
    >>> tuple(logits.shape)
    (1, 3)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 4.1)
        - [Reimers & Gurevych, 2019. Sentence-BERT: Sentence Embeddings
          using Siamese BERT-Networks](https://arxiv.org/abs/1908.10084)
          (mean pooling)
    """

    def __init__(self, encoder, num_classes, dropout=0.1, pooling="pooled_output",
                 dtype=None, **kwargs):
        check_num_classes(num_classes, "BertClassifier")
        check_dropout(dropout, "BertClassifier")
        if pooling not in POOLING:
            raise ValueError(
                f"`pooling` must be one of {', '.join(POOLING)}; received {pooling!r}. Use "
                "'mean' for a sentence-transformers checkpoint, 'pooled_output' otherwise."
            )
        super().__init__(encoder, dtype=dtype, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.pooling = pooling
        self.classifier_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="classifier_dropout"
        )
        self.classifier_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=self.head_initializer(),
            dtype=self.dtype_policy,
            name="classifier_dense",
        )
        self.classifier_dense.build((None, encoder.config.hidden_size))
        self.built = True

    def sentence_vector(self, inputs, training=None):
        """The sentence vector `[batch, hidden_size]` that the dense layer
        reads: `pooled_output`, or with `pooling="mean"` the mean of the
        real tokens' final states."""
        outputs = self.encode(inputs, training)
        if self.pooling == "mean":
            return mean_over_tokens(outputs["sequence_output"], inputs["input_mask"])
        return outputs["pooled_output"]

    def call(self, inputs, training=None):
        sentence = self.sentence_vector(inputs, training)
        hidden = self.classifier_dropout(sentence, training=training)
        return ops.cast(self.classifier_dense(hidden), "float32")

    def _head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "pooling": self.pooling}


POOLING = ("pooled_output", "mean")


def mean_over_tokens(sequence_output, input_mask):
    """The mean of `sequence_output` `(batch, length, hidden)` over the
    positions where `input_mask` is 1 (a row without any: zeros)."""
    weights = ops.cast(ops.expand_dims(input_mask, -1), sequence_output.dtype)
    total = ops.sum(sequence_output * weights, axis=1)
    count = ops.maximum(ops.sum(weights, axis=1), ops.cast(1, weights.dtype))
    return total / count

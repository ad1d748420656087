"""GPT for sequence classification, from the last real token's state."""

import keras
from keras import ops

from tfnlp.layers.dropout import Dropout
from tfnlp.models.gpt.gpt_backbone import GPTBackbone, split_inputs
from tfnlp.models.model_config import check_dropout, check_num_classes
from tfnlp.models.preset_model import PresetModel


def last_token_positions(token_ids, padding_mask=None):
    """The position of each row's last real token, int32 `(batch,)`: the
    last `True` of `padding_mask` (0 for a row without one), or the last
    position without a mask."""
    length = ops.shape(token_ids)[1]
    if padding_mask is None:
        return ops.full((ops.shape(token_ids)[0],), length - 1, dtype="int32")
    positions = ops.arange(length, dtype="int32")[None, :]
    return ops.max(ops.where(padding_mask, positions, 0), axis=1)


@keras.saving.register_keras_serializable(package="tfnlp")
class GPTSequenceClassifier(PresetModel):
    """A GPT decoder with a classifier on its last real token.

    In a causal decoder only the last token has read the whole sequence,
    so its final hidden state stands for the sequence (as in Radford et
    al., 2018, and Hugging Face's `GPT2ForSequenceClassification`): it goes
    through dropout and a dense layer without bias (Hugging Face's
    `score`) of `num_classes` units. The result is float32 logits (no
    softmax), also under mixed precision. Padding, wherever it is, changes
    nothing: the last real token is found from the padding mask, and
    causal attention never reads the padding after it. Fine-tune a
    pretrained decoder with `GPTSequenceClassifier(lm.backbone, ...)` or
    `GPTBackbone.from_huggingface(path)`.

    Args:
        backbone: a `tfnlp.models.GPTBackbone`.
        num_classes: the number of labels.
        dropout: the dropout rate before the dense layer (training only).
        dtype: the dtype policy of the head; defaults to the backbone's.
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        inputs: a dict with int `token_ids` `(batch, length)` and boolean
            `padding_mask` (`True` = real token); or token ids alone, when
            every row fills the length.
        training: whether dropout is active.

    Returns:
        float32 logits `(batch, num_classes)`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import GPTBackbone
    >>> classifier = GPTSequenceClassifier(
    ...     GPTBackbone.from_preset("tiny", num_layers=1), num_classes=3)
    >>> logits = classifier({"token_ids": np.array([[5, 6, 7, 0]]),
    ...                      "padding_mask": np.array([[1, 1, 1, 0]], bool)})
    >>> tuple(logits.shape)
    (1, 3)

    References:
        - [Radford et al., 2018. Improving Language Understanding by
          Generative Pre-Training](https://openai.com/research/language-unsupervised)
          (section 3.2: the last token's state, fine-tuned)
    """

    nested_arguments = ("backbone",)

    def __init__(self, backbone, num_classes, dropout=0.0, dtype=None, **kwargs):
        if not isinstance(backbone, GPTBackbone):
            raise ValueError(
                f"`backbone` of GPTSequenceClassifier must be a tfnlp.models.GPTBackbone; "
                f"received a {type(backbone).__name__}. Make one with "
                "GPTBackbone.from_preset(name), GPTBackbone.from_huggingface(path) or "
                "take a language model's: GPTCausalLM(...).backbone."
            )
        check_num_classes(num_classes, "GPTSequenceClassifier")
        check_dropout(dropout, "GPTSequenceClassifier")
        super().__init__(dtype=backbone.dtype_policy if dtype is None else dtype, **kwargs)
        self.backbone = backbone
        self.num_classes = num_classes
        self.dropout = dropout
        self.classifier_dropout = Dropout(dropout, dtype=self.dtype_policy,
                                          name="classifier_dropout")
        self.score = keras.layers.Dense(
            num_classes,
            use_bias=False,
            kernel_initializer=keras.initializers.RandomNormal(
                stddev=backbone.initializer_range),
            dtype=self.dtype_policy,
            name="score",
        )
        self.score.build((None, backbone.hidden_dim))
        self.built = True

    def call(self, inputs, training=None):
        token_ids, padding_mask = split_inputs(inputs)
        hidden_states = self.backbone.forward(token_ids, padding_mask, training=training)[0]
        last = last_token_positions(token_ids, padding_mask)
        last_states = ops.take_along_axis(hidden_states, last[:, None, None], axis=1)[:, 0]
        x = self.classifier_dropout(last_states, training=training)
        return ops.cast(self.score(x), "float32")

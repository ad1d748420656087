"""Contextual token features from BERT's hidden layers (feature-based use).

The BERT paper (section 5.3, Table 7) compares ways of turning the hidden
layers into features for a task model trained on top of a frozen BERT;
`bert_features` computes the plain-string strategies:

| strategy             | features                                   | width |
|----------------------|--------------------------------------------|-------|
| `"last"`             | the last layer                             | H     |
| `"second_to_last"`   | the layer before the last                  | H     |
| `"sum_last_four"`    | the sum of the last four layers            | H     |
| `"concat_last_four"` | the last four layers side by side, last first | 4H |

Table 7's learned "weighted sum" is `tfnlp.layers.ScalarMix` over
`encoder_outputs`.
"""

import keras
from keras import ops

from tfnlp.models.bert.bert_classifier import BertFinetuningModel

# strategy -> number of (last) layers it reads.
_LAYERS_NEEDED = {
    "last": 1,
    "second_to_last": 2,
    "sum_last_four": 4,
    "concat_last_four": 4,
}
FEATURE_STRATEGIES = tuple(_LAYERS_NEEDED)


def _check_strategy(strategy, num_layers):
    if strategy not in _LAYERS_NEEDED:
        raise ValueError(
            f"Unknown feature strategy {strategy!r}. Use one of: "
            f"{', '.join(FEATURE_STRATEGIES)}."
        )
    if num_layers < _LAYERS_NEEDED[strategy]:
        raise ValueError(
            f"The feature strategy {strategy!r} reads the last "
            f"{_LAYERS_NEEDED[strategy]} layers, but the encoder has "
            f"{num_layers}. Use an encoder with more layers, or the strategy "
            "'last'."
        )


def bert_features(outputs, strategy="last"):
    """Token features from the hidden layers of a `BertEncoder`.

    Args:
        outputs: the encoder's output dict (its `encoder_outputs` are read)
            or the list of every layer's output, first layer first, each
            `[batch, length, hidden]`.
        strategy: `"last"`, `"second_to_last"`, `"sum_last_four"` or
            `"concat_last_four"` (see the module doc). `concat_last_four`
            puts the last layer first, then the second-to-last, and so on
            (the order of the original `extract_features.py`'s default
            `--layers=-1,-2,-3,-4`).

    Returns:
        `[batch, length, hidden]` features (`[batch, length, 4 * hidden]`
        for `"concat_last_four"`), in the layers' dtype.

    Raises:
        ValueError: for an unknown strategy, or fewer layers than it reads.

    Example:

    >>> import numpy as np
    >>> layers = [np.full((1, 2, 3), float(i), "float32") for i in range(5)]
    >>> features = bert_features(layers, "sum_last_four")
    >>> keras.ops.convert_to_numpy(features)[0, 0].tolist()  # 1 + 2 + 3 + 4
    [10.0, 10.0, 10.0]
    >>> tuple(bert_features(layers, "concat_last_four").shape)
    (1, 2, 12)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 5.3, Table 7)
    """
    if isinstance(outputs, dict):
        if "encoder_outputs" not in outputs:
            raise ValueError(
                "bert_features takes a BertEncoder's output dict (with "
                f"'encoder_outputs') or a list of layer outputs. The dict has "
                f"{sorted(outputs)}."
            )
        layers = list(outputs["encoder_outputs"])
    elif isinstance(outputs, (list, tuple)):
        layers = list(outputs)
    else:
        raise ValueError(
            "bert_features takes a BertEncoder's output dict or a list of "
            f"layer outputs. Received a {type(outputs).__name__}."
        )
    _check_strategy(strategy, len(layers))
    if strategy == "last":
        return ops.convert_to_tensor(layers[-1])
    if strategy == "second_to_last":
        return ops.convert_to_tensor(layers[-2])
    last_four = [ops.convert_to_tensor(layer) for layer in layers[-4:]]
    if strategy == "sum_last_four":
        total = last_four[0]
        for layer in last_four[1:]:
            total = total + layer
        return total
    return ops.concatenate(last_four[::-1], axis=-1)


@keras.saving.register_keras_serializable(package="tfnlp")
class BertFeatureExtractor(BertFinetuningModel):
    """A `BertEncoder` that returns token features (`bert_features`).

    Args:
        encoder: a `tfnlp.models.BertEncoder`. To keep it frozen while a
            task model trains on the features, set `encoder.trainable =
            False`.
        strategy: `"last"`, `"second_to_last"`, `"sum_last_four"` or
            `"concat_last_four"` (see `bert_features`).
        dtype: dtype or policy; defaults to the encoder's.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict of int32 `[batch, length]` `input_ids`,
            `input_mask` and `segment_ids`; other keys are ignored.
        training: whether dropout is active.

    Returns:
        `[batch, length, hidden]` features, `[batch, length, 4 * hidden]`
        for `"concat_last_four"`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> config = BertConfig.preset("tiny", vocab_size=100, num_layers=2)
    >>> extractor = BertFeatureExtractor(BertEncoder(config), "second_to_last")
    >>> features = extractor({
    ...     "input_ids": np.array([[2, 7, 9, 3]], "int32"),
    ...     "input_mask": np.ones((1, 4), "int32"),
    ...     "segment_ids": np.zeros((1, 4), "int32"),
    ... })
    >>> tuple(features.shape)
    (1, 4, 128)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 5.3, Table 7)
    """

    def __init__(self, encoder, strategy="last", dtype=None, **kwargs):
        super().__init__(encoder, dtype=dtype, **kwargs)
        _check_strategy(strategy, encoder.config.num_layers)
        self.strategy = strategy
        self.built = True

    def call(self, inputs, training=None):
        return bert_features(self.encode(inputs, training), self.strategy)

    def _head_config(self):
        return {"strategy": self.strategy}

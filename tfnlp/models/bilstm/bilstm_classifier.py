"""The one-layer BiLSTM sentence classifier, a small student for distillation."""

import keras
import numpy as np
from keras import ops

from tfnlp.layers.dropout import Dropout
from tfnlp.layers.lstm_encoder import LSTMEncoder
from tfnlp.layers.masking import large_negative_number
from tfnlp.models.gpt.gpt_backbone import split_inputs
from tfnlp.models.model_config import check_dropout, check_num_classes, model_config
from tfnlp.models.preset_model import PresetModel, constructor_argument_names

# The `pooling` choices: the concatenated final states of the two
# directions, or the maximum of each feature over the real tokens.
POOLINGS = ("final", "max")

# Preset name -> constructor arguments (the vocabulary and the labels come
# from the task: `BiLSTMClassifier.from_preset(name, vocabulary_size,
# num_classes)`). tiny: for tests. tang2019: the student of Tang et al.
# (2019): 300-dimensional word vectors, 150 LSTM units per direction, a ReLU
# layer of 200 units.
BILSTM_PRESETS = {
    "tiny": dict(embedding_dim=16, lstm_units=8, hidden_dim=16, dropout=0.0),
    "tang2019": dict(embedding_dim=300, lstm_units=150, hidden_dim=200),
}


@keras.saving.register_keras_serializable(package="tfnlp")
class BiLSTMClassifier(PresetModel):
    """A word-embedding BiLSTM with a ReLU classifier (Tang et al., 2019).

    Token ids are embedded (an embedding of `vocabulary_size` rows, which
    pretrained word vectors can initialise; optionally two channels of
    them, one trained and one static), read by one bidirectional LSTM
    (`tfnlp.layers.LSTMEncoder`), pooled into one vector per sentence, and
    classified by a ReLU dense layer of `hidden_dim` units, dropout and a
    dense layer of `num_classes` units. The result is float32 logits (no
    softmax), also under mixed precision.

    Padding never changes the logits: the LSTM skips the padded steps, so
    with `pooling="final"` the forward state is the one after the last real
    token and the backward state the one after the first; with
    `pooling="max"` the maximum runs over the real tokens alone. A row
    without any real token gets a zero sentence vector.

    As the student of a distillation, train it on the teacher's logits with
    `tfnlp.losses.DistillationLoss` or `tfnlp.losses.LogitMeanSquaredError`.
    With `compile()` + `fit()`, `y` may be the teacher's logits alone, or a
    dict with `"teacher_logits"` and `"label"`: the compiled loss then gets
    the whole dict (Keras itself would refuse a dict of targets for a model
    of one output), and the compiled metrics get the labels or, when the
    dict has none, the teacher's predicted classes (so that "accuracy" is
    the agreement with the teacher).

    Args:
        vocabulary_size: the number of token ids (rows of the embedding).
        num_classes: the number of labels.
        embedding_dim: the size of the word embeddings.
        lstm_units: the LSTM units of each direction; the final-state
            sentence vector has `2 * lstm_units` features.
        hidden_dim: the units of the ReLU layer.
        dropout: the dropout rate after the ReLU layer (training only).
        pooling: `"final"` (the final states of both directions,
            concatenated, as in Tang et al.) or `"max"` (the maximum of each
            feature of the LSTM outputs over the real tokens).
        freeze_embeddings: whether the embedding is left out of training
            (for pretrained word vectors kept as they are). Setting
            `model.trainable = True` later unfreezes it too, as Keras sets
            every sublayer.
        multichannel: whether each token is the concatenation of two
            embeddings that start from the same vectors: one trained, one
            left as it is (Kim's "multichannel", which Tang et al. use for
            SST-2). Words the training data never shows keep, in the static
            channel, vectors in the same space as everyone else's.
        padding_id: the token id of padding, from which the padding mask of
            bare token ids is derived.
        embedding_weights: None, or a float matrix `(vocabulary_size,
            embedding_dim)` of initial embeddings, such as word2vec or GloVe
            vectors aligned with the vocabulary. It is not part of the config
            (the weights are in a saved model). To load vectors later, call
            `model.token_embedding.set_weights([matrix])` (and the same on
            `model.static_embedding` with `multichannel`).
        dtype: the dtype policy of the layers (for example
            "mixed_bfloat16").
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: int token ids `(batch, length)`, padded with `padding_id`;
            or a dict with `"token_ids"` and, optionally, `"padding_mask"`
            (boolean `(batch, length)`, `True` = real token; derived from
            the ids when absent).
        training: whether dropout is active.

    Returns:
        float32 logits `(batch, num_classes)`.

    Example:

    >>> import numpy as np
    >>> model = BiLSTMClassifier.from_preset(
    ...     "tiny", vocabulary_size=100, num_classes=2)
    >>> token_ids = np.array([[5, 17, 42, 0, 0], [8, 9, 10, 11, 12]])
    >>> tuple(model(token_ids).shape)
    (2, 2)
    >>> vectors = np.random.default_rng(0).normal(size=(100, 16))
    >>> model = BiLSTMClassifier(vocabulary_size=100, num_classes=2,
    ...                          embedding_dim=16, lstm_units=8, hidden_dim=16,
    ...                          embedding_weights=vectors,
    ...                          freeze_embeddings=True)
    >>> np.allclose(model.token_embedding.get_weights()[0], vectors, atol=1e-6)
    True
    >>> [weight.name for weight in model.non_trainable_weights]
    ['embeddings']
    >>> model = BiLSTMClassifier.from_preset(
    ...     "tiny", vocabulary_size=100, num_classes=2, multichannel=True)
    >>> tuple(model(token_ids).shape), len(model.non_trainable_weights)
    ((2, 2), 1)

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
          (section 3.1)
        - [Kim, 2014. Convolutional Neural Networks for Sentence
          Classification](https://arxiv.org/abs/1408.5882) (multichannel
          embeddings)
        - [Hochreiter and Schmidhuber, 1997. Long Short-Term Memory](
          https://doi.org/10.1162/neco.1997.9.8.1735)
        - [Schuster and Paliwal, 1997. Bidirectional Recurrent Neural
          Networks](https://doi.org/10.1109/78.650093)
    """

    presets = BILSTM_PRESETS

    def __init__(
        self,
        vocabulary_size,
        num_classes,
        embedding_dim=300,
        lstm_units=150,
        hidden_dim=200,
        dropout=0.1,
        pooling="final",
        freeze_embeddings=False,
        multichannel=False,
        padding_id=0,
        embedding_weights=None,
        dtype=None,
        **kwargs,
    ):
        for name, value in (("vocabulary_size", vocabulary_size),
                            ("embedding_dim", embedding_dim),
                            ("lstm_units", lstm_units), ("hidden_dim", hidden_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"BiLSTMClassifier: `{name}` must be a positive integer. "
                    f"Received: {value!r}."
                )
        check_num_classes(num_classes, "BiLSTMClassifier")
        check_dropout(dropout, "BiLSTMClassifier")
        if pooling not in POOLINGS:
            raise ValueError(
                f"BiLSTMClassifier: `pooling` must be one of {', '.join(POOLINGS)}. "
                f"Received: {pooling!r}."
            )
        if multichannel and freeze_embeddings:
            raise ValueError(
                "BiLSTMClassifier: `multichannel=True` trains one of its two embedding "
                "channels, so it cannot be combined with `freeze_embeddings=True`. "
                "Pass one of them.")
        if embedding_weights is not None:
            embedding_weights = np.asarray(embedding_weights)
            if embedding_weights.shape != (vocabulary_size, embedding_dim):
                raise ValueError(
                    "BiLSTMClassifier: `embedding_weights` must have the shape "
                    f"(vocabulary_size, embedding_dim) = ({vocabulary_size}, "
                    f"{embedding_dim}). Received a matrix of shape "
                    f"{embedding_weights.shape}; align the word vectors with the "
                    "vocabulary (one row per token id) or change the sizes."
                )
        super().__init__(dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_classes = num_classes
        self.embedding_dim = embedding_dim
        self.lstm_units = lstm_units
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.pooling = pooling
        self.freeze_embeddings = bool(freeze_embeddings)
        self.multichannel = bool(multichannel)
        self.padding_id = padding_id

        policy = self.dtype_policy
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=policy, name="token_embedding")
        self.token_embedding.trainable = not self.freeze_embeddings
        self.static_embedding = None
        if self.multichannel:
            self.static_embedding = keras.layers.Embedding(
                vocabulary_size, embedding_dim, dtype=policy, name="static_embedding")
            self.static_embedding.trainable = False
        self.encoder = LSTMEncoder(lstm_units, num_layers=1, bidirectional=True,
                                   dtype=policy, name="encoder")
        self.hidden_dense = keras.layers.Dense(
            hidden_dim, activation="relu", dtype=policy, name="hidden_dense")
        self.hidden_dropout = Dropout(dropout, dtype=policy, name="hidden_dropout")
        self.classifier_dense = keras.layers.Dense(
            num_classes, dtype=policy, name="classifier_dense")
        self.build()
        if embedding_weights is not None:
            self.token_embedding.set_weights([embedding_weights])
        if self.static_embedding is not None:
            # Both channels start equal: the static one is a frozen copy.
            self.static_embedding.set_weights(self.token_embedding.get_weights())

    @classmethod
    def from_preset(cls, name, vocabulary_size, num_classes, **overrides):
        """A model of the sizes of preset `name` (a key of
        `BILSTM_PRESETS`: "tiny", "tang2019"); `overrides` change any
        constructor argument."""
        return super().from_preset(name, vocabulary_size=vocabulary_size,
                                   num_classes=num_classes, **overrides)

    def embeddings(self):
        """The embedding layers: the trained one, then the static one with
        `multichannel`."""
        return [self.token_embedding] + (
            [self.static_embedding] if self.static_embedding is not None else [])

    def build(self, inputs_shape=None):
        """Creates every variable (the shapes do not depend on the inputs)."""
        for embedding in self.embeddings():
            embedding.build((None, None))
        self.encoder.build((None, None, self.embedding_dim * len(self.embeddings())))
        self.hidden_dense.build((None, self.encoder.output_dim))
        self.hidden_dropout.build((None, self.hidden_dim))
        self.classifier_dense.build((None, self.hidden_dim))
        self.built = True

    def sentence_vectors(self, inputs, training=None):
        """The pooled BiLSTM states `(batch, 2 * lstm_units)` of `inputs`
        (token ids or a dict, as in `call`), before the ReLU layer."""
        token_ids, padding_mask = split_inputs(inputs)
        if padding_mask is None:
            padding_mask = ops.not_equal(token_ids, self.padding_id)
        channels = [embedding(token_ids) for embedding in self.embeddings()]
        embedded = channels[0] if len(channels) == 1 else ops.concatenate(channels, axis=-1)
        outputs = self.encoder(embedded, mask=padding_mask, training=training)
        return self.pool(outputs["sequence_output"], outputs["final_states"][-1][0],
                         padding_mask)

    def pool(self, sequences, final_hidden, padding_mask):
        """The sentence vector of the encoder's last-layer `sequences`
        `(batch, length, 2 * lstm_units)` and `final_hidden` states (both
        directions' last hidden states, concatenated), by `pooling`."""
        if self.pooling == "final":
            return final_hidden
        masked = ops.where(padding_mask[:, :, None], sequences,
                           large_negative_number(sequences.dtype))
        has_tokens = ops.any(padding_mask, axis=1)[:, None]
        return ops.where(has_tokens, ops.max(masked, axis=1), 0.0)

    def classify(self, sentence_vectors, training=None):
        """The logits (float32) of pooled `sentence_vectors`: the ReLU
        layer, its dropout and the classification layer."""
        hidden = self.hidden_dense(sentence_vectors)
        hidden = self.hidden_dropout(hidden, training=training)
        return ops.cast(self.classifier_dense(hidden), "float32")

    def call(self, inputs, training=None):
        return self.classify(self.sentence_vectors(inputs, training=training),
                             training=training)

    # --- compile() + fit() with distillation targets -------------------------

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y, dict) or not isinstance(self.loss, keras.losses.Loss):
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        # The compiled loss takes the dict of targets whole (as
        # tfnlp.losses.DistillationLoss does); it scales itself under
        # tf.distribute, the additional losses are added as Keras adds them.
        loss = self.loss(y, y_pred, sample_weight)
        for additional_loss in self.losses:
            loss = loss + ops.cast(ops.sum(additional_loss), loss.dtype)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if not isinstance(y, dict) or not hasattr(self.loss, "targets"):
            return super().compute_metrics(x, y, y_pred, sample_weight)
        # The distillation loss reads its dict of targets; the metrics score
        # the gold labels, or the teacher's classes where there are none.
        teacher_logits, labels = self.loss.targets(y)
        if labels is None:
            labels = ops.argmax(teacher_logits, axis=-1)
        return super().compute_metrics(x, labels, y_pred, sample_weight)

    def get_config(self):
        # The embedding matrix is in the weights, not in the config.
        arguments = {name: getattr(self, name)
                     for name in constructor_argument_names(type(self))
                     if name != "embedding_weights"}
        return model_config(self, **arguments)

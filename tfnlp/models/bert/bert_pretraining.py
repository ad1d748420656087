"""The BERT pretraining model: masked LM and next-sentence heads on an encoder.

The masked-LM head runs only on the masked positions: the encoder's
`sequence_output` is gathered at `masked_lm_positions` ([batch, P], P the
predictions per sequence, about 15% of the length) before the dense,
LayerNorm and vocabulary projection, which are the costly part for a
30k-token vocabulary. The encoder's last block, too, computes its outputs
only at [CLS] and the masked positions (its keys and values still cover the
whole sequence), since the heads read no other row of it. The projection is
tied to the encoder's token embedding matrix (`logits = h · Eᵀ + b`), as in
the original BERT.

The losses (`tfnlp.losses.pretraining_losses`) are plain functions of the
batch and the model's outputs; `BertPretrainingModel.compute_loss` uses them
for `model.compile()` + `model.fit()`.
"""

import keras
from keras import ops

from tfnlp.layers.activations import get_activation
from tfnlp.losses.pretraining_losses import (
    LABEL_KEYS,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
    pretraining_loss,
    required_feature,
)
from tfnlp.metrics import MaskedLMAccuracy, MaskedLMPerplexity, NextSentenceAccuracy
from tfnlp.models.bert import huggingface
from tfnlp.models.bert.bert_encoder import (
    ENCODER_INPUTS,
    BertEncoder,
    encoder_model_config,
    encoder_model_from_config,
)



@keras.saving.register_keras_serializable(package="tfnlp")
class BertPretrainingModel(keras.Model):
    """BERT with its pretraining heads: masked LM and next sentence.

    Masked LM: the encoder's `sequence_output` is gathered at
    `masked_lm_positions`, then goes through a dense layer of width
    `hidden_size`, the config's `hidden_activation` and a LayerNorm (the
    config's epsilon); the logits are the product with the transposed token
    embedding matrix of the encoder (tied weights) plus a `vocab_size`
    bias. Next sentence: a 2-way dense layer on `pooled_output`. Both
    logits are float32, also under a mixed-precision policy.

    Every layer is built in the constructor, so the weights exist (to load
    or restore) before the first call. `get_config()` holds the encoder as
    a nested Keras object.

    Training with `compile()` + `fit()`: compile without a `loss` and fit on
    the batches of `tfnlp.data.pretraining_dataset` (the labels are in the
    batch dict; a `(features, labels)` pair of dicts works too).
    `compute_loss` returns `pretraining_loss(...)["loss"]` (plus any
    regularization losses), divided by the number of replicas under
    `tf.distribute` as Keras' own losses are; `fit` and `evaluate` report
    `loss`, `masked_lm_accuracy`, `masked_lm_perplexity` and
    `next_sentence_accuracy` (`tfnlp.metrics`). A `loss` given to
    `compile()` replaces this and sees `y` only. Keras 3 (TensorFlow
    backend) caveat: on a dataset of unknown cardinality with a static batch
    size, such as `pretraining_dataset`'s, the `loss` that `fit`/`evaluate`
    log counts one extra, empty batch at the end of each pass (the step
    that finds the iterator exhausted); give `steps_per_epoch`/`steps`, or
    `tf.data.experimental.assert_cardinality`. The metrics here are not
    affected.

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        dtype: dtype or `keras.DTypePolicy` of the heads; defaults to the
            encoder's policy.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict with the int32 `[batch, length]` tensors `input_ids`,
            `input_mask` and `segment_ids`, and the int32 `[batch, P]`
            `masked_lm_positions`; other keys (the labels) are ignored.
            Positions must lie in `[0, length)`; padded predictions
            usually point at position 0 and are weighted 0 by the loss.
        training: whether dropout is active.

    Returns:
        A dict: `mlm_logits` float32 `[batch, P, vocab_size]` and
        `nsp_logits` float32 `[batch, 2]` (index 1: "B is a random
        sentence", as `next_sentence_labels`).

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> config = BertConfig.preset("tiny", vocab_size=100, num_layers=1)
    >>> model = BertPretrainingModel(BertEncoder(config))
    >>> batch = {
    ...     "input_ids": np.array([[2, 4, 7, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...     "segment_ids": np.zeros((1, 5), "int32"),
    ...     "masked_lm_positions": np.array([[2, 0]], "int32"),
    ...     "masked_lm_ids": np.array([[9, 0]], "int32"),
    ...     "masked_lm_weights": np.array([[1.0, 0.0]], "float32"),
    ...     "next_sentence_labels": np.array([[0]], "int32"),
    ... }
    >>> outputs = model(batch)
    >>> tuple(outputs["mlm_logits"].shape), tuple(outputs["nsp_logits"].shape)
    ((1, 2, 100), (1, 2))
    >>> sorted(pretraining_loss(batch, outputs))
    ['loss', 'masked_lm_loss', 'next_sentence_loss']

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    def __init__(self, encoder, dtype=None, **kwargs):
        if not isinstance(encoder, BertEncoder):
            raise ValueError(
                "`encoder` must be a tfnlp.models.BertEncoder. Received a "
                f"{type(encoder).__name__}; make one with "
                "BertEncoder(BertConfig.preset('base')) or "
                "BertEncoder.from_huggingface(path)."
            )
        if dtype is None:
            dtype = encoder.dtype_policy
        super().__init__(dtype=dtype, **kwargs)
        config = encoder.config
        self.encoder = encoder
        initializer = keras.initializers.TruncatedNormal(stddev=config.initializer_range)

        # === Masked-LM head ===
        self.masked_lm_dense = keras.layers.Dense(
            config.hidden_size,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="masked_lm_dense",
        )
        self.masked_lm_activation = get_activation(config.hidden_activation)
        self.masked_lm_layer_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="masked_lm_layer_norm",
        )
        self.masked_lm_dense.build((None, None, config.hidden_size))
        self.masked_lm_layer_norm.build((None, None, config.hidden_size))
        self.masked_lm_bias = self.add_weight(
            shape=(config.vocab_size,),
            initializer="zeros",
            name="masked_lm_bias",
        )

        # === Next-sentence head ===
        self.next_sentence_dense = keras.layers.Dense(
            2,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="next_sentence_dense",
        )
        self.next_sentence_dense.build((None, config.hidden_size))

        # === Metrics reported by fit() and evaluate() ===
        self.masked_lm_accuracy = MaskedLMAccuracy()
        self.masked_lm_perplexity = MaskedLMPerplexity()
        self.next_sentence_accuracy = NextSentenceAccuracy()
        self.built = True

    @property
    def config(self):
        """The encoder's `BertConfig`."""
        return self.encoder.config

    def call(self, inputs, training=None):
        positions = required_feature(inputs, MASKED_LM_POSITIONS, type(self).__name__)
        # The last encoder block computes only [CLS] and the masked
        # positions: the heads read no other row of it.
        encoder_outputs = self.encoder.encode(
            _encoder_inputs(inputs), query_positions=positions, training=training)
        return {
            "mlm_logits": self._masked_lm_logits(encoder_outputs["sequence_output"]),
            "nsp_logits": ops.cast(
                self.next_sentence_dense(encoder_outputs["pooled_output"]), "float32"),
        }

    def _masked_lm_logits(self, hidden):
        """Logits of the `[batch, P, hidden]` gathered states."""
        hidden = self.masked_lm_dense(hidden)
        hidden = self.masked_lm_activation(hidden)
        hidden = self.masked_lm_layer_norm(hidden)
        embeddings = ops.cast(
            self.encoder.token_embedding.embeddings, self.compute_dtype
        )
        logits = ops.matmul(hidden, ops.transpose(embeddings))
        logits = logits + ops.cast(self.masked_lm_bias, self.compute_dtype)
        return ops.cast(logits, "float32")

    # --- compile() + fit() ------------------------------------------------

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.loss is not None:  # compile() was given a loss of its own
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        labels = _labels(x, y)
        loss = pretraining_loss(labels, y_pred)["loss"]
        for additional_loss in self.losses:
            loss = loss + ops.cast(ops.sum(additional_loss), "float32")
        return _scale_for_replicas(loss)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if self.loss is None:
            labels = _labels(x, y)
            self.masked_lm_accuracy.update_state(
                labels[MASKED_LM_IDS], y_pred["mlm_logits"], labels[MASKED_LM_WEIGHTS]
            )
            self.masked_lm_perplexity.update_state(
                labels[MASKED_LM_IDS], y_pred["mlm_logits"], labels[MASKED_LM_WEIGHTS]
            )
            self.next_sentence_accuracy.update_state(
                labels[NEXT_SENTENCE_LABELS], y_pred["nsp_logits"]
            )
        return super().compute_metrics(x, y, y_pred, sample_weight)

    # --- Hugging Face -------------------------------------------------------

    @classmethod
    def from_huggingface(cls, path, config_overrides=None, dtype=None, **kwargs):
        """The model with the weights of a Hugging Face BERT checkpoint.

        Loads the encoder as `BertEncoder.from_huggingface` does, and the
        pretraining heads (`cls.*`, as `BertForPreTraining` stores them) with
        `huggingface.load_huggingface_head_weights`. A head the checkpoint
        lacks (a `BertModel` has neither, a `BertForMaskedLM` has no
        next-sentence head) keeps its fresh initialization.

        Args:
            path: the checkpoint directory (`config.json`,
                `model.safetensors`).
            config_overrides: `BertConfig` fields to change (dropouts).
            dtype: dtype or policy of the encoder and the heads.
            **kwargs: standard `keras.Model` arguments, such as `name`.

        Raises:
            ValueError: as `BertEncoder.from_huggingface`, and for head
                tensors that are unknown, incomplete, of the wrong shape, or
                an untied decoder (see `load_huggingface_head_weights`).
        """
        return cls.from_huggingface_checkpoint(
            huggingface.read_huggingface_checkpoint(path), path, config_overrides, dtype,
            **kwargs)

    @classmethod
    def from_huggingface_checkpoint(cls, checkpoint, source, config_overrides=None, dtype=None,
                                    **kwargs):
        """`from_huggingface` on the tensors of a checkpoint already read
        (`huggingface.read_huggingface_checkpoint`); `source` names it in
        errors."""
        encoder = BertEncoder.from_huggingface_checkpoint(
            checkpoint, source, config_overrides, dtype)
        model = cls(encoder, dtype=dtype, **kwargs)
        huggingface.load_huggingface_head_weights(model, checkpoint.head_tensors, source)
        return model

    # --- Serialization ------------------------------------------------------

    def get_config(self):
        return encoder_model_config(self)

    @classmethod
    def from_config(cls, config):
        return encoder_model_from_config(cls, config)


# --- Helpers ------------------------------------------------------------------


def _encoder_inputs(inputs):
    return {key: required_feature(inputs, key, "BertPretrainingModel") for key in ENCODER_INPUTS}


def _labels(x, y):
    """The label dict of a fit() batch: `y` when it is a dict, else `x`."""
    labels = y if isinstance(y, dict) else x
    if not isinstance(labels, dict) or not all(key in labels for key in LABEL_KEYS):
        present = sorted(labels) if isinstance(labels, dict) else type(labels).__name__
        raise ValueError(
            "BertPretrainingModel.fit/evaluate needs the labels "
            f"{', '.join(LABEL_KEYS)} in the batch dict (or in a dict `y`). "
            f"Found: {present}. Fit on tfnlp.data.pretraining_dataset batches, "
            "or give compile() a `loss` of your own."
        )
    return labels


def _scale_for_replicas(loss):
    """`loss / num_replicas_in_sync` under a `tf.distribute` strategy (the
    scaling Keras gives its own losses), `loss` otherwise and on JAX."""
    if keras.backend.backend() != "tensorflow":
        return loss
    # Only the replica count is read from TensorFlow; the model code above
    # stays keras.ops.
    import tensorflow as tf

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas > 1:
        loss = loss / replicas
    return loss

"""The BERT encoder: embeddings and a stack of post-LN Transformer blocks."""

import dataclasses

import keras
from keras import ops

from tfnlp.layers.dropout import Dropout
from tfnlp.layers.position_embedding import PositionEmbedding
from tfnlp.layers.transformer_encoder_block import TransformerEncoderBlock
from tfnlp.models.bert import huggingface
from tfnlp.models.bert.bert_config import BERT_PRESETS, BertConfig
from tfnlp.models.model_config import model_config, model_from_config

# The encoder's inputs: the first three features of a pretraining record
# (tfnlp.data.pretraining_schema) and what tfnlp.text.pack_inputs makes.
ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


@keras.saving.register_keras_serializable(package="tfnlp")
class BertEncoder(keras.Model):
    """The BERT encoder, as a functional `keras.Model`.

    Token, segment and learned position embeddings are summed, normalised
    (LayerNorm) and dropped out, then go through `config.num_layers` post-LN
    `tfnlp.layers.TransformerEncoderBlock`s. The pooled output is a tanh
    dense layer on the hidden state of the first token ([CLS]). Every weight
    matrix starts from `TruncatedNormal(stddev=config.initializer_range)`.

    The layers are named like keras-hub's `BertBackbone`: `token_embedding`
    (its `embeddings` are `(vocab_size, hidden_size)`; a masked-LM head ties
    its output projection to them), `segment_embedding`,
    `position_embedding`, `embeddings_layer_norm`, `embeddings_dropout`,
    `transformer_layer_0` ... and `pooled_dense`. Pretrained Hugging Face
    weights load with `BertEncoder.from_huggingface`.

    `get_config()` holds only the `BertConfig` (and the name, trainability
    and dtype); `from_config` builds the model again from it, so the config
    and `.keras` files stay small and independent of the graph.

    Args:
        config: a `BertConfig`, or the dict of one (`BertConfig.to_dict()`).
        dtype: dtype or `keras.DTypePolicy` of every layer (for example
            "mixed_bfloat16"); defaults to Keras' global policy.
        **kwargs: standard `keras.Model` arguments, such as `name`.

    Call arguments:
        inputs: a dict of int32 `(batch, length)` tensors: `input_ids`
            (token ids), `input_mask` (1 for real tokens, 0 for padding) and
            `segment_ids` (0 for sentence A, 1 for B), as
            `tfnlp.text.pack_inputs` makes them; `length` is at most
            `config.max_position_embeddings`.
        training: whether dropout is active.

    Returns:
        A dict: `sequence_output` `(batch, length, hidden_size)`, the last
        block's output; `pooled_output` `(batch, hidden_size)`; and
        `encoder_outputs`, the list of every block's output (the last one
        is `sequence_output`).

    Example:

    >>> import numpy as np
    >>> encoder = BertEncoder.from_preset("tiny", vocab_size=100, num_layers=1)
    >>> outputs = encoder({
    ...     "input_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...     "segment_ids": np.zeros((1, 5), "int32"),
    ... })
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 5, 128), (1, 128))

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    #: The released BERT sizes: name -> `BertConfig` fields.
    presets = BERT_PRESETS

    def __init__(self, config, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if not isinstance(config, BertConfig):
            raise ValueError(
                "`config` must be a tfnlp.models.BertConfig (or its dict, "
                f"BertConfig.to_dict()). Received a {type(config).__name__}; "
                "make one with BertConfig.preset('base') or BertConfig(...)."
            )

        # === Layers ===
        self.token_embedding = keras.layers.Embedding(
            input_dim=config.vocab_size,
            output_dim=config.hidden_size,
            embeddings_initializer=_initializer(config),
            dtype=dtype,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            input_dim=config.type_vocab_size,
            output_dim=config.hidden_size,
            embeddings_initializer=_initializer(config),
            dtype=dtype,
            name="segment_embedding",
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=config.max_position_embeddings,
            initializer=_initializer(config),
            dtype=dtype,
            name="position_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_epsilon,
            dtype=dtype,
            name="embeddings_layer_norm",
        )
        self.embeddings_dropout = Dropout(
            config.hidden_dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.transformer_layers = [
            _transformer_layer(config, index, dtype)
            for index in range(config.num_layers)
        ]
        self.pooled_dense = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=_initializer(config),
            dtype=dtype,
            name="pooled_dense",
        )

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ENCODER_INPUTS
        }
        super().__init__(inputs=inputs, outputs=self.encode(inputs), **kwargs)
        if dtype is not None:
            # The sublayers got `dtype` above; this is the model's own policy.
            self.dtype_policy = keras.dtype_policies.get(dtype)

        # === Config ===
        self.config = config

    def encode(self, inputs, query_positions=None, training=None):
        """The encoder's forward pass: the one definition its functional
        graph is built from.

        Args:
            inputs: a dict of int `(batch, length)` `input_ids`,
                `input_mask` and `segment_ids`.
            query_positions: optional int `(batch, P)`: the last block then
                computes its outputs only at [CLS] and these positions (keys
                and values still span the whole sequence, so these rows
                equal the full encoder's); a masked-LM head reads no other
                row, and the rest of that block's work is skipped.
            training: whether dropout is active.

        Returns:
            A dict: `sequence_output` (`(batch, length, hidden)`, or the `P`
            rows at `query_positions`), `pooled_output` (`(batch,
            hidden)`, from [CLS]) and, without `query_positions`,
            `encoder_outputs` (every block's output).
        """
        input_ids, input_mask, segment_ids = (
            ops.cast(inputs[name], "int32") for name in ENCODER_INPUTS)
        tokens = self.token_embedding(input_ids)
        x = self.embeddings_add(
            [tokens, self.segment_embedding(segment_ids), self.position_embedding(tokens)]
        )
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
        if query_positions is None:
            encoder_outputs = []
            for transformer_layer in self.transformer_layers:
                x = transformer_layer(x, padding_mask=input_mask, training=training)
                encoder_outputs.append(x)
            return {
                "sequence_output": x,
                "pooled_output": self.pooled_dense(x[:, 0, :]),
                "encoder_outputs": encoder_outputs,
            }
        query_positions = ops.cast(query_positions, "int32")
        for transformer_layer in self.transformer_layers[:-1]:
            x = transformer_layer(x, padding_mask=input_mask, training=training)
        with_cls = ops.concatenate([ops.zeros_like(query_positions[:, :1]), query_positions],
                                   axis=1)
        x = self.transformer_layers[-1](
            x, padding_mask=input_mask, training=training, query_positions=with_cls
        )
        return {"sequence_output": x[:, 1:, :], "pooled_output": self.pooled_dense(x[:, 0, :])}

    @property
    def token_embedding_matrix(self):
        """The `(vocab_size, hidden_size)` token embedding variable."""
        return self.token_embedding.embeddings

    @classmethod
    def from_preset(cls, name, dtype=None, **overrides):
        """A new encoder of preset `name` (a key of `presets`); `overrides`
        change its `BertConfig` fields, such as `vocab_size=8000`."""
        return cls(BertConfig.preset(name, **overrides), dtype=dtype)

    @classmethod
    def from_huggingface(cls, path, config_overrides=None, dtype=None, **kwargs):
        """An encoder with the weights of a Hugging Face BERT checkpoint.

        Reads `path/config.json` and `path/model.safetensors` (or the shards
        of `model.safetensors.index.json`) with `safetensors`' numpy API, so
        PyTorch is not needed. Names with or without the `bert.` prefix and
        LayerNorm parameters named `gamma`/`beta` or `weight`/`bias` are
        accepted; the pretraining heads (`cls.*`) are left out here (see
        `BertPretrainingModel.from_huggingface`).

        Args:
            path: the checkpoint directory.
            config_overrides: `BertConfig` fields to change, such as the
                dropouts for fine-tuning (not the sizes: the weights fix them).
            dtype: as in the constructor.
            **kwargs: standard `keras.Model` arguments, such as `name`.

        Raises:
            ValueError: if the checkpoint has tensors the encoder does not
                know or lacks some it needs (both are listed), or a tensor's
                size does not match the config.
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
        config = dataclasses.replace(checkpoint.config, **(config_overrides or {}))
        encoder = cls(config, dtype=dtype, **kwargs)
        huggingface.load_encoder_weights(encoder, checkpoint.encoder_tensors, source)
        return encoder

    def get_config(self):
        # Not chained to keras.Model: a functional model's config is its
        # graph, which `__init__` cannot take; the BertConfig rebuilds it.
        return model_config(self, config=self.config.to_dict())

    @classmethod
    def from_config(cls, config):
        return model_from_config(cls, config)


def _initializer(config):
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _transformer_layer(config, index, dtype):
    return TransformerEncoderBlock(
        num_heads=config.num_heads,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout,
        attention_dropout=config.attention_dropout,
        activation=config.hidden_activation,
        layer_norm_epsilon=config.layer_norm_epsilon,
        norm_first=False,
        kernel_initializer=_initializer(config),
        dtype=dtype,
        name=f"transformer_layer_{index}",
    )


def encoder_model_config(model, **arguments):
    """The config of a model built on a `BertEncoder` (`model.encoder`).

    Not chained to `keras.Model.get_config`, whose config of a subclassed
    model holds only the name and trainability: the encoder is serialized as
    a nested Keras object, followed by the model's own constructor
    `arguments`, its name, trainability and dtype policy.
    """
    return model_config(model, encoder=keras.saving.serialize_keras_object(model.encoder),
                        **arguments)


def encoder_model_from_config(cls, config):
    """Rebuilds a model of class `cls` from an `encoder_model_config` dict."""
    return model_from_config(cls, config, nested=("encoder",))

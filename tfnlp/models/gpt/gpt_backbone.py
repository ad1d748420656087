"""The GPT decoder-only Transformer: token ids in, final hidden states out."""

import keras
from keras import ops

from tfnlp.layers.dropout import Dropout
from tfnlp.layers.position_embedding import PositionEmbedding
from tfnlp.layers.transformer_decoder_block import TransformerDecoderBlock
from tfnlp.models.gpt import huggingface
from tfnlp.models.preset_model import PresetModel

# The inputs of a dict call: int token ids (batch, length) and, optionally,
# a boolean padding mask (batch, length), True = real token.
TOKEN_IDS = "token_ids"
PADDING_MASK = "padding_mask"

# Preset name -> constructor arguments (of GPTBackbone and GPTCausalLM),
# smallest first. tiny: for tests. mini: nanoGPT's CPU example ("baby
# GPT", context 64). char: nanoGPT's Shakespeare character model (about
# 10.7 M parameters at 65 characters), which trains on a 2-core CPU. gpt2:
# the dimensions of GPT-2 small (124 M parameters), the size of its
# Hugging Face checkpoint.
GPT_PRESETS = {
    "tiny": dict(vocabulary_size=256, num_layers=2, num_heads=2, hidden_dim=64,
                 max_sequence_length=128, dropout=0.0),
    "mini": dict(vocabulary_size=65, num_layers=4, num_heads=4, hidden_dim=128,
                 max_sequence_length=64, dropout=0.0),
    "char": dict(vocabulary_size=65, num_layers=6, num_heads=6, hidden_dim=384,
                 max_sequence_length=256, dropout=0.2),
    "gpt2": dict(vocabulary_size=50257, num_layers=12, num_heads=12, hidden_dim=768,
                 max_sequence_length=1024, dropout=0.1),
}


POSITION_ENCODINGS = ("learned", "rotary")


def split_inputs(inputs):
    """`(token_ids, padding_mask)` of token ids or of a dict of
    `token_ids` and, optionally, `padding_mask` (None when absent)."""
    if isinstance(inputs, dict):
        padding_mask = inputs.get(PADDING_MASK)
        if padding_mask is not None:
            padding_mask = ops.cast(padding_mask, "bool")
        return ops.cast(inputs[TOKEN_IDS], "int32"), padding_mask
    return ops.cast(inputs, "int32"), None


@keras.saving.register_keras_serializable(package="tfnlp")
class GPTBackbone(PresetModel):
    """The GPT-2 decoder: token ids to the final hidden states.

    Token embeddings plus learned position embeddings, dropout, then a stack
    of pre-LN `tfnlp.layers.TransformerDecoderBlock`s without
    cross-attention (causal self-attention and a feed-forward network, each
    behind a LayerNorm and added to its input), then a final LayerNorm. The
    details are GPT-2's: the tanh approximation of GELU, LayerNorm epsilon
    1e-5, a feed-forward layer 4 times as wide as the model, and every
    weight initialized from a normal distribution of standard deviation
    `initializer_range`. The variables hold the weights of a Hugging Face
    GPT-2 checkpoint (`GPTBackbone.from_huggingface`), the same ones
    keras-hub's `GPT2Backbone` holds.

    `GPTCausalLM` puts the tied language-model head on top;
    `GPTSequenceClassifier` a classifier over the last real token.

    Args:
        vocabulary_size: the number of token ids (rows of the embedding).
        num_layers: the number of Transformer blocks.
        num_heads: attention heads per block; must divide `hidden_dim`.
        hidden_dim: the width of the embeddings and of every block.
        intermediate_dim: the width of the feed-forward layers; None for
            `4 * hidden_dim`.
        max_sequence_length: the longest sequence (rows of the position
            embedding; the bound of generation).
        dropout: the dropout rate of the embeddings, of the attention
            weights and of each sublayer's output.
        attention_dropout: the dropout rate of the attention weights, if it
            differs from `dropout`.
        layer_norm_epsilon: the epsilon of every LayerNorm.
        activation: the feed-forward activation ("gelu_approximate" is
            GPT-2's; "gelu", "relu", ...).
        initializer_range: the standard deviation of the initial weights.
        position_encoding: "learned" (GPT-2's table of position embeddings, added
            to the token embeddings) or "rotary" (queries and keys turned
            by their positions in every block; no table).
        query_key_norm: RMS-normalize each head's queries and keys (QK-norm).
        zero_output_projections: start the attention and feed-forward
            output kernels at zero, so each block starts as the identity.
        embedding_shortcuts: feed every block `a·x + b·x₀`, its input `x`
            mixed with the embeddings `x₀` by two learned scalars per block
            (`a = 1`, `b = 0` at the start; the speedrun's "x0" skip).
        dtype: the dtype policy of the layers (for example
            "mixed_bfloat16").
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        inputs: int token ids `(batch, length)`, or a dict with `token_ids`
            and `padding_mask` (boolean `(batch, length)`, `True` = real
            token: padding is not attended to; right padding needs no mask,
            since causal attention never reads ahead).
        training: whether dropout is active.

    Returns:
        The final hidden states `(batch, length, hidden_dim)`.

    Example:

    >>> import numpy as np
    >>> backbone = GPTBackbone.from_preset("tiny", num_layers=1)
    >>> hidden_states = backbone(np.array([[5, 6, 7]]))
    >>> tuple(hidden_states.shape)
    (1, 3, 64)

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://openai.com/research/better-language-models)
          (GPT-2)
        - [Radford et al., 2018. Improving Language Understanding by
          Generative Pre-Training](https://openai.com/research/language-unsupervised)
          (GPT)
        - [Xiong et al., 2020. On Layer Normalization in the Transformer
          Architecture](https://arxiv.org/abs/2002.04745) (pre-LN)
        - [Su et al., 2021. RoFormer](https://arxiv.org/abs/2104.09864)
          (rotary positions)
        - [Jordan et al., 2024. modded-nanogpt](
          https://github.com/KellerJordan/modded-nanogpt) (QK-norm, ReLU²,
          zero-initialized projections and embedding shortcuts in the
          speedrun's records)
    """

    presets = GPT_PRESETS

    def __init__(
        self,
        vocabulary_size,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        intermediate_dim=None,
        max_sequence_length=1024,
        dropout=0.1,
        attention_dropout=None,
        layer_norm_epsilon=1e-5,
        activation="gelu_approximate",
        initializer_range=0.02,
        position_encoding="learned",
        query_key_norm=False,
        zero_output_projections=False,
        embedding_shortcuts=False,
        dtype=None,
        **kwargs,
    ):
        if position_encoding not in POSITION_ENCODINGS:
            raise ValueError(
                f"position_encoding must be one of {', '.join(POSITION_ENCODINGS)}; "
                f"received {position_encoding!r}.")
        super().__init__(dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim or 4 * hidden_dim
        self.max_sequence_length = max_sequence_length
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.activation = activation
        self.initializer_range = initializer_range
        self.position_encoding = position_encoding
        self.query_key_norm = query_key_norm
        self.zero_output_projections = zero_output_projections
        self.embedding_shortcuts = embedding_shortcuts

        policy = self.dtype_policy
        initializer = keras.initializers.RandomNormal(stddev=initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=initializer, dtype=policy,
            name="token_embedding")
        self.position_embedding = None
        if position_encoding == "learned":
            self.position_embedding = PositionEmbedding(
                max_sequence_length, initializer=initializer, dtype=policy,
                name="position_embedding")
        self.embeddings_dropout = Dropout(dropout, dtype=policy, name="embeddings_dropout")
        self.set_layer_stack("transformer_layer", [
            TransformerDecoderBlock(
                num_heads=num_heads,
                intermediate_dim=self.intermediate_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                norm_first=True,
                kernel_initializer=initializer,
                output_kernel_initializer="zeros" if zero_output_projections else None,
                rotary_max_wavelength=10000 if position_encoding == "rotary" else None,
                query_key_norm=query_key_norm,
                dtype=policy,
                name=f"transformer_layer_{index}",
            )
            for index in range(num_layers)
        ])
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="layer_norm")
        self.build()

    @classmethod
    def from_huggingface(cls, path, **overrides):
        """The backbone of a Hugging Face GPT-2 checkpoint directory
        (`config.json` + `model.safetensors`, see
        `tfnlp.models.gpt.huggingface`); `overrides` change constructor
        arguments (dropout, dtype, ...) but not the sizes."""
        checkpoint = huggingface.read_checkpoint(path)
        backbone = cls(**{**checkpoint.arguments,
                          **huggingface.checked_overrides(overrides, path)})
        huggingface.load_backbone_weights(backbone, checkpoint.tensors, path)
        return backbone

    @property
    def transformer_layers(self):
        """The `TransformerDecoderBlock`s, first to last."""
        return self.layer_stack("transformer_layer")

    def build(self, inputs_shape=None):
        """Creates every variable (the shapes do not depend on the inputs)."""
        sequence_shape = (None, None, self.hidden_dim)
        self.token_embedding.build((None, None))
        if self.position_embedding is not None:
            self.position_embedding.build(sequence_shape)
        for block in self.transformer_layers:
            block.build(sequence_shape)
        self.layer_norm.build(sequence_shape)
        # A row (a, b) per block; an embedding by name, so Muon leaves it to AdamW.
        self.shortcut_weights = None
        if self.embedding_shortcuts:
            self.shortcut_weights = self.add_weight(
                shape=(self.num_layers, 2),
                initializer=keras.initializers.Constant([[1.0, 0.0]] * self.num_layers),
                name="embedding_shortcuts")
        self.built = True

    def call(self, inputs, training=None):
        token_ids, padding_mask = split_inputs(inputs)
        return self.forward(token_ids, padding_mask, training=training)[0]

    def forward(self, token_ids, padding_mask=None, cache=None, index=0, training=None):
        """The final hidden states of `token_ids` at positions `index`,
        `index + 1`, ...; with `cache` (see `initial_cache`), their keys
        and values are written into it and attention reads the whole cache.

        Returns:
            `(hidden_states, cache)`: `(batch, length, hidden_dim)`, and
            the updated cache (None without one).
        """
        x = self.token_embedding(token_ids)
        if self.position_embedding is not None:
            x = x + self.position_embedding(x, start_index=index)
        x = embeddings = self.embeddings_dropout(x, training=training)
        if cache is None:
            for position, block in enumerate(self.transformer_layers):
                x = self._shortcut(x, embeddings, position)
                x = block(x, decoder_padding_mask=padding_mask, training=training)
            return self.layer_norm(x), None
        self_attention = []
        for position, (block, block_cache) in enumerate(
                zip(self.transformer_layers, cache["self_attention"])):
            x, block_cache = block(
                self._shortcut(x, embeddings, position),
                decoder_padding_mask=padding_mask,
                self_attention_cache=block_cache,
                self_attention_cache_update_index=index,
                training=training,
            )
            self_attention.append(block_cache)
        return self.layer_norm(x), {"self_attention": self_attention}

    def _shortcut(self, x, embeddings, position):
        """Block `position`'s input: `x`, or `a·x + b·x₀` with
        `embedding_shortcuts`."""
        if self.shortcut_weights is None:
            return x
        weights = ops.cast(self.shortcut_weights[position], x.dtype)
        return weights[0] * x + weights[1] * embeddings

    def initial_cache(self, batch_size, max_length):
        """An empty key/value cache for `batch_size` sequences of up to
        `max_length` positions: `{"self_attention": [...]}`, one zero
        tensor `(batch_size, 2, max_length, num_heads, head_dim)` per block
        (keys at index 0, values at 1, in the compute dtype)."""
        if max_length > self.max_sequence_length:
            raise ValueError(
                f"A cache of max_length={max_length} positions is longer than the "
                f"model's max_sequence_length={self.max_sequence_length}. Decode at "
                "most max_sequence_length positions."
            )
        shape = (batch_size, 2, max_length, self.num_heads, self.hidden_dim // self.num_heads)
        dtype = self.dtype_policy.compute_dtype
        return {"self_attention": [ops.zeros(shape, dtype=dtype) for _ in range(self.num_layers)]}

"""The Transformer encoder-decoder for translation (Vaswani et al., 2017)."""

import math

import keras
from keras import ops

from tfnlp.data.translation_schema import PAD_ID
from tfnlp.layers.dropout import Dropout
from tfnlp.layers.position_embedding import PositionEmbedding
from tfnlp.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding
from tfnlp.layers.transformer_decoder_block import TransformerDecoderBlock
from tfnlp.layers.transformer_encoder_block import TransformerEncoderBlock
from tfnlp.models.seq2seq.generation import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS, Seq2SeqModel

POSITION_ENCODINGS = ("sinusoidal", "learned")

# Preset name -> constructor arguments. tiny: the configuration that leads
# on Multi30k after 150 epochs on GPUs (Wu et al., 2021); small: 3+3 layers
# of width 256, the one that reaches validation BLEU 35 on Multi30k within
# an hour on two CPU cores (docs/TRANSLATION.md); base: Vaswani et al.'s base model.
TRANSFORMER_PRESETS = {
    "tiny": dict(num_encoder_layers=4, num_decoder_layers=4, hidden_dim=128, num_heads=4,
                 intermediate_dim=256),
    "small": dict(num_encoder_layers=3, num_decoder_layers=3, hidden_dim=256, num_heads=4,
                  intermediate_dim=512),
    "base": dict(num_encoder_layers=6, num_decoder_layers=6, hidden_dim=512, num_heads=8,
                 intermediate_dim=2048),
}


@keras.saving.register_keras_serializable(package="tfnlp")
class TransformerSeq2Seq(Seq2SeqModel):
    """The Transformer encoder-decoder, with shared, tied embeddings.

    Source and target share one token embedding (a joint subword
    vocabulary, as `pipelines.translation_data --shared_vocab` learns), which
    is also the output projection: `logits = h · Eᵀ`. Token embeddings are
    scaled by `sqrt(hidden_dim)` and added to sinusoidal (or learned)
    positions, then dropout; the encoder is a stack of
    `tfnlp.layers.TransformerEncoderBlock`s, the decoder a stack of
    `tfnlp.layers.TransformerDecoderBlock`s (causal self-attention, then
    cross-attention over the encoder outputs). Post-LN as in the paper, or
    pre-LN with `norm_first` (then a final LayerNorm closes each stack).
    Id 0 is padding: padded source positions are masked out of every
    attention; padded target positions need no mask (causal attention never
    reads ahead), their outputs are simply not scored.

    Called on `{"encoder_token_ids", "decoder_token_ids"}` (int `(batch,
    length)`), it returns the float32 logits `(batch, target_length,
    vocabulary_size)` of the next target token at each position; the decoder
    inputs are the targets shifted right behind `BOS_ID` (see
    `decoder_inputs`). For generation, `initial_cache` and `decode_step`
    follow the step contract of `tfnlp.decoding` (the self-attention keys
    and values of every decoder layer are cached, and the encoder's are
    projected once), and `generate` runs a decoder on them.

    Args:
        vocabulary_size: size of the joint vocabulary.
        num_encoder_layers: encoder blocks.
        num_decoder_layers: decoder blocks.
        hidden_dim: width of the embeddings and blocks.
        num_heads: attention heads per block.
        intermediate_dim: width of the feed-forward layers.
        dropout: dropout of the embeddings, attention weights and sublayer
            outputs.
        attention_dropout: dropout of the attention weights, if it differs.
        activation: feed-forward activation ("relu", "gelu", ...).
        norm_first: pre-LN instead of post-LN.
        position_encoding: "sinusoidal" or "learned".
        max_sequence_length: the longest source or target sequence (the
            size of learned position tables; the bound of generation).
        layer_norm_epsilon: epsilon of the LayerNorms.
        dtype: the dtype policy of the layers (for example
            "mixed_bfloat16"); the logits are float32 whatever it is.
        **kwargs: standard `keras.Model` arguments.

    Example:

    >>> import numpy as np
    >>> model = TransformerSeq2Seq.from_preset("tiny", vocabulary_size=100,
    ...                                        num_encoder_layers=1, num_decoder_layers=1)
    >>> logits = model({"encoder_token_ids": np.array([[5, 6, 7, 3]]),
    ...                 "decoder_token_ids": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape)
    (1, 3, 100)

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Press & Wolf, 2017. Using the Output Embedding to Improve
          Language Models](https://arxiv.org/abs/1608.05859) (tied
          embeddings)
        - [Xiong et al., 2020. On Layer Normalization in the Transformer
          Architecture](https://arxiv.org/abs/2002.04745) (pre-LN)
        - [Wu et al., 2021. Good for Misconceived Reasons: An Empirical
          Revisiting on the Need for Visual Context in Multimodal Machine
          Translation](https://arxiv.org/abs/2105.14462) (the tiny
          configuration on Multi30k)
    """

    def __init__(
        self,
        vocabulary_size,
        num_encoder_layers=6,
        num_decoder_layers=6,
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
        attention_dropout=None,
        activation="relu",
        norm_first=False,
        position_encoding="sinusoidal",
        max_sequence_length=256,
        layer_norm_epsilon=1e-5,
        dtype=None,
        **kwargs,
    ):
        if position_encoding not in POSITION_ENCODINGS:
            raise ValueError(
                f"position_encoding must be one of {POSITION_ENCODINGS}; received "
                f"{position_encoding!r}."
            )
        if hidden_dim % num_heads:
            raise ValueError(
                f"hidden_dim ({hidden_dim}) must be divisible by num_heads "
                f"({num_heads}): each head gets hidden_dim // num_heads features."
            )
        super().__init__(dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.norm_first = norm_first
        self.position_encoding = position_encoding
        self.max_sequence_length = max_sequence_length
        self.layer_norm_epsilon = layer_norm_epsilon

        policy = self.dtype_policy
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=keras.initializers.RandomNormal(
                stddev=hidden_dim**-0.5),
            dtype=policy,
            name="token_embedding",
        )
        if position_encoding == "sinusoidal":
            self.positions = SinusoidalPositionEncoding(dtype=policy, name="positions")
        else:
            self.positions = PositionEmbedding(
                max_sequence_length, dtype=policy, name="positions")
        self.embeddings_dropout = Dropout(dropout, dtype=policy, name="embeddings_dropout")
        block_arguments = dict(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            attention_dropout=attention_dropout,
            activation=activation,
            layer_norm_epsilon=layer_norm_epsilon,
            norm_first=norm_first,
            dtype=policy,
        )
        # One attribute per block (`set_layer_stack`), which the trainer's
        # checkpoints see.
        self.set_layer_stack("encoder_block", [
            TransformerEncoderBlock(name=f"encoder_block_{index}", **block_arguments)
            for index in range(num_encoder_layers)])
        self.set_layer_stack("decoder_block", [
            TransformerDecoderBlock(name=f"decoder_block_{index}", **block_arguments)
            for index in range(num_decoder_layers)])
        self.encoder_layer_norm = self.decoder_layer_norm = None
        if norm_first:
            self.encoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=policy, name="encoder_layer_norm")
            self.decoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=policy, name="decoder_layer_norm")
        self.build()

    presets = TRANSFORMER_PRESETS

    @classmethod
    def from_preset(cls, name, vocabulary_size, **overrides):
        """A model of the sizes of preset `name` (a key of `TRANSFORMER_PRESETS`: "tiny",
        "small", "base"); `overrides` change any constructor argument."""
        return super().from_preset(name, vocabulary_size=vocabulary_size, **overrides)

    @property
    def encoder_blocks(self):
        """The `TransformerEncoderBlock`s, first to last."""
        return self.layer_stack("encoder_block")

    @property
    def decoder_blocks(self):
        """The `TransformerDecoderBlock`s, first to last."""
        return self.layer_stack("decoder_block")

    @property
    def max_positions(self):
        """The longest target `generate` decodes: `max_sequence_length`."""
        return self.max_sequence_length

    # === Building ===

    def build(self, inputs_shape=None):
        """Creates every variable (the shapes do not depend on the inputs)."""
        sequence_shape = (None, None, self.hidden_dim)
        self.token_embedding.build((None, None))
        self.positions.build(sequence_shape)
        for block in self.encoder_blocks:
            block.build(sequence_shape)
        for block in self.decoder_blocks:
            block.build(sequence_shape, sequence_shape)
        for layer_norm in (self.encoder_layer_norm, self.decoder_layer_norm):
            if layer_norm is not None:
                layer_norm.build(sequence_shape)
        self.built = True

    # === Forward pass ===

    def embed(self, token_ids, start_index=0, training=None):
        """Scaled token embeddings plus positions, then dropout."""
        tokens = self.token_embedding(token_ids)
        tokens = tokens * ops.cast(math.sqrt(self.hidden_dim), tokens.dtype)
        x = tokens + self.positions(tokens, start_index=start_index)
        return self.embeddings_dropout(x, training=training)

    def encode(self, encoder_token_ids, training=None):
        """The encoder outputs `(batch, source_length, hidden_dim)` and the
        source padding mask (boolean, `True` = real token)."""
        encoder_token_ids = ops.cast(encoder_token_ids, "int32")
        padding_mask = ops.not_equal(encoder_token_ids, PAD_ID)
        x = self.embed(encoder_token_ids, training=training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=padding_mask, training=training)
        if self.encoder_layer_norm is not None:
            x = self.encoder_layer_norm(x)
        return x, padding_mask

    def decode(self, decoder_token_ids, encoder_outputs, encoder_padding_mask,
               training=None, return_attention_scores=False):
        """The logits of a whole target prefix (teacher forcing).

        With `return_attention_scores`, also the cross-attention weights of
        every decoder block, a list of `(batch, num_heads, target_length,
        source_length)`.
        """
        x = self.embed(ops.cast(decoder_token_ids, "int32"), training=training)
        cross_attention = []
        for block in self.decoder_blocks:
            x, scores = block(
                x,
                encoder_outputs,
                encoder_padding_mask=encoder_padding_mask,
                return_attention_scores=True,
                training=training,
            )
            cross_attention.append(scores["cross_attention"])
        logits = self.logits(x)
        return (logits, cross_attention) if return_attention_scores else logits

    def logits(self, hidden_states):
        """The tied output projection `h · Eᵀ`, in float32."""
        embeddings = ops.cast(self.token_embedding.embeddings, hidden_states.dtype)
        if self.decoder_layer_norm is not None:
            hidden_states = self.decoder_layer_norm(hidden_states)
        return ops.cast(ops.matmul(hidden_states, ops.transpose(embeddings)), "float32")

    def call(self, inputs, training=None):
        encoder_outputs, padding_mask = self.encode(inputs[ENCODER_TOKEN_IDS], training)
        return self.decode(inputs[DECODER_TOKEN_IDS], encoder_outputs, padding_mask, training)

    def cross_attention(self, inputs):
        """The cross-attention weights of a teacher-forced pass over
        `inputs` (no dropout): a list, one `(batch, num_heads,
        target_length, source_length)` tensor per decoder block."""
        encoder_outputs, padding_mask = self.encode(inputs[ENCODER_TOKEN_IDS])
        return self.decode(inputs[DECODER_TOKEN_IDS], encoder_outputs, padding_mask,
                           return_attention_scores=True)[1]

    def alignments(self, inputs):
        """The last decoder block's cross-attention averaged over its heads,
        `(batch, target_length, source_length)`: where each target position
        looks in the source (what `RNNSeq2Seq.alignments` gives for its
        attention)."""
        return ops.mean(ops.cast(self.cross_attention(inputs)[-1], "float32"), axis=1)

    # === Generation (the step contract of tfnlp.decoding) ===

    def initial_cache(self, encoder_token_ids, max_length):
        """The decoding cache of a batch of sources, for `decode_step`.

        A dict whose every leaf has the batch as axis 0: the source padding
        mask; per decoder block, the encoder's keys and values projected
        once (`(batch, 2, source_length, num_heads, head_dim)`); and
        zero-filled self-attention keys and values for `max_length`
        positions (`(batch, 2, max_length, num_heads, head_dim)`).
        """
        encoder_outputs, padding_mask = self.encode(encoder_token_ids)
        batch_size = ops.shape(encoder_outputs)[0]
        head_dim = self.hidden_dim // self.num_heads
        self_attention, cross_attention = [], []
        for block in self.decoder_blocks:
            attention = block.cross_attention
            cross_attention.append(ops.stack(
                [attention.key_dense(encoder_outputs), attention.value_dense(encoder_outputs)],
                axis=1,
            ))
            self_attention.append(ops.zeros(
                (batch_size, 2, max_length, self.num_heads, head_dim),
                dtype=encoder_outputs.dtype,
            ))
        return {
            "encoder_padding_mask": padding_mask,
            "cross_attention": cross_attention,
            "self_attention": self_attention,
        }

    def decode_step(self, token_ids, cache, index):
        """One decoding step: the logits `(batch, vocabulary_size)` of the
        token after `token_ids` (int `(batch,)`, at position `index`), and
        the cache with this position's keys and values written in."""
        x = self.embed(ops.cast(token_ids, "int32")[:, None], start_index=index)
        self_attention = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, cache["self_attention"], cache["cross_attention"]
        ):
            x, self_cache, _ = block(
                x,
                encoder_padding_mask=cache["encoder_padding_mask"],
                self_attention_cache=self_cache,
                self_attention_cache_update_index=index,
                cross_attention_cache=cross_cache,
            )
            self_attention.append(self_cache)
        cache = dict(cache, self_attention=self_attention)
        return self.logits(x)[:, 0, :], cache

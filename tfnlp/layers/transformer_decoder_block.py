"""The Transformer decoder block: causal self-attention, cross-attention and a
feed-forward network."""

import keras

from tfnlp.layers.masking import merge_masks, padding_to_attention_mask
from tfnlp.layers.transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="tfnlp")
class TransformerDecoderBlock(TransformerBlock):
    """One Transformer decoder block.

    Causal self-attention, then cross-attention over the encoder outputs
    (queries from the decoder, keys and values from the encoder), then the
    position-wise feed-forward network; each sublayer has dropout, a residual
    connection and a LayerNorm (post-LN, or pre-LN with `norm_first`). Built
    without `encoder_sequence`, the block has no cross-attention and is a
    decoder-only (GPT-style) block.

    For incremental decoding pass `self_attention_cache` (and, with an
    encoder, a precomputed `cross_attention_cache`): the outputs for the new
    positions equal those of the full causal pass. The sublayers and
    variables are laid out like `keras_hub.layers.TransformerDecoder`, whose
    weights load with `set_weights` and then give the same outputs. As with
    the encoder block, masks are passed explicitly rather than read from
    Keras masks attached to the inputs, and pre-LN is `norm_first`.

    Args:
        num_heads: number of attention heads; must divide the hidden size.
        intermediate_dim: width of the feed-forward network's hidden layer.
        dropout: dropout rate (attention weights and the sublayer outputs).
        attention_dropout: dropout rate of the attention weights, if it
            differs from `dropout` (BERT's `attention_probs_dropout_prob`).
        activation: the feed-forward activation by name ("relu", "gelu",
            "gelu_approximate", or any `keras.activations` name).
        layer_norm_epsilon: epsilon of the LayerNorms.
        norm_first: pre-LN instead of post-LN.
        kernel_initializer: initializer of the dense kernels.
        bias_initializer: initializer of the dense biases.
        output_kernel_initializer: initializer of the kernels that write
            into the residual stream (attention and feed-forward outputs),
            if it differs ("zeros": the block starts as the identity).
        rotary_max_wavelength: rotary position embeddings in
            self-attention (see `MultiHeadAttention`); None for none.
        query_key_norm: RMS-normalize queries and keys (QK-norm).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        decoder_sequence: `(batch, target_length, hidden_dim)`.
        encoder_sequence: `(batch, source_length, encoder_dim)`, or None for a
            decoder-only block.
        decoder_padding_mask: boolean `(batch, key_length)`, `True` = real
            token, over the self-attention keys: the decoder sequence, or the
            whole cache when caching.
        decoder_attention_mask: boolean `(batch, target_length, key_length)`.
        encoder_padding_mask: boolean `(batch, source_length)`.
        encoder_attention_mask: boolean
            `(batch, target_length, source_length)`.
        self_attention_cache: `(batch, 2, max_length, num_heads, head_dim)`.
        self_attention_cache_update_index: where the new positions go.
        cross_attention_cache: `(batch, 2, source_length, num_heads,
            head_dim)`; without `cross_attention_cache_update_index` it is
            used as it is, so the encoder is projected only once.
        cross_attention_cache_update_index: index at which to write the
            projected `encoder_sequence` into `cross_attention_cache` (0 to
            fill it).
        use_causal_mask: whether self-attention is causal (default True).
        return_attention_scores: also return a dict with the
            `"self_attention"` (and `"cross_attention"`) weights.
        training: whether dropout is active.

    Returns:
        The outputs `(batch, target_length, hidden_dim)`. If
        `return_attention_scores` or a cache is passed, a tuple: the outputs,
        then the attention-score dict (if asked), then the updated
        self-attention cache and cross-attention cache (those passed).

    Example:

    >>> import numpy as np
    >>> block = TransformerDecoderBlock(num_heads=2, intermediate_dim=32)
    >>> target = np.random.rand(2, 5, 16).astype("float32")
    >>> source = np.random.rand(2, 7, 16).astype("float32")
    >>> tuple(block(target, source).shape)
    (2, 5, 16)

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Radford et al., 2018. Improving Language Understanding by
          Generative Pre-Training](https://openai.com/research/language-unsupervised)
          (decoder-only)
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        # Built in the order of keras_hub.layers.TransformerDecoder, so the
        # two have the same `get_weights()` layout.
        self.self_attention = self._attention(decoder_sequence_shape, "self_attention",
                                              positions=True)
        self.self_attention.build(decoder_sequence_shape, decoder_sequence_shape)
        self.self_attention_layer_norm = self._layer_norm("self_attention_layer_norm")
        self.self_attention_layer_norm.build(decoder_sequence_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.has_cross_attention = encoder_sequence_shape is not None
        if self.has_cross_attention:
            self.cross_attention = self._attention(
                decoder_sequence_shape, "cross_attention"
            )
            self.cross_attention.build(decoder_sequence_shape, encoder_sequence_shape)
            self.cross_attention_layer_norm = self._layer_norm(
                "cross_attention_layer_norm"
            )
            self.cross_attention_layer_norm.build(decoder_sequence_shape)
            self.cross_attention_dropout = self._dropout("cross_attention_dropout")
        self.build_feedforward(decoder_sequence_shape)
        self.feedforward_layer_norm = self._layer_norm("feedforward_layer_norm")
        self.feedforward_layer_norm.build(decoder_sequence_shape)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        return_attention_scores=False,
        training=None,
    ):
        uses_encoder = encoder_sequence is not None or cross_attention_cache is not None
        if uses_encoder != self.has_cross_attention:
            raise ValueError(
                "This TransformerDecoderBlock was built "
                + ("with" if self.has_cross_attention else "without")
                + " cross-attention, so `encoder_sequence` (or a "
                "`cross_attention_cache`) must "
                + ("" if self.has_cross_attention else "not ")
                + "be passed. Build a decoder-only block by calling it first "
                "without `encoder_sequence`, an encoder-decoder block by "
                "calling it first with one."
            )
        x, self_attention_scores, self_attention_cache = self.attention_sublayer(
            "self_attention",
            decoder_sequence,
            attention_mask=merge_masks(
                padding_to_attention_mask(decoder_padding_mask),
                decoder_attention_mask,
            ),
            use_causal_mask=use_causal_mask,
            cache=self_attention_cache,
            cache_update_index=self_attention_cache_update_index,
            training=training,
        )
        attention_scores = {"self_attention": self_attention_scores}
        if self.has_cross_attention:
            x, attention_scores["cross_attention"], cross_attention_cache = (
                self.attention_sublayer(
                    "cross_attention",
                    x,
                    value=encoder_sequence,
                    attention_mask=merge_masks(
                        padding_to_attention_mask(encoder_padding_mask),
                        encoder_attention_mask,
                    ),
                    cache=cross_attention_cache,
                    cache_update_index=cross_attention_cache_update_index,
                    training=training,
                )
            )
        x = self.feedforward(x, training=training)

        outputs = (x,)
        if return_attention_scores:
            outputs += (attention_scores,)
        if self_attention_cache is not None:
            outputs += (self_attention_cache,)
        if cross_attention_cache is not None:
            outputs += (cross_attention_cache,)
        return outputs[0] if len(outputs) == 1 else outputs

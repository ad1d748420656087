"""The Transformer encoder block: self-attention and a feed-forward network."""

import keras
from keras import ops

from tfnlp.layers.gather import gather_positions
from tfnlp.layers.masking import merge_masks, padding_to_attention_mask
from tfnlp.layers.transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="tfnlp")
class TransformerEncoderBlock(TransformerBlock):
    """One Transformer encoder block.

    Post-LN (Vaswani et al.; BERT): self-attention → dropout → residual →
    LayerNorm → feed-forward (dense → activation → dense) → dropout →
    residual → LayerNorm. With `norm_first=True` (pre-LN, as in GPT-2), the
    LayerNorms move to the start of each sublayer instead. The attention
    weights also get `dropout`. Each head has size `hidden_dim // num_heads`.

    The sublayers and variables are laid out like
    `keras_hub.layers.TransformerEncoder`, so its weights load with
    `set_weights` and the outputs then agree. Differences from it: the
    padding mask is always passed explicitly (keras-hub also reads a Keras
    mask attached to `inputs`); pre-LN is `norm_first` (keras-hub:
    `normalize_first`); activations are plain strings, with
    "gelu_approximate" for the tanh form.

    Args:
        num_heads: number of attention heads; must divide the hidden size.
        intermediate_dim: width of the feed-forward network's hidden layer.
        dropout: dropout rate (attention weights and both sublayer outputs).
        attention_dropout: dropout rate of the attention weights, if it
            differs from `dropout` (BERT's `attention_probs_dropout_prob`).
        activation: the feed-forward activation by name: "relu", "gelu"
            (exact, erf, as BERT), "gelu_approximate" (tanh) or any name that
            `keras.activations.get` knows.
        layer_norm_epsilon: epsilon of the LayerNorms (BERT uses 1e-12).
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
        inputs: `(batch, length, hidden_dim)`.
        padding_mask: boolean `(batch, length)`, `True` = real token.
        attention_mask: boolean `(batch, length, length)`, `True` = may attend.
        return_attention_scores: also return the attention weights,
            `(batch, num_heads, length, length)`.
        training: whether dropout is active.
        query_positions: optional int `(batch, num_queries)`, each in
            `[0, length)`: compute the outputs at these positions only. The
            queries, residuals, LayerNorms and feed-forward network run on
            the rows of `inputs` at these positions; keys and values still
            come from the whole sequence. The result equals the full output
            gathered at these positions (a last layer whose other rows are
            unused, such as BERT's under a masked-LM head, gets cheaper).

    Returns:
        `(batch, length, hidden_dim)` (`(batch, num_queries, hidden_dim)`
        with `query_positions`), or `(outputs, attention_scores)`.

    Example:

    >>> import numpy as np
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
    >>> embeddings = np.random.rand(2, 6, 16).astype("float32")
    >>> padding_mask = np.array([[1] * 6, [1] * 4 + [0] * 2], bool)
    >>> tuple(block(embeddings, padding_mask=padding_mask).shape)
    (2, 6, 16)

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [Xiong et al., 2020. On Layer Normalization in the Transformer
          Architecture](https://arxiv.org/abs/2002.04745) (pre-LN)
    """

    def build(self, inputs_shape):
        # Built in the order of keras_hub.layers.TransformerEncoder, so the
        # two have the same `get_weights()` layout.
        self.self_attention = self._attention(inputs_shape, "self_attention", positions=True)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.self_attention_layer_norm = self._layer_norm("self_attention_layer_norm")
        self.self_attention_layer_norm.build(inputs_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.feedforward_layer_norm = self._layer_norm("feedforward_layer_norm")
        self.feedforward_layer_norm.build(inputs_shape)
        self.build_feedforward(inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        query_positions=None,
    ):
        value = None
        if query_positions is not None:
            # Keys and values: the whole (normalised, for pre-LN) sequence;
            # queries and residuals: the rows at `query_positions`.
            value = (
                self.self_attention_layer_norm(inputs) if self.norm_first else inputs
            )
            if attention_mask is not None:
                length = ops.shape(inputs)[1]
                attention_mask = gather_positions(
                    ops.broadcast_to(
                        ops.cast(attention_mask, "bool"),
                        (ops.shape(inputs)[0], length, length),
                    ),
                    query_positions,
                )
            inputs = gather_positions(inputs, query_positions)
        x, attention_scores, _ = self.attention_sublayer(
            "self_attention",
            inputs,
            value=value,
            attention_mask=merge_masks(
                padding_to_attention_mask(padding_mask), attention_mask
            ),
            training=training,
        )
        x = self.feedforward(x, training=training)
        if return_attention_scores:
            return x, attention_scores
        return x

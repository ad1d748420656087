"""What the Transformer encoder and decoder blocks share.

The constructor arguments, the sublayer builders and the position-wise
feed-forward sublayer. Not a layer to use by itself: use
`TransformerEncoderBlock` or `TransformerDecoderBlock`.
"""

import keras

from tfnlp.layers.activations import get_activation
from tfnlp.layers.dropout import Dropout
from tfnlp.layers.multi_head_attention import MultiHeadAttention


def clone_initializer(initializer):
    """A fresh copy, so sublayers do not share one (stateless) initializer."""
    return initializer.__class__.from_config(initializer.get_config())


class TransformerBlock(keras.layers.Layer):
    """Base of the Transformer blocks; see the subclasses for the arguments."""

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        activation="relu",
        layer_norm_epsilon=1e-5,
        norm_first=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        output_kernel_initializer=None,
        rotary_max_wavelength=None,
        query_key_norm=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.activation_function = get_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.norm_first = norm_first
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.output_kernel_initializer = (
            None if output_kernel_initializer is None
            else keras.initializers.get(output_kernel_initializer))
        self.rotary_max_wavelength = rotary_max_wavelength
        self.query_key_norm = query_key_norm

    def _dense(self, units, name, activation=None, kernel_initializer=None):
        return keras.layers.Dense(
            units,
            activation=activation,
            kernel_initializer=clone_initializer(kernel_initializer or self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def _layer_norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _dropout(self, name):
        return Dropout(self.dropout, dtype=self.dtype_policy, name=name)

    def attention_sublayer(self, name, inputs, value=None, training=None, **kwargs):
        """Attention, dropout, residual and LayerNorm (pre- or post-LN).

        `name` picks the sublayers `{name}`, `{name}_dropout` and
        `{name}_layer_norm`. Without `value` this is self-attention over the
        (normalised) inputs. `kwargs` go to the attention layer.

        Returns:
            `(outputs, attention_scores, cache)`; `cache` is None unless a
            cache was passed.
        """
        layer_norm = getattr(self, f"{name}_layer_norm")
        x = layer_norm(inputs) if self.norm_first else inputs
        x, attention_scores, *cache = getattr(self, name)(
            x,
            x if value is None else value,
            return_attention_scores=True,
            training=training,
            **kwargs,
        )
        x = getattr(self, f"{name}_dropout")(x, training=training) + inputs
        if not self.norm_first:
            x = layer_norm(x)
        return x, attention_scores, cache[0] if cache else None

    def feedforward(self, inputs, training=None):
        """The position-wise feed-forward sublayer, residual and LayerNorm."""
        x = self.feedforward_layer_norm(inputs) if self.norm_first else inputs
        x = self.feedforward_intermediate_dense(x)
        x = self.feedforward_output_dense(x)
        x = self.feedforward_dropout(x, training=training) + inputs
        if not self.norm_first:
            x = self.feedforward_layer_norm(x)
        return x

    def build_feedforward(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        self.feedforward_intermediate_dense = self._dense(
            self.intermediate_dim,
            "feedforward_intermediate_dense",
            activation=self.activation_function,
        )
        self.feedforward_intermediate_dense.build(inputs_shape)
        self.feedforward_output_dense = self._dense(
            hidden_dim, "feedforward_output_dense",
            kernel_initializer=self.output_kernel_initializer,
        )
        self.feedforward_output_dense.build(
            (*inputs_shape[:-1], self.intermediate_dim)
        )
        self.feedforward_dropout = self._dropout("feedforward_dropout")

    def _attention(self, inputs_shape, name, positions=False):
        """The attention sublayer; `positions`: self-attention, which takes
        the rotary embedding when the block has one."""
        hidden_dim = inputs_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"The hidden size ({hidden_dim}) must be divisible by "
                f"num_heads ({self.num_heads}); each head gets "
                "hidden_dim // num_heads features."
            )
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=hidden_dim // self.num_heads,
            dropout=self.dropout if self.attention_dropout is None else self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            output_kernel_initializer=self.output_kernel_initializer,
            rotary_max_wavelength=self.rotary_max_wavelength if positions else None,
            query_key_norm=self.query_key_norm,
            dtype=self.dtype_policy,
            name=name,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "norm_first": self.norm_first,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "output_kernel_initializer": (
                    None if self.output_kernel_initializer is None
                    else keras.initializers.serialize(self.output_kernel_initializer)),
                "rotary_max_wavelength": self.rotary_max_wavelength,
                "query_key_norm": self.query_key_norm,
            }
        )
        return config

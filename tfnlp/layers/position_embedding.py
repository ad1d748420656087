"""Learned absolute position embeddings, as in BERT and GPT."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfnlp")
class PositionEmbedding(keras.layers.Layer):
    """A learned embedding vector for each position up to `sequence_length`.

    The weight `embeddings` has shape `(sequence_length, hidden_dim)`, the
    layout of BERT's `position_embeddings` table, so pretrained tables load
    with `set_weights`. The layer returns the embeddings for the positions of
    `inputs` (broadcast to its shape); add them to the token embeddings
    yourself.

    Args:
        sequence_length: the largest number of positions the layer can embed.
        initializer: initializer of the table; BERT uses
            `keras.initializers.TruncatedNormal(stddev=0.02)`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(batch, length, hidden_dim)`, with
            `start_index + length <= sequence_length`.
        start_index: the position of the first token, for incremental
            decoding.

    Example:

    >>> import numpy as np
    >>> token_embeddings = np.zeros((2, 10, 16), "float32")
    >>> position_embeddings = PositionEmbedding(sequence_length=128)(
    ...     token_embeddings)
    >>> tuple(position_embeddings.shape)
    (2, 10, 16)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if sequence_length is None or int(sequence_length) <= 0:
            raise ValueError(
                "`sequence_length` must be a positive integer (the largest "
                f"number of positions to embed). Received: {sequence_length!r}."
            )
        self.sequence_length = int(sequence_length)
        self.initializer = keras.initializers.get(initializer)

    def build(self, inputs_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, inputs_shape[-1]),
            initializer=self.initializer,
        )

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        length = shape[-2]
        embeddings = ops.slice(
            ops.convert_to_tensor(self.embeddings),
            (start_index, 0),
            (length, shape[-1]),
        )
        return ops.broadcast_to(ops.cast(embeddings, inputs.dtype), shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

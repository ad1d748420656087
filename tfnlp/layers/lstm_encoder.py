"""A stack of (optionally bidirectional) LSTM layers for recurrent encoders."""

import keras
from keras import ops

from tfnlp.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="tfnlp")
class LSTMEncoder(keras.layers.Layer):
    """A stack of LSTM layers that returns every layer's states.

    The recurrent encoder of RNN-with-attention translation models
    (Sutskever et al., 2014; Bahdanau et al., 2015) and of ELMo-style
    language models. Layer `k + 1` reads the hidden states of layer `k`;
    `dropout` is applied between layers (in training only), not to the
    inputs of the first layer or to the outputs of the last. With
    `bidirectional=True` each layer is a `keras.layers.Bidirectional` LSTM
    whose forward and backward hidden states are concatenated, so every
    layer has `2 * units` features.

    Padded steps (`mask == False`) are skipped: they do not change the
    states, so the final states are those after the last real token (for the
    backward direction, after the first real token), and the hidden states
    at padded steps are zeros. The mask is attached to the hidden-state
    outputs, so Keras passes it on to the layers that read them.

    Args:
        units: the number of hidden units of each LSTM (per direction).
        num_layers: the number of stacked LSTM layers.
        bidirectional: whether each layer also reads the sequence backwards
            (Schuster and Paliwal, 1997).
        dropout: dropout rate applied to the hidden states between layers.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: float tensor of shape `(batch, sequence_length, features)`.
        mask: optional boolean tensor of shape `(batch, sequence_length)`;
            `True` marks a real token. Padding should be at the end of each
            sequence (padding at the start also works, but is slower on GPU).
        training: whether dropout is active.

    Returns:
        A dict with
        - `"sequence_output"`: the top layer's hidden states, shape
          `(batch, sequence_length, units)`, or `2 * units` when
          bidirectional;
        - `"layer_outputs"`: a list with the hidden states of every layer
          (bottom first), each of the shape above, before dropout;
        - `"final_states"`: a list with one `[h, c]` pair per layer (bottom
          first), each of shape `(batch, units)`. When bidirectional, `h` is
          the forward and backward final hidden states concatenated and `c`
          the forward and backward final cell states concatenated, each of
          shape `(batch, 2 * units)`, so they can initialise a
          unidirectional decoder of `2 * units` units.

    Example:

    >>> import numpy as np
    >>> encoder = LSTMEncoder(units=8, num_layers=2, bidirectional=True)
    >>> embeddings = np.zeros((2, 5, 16), "float32")
    >>> mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    >>> outputs = encoder(embeddings, mask=mask)
    >>> tuple(outputs["sequence_output"].shape)
    (2, 5, 16)
    >>> len(outputs["layer_outputs"]), len(outputs["final_states"])
    (2, 2)
    >>> hidden, cell = outputs["final_states"][-1]
    >>> tuple(hidden.shape), tuple(cell.shape)
    ((2, 16), (2, 16))

    References:
        - [Hochreiter and Schmidhuber, 1997. Long Short-Term Memory](
          https://doi.org/10.1162/neco.1997.9.8.1735)
        - [Schuster and Paliwal, 1997. Bidirectional Recurrent Neural
          Networks](https://doi.org/10.1109/78.650093)
        - [Sutskever et al., 2014. Sequence to Sequence Learning with
          Neural Networks](https://arxiv.org/abs/1409.3215)
        - [Bahdanau et al., 2015. Neural Machine Translation by Jointly
          Learning to Align and Translate](https://arxiv.org/abs/1409.0473)
    """

    def __init__(
        self, units, num_layers=1, bidirectional=False, dropout=0.0, **kwargs
    ):
        super().__init__(**kwargs)
        if units is None or int(units) <= 0:
            raise ValueError(
                f"`units` must be a positive integer. Received: {units!r}."
            )
        if num_layers is None or int(num_layers) <= 0:
            raise ValueError(
                "`num_layers` must be a positive integer. "
                f"Received: {num_layers!r}."
            )
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: {dropout!r}."
            )
        self.units = int(units)
        self.num_layers = int(num_layers)
        self.bidirectional = bool(bidirectional)
        self.dropout = float(dropout)
        # The mask is passed on to the hidden-state outputs (see
        # compute_mask), so layers downstream of an Embedding(mask_zero=True)
        # still see the padding.
        self.supports_masking = True

        # One attribute per layer rather than a list: Keras wraps a list in a
        # TrackedList, which tf.train.Checkpoint does not see.
        for index in range(self.num_layers):
            lstm = keras.layers.LSTM(
                self.units,
                return_sequences=True,
                return_state=True,
                # Zeros at padded steps, as Bidirectional forces anyway.
                zero_output_for_mask=True,
                dtype=self.dtype_policy,
                name=f"lstm_{index}",
            )
            if self.bidirectional:
                lstm = keras.layers.Bidirectional(
                    lstm,
                    merge_mode="concat",
                    dtype=self.dtype_policy,
                    name=f"bidirectional_lstm_{index}",
                )
            setattr(self, f"recurrent_layer_{index}", lstm)
        self.dropout_layer = Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )

    @property
    def recurrent_layers(self):
        """The LSTM (or bidirectional LSTM) layers, bottom first."""
        return [getattr(self, f"recurrent_layer_{index}") for index in range(self.num_layers)]

    @property
    def output_dim(self):
        """The number of features of each layer's hidden states."""
        return 2 * self.units if self.bidirectional else self.units

    def build(self, inputs_shape):
        sequences_shape = tuple(inputs_shape)
        for recurrent_layer in self.recurrent_layers:
            recurrent_layer.build(sequences_shape)
            sequences_shape = sequences_shape[:-1] + (self.output_dim,)
        self.dropout_layer.build(sequences_shape)

    def call(self, inputs, mask=None, training=None):
        if mask is not None:
            mask = ops.cast(mask, "bool")
        sequences = inputs
        layer_outputs = []
        final_states = []
        for index, recurrent_layer in enumerate(self.recurrent_layers):
            if index > 0:
                sequences = self.dropout_layer(sequences, training=training)
            results = recurrent_layer(sequences, mask=mask, training=training)
            sequences = results[0]
            if self.bidirectional:
                (
                    forward_hidden,
                    forward_cell,
                    backward_hidden,
                    backward_cell,
                ) = results[1:]
                hidden = ops.concatenate([forward_hidden, backward_hidden], -1)
                cell = ops.concatenate([forward_cell, backward_cell], -1)
            else:
                hidden, cell = results[1:]
            layer_outputs.append(sequences)
            final_states.append([hidden, cell])
        return {
            "sequence_output": sequences,
            "layer_outputs": layer_outputs,
            "final_states": final_states,
        }

    def compute_mask(self, inputs, previous_mask=None):
        if previous_mask is None:
            return None
        return {
            "sequence_output": previous_mask,
            "layer_outputs": [previous_mask] * self.num_layers,
            "final_states": [[None, None] for _ in range(self.num_layers)],
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "num_layers": self.num_layers,
                "bidirectional": self.bidirectional,
                "dropout": self.dropout,
            }
        )
        return config

"""A learned weighted average of layer outputs, as in ELMo."""

import keras
from keras import ops

from tfnlp.layers.masking import merge_masks


@keras.saving.register_keras_serializable(package="tfnlp")
class ScalarMix(keras.layers.Layer):
    """Mixes N same-shaped tensors as γ · Σ_k softmax(s)_k · h_k.

    Equation 1 of the ELMo paper: the task-specific representation is a
    softmax-normalised weighted sum of the biLM's layer outputs `h_k`,
    scaled by `γ`. The scalars `s` (one per input, weight
    `scalar_parameters`) start at zero, so the initial mix is the mean, and
    `γ` (weight `gamma`) starts at one. The number of inputs N is taken from
    the list the layer is first called on.

    Args:
        initial_scalar_parameters: optional list of N floats, the initial
            values of `s` (defaults to zeros).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        layer_outputs: a list of N tensors of identical shape, such as the
            `"layer_outputs"` of an `LSTMEncoder` (with the token
            representation in front, for ELMo).

    Returns:
        A tensor of the shape of each input. If the inputs carry Keras masks
        their logical AND is attached to it.

    Example:

    >>> import numpy as np
    >>> layer_outputs = [np.full((2, 5, 8), k, "float32") for k in range(3)]
    >>> mixed = ScalarMix()(layer_outputs)
    >>> tuple(mixed.shape)
    (2, 5, 8)
    >>> float(mixed[0, 0, 0])  # the mean of 0, 1 and 2 at initialisation
    1.0

    References:
        - [Peters et al., 2018. Deep Contextualized Word Representations,
          equation 1](https://arxiv.org/abs/1802.05365)
    """

    def __init__(self, initial_scalar_parameters=None, **kwargs):
        super().__init__(**kwargs)
        if initial_scalar_parameters is not None:
            initial_scalar_parameters = [
                float(value) for value in initial_scalar_parameters
            ]
            if not initial_scalar_parameters:
                raise ValueError(
                    "`initial_scalar_parameters` must hold one value per "
                    "input. Received an empty list."
                )
        self.initial_scalar_parameters = initial_scalar_parameters
        self.supports_masking = True

    def build(self, layer_outputs_shape):
        if not isinstance(layer_outputs_shape, (list, tuple)) or not all(
            isinstance(shape, (list, tuple)) for shape in layer_outputs_shape
        ):
            raise ValueError(
                "ScalarMix expects a list of tensors. Received input shape: "
                f"{layer_outputs_shape}."
            )
        self.num_inputs = len(layer_outputs_shape)
        if self.num_inputs == 0:
            raise ValueError("ScalarMix expects at least one tensor to mix.")
        first_shape = tuple(layer_outputs_shape[0])
        for shape in layer_outputs_shape[1:]:
            if len(shape) != len(first_shape) or any(
                a is not None and b is not None and a != b
                for a, b in zip(shape, first_shape)
            ):
                raise ValueError(
                    "ScalarMix expects tensors of identical shape. Received "
                    f"shapes: {list(layer_outputs_shape)}."
                )
        if self.initial_scalar_parameters is None:
            initializer = "zeros"
        else:
            if len(self.initial_scalar_parameters) != self.num_inputs:
                raise ValueError(
                    f"`initial_scalar_parameters` has "
                    f"{len(self.initial_scalar_parameters)} values but the "
                    f"layer was called on {self.num_inputs} tensors."
                )
            initializer = keras.initializers.Constant(
                self.initial_scalar_parameters
            )
        self.scalar_parameters = self.add_weight(
            name="scalar_parameters",
            shape=(self.num_inputs,),
            initializer=initializer,
        )
        self.gamma = self.add_weight(
            name="gamma", shape=(), initializer=keras.initializers.Constant(1.0)
        )

    def call(self, layer_outputs):
        if len(layer_outputs) != self.num_inputs:
            raise ValueError(
                f"ScalarMix was built for {self.num_inputs} tensors but was "
                f"called on {len(layer_outputs)}."
            )
        # softmax(s), written out: ops.softmax warns on an axis of size 1.
        scalars = ops.cast(self.scalar_parameters, self.compute_dtype)
        weights = ops.exp(scalars - ops.max(scalars))
        weights = weights / ops.sum(weights)
        mixed = None
        for index, layer_output in enumerate(layer_outputs):
            term = weights[index] * ops.cast(layer_output, self.compute_dtype)
            mixed = term if mixed is None else mixed + term
        return ops.cast(self.gamma, self.compute_dtype) * mixed

    def compute_mask(self, layer_outputs, previous_mask=None):
        if previous_mask is None:
            return None
        return merge_masks(*previous_mask)

    def compute_output_shape(self, layer_outputs_shape):
        return tuple(layer_outputs_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update(
            {"initial_scalar_parameters": self.initial_scalar_parameters}
        )
        return config

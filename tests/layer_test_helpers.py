"""Shared checks for every tfnlp layer test.

`check_layer` runs the behaviour every layer must have, so each layer test
states only what is particular to it:

- the config round trip: `from_config(get_config())` rebuilds an equal layer
  that, given the same weights, computes the same outputs;
- `.keras` save and load of a functional model around the layer give
  identical outputs;
- every trainable variable receives a non-zero gradient;
- the call compiles with XLA (`tf.function(jit_compile=True)`) and agrees with
  the eager result.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

TOLERANCE = 1e-5


def assert_allclose_nested(actual, expected, atol=TOLERANCE, rtol=TOLERANCE):
    """Compares two (possibly nested) structures of tensors elementwise."""
    actual_leaves = keras.tree.flatten(actual)
    expected_leaves = keras.tree.flatten(expected)
    assert len(actual_leaves) == len(expected_leaves), (
        f"structures differ: {len(actual_leaves)} vs {len(expected_leaves)} "
        "tensors"
    )
    for actual_leaf, expected_leaf in zip(actual_leaves, expected_leaves):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(actual_leaf),
            keras.ops.convert_to_numpy(expected_leaf),
            atol=atol,
            rtol=rtol,
        )


def to_numpy(tensor):
    return keras.ops.convert_to_numpy(tensor)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm_step(cell, x, hidden, memory_cell):
    """One step of a Keras LSTM cell (gates i, f, c, o) in NumPy: the new
    `(hidden, memory_cell)`."""
    kernel, recurrent_kernel, bias = (to_numpy(weight) for weight in cell.weights)
    i, f, c, o = np.split(x @ kernel + hidden @ recurrent_kernel + bias, 4, axis=-1)
    memory_cell = sigmoid(f) * memory_cell + sigmoid(i) * np.tanh(c)
    return sigmoid(o) * np.tanh(memory_cell), memory_cell


def reference_masked_softmax(scores, mask):
    """Numpy softmax over the last axis of (batch, Tq, Ts) scores, with a
    (batch, Ts) memory mask; masked positions get weight 0."""
    scores = np.where(mask[:, None, :], scores, -np.inf)
    exponentials = np.exp(scores - scores.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


def random_inputs(shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def check_layer(
    layer,
    inputs,
    call_options=None,
    expected_output_shape=None,
    check_save=True,
    check_gradients=True,
    check_xla=True,
):
    """Runs the shared layer checks and returns the eager outputs.

    Args:
        layer: an unbuilt layer instance.
        inputs: dict from call-argument name to a numpy array; the arrays are
            passed as keyword arguments and become `keras.Input`s (with a free
            batch dimension) for the save/load check. An argument that takes
            a list of tensors (such as ScalarMix's `layer_outputs`) may map
            to a list of numpy arrays.
        call_options: dict of non-tensor keyword arguments for every call,
            such as `{"return_attention_scores": True}`.
        expected_output_shape: the shape of the first output, if given.
        check_save, check_gradients, check_xla: switch a check off for a layer
            where it cannot apply (say why in the test).
    """
    call_options = call_options or {}
    outputs = layer(**inputs, **call_options)

    if expected_output_shape is not None:
        first_output = keras.tree.flatten(outputs)[0]
        assert tuple(first_output.shape) == tuple(expected_output_shape)

    check_config_round_trip(layer, inputs, call_options, outputs)
    if check_save:
        _check_keras_save_and_load(layer, inputs, call_options, outputs)
    if check_gradients:
        assert_every_variable_gets_gradient(layer, inputs, call_options)
    if check_xla:
        _check_xla_compiles(layer, inputs, call_options, outputs)
    return outputs


def check_config_round_trip(layer, inputs, call_options, outputs):
    """`from_config(get_config())` rebuilds `layer` (or a model; the
    registry revives it too) and, with its weights, computes `outputs` from
    `layer(**inputs, **call_options)`."""
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config, "get_config() does not round-trip"
    # Serialization through the registry must also find the class.
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    assert type(revived) is type(layer)
    clone(**inputs, **call_options)
    clone.set_weights(layer.get_weights())
    assert_allclose_nested(clone(**inputs, **call_options), outputs)


def _to_tensors(inputs):
    """tf.constant of each array (or of each array in a list) of `inputs`."""
    return {
        name: [tf.constant(array) for array in value]
        if isinstance(value, (list, tuple))
        else tf.constant(value)
        for name, value in inputs.items()
    }


def _check_keras_save_and_load(layer, inputs, call_options, outputs):
    # The model takes a flat dict of named inputs; a list argument `name`
    # becomes the inputs `name_0`, `name_1`, ...
    model_inputs, model_arrays, call_arguments = {}, {}, {}

    def symbolic_input(name, array):
        model_arrays[name] = array
        model_inputs[name] = keras.Input(
            shape=array.shape[1:], dtype=str(array.dtype), name=name
        )
        return model_inputs[name]

    for name, value in inputs.items():
        if isinstance(value, (list, tuple)):
            call_arguments[name] = [
                symbolic_input(f"{name}_{index}", array)
                for index, array in enumerate(value)
            ]
        else:
            call_arguments[name] = symbolic_input(name, value)
    model = keras.Model(model_inputs, layer(**call_arguments, **call_options))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    assert_allclose_nested(loaded(model_arrays), outputs)


def _float_leaves(structure):
    return [
        leaf
        for leaf in keras.tree.flatten(structure)
        if "float" in str(keras.backend.standardize_dtype(leaf.dtype))
    ]


def assert_every_variable_gets_gradient(layer, inputs, call_options=None):
    """Asserts that each trainable variable gets a finite, non-zero gradient."""
    call_options = call_options or {}
    tensors = _to_tensors(inputs)
    with tf.GradientTape() as tape:
        outputs = layer(**tensors, **call_options)
        # A random projection of every output, so no gradient cancels out.
        loss = 0.0
        for index, leaf in enumerate(_float_leaves(outputs)):
            weights = tf.constant(random_inputs(leaf.shape, seed=100 + index))
            loss += tf.reduce_sum(tf.cast(leaf, "float32") * weights)
    variables = layer.trainable_variables
    assert variables, "the layer has no trainable variables"
    gradients = tape.gradient(loss, variables)
    for variable, gradient in zip(variables, gradients):
        assert gradient is not None, f"no gradient reaches {variable.path}"
        gradient = tf.convert_to_tensor(gradient).numpy()
        assert np.all(np.isfinite(gradient)), f"{variable.path}: gradient NaN"
        assert np.any(gradient != 0), f"{variable.path}: gradient is zero"


def _check_xla_compiles(layer, inputs, call_options, outputs):
    @tf.function(jit_compile=True)
    def compiled(tensors):
        return layer(**tensors, **call_options)

    tensors = _to_tensors(inputs)
    assert_allclose_nested(compiled(tensors), outputs, atol=1e-4, rtol=1e-4)


def assert_changes_do_not_leak(function, inputs, name, positions, seed=7):
    """Asserts that perturbing masked positions never changes the outputs.

    Args:
        function: maps a dict of inputs to outputs (nested tensors).
        inputs: dict from name to numpy array.
        name: which input to perturb.
        positions: numpy index (for example `np.s_[:, 3:]`) of the positions
            that must not influence the outputs.
    """
    perturbed = dict(inputs)
    noise = random_inputs(inputs[name][positions].shape, seed=seed) * 10.0
    perturbed[name] = inputs[name].copy()
    perturbed[name][positions] += noise
    assert_allclose_nested(function(perturbed), function(inputs))


def assert_memory_mask_respected(layer, inputs, first_masked=3):
    """For a `(query, values, mask)` attention layer whose inputs mask the
    second example's memory from `first_masked` on: the masked positions get
    exactly zero weight, the rest positive weights summing to one, and
    changing the masked values never changes the outputs."""

    def attend(tensors):
        return layer(**tensors)

    _, attention_weights = attend(inputs)
    attention_weights = to_numpy(attention_weights)
    assert np.all(attention_weights[1, ..., first_masked:] == 0.0)
    assert np.all(attention_weights[1, ..., :first_masked] > 0.0)
    np.testing.assert_allclose(attention_weights.sum(-1), 1.0, rtol=1e-6)
    assert_changes_do_not_leak(attend, inputs, "values", np.s_[1, first_masked:])

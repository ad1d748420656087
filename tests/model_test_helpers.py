"""Shared checks for every tfnlp model test (as keras-hub's
`run_backbone_test`), so each model family's tests state only what is
particular to it.

`check_model(model, inputs, directory)` runs what every model must do:

- it runs on `inputs`;
- the config round trip: `from_config(get_config())` rebuilds a model of the
  same class and config that, given the same weights, computes the same
  outputs; `serialize_keras_object` / `deserialize_keras_object` revive it;
- a `.keras` archive reloads (safe mode) as the same class with the same
  outputs;
- with `jax=True`, that archive loaded on the JAX backend in a new process
  gives the same outputs (the model code is `keras.ops` only);
- a `tf.train.Checkpoint` of it (what the trainers write) holds every
  variable, and restores into a model rebuilt from its config (a list of
  layers kept in a Keras `TrackedList` would be missing).
"""

import os
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

from tests.conftest import REPOSITORY
from tests.layer_test_helpers import assert_allclose_nested, check_config_round_trip

# Run with KERAS_BACKEND=jax: loads the .keras archive argv[1], runs it on
# the inputs saved in argv[2] (one jax.jit: op-by-op compilation on CPU is
# slower) and saves the flattened outputs to argv[3].
_JAX_SCRIPT = """
import sys, jax, keras, numpy as np
import tfnlp.layers, tfnlp.models  # registers the classes
model = keras.saving.load_model(sys.argv[1])
inputs = dict(np.load(sys.argv[2]))
forward = jax.jit(lambda trainable, non_trainable, inputs:
                  model.stateless_call(trainable, non_trainable, inputs)[0])
outputs = forward([v.value for v in model.trainable_variables],
                  [v.value for v in model.non_trainable_variables], inputs)
leaves = keras.tree.flatten(outputs)
np.savez(sys.argv[3], backend=keras.config.backend(),
         **{f"output_{index}": np.asarray(leaf) for index, leaf in enumerate(leaves)})
"""


def check_model(model, inputs, directory, jax=False, atol=1e-5):
    """Runs every shared check on `model` (see the module docstring).

    Args:
        model: a built tfnlp model.
        inputs: a dict of numpy arrays the model takes.
        directory: a `pathlib.Path` for the archives (a `tmp_path`).
        jax: also compare with the JAX backend (a subprocess of a few
            seconds).
        atol: the tolerance of the comparisons.
    """
    outputs = model(inputs)
    check_config_round_trip(model, {"inputs": inputs}, {}, outputs)
    path = check_keras_save_and_load(model, inputs, outputs, directory, atol)
    if jax:
        check_jax_outputs(path, inputs, outputs, directory, atol)
    check_tf_checkpoint(model, inputs, outputs, directory)


def check_tf_checkpoint(model, inputs, outputs, directory):
    """A `tf.train.Checkpoint(model=model)` holds every variable of `model`
    and restores them all into `from_config(get_config())`."""
    path = tf.train.Checkpoint(model=model).write(str(directory / "tf_checkpoint" / "ckpt"))
    saved = [name for name in tf.train.load_checkpoint(path).get_variable_to_shape_map()
             if name.startswith("model/")]
    assert len(saved) == len(model.weights), (
        f"the checkpoint holds {len(saved)} of the model's {len(model.weights)} variables")
    restored = type(model).from_config(model.get_config())
    restored(inputs)
    tf.train.Checkpoint(model=restored).read(path).assert_consumed()
    assert_allclose_nested(restored(inputs), outputs, atol=0, rtol=0)


def check_keras_save_and_load(model, inputs, outputs, directory, atol=1e-5):
    """Saves `model` as a `.keras` archive and reloads it; returns the path."""
    path = directory / f"{type(model).__name__}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is type(model)
    assert loaded.get_config() == model.get_config()
    assert_allclose_nested(loaded(inputs), outputs, atol=atol, rtol=atol)
    return path


def check_jax_outputs(path, inputs, outputs, directory, atol=1e-5):
    """The `.keras` archive at `path`, run on JAX, gives `outputs`."""
    inputs_path, outputs_path = directory / "jax_inputs.npz", directory / "jax_outputs.npz"
    np.savez(inputs_path, **inputs)
    # XLA_FLAGS (tests/conftest.py) skips XLA's optimisations, which do not
    # pay off for compiling each small initializer.
    environment = dict(os.environ, KERAS_BACKEND="jax")
    process = subprocess.run(
        [sys.executable, "-c", _JAX_SCRIPT, str(path), str(inputs_path), str(outputs_path)],
        cwd=REPOSITORY, env=environment, capture_output=True, text=True,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    jax_outputs = np.load(outputs_path)
    assert str(jax_outputs["backend"]) == "jax"
    expected = keras.tree.flatten(outputs)
    assert len(jax_outputs.files) - 1 == len(expected)
    for index, leaf in enumerate(expected):
        np.testing.assert_allclose(jax_outputs[f"output_{index}"],
                                   keras.ops.convert_to_numpy(leaf), atol=atol, rtol=atol,
                                   err_msg=f"output {index}")

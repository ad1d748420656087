"""The layers are written with keras.ops: JAX must compute what TensorFlow does."""

import os
import subprocess
import sys

import keras
import numpy as np

from tests.backend_outputs import compute_outputs
from tests.conftest import REPOSITORY


def outputs_on(backend, directory):
    path = directory / f"{backend}.npz"
    environment = dict(os.environ, KERAS_BACKEND=backend)
    subprocess.run(
        [sys.executable, "-m", "tests.backend_outputs", str(path)],
        cwd=REPOSITORY, env=environment, check=True, capture_output=True,
    )
    return np.load(path)


def test_every_layer_gives_the_same_outputs_on_jax_and_tensorflow(tmp_path):
    assert keras.backend.backend() == "tensorflow"
    tensorflow_outputs = compute_outputs()  # in this process
    jax_outputs = outputs_on("jax", tmp_path)
    assert str(jax_outputs["backend"]) == "jax"
    names = sorted(tensorflow_outputs)
    assert names == sorted(set(jax_outputs.files) - {"backend"})
    assert len(names) > 12
    for name in names:
        np.testing.assert_allclose(
            jax_outputs[name], tensorflow_outputs[name], atol=2e-5, rtol=2e-5,
            err_msg=name,
        )

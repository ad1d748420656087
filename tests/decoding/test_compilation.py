"""The decoders compile with XLA, export to SavedModels of stock ops, and run on JAX."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from tests.conftest import REPOSITORY
from tests.decoding.toy_models import ToyModel, numpy_outputs, run_backend_cases
from tests.export.helpers import saved_op_types
from tfnlp.decoding import BeamSearch, RandomSampling

END = 1


def assert_same_results(actual, expected, rtol=1e-6):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        if name.endswith("scores"):
            np.testing.assert_allclose(actual[name], expected[name], rtol=rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_xla_compiled_decoding_equals_eager_decoding():
    # (Each case takes seconds to compile on two cores: the prompted ones,
    # which cover prefilled caches, the constraints and per-example seeds.)
    # Sampling's hash draws the same noise with and without XLA.
    names = ["greedy_prompt", "beam_prompt", "sampling_prompt"]
    eager = run_backend_cases(lambda function: function, names)
    compiled = run_backend_cases(lambda function: tf.function(function, jit_compile=True), names)
    assert_same_results(compiled, eager)


def test_unknown_batch_size_in_a_graph():
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=3, seed=41)
    decoder = BeamSearch(2, num_return_sequences=2, no_repeat_ngram_size=2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None, 6], tf.float32)])
    def decode(start_ids, bias):
        rows = tf.shape(start_ids)[0]
        cache = {"bias": bias, "history": tf.fill([rows, 7], -1),
                 "steps": tf.zeros([rows], tf.int32)}
        return decoder(model.step_fn, cache, start_ids, END, 6)

    assert_same_results(
        numpy_outputs(decode(model.start_ids, model.bias)),
        numpy_outputs(decoder(model.step_fn, model.initial_cache(), model.start_ids, END, 6)),
    )


class Generator(tf.Module):
    """A SavedModel that beam-searches from start tokens, and samples from
    prompts with one seed per example, with a toy model."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.beam_search = BeamSearch(3, "gnmt", 0.6, num_return_sequences=2,
                                      no_repeat_ngram_size=2, min_length=1)
        self.sampling = RandomSampling(top_k=3, top_p=0.9, seed=0, repetition_penalty=1.2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None, 6], tf.float32),
                                  tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None, 3], tf.int32),
                                  tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None, 2], tf.int64)])
    def generate(self, start_ids, bias, max_lengths, prompt_ids, prompt_lengths, seeds):
        rows = tf.shape(start_ids)[0]
        cache = {"bias": bias, "history": tf.fill([rows, 7], -1),
                 "steps": tf.zeros([rows], tf.int32)}
        beams = self.beam_search(self.model.step_fn, cache, start_ids, END, 6, max_lengths)
        # Prompts of 3 tokens at most, then 4 new ones: indices up to 5.
        samples = self.sampling(self.model.step_fn, cache, end_id=END, max_length=4,
                                prompt_ids=prompt_ids, prompt_lengths=prompt_lengths,
                                seed=seeds)
        return {"beam_ids": beams["ids"], "beam_scores": beams["scores"],
                "sample_ids": samples["ids"]}


def test_export_to_a_saved_model_of_stock_ops(tmp_path):
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=3, seed=42, end_bias=0.5)
    generator = Generator(model)
    prompt_lengths = np.array([2, 3, 1], np.int32)
    inputs = (tf.constant(model.start_ids), tf.constant(model.bias),
              tf.constant([6, 2, 4], tf.int32), tf.constant(model.prompts(prompt_lengths, 3)),
              tf.constant(prompt_lengths), tf.constant([[3, 0], [4, 0], [5, 0]], tf.int64))
    expected = numpy_outputs(generator.generate(*inputs))
    tf.saved_model.save(generator, str(tmp_path))

    op_types = saved_op_types(str(tmp_path))
    assert {"While", "StatelessWhile"} & op_types  # the loop is in the graph
    assert "TopKV2" in op_types and "GatherV2" in op_types
    assert not [op for op in op_types if "Addons" in op or "GatherTree" in op]
    stock = set(dir(tf.raw_ops))
    assert op_types <= stock, sorted(op_types - stock)

    reloaded = tf.saved_model.load(str(tmp_path))
    assert_same_results(numpy_outputs(reloaded.generate(*inputs)), expected)


_JAX_SCRIPT = """
import sys, jax, keras, numpy as np
from tests.decoding.toy_models import run_backend_cases
outputs = run_backend_cases(jax.jit)
again = run_backend_cases(jax.jit, ["sampling"])  # compiled anew, same seed
np.savez(sys.argv[1], backend=keras.config.backend(), **outputs,
         **{"again/" + name: value for name, value in again.items()})
"""


def test_jax_gives_the_tensorflow_results(tmp_path):
    path = tmp_path / "jax.npz"
    environment = dict(os.environ, KERAS_BACKEND="jax",
                       XLA_FLAGS="--xla_backend_optimization_level=0")
    process = subprocess.run([sys.executable, "-c", _JAX_SCRIPT, str(path)], cwd=REPOSITORY,
                             env=environment, capture_output=True, text=True)
    assert process.returncode == 0, process.stderr[-4000:]
    jax_outputs = dict(np.load(path))
    assert str(jax_outputs.pop("backend")) == "jax"
    again = {name[len("again/"):]: jax_outputs.pop(name)
             for name in list(jax_outputs) if name.startswith("again/")}
    tensorflow_outputs = run_backend_cases(lambda function: function)
    # Sampling's noise is an integer hash: the same samples on both
    # backends, and again when compiled anew.
    assert any(name.startswith("sampling/") for name in again)
    assert_same_results(again, {name: jax_outputs[name] for name in again})
    assert_same_results(jax_outputs, tensorflow_outputs, rtol=1e-5)

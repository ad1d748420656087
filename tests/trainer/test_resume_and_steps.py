"""Resuming after SIGKILL, gradient accumulation, NaN stop, optimizer set-up."""

import os
import signal
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.trainer import helpers
from trainer import optimization
from trainer.tasks import bert_pretraining
from trainer.tasks.bert_pretraining import parse_flags


@pytest.fixture(scope="module")
def train_data(tmp_path_factory):
    return str(helpers.write_records(tmp_path_factory.mktemp("data") / "train.tfrecord"))


def test_resumes_after_sigkill_like_an_uninterrupted_run(train_data, tmp_path):
    killed, whole = str(tmp_path / "killed"), str(tmp_path / "whole")
    settings = dict(train_steps=40, checkpoint_every_steps=5, log_every_steps=20)
    arguments = helpers.flags(train_data, killed, **settings)
    process = helpers.start(arguments)
    deadline = time.monotonic() + 180
    while tf.train.latest_checkpoint(killed) is None and process.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    restored = int(tf.train.latest_checkpoint(killed).rsplit("-", 1)[1])
    assert restored < 40, "the run ended before it could be killed; raise train_steps"
    # Only the killed run needs a process of its own.
    output = helpers.run_here(arguments)
    assert f"resuming from step {restored}." in output
    log = helpers.train_log(killed)
    assert log[-1]["step"] == 40
    helpers.run_here(helpers.flags(train_data, whole, **settings))
    np.testing.assert_allclose(log[-1]["loss"], helpers.train_log(whole)[-1]["loss"], rtol=1e-4)


def run_in_process(train_data, model_dir, **overrides):
    return bert_pretraining.run(parse_flags(helpers.flags(train_data, model_dir, **overrides)))


def test_accumulating_two_half_batches_equals_one_batch(train_data, tmp_path):
    run_in_process(train_data, str(tmp_path / "one"), train_steps=3)
    run_in_process(train_data, str(tmp_path / "two"), train_steps=3, gradient_accumulation_steps=2)
    one, two = helpers.train_log(tmp_path / "one"), helpers.train_log(tmp_path / "two")
    for name in ("loss", "gradient_norm"):
        np.testing.assert_allclose(
            [record[name] for record in two], [record[name] for record in one], rtol=1e-4
        )


def test_nan_loss_stops_with_the_step(tmp_path):
    # Records 8..15 (the second batch of 8 when read in file order) carry a
    # NaN masked-LM weight: the loss of step 2 is NaN, computed in the graph.
    data = str(helpers.write_records(tmp_path / "nan.tfrecord", nan_weight_records=range(8, 16)))
    settings = dict(shuffle_buffer=1, checkpoint_every_steps=1, warmup_steps=0, train_steps=4)
    with pytest.raises(FloatingPointError, match="at step 2"):
        run_in_process(data, str(tmp_path / "nan"), **settings)
    assert [record["step"] for record in helpers.train_log(tmp_path / "nan")] == [1]
    # The last checkpoint is kept, and it holds the state after step 1, not
    # the NaN weights that step 2 applied: step 1 of a run on clean records.
    latest = tf.train.latest_checkpoint(str(tmp_path / "nan"))
    assert latest.endswith("ckpt-1")
    clean = str(helpers.write_records(tmp_path / "clean.tfrecord"))
    run_in_process(clean, str(tmp_path / "clean"), **settings)
    kept = helpers.checkpoint_values(latest)
    expected = helpers.checkpoint_values(tmp_path / "clean" / "ckpt-1")
    assert sorted(kept) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(kept[name], value, err_msg=name)


def test_weight_decay_skips_layer_norms_and_biases():
    from tfnlp.models import BertConfig, BertEncoder

    encoder = BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=50))
    optimizer = optimization.create_optimizer(
        "adamw", 1e-3, train_steps=10, weight_decay=0.01, model=encoder
    )
    optimizer.build(encoder.trainable_variables)
    decayed = {v.path for v in encoder.trainable_variables if optimizer._use_weight_decay(v)}
    assert any("token_embedding" in path for path in decayed)
    assert any("kernel" in path for path in decayed)
    assert not any(
        name in path for path in decayed for name in ("layer_norm", "bias", "gamma", "beta")
    )
    lamb = optimization.create_optimizer("lamb", 1e-3, 10, mixed_precision="float16")
    assert isinstance(lamb, keras.optimizers.LossScaleOptimizer)
    assert isinstance(lamb.inner_optimizer, keras.optimizers.Lamb)


def test_warmup_then_linear_decay_schedule():
    schedule = optimization.WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    rates = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 200)]
    np.testing.assert_allclose(rates, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    restored = optimization.WarmupPolynomialDecay.from_config(schedule.get_config())
    assert float(restored(55)) == pytest.approx(5e-4)


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_with_xla_trains_to_finite_losses(train_data, tmp_path, precision):
    model_dir = str(tmp_path / precision)
    try:
        helpers.run_here(helpers.flags(
            train_data, model_dir, train_steps=3, mixed_precision=precision, jit_compile="true"
        ))
        assert keras.mixed_precision.global_policy().name == f"mixed_{precision}"
    finally:  # The run set the global dtype policy: later tests need the default.
        keras.mixed_precision.set_global_policy("float32")
    log = helpers.train_log(model_dir)
    assert [record["step"] for record in log] == [1, 2, 3]
    assert all(np.isfinite(record["loss"]) and record["loss"] > 0 for record in log)
    assert all(np.isfinite(record["gradient_norm"]) for record in log)

"""End-to-end runs of `python -m trainer.pretrain`: logs, export, strategies."""

import json
import os
import socket

import numpy as np
import pytest
import tensorflow as tf

from tests.trainer import helpers


@pytest.fixture(scope="module")
def train_data(tmp_path_factory):
    return str(helpers.write_records(tmp_path_factory.mktemp("data") / "train.tfrecord"))


@pytest.fixture(scope="module")
def single_run(train_data, tmp_path_factory):
    """One replica, with evaluation, attention images and an export."""
    root = tmp_path_factory.mktemp("single")
    model_dir, export_dir = str(root / "model"), str(root / "export")
    output = helpers.run(helpers.flags(
        train_data, model_dir,
        eval_data=train_data, eval_steps=2, export_dir=export_dir,
        attention_images_every_steps=5, checkpoint_every_steps=2, keep_checkpoints=2,
        profile_steps="2,3",
    ))
    return model_dir, export_dir, output


def test_writes_checkpoints_and_step_log(single_run):
    model_dir, _, _ = single_run
    log = helpers.train_log(model_dir)
    assert [record["step"] for record in log] == [1, 2, 3, 4, 5]
    assert all(np.isfinite(record["loss"]) for record in log)
    # Linear warmup over 2 steps, then a linear decay to 0 at step 5.
    np.testing.assert_allclose(
        [record["learning_rate"] for record in log], [0.0, 5e-4, 1e-3, 2 / 3 * 1e-3, 1 / 3 * 1e-3],
        rtol=1e-5,
    )
    # keep_checkpoints=2 of steps 2, 4 and the final 5.
    assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-5")
    assert len(tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths) == 2
    with open(os.path.join(model_dir, "config.json")) as file:
        assert json.load(file)["num_layers"] == 1


def test_tensorboard_scalars_hparams_and_images(single_run):
    model_dir, _, _ = single_run
    train = helpers.event_values(os.path.join(model_dir, "train"))
    for tag in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy",
                "mlm_perplexity", "learning_rate", "examples_per_second",
                "tokens_per_second", "gradient_norm"):
        assert tag in train, sorted(train)
        steps = [step for step, _ in train[tag]]
        assert steps == [1, 2, 3, 4, 5], (tag, steps)
    loss = float(train["loss"][-1][1])
    assert 0.0 < loss < 10.0
    np.testing.assert_allclose(
        float(train["mlm_perplexity"][-1][1]), np.exp(float(train["mlm_loss"][-1][1])), rtol=1e-4
    )
    assert 0.0 <= float(train["mlm_accuracy"][-1][1]) <= 1.0
    assert float(train["gradient_norm"][-1][1]) > 0.0
    assert "_hparams_/session_start_info" in train
    # One heatmap per layer: 2 heads of 32 x 32 tokens at most, 4 pixels each.
    (step, image), = train["attention/layer_0"]
    width, height = (int(value) for value in image[:2])
    assert step == 5 and height <= 128 and width > height
    evaluation = helpers.event_values(os.path.join(model_dir, "eval"))
    assert {"loss", "mlm_accuracy", "nsp_accuracy", "mlm_perplexity"} <= set(evaluation)


def test_exports_the_encoder(single_run):
    _, export_dir, _ = single_run
    # No --vocab_file: the encoder's ids signature only, as version 1.
    loaded = tf.saved_model.load(os.path.join(export_dir, "1"))
    assert sorted(loaded.signatures) == ["encode_ids", "serving_default"]
    outputs = loaded.signatures["serving_default"](
        input_ids=tf.constant([[2, 7, 9, 3]], tf.int32),
        input_mask=tf.constant([[1, 1, 1, 1]], tf.int32),
        segment_ids=tf.constant([[0, 0, 0, 0]], tf.int32),
    )
    assert outputs["pooled_output"].shape == (1, 128)
    assert outputs["sequence_output"].shape == (1, 4, 128)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("127.0.0.1", 0))
    ports = [each.getsockname()[1] for each in sockets]
    for each in sockets:
        each.close()
    return ports


def final_loss(model_dir):
    return helpers.train_log(model_dir)[-1]["loss"]


def test_mirrored_strategy_matches_one_replica(single_run, train_data, tmp_path):
    model_dir = str(tmp_path / "mirrored")
    output = helpers.run(
        helpers.flags(train_data, model_dir, strategy="mirrored"), logical_cpus=2
    )
    assert "on 2 replica(s)" in output
    np.testing.assert_allclose(final_loss(model_dir), final_loss(single_run[0]), rtol=1e-3)


def test_multi_worker_strategy_matches_one_replica(single_run, train_data, tmp_path):
    model_dir = str(tmp_path / "multi_worker")
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = [
        helpers.start(
            helpers.flags(train_data, model_dir, strategy="multi_worker"),
            TF_CONFIG=json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
            ),
        )
        for index in range(2)
    ]
    outputs = [process.communicate(timeout=240)[0] for process in processes]
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-4000:]
    assert "on 2 replica(s)" in outputs[0]
    # Only the chief (worker 0) writes the logs; the other cleans up.
    assert len(helpers.train_log(model_dir)) == 5
    assert not os.path.exists(os.path.join(model_dir, ".worker_checkpoints"))
    np.testing.assert_allclose(final_loss(model_dir), final_loss(single_run[0]), rtol=1e-3)


def test_profiles_the_requested_steps(single_run):
    model_dir, _, _ = single_run
    traces = [
        os.path.join(directory, name)
        for directory, _, names in os.walk(model_dir)
        for name in names if name.endswith(".xplane.pb")
    ]
    assert traces, "no profiler trace (*.xplane.pb) under the model directory"
    assert os.sep + os.path.join("plugins", "profile") + os.sep in traces[0]


def test_trainer_export_of_a_pretraining_run(single_run, tmp_path):
    import tensorflow_text  # noqa: F401 (the text signatures' ops)

    from tfnlp.text import write_vocabulary
    from trainer import export

    model_dir, _, _ = single_run
    arguments = [f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'export'}"]
    with pytest.raises(ValueError, match="records no vocabulary.*--vocab_file"):
        export.main(arguments)
    vocab_file = tmp_path / "vocab.txt"
    write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                     + [f"w{index}" for index in range(helpers.VOCAB_SIZE - 5)], vocab_file)
    version_dir = export.main([*arguments, f"--vocab_file={vocab_file}", "--max_seq_length=16",
                               "--top_k=4"])
    assert version_dir.endswith("1")
    loaded = tf.saved_model.load(version_dir)
    assert {"serving_default", "encode_ids", "fill_mask", "fill_mask_ids"} <= set(loaded.signatures)
    filled = loaded.signatures["fill_mask"](text=tf.constant(["w1 [MASK] w2 w3"]))
    assert filled["mask_positions"].numpy()[0].tolist()[:2] == [2, -1]
    assert filled["tokens"].shape == (1, 8, 4)
    scores = filled["scores"].numpy()[0, 0]
    assert np.all(np.diff(scores) <= 0) and 0 < scores.sum() <= 1.0 + 1e-6

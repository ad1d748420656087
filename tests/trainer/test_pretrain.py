"""End-to-end runs of `python -m trainer.pretrain`: logs, export, strategies."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.trainer import helpers
from tests.trainer.tensorboard_server import TensorBoardServer


@pytest.fixture(scope="module")
def train_data(tmp_path_factory):
    return str(helpers.write_records(tmp_path_factory.mktemp("data") / "train.tfrecord"))


@pytest.fixture(scope="module")
def single_run(train_data, tmp_path_factory):
    """One replica, with evaluation, attention images and an export."""
    root = tmp_path_factory.mktemp("single")
    model_dir, export_dir = str(root / "model"), str(root / "export")
    output = helpers.run_here(helpers.flags(
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


# The tags of the scalars of the `train` run, by their `train_log.jsonl`
# names.
TRAIN_TAGS = {
    "loss": "loss/loss", "mlm_loss": "loss/mlm_loss", "nsp_loss": "loss/nsp_loss",
    "mlm_accuracy": "metrics/mlm_accuracy", "nsp_accuracy": "metrics/nsp_accuracy",
    "mlm_perplexity": "metrics/mlm_perplexity", "learning_rate": "optimization/learning_rate",
    "gradient_norm": "optimization/gradient_norm",
    "examples_per_second": "throughput/examples_per_second",
    "tokens_per_second": "throughput/tokens_per_second",
}
EVAL_TAGS = {"loss": "loss/loss", "mlm_accuracy": "metrics/mlm_accuracy",
             "nsp_accuracy": "metrics/nsp_accuracy", "mlm_perplexity": "metrics/mlm_perplexity"}


def test_tensorboard_scalars_hparams_and_images(single_run):
    model_dir, _, _ = single_run
    train = helpers.tensorboard_values(model_dir, "train")
    for tag in TRAIN_TAGS.values():
        assert tag in train, sorted(train)
        steps = [step for step, _ in train[tag]]
        assert steps == [1, 2, 3, 4, 5], (tag, steps)
    # With log_every_steps=1 each scalar is its step's value in train_log.jsonl.
    log = helpers.train_log(model_dir)
    for name in ("loss", "mlm_loss", "nsp_loss", "learning_rate", "gradient_norm"):
        np.testing.assert_allclose([float(value) for _, value in train[TRAIN_TAGS[name]]],
                                   [record[name] for record in log], rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(
        [float(value) for _, value in train["metrics/mlm_perplexity"]],
        np.exp([record["mlm_loss"] for record in log]), rtol=1e-5,
    )
    assert 0.0 < log[-1]["loss"] < 10.0 and log[-1]["gradient_norm"] > 0.0
    # The hparams and their config are in the folder above `train/` (one trial).
    hparams = helpers.tensorboard_values(model_dir)
    assert {"_hparams_/session_start_info", "_hparams_/experiment"} <= set(hparams)
    # One picture per layer (2 heads side by side, labelled tokens): large
    # enough to read, about twice as wide as high.
    (step, image), = train["pictures/attention_layer_0"]
    width, height = (int(value) for value in image[:2])
    assert step == 5 and height >= 400 and width > 1.5 * height
    (step, table), = train["masked_lm_predictions"]
    assert step == 5 and b"| position | input | original | predictions |" in table.item()
    evaluation = helpers.tensorboard_values(model_dir, "eval")
    with open(os.path.join(model_dir, "eval_log.jsonl"), encoding="utf-8") as file:
        eval_log = [json.loads(line) for line in file]
    assert [record["step"] for record in eval_log] == [5]
    for name, tag in EVAL_TAGS.items():
        (step, value), = evaluation[tag]
        assert step == 5
        np.testing.assert_allclose(float(value), eval_log[0][name], rtol=1e-6, err_msg=tag)


# The metrics the HParams tab compares pretraining runs by.
HPARAMS_METRICS = {(group, tag) for group in ("train", "eval") for tag in EVAL_TAGS.values()}


@pytest.fixture(scope="module")
def mirrored_run(single_run, train_data):
    """Two replicas, without evaluation, beside `single_run`'s model_dir."""
    model_dir = os.path.join(os.path.dirname(single_run[0]), "mirrored")
    output = helpers.run(
        helpers.flags(train_data, model_dir, strategy="mirrored"), logical_cpus=2
    )
    return model_dir, output


def metric_values(session_group):
    """`{(run, tag): value}` of an HParams session group."""
    return {(value["name"]["group"], value["name"]["tag"]): value["value"]
            for value in session_group["metricValues"]}


def test_tensorboard_on_the_run_shows_scalars_pictures_text_hparams_and_the_profile(
        single_run):
    """The real `tensorboard --logdir=MODEL_DIR`, as the README has it:
    every tab has the run's data, and the losses come first."""
    model_dir, _, _ = single_run
    with TensorBoardServer(model_dir) as server:
        assert set(server.get("/data/runs")) == {
            "tensorboard", "tensorboard/train", "tensorboard/eval"}
        scalars = server.tags("scalars")
        assert set(TRAIN_TAGS.values()) <= scalars["tensorboard/train"]
        assert set(EVAL_TAGS.values()) <= scalars["tensorboard/eval"]
        # The groups of the Scalars tab, and of the Time Series tab that
        # TensorBoard opens on, start with the losses (the first groups are
        # the open ones); the pictures come after the figures.
        assert server.tag_groups("scalars") == [
            "loss", "metrics", "optimization", "throughput"]
        assert server.tag_groups("scalars", "images") == [
            "loss", "metrics", "optimization", "pictures", "throughput"]
        assert server.tags("images") == {"tensorboard/train": {"pictures/attention_layer_0"}}
        [picture] = server.get(
            "/data/plugin/images/images?run=tensorboard/train&tag=pictures/attention_layer_0")
        png = server.get(f"/data/plugin/images/individualImage?{picture['query']}")
        width, height = png_size(png)
        assert picture["step"] == 5 and height >= 400 and width > 1.5 * height
        assert server.tags("text") == {"tensorboard/train": {"masked_lm_predictions"}}
        [table] = server.get(
            "/data/plugin/text/text?run=tensorboard/train&tag=masked_lm_predictions")
        assert "<th>predictions</th>" in table["text"], table["text"]
        experiment, [trial] = server.hparams()
        hparams = {info["name"] for info in experiment["hparamInfos"]}
        assert {"learning_rate", "global_batch_size", "train_steps", "model/num_layers",
                "replicas"} <= hparams
        metrics = {(info["name"]["group"], info["name"]["tag"])
                   for info in experiment["metricInfos"]}
        assert metrics == HPARAMS_METRICS
        assert trial["hparams"]["learning_rate"] == 1e-3
        assert trial["name"] == model_dir
        # Each metric's last value.
        values = metric_values(trial)
        assert set(values) == HPARAMS_METRICS, trial["metricValues"]
        with open(os.path.join(model_dir, "eval_log.jsonl"), encoding="utf-8") as file:
            [evaluation] = [json.loads(line) for line in file]
        np.testing.assert_allclose(
            [values["train", "loss/loss"], values["eval", "loss/loss"],
             values["eval", "metrics/mlm_accuracy"]],
            [helpers.train_log(model_dir)[-1]["loss"], evaluation["loss"],
             evaluation["mlm_accuracy"]], rtol=1e-6)
        [profile] = server.get("/data/plugin/profile/runs")
        assert profile.startswith("tensorboard/train/")


def test_tensorboard_above_two_runs_compares_them(single_run, mirrored_run):
    """The real `tensorboard` on the folder above two runs, one without
    evaluation (and so without an `eval` run): the HParams tab has both,
    each with the last values of its metrics."""
    model_dir, mirrored_dir = single_run[0], mirrored_run[0]
    with TensorBoardServer(os.path.dirname(model_dir)) as server:
        runs = set(server.get("/data/runs"))
        assert not {run for run in runs if run.startswith("mirrored") and run.endswith("eval")}
        assert runs == {"model/tensorboard", "model/tensorboard/train",
                        "model/tensorboard/eval", "mirrored/tensorboard",
                        "mirrored/tensorboard/train"}
        _, trials = server.hparams()
        values = {trial["name"]: metric_values(trial) for trial in trials}
    assert set(values) == {model_dir, mirrored_dir}
    assert set(values[model_dir]) == HPARAMS_METRICS
    assert set(values[mirrored_dir]) == {(group, tag) for group, tag in HPARAMS_METRICS
                                         if group == "train"}
    np.testing.assert_allclose(values[mirrored_dir]["train", "loss/loss"],
                               helpers.train_log(mirrored_dir)[-1]["loss"], rtol=1e-6)


def png_size(png):
    """`(width, height)` of PNG bytes (from the IHDR chunk)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:40]
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# The export's outputs against the encoder restored from the final checkpoint
# (measured: within 1e-6).
EXPORT_ATOL = 1e-5


def test_exports_the_encoder(single_run):
    model_dir, export_dir, _ = single_run
    # No --vocab_file: the encoder's ids signature only, as version 1.
    loaded = tf.saved_model.load(os.path.join(export_dir, "1"))
    assert sorted(loaded.signatures) == ["encode_ids", "serving_default"]
    inputs = {
        "input_ids": [[2, 7, 9, 3, 0, 0], [2, 50, 61, 3, 72, 3]],
        "input_mask": [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]],
        "segment_ids": [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1]],
    }
    outputs = loaded.signatures["serving_default"](
        **{name: tf.constant(value, tf.int32) for name, value in inputs.items()})
    assert outputs["pooled_output"].shape == (2, 128)
    assert outputs["sequence_output"].shape == (2, 6, 128)
    trained = helpers.restored_pretraining_model(model_dir).encoder(
        {name: np.array(value, "int32") for name, value in inputs.items()}, training=False)
    for name in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(outputs[name].numpy(), np.asarray(trained[name]),
                                   atol=EXPORT_ATOL, err_msg=name)


# Measured agreement of two replicas with one (CPU, 5 steps): losses within
# 1.8e-7 relative, gradient norms equal, variables within 6e-8 (values up to
# 1). A version whose replicas skip the update is 1e-3 off from step 2 on.
LOSS_RTOL = 2e-6
VARIABLE_ATOL = 1e-6


def assert_same_training(model_dir, reference_dir):
    """Every step's losses and gradient norm, and every variable of the final
    checkpoint (model and optimizer), equal those of the reference run."""
    log, reference = helpers.train_log(model_dir), helpers.train_log(reference_dir)
    assert [record["step"] for record in log] == [record["step"] for record in reference]
    for name in ("loss", "mlm_loss", "nsp_loss", "gradient_norm"):
        np.testing.assert_allclose([record[name] for record in log],
                                   [record[name] for record in reference],
                                   rtol=LOSS_RTOL, err_msg=name)
    values = helpers.checkpoint_values(tf.train.latest_checkpoint(model_dir))
    expected = helpers.checkpoint_values(tf.train.latest_checkpoint(reference_dir))
    assert sorted(values) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(values[name], value, rtol=0, atol=VARIABLE_ATOL, err_msg=name)


def test_mirrored_strategy_matches_one_replica(single_run, mirrored_run):
    model_dir, output = mirrored_run
    assert "on 2 replica(s)" in output
    assert_same_training(model_dir, single_run[0])


def test_multi_worker_strategy_matches_one_replica(single_run, train_data, tmp_path):
    model_dir = str(tmp_path / "multi_worker")
    processes = [
        helpers.start(helpers.flags(train_data, model_dir, strategy="multi_worker"),
                      TF_CONFIG=tf_config)
        for tf_config in helpers.multi_worker_configs(2)
    ]
    outputs = [process.communicate(timeout=240)[0] for process in processes]
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-4000:]
    assert "on 2 replica(s)" in outputs[0]
    # Only the chief (worker 0) writes the logs; the other cleans up.
    assert len(helpers.train_log(model_dir)) == 5
    assert not os.path.exists(os.path.join(model_dir, ".worker_checkpoints"))
    assert_same_training(model_dir, single_run[0])


def test_profiles_the_requested_steps(single_run):
    model_dir, _, _ = single_run
    traces = [
        os.path.join(directory, name)
        for directory, _, names in os.walk(model_dir)
        for name in names if name.endswith(".xplane.pb")
    ]
    assert traces, "no profiler trace (*.xplane.pb) under the model directory"
    assert os.sep + os.path.join("plugins", "profile") + os.sep in traces[0]
    # Each traced step is marked (what the Profile tab's step times need).
    assert traced_steps(traces[0]) == [2, 3]


def traced_steps(path):
    """The `step_num` of each "train" step marker of an XSpace trace file."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with open(path, "rb") as file:
        space = xplane_pb2.XSpace.FromString(file.read())
    steps = []
    for plane in space.planes:
        events = {metadata.id: metadata.name for metadata in plane.event_metadata.values()}
        stats = {metadata.id: metadata.name for metadata in plane.stat_metadata.values()}
        for line in plane.lines:
            steps += [stat.int64_value for event in line.events
                      if events.get(event.metadata_id) == "train"
                      for stat in event.stats if stats[stat.metadata_id] == "step_num"]
    return sorted(steps)


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
    # The masked-LM distribution of the final checkpoint at [MASK], computed
    # here from [CLS] w1 [MASK] w2 w3 [SEP] (ids 2 6 4 7 8 3).
    vocabulary = vocab_file.read_text().split()
    length = 6
    batch = {
        "input_ids": np.array([[2, 6, 4, 7, 8, 3] + [0] * (16 - length)], "int32"),
        "input_mask": np.array([[1] * length + [0] * (16 - length)], "int32"),
        "segment_ids": np.zeros([1, 16], "int32"),
        "masked_lm_positions": np.array([[2]], "int32"),
    }
    logits = np.asarray(helpers.restored_pretraining_model(model_dir)(batch)["mlm_logits"])[0, 0]
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    top = np.argsort(-probabilities)[:4]
    assert [token.decode() for token in filled["tokens"].numpy()[0, 0]] == [
        vocabulary[index] for index in top]
    np.testing.assert_allclose(filled["scores"].numpy()[0, 0], probabilities[top],
                               atol=EXPORT_ATOL)

"""End-to-end runs of `python -m trainer.translate` on the dictionary task
of `tests.translation_helpers` (English sentences of one frame, translated
word by word), which a small model learns in a few dozen steps, so that its
BLEU is far from zero and differs from one evaluation to the next: logs,
BLEU, best checkpoint, export, strategies, averaging (resuming:
test_translate_resume.py, so that the two modules run on two workers)."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.export.helpers import run_in_new_process, saved_model_cli, saved_op_types
from tests.trainer import helpers
from tests.visualization.rendered_markdown import rendered_table
from tests.translation_helpers import (
    DICTIONARY_SIZES,
    assert_export_scores_the_best_bleu,
    dictionary_translation_data,
    evaluations,
    read_json,
    trainer_flags,
    write_lines,
)
from tfnlp.command_line import UsageError
from trainer import average_checkpoints, translate_text
from trainer.tasks import translation as translation_task
from trainer.tasks.translation import (
    load_translation_model,
    parse_flags,
    translation_signatures,
)
from trainer.translation_eval import Translator

TRAIN_PAIRS, EVAL_PAIRS = 400, 32
TRAIN_STEPS, EVAL_EVERY_STEPS = 60, 20
EVAL_STEPS = [20, 40, 60]
# The learning rate rises through the whole run (its warmup ends after it),
# 5e-4 a step: the model learns the task as the rate nears 0.02 (BLEU 55 at
# step 40), then the growing rate wrecks it (BLEU 9 at step 60), so the
# best checkpoint is not the last one. Measured BLEU: 8.7, 55.0, 9.3.
LEARNING = dict(learning_rate=0.1, warmup_steps=200)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Shards of the dictionary task, a 400-piece BPE model, and the raw
    validation lines."""
    return dictionary_translation_data(tmp_path_factory.mktemp("dictionary"), TRAIN_PAIRS,
                                       EVAL_PAIRS)


def run(arguments, **options):
    return helpers.run(arguments, module="trainer.translate", **options)


@pytest.fixture(scope="module")
def single_run(data, tmp_path_factory):
    """One replica, evaluated and saved every 20 steps, exported at the
    end; a heatmap per cross-attention head."""
    root = tmp_path_factory.mktemp("single")
    model_dir, export_dir = str(root / "model"), str(root / "export")
    output = helpers.run_here(
        trainer_flags(data, model_dir, "--alignment_heads=each", eval_data=data["val"],
                      train_steps=TRAIN_STEPS, eval_every_steps=EVAL_EVERY_STEPS,
                      checkpoint_every_steps=EVAL_EVERY_STEPS, export_dir=export_dir,
                      **LEARNING),
        module="trainer.translate")
    return model_dir, export_dir, output


def restored_weights(model_dir, prefix):
    """The weights of the run's model (config.json) in checkpoint `prefix`,
    restored here with a plain `tf.train.Checkpoint`."""
    model = keras.saving.deserialize_keras_object(
        read_json(os.path.join(model_dir, "config.json")))
    tf.train.Checkpoint(model=model).read(prefix).expect_partial()
    return model.get_weights()


def same_weights(first, second):
    return len(first) == len(second) and all(
        np.array_equal(a, b) for a, b in zip(first, second))


def test_writes_checkpoints_logs_and_the_best_checkpoint(single_run):
    model_dir, _, _ = single_run
    assert [record["step"] for record in helpers.train_log(model_dir)] == list(
        range(1, TRAIN_STEPS + 1))
    assert tf.train.latest_checkpoint(model_dir).endswith(f"ckpt-{TRAIN_STEPS}")
    records = evaluations(model_dir)
    assert [record["step"] for record in records] == EVAL_STEPS
    for record in records:
        assert {"loss", "nll_loss", "bleu", "bleu_lowercase", "chrf"} <= set(record)
    by_step = {record["step"]: record["bleu"] for record in records}
    assert len(set(by_step.values())) == len(by_step), by_step  # "best" means something
    best = read_json(os.path.join(model_dir, "best", "best.json"))
    assert by_step[best["step"]] == best["bleu"] > 20
    assert all(best["bleu"] > bleu + 1 for step, bleu in by_step.items()
               if step != best["step"]), by_step
    assert best["step"] != TRAIN_STEPS, "the fixture's best evaluation must not be its last"
    best_weights = restored_weights(model_dir, os.path.join(model_dir, "best",
                                                            best["checkpoint"]))
    for step in EVAL_STEPS:
        assert same_weights(best_weights, restored_weights(
            model_dir, os.path.join(model_dir, f"ckpt-{step}"))) == (step == best["step"]), step


def test_the_serving_record_holds_the_decoding_flags_of_the_run(single_run, data):
    model_dir, _, _ = single_run
    assert read_json(os.path.join(model_dir, "serving.json")) == {
        "model": "translation", "vocab_file": os.path.abspath(data["vocab_file"]),
        "max_length": 64, "beam_size": 2, "length_penalty": "gnmt",
        "length_penalty_alpha": 0.6, "max_length_a": 1.5, "max_length_b": 10}


def test_tensorboard_has_losses_scores_samples_and_a_heatmap_per_head(single_run):
    model_dir, _, _ = single_run
    train = helpers.tensorboard_values(model_dir, "train")
    assert {"loss/loss", "loss/nll_loss", "metrics/perplexity", "metrics/token_accuracy",
            "optimization/learning_rate", "throughput/tokens_per_second",
            "optimization/gradient_norm"} <= set(train)
    evaluation = helpers.tensorboard_values(model_dir, "eval")
    assert {"metrics/bleu", "metrics/bleu_lowercase", "metrics/chrf",
            "loss/loss"} <= set(evaluation)
    # At each evaluation: a table of the sample sentences, and their
    # alignments with the pieces on the axes.
    assert [step for step, _ in evaluation["sample_translations"]] == EVAL_STEPS
    header, *rows = rendered_table(evaluation["sample_translations"][-1][1].item().decode())
    assert header == ["#", "source", "reference", "translation"] and len(rows) == 2
    heatmaps = [tag for tag in evaluation if tag.startswith("pictures/alignment_")]
    assert sorted(heatmaps) == [f"pictures/alignment_sentence_{sentence}/head_{head}"
                                for sentence in (0, 1)
                                for head in range(DICTIONARY_SIZES["num_heads"])]
    [(step, image)] = evaluation["pictures/alignment_sentence_0/head_0"][-1:]
    width, height = (int(value) for value in image[:2])
    assert step == EVAL_STEPS[-1] and width >= 300 and height >= 300
    # HParams: the flags, and the scores to compare runs by.
    hparams = helpers.tensorboard_values(model_dir)
    assert {"_hparams_/session_start_info", "_hparams_/experiment"} <= set(hparams)


def test_served_translations_score_the_logged_bleu(single_run, data):
    model_dir, export_dir, _ = single_run
    assert_export_scores_the_best_bleu(model_dir, export_dir, data)


def test_decoding_does_not_depend_on_the_batch(single_run, data):
    model_dir, _, _ = single_run
    record = read_json(os.path.join(model_dir, "serving.json"))
    translation = translation_signatures(load_translation_model(model_dir), record)
    source_ids = translation.source_ids(tf.constant(data["val_sources"])).numpy()
    translator = Translator(translation)
    together, _ = translator(source_ids)
    for row in range(EVAL_PAIRS):
        length = int(np.sum(source_ids[row] != 0))
        alone, _ = translator(source_ids[row : row + 1, :length])
        np.testing.assert_array_equal(alone[0], together[row], err_msg=f"sentence {row}")


def test_export_holds_stock_ops_and_the_sentencepiece_op_only(single_run):
    _, export_dir, _ = single_run
    op_types = saved_op_types(os.path.join(export_dir, "1"))
    assert {"While", "StatelessWhile"} & op_types  # decoding is in the graph
    text_ops = {op for op in op_types if op.startswith("Sentencepiece")}
    assert text_ops  # the tokenizer too
    assert op_types - text_ops <= set(dir(tf.raw_ops)), sorted(op_types - set(dir(tf.raw_ops)))


def test_export_runs_with_only_tensorflow_and_tensorflow_text(single_run, tmp_path):
    _, export_dir, _ = single_run
    version = os.path.join(export_dir, "1")
    sentences = ["A dog runs.", "Two men are talking."]
    results, modules = run_in_new_process(tmp_path, [
        {"export_dir": version, "signature": "serving_default",
         "inputs": {"inputs": ["string", sentences]}},
    ])
    assert not {"tfnlp", "trainer", "keras_hub"} & set(modules)
    served = tf.saved_model.load(version).signatures["serving_default"](
        inputs=tf.constant(sentences))
    assert results[0]["translations"] == [
        text.decode("utf-8") for text in served["translations"].numpy()]
    output = saved_model_cli("run", "--dir", version, "--tag_set", "serve",
                             "--signature_def", "translate_ids",
                             "--input_exprs", "source_ids=[[5,6,7,3]]")
    assert "Result for output key ids" in output and "Result for output key scores" in output


def test_mirrored_strategy_matches_one_replica(single_run, data, tmp_path):
    """Two replicas split each global batch row-wise: their steps are the
    single replica's first three."""
    two = str(tmp_path / "two")
    output = run(trainer_flags(data, two, train_steps=3, strategy="mirrored", **LEARNING),
                 logical_cpus=2)
    assert "on 2 replica(s)" in output
    one = helpers.train_log(single_run[0])[:3]
    for name in ("loss", "nll_loss", "gradient_norm", "target_tokens"):
        np.testing.assert_allclose(
            [record[name] for record in helpers.train_log(two)],
            [record[name] for record in one], rtol=2e-5, err_msg=name)


@pytest.mark.parametrize("count", [2, len(EVAL_STEPS)])
def test_average_checkpoints_averages_the_model_variables(single_run, tmp_path, count):
    """The last two checkpoints, and all of those the run kept."""
    model_dir, _, _ = single_run
    output = average_checkpoints.main([f"--model_dir={model_dir}", f"--num_checkpoints={count}",
                                       f"--output={tmp_path / 'averaged'}"])
    averaged = restored_weights(model_dir, output)
    kept = [restored_weights(model_dir, os.path.join(model_dir, f"ckpt-{step}"))
            for step in EVAL_STEPS[-count:]]
    assert not same_weights(kept[0], kept[-1])
    for index, mean in enumerate(averaged):
        # The float32 rounding of the exact mean: measured 6e-8 relative at most.
        np.testing.assert_allclose(
            mean, np.mean([weights[index].astype(np.float64) for weights in kept], axis=0),
            rtol=6e-7, atol=0)


def test_average_checkpoints_refuses_more_checkpoints_than_the_run_kept(single_run, tmp_path):
    model_dir, _, _ = single_run
    with pytest.raises(UsageError, match=f"keeps only {len(EVAL_STEPS)}"):
        average_checkpoints.main([f"--model_dir={model_dir}",
                                  f"--num_checkpoints={len(EVAL_STEPS) + 1}",
                                  f"--output={tmp_path / 'averaged'}"])


def test_a_missing_shard_glob_names_the_flag(data, tmp_path):
    arguments = trainer_flags(data, str(tmp_path / "run"), train_data=str(tmp_path / "none-*"))
    with pytest.raises(FileNotFoundError, match="--train_data"):
        translation_task.run(parse_flags(arguments))


def test_translate_text_matches_the_export_and_keeps_blank_lines(single_run, data, tmp_path):
    model_dir, export_dir, _ = single_run
    lines = data["val_sources"][:5]
    lines.insert(2, "")
    input_file = write_lines(tmp_path / "input.en", lines)
    from_export = translate_text.main([f"--export_dir={export_dir}",
                                       f"--input_file={input_file}", "--batch_size=2"])
    from_run = translate_text.main([f"--model_dir={model_dir}", f"--input_file={input_file}",
                                    f"--output_file={tmp_path / 'output.de'}"])
    served = tf.saved_model.load(os.path.join(export_dir, "1")).signatures["serving_default"](
        inputs=tf.constant([line for line in lines if line]))["translations"].numpy()
    expected = [text.decode("utf-8") for text in served]
    expected.insert(2, "")
    assert from_export == expected
    assert from_run == expected  # the run's best checkpoint, as exported
    assert (tmp_path / "output.de").read_text(encoding="utf-8").splitlines() == expected


def pair_lengths(files):
    """The longer side's ids of each pair of `files`, read with protobuf."""
    lengths = []
    for path in files:
        for record in tf.data.TFRecordDataset(path):
            feature = tf.train.Example.FromString(record.numpy()).features.feature
            lengths.append(max(len(feature[name].int64_list.value)
                               for name in ("inputs", "targets")))
    return lengths


def test_training_pairs_longer_than_max_length_are_counted_and_reported(data, caplog):
    files = sorted(tf.io.gfile.glob(data["train"]))
    lengths = sorted(pair_lengths(files))
    max_length = lengths[len(lengths) // 2]
    expected = sum(length > max_length for length in lengths)
    assert 0 < expected < len(lengths)
    # Both edges: pairs of exactly max_length (not counted) and one past it.
    assert {max_length, max_length + 1} <= set(lengths)
    with caplog.at_level("WARNING", logger="trainer.translate"):
        assert translation_task.report_long_pairs(files, max_length) == expected
    assert (f"{expected} of the {len(lengths)} training pairs are longer than "
            f"--max_length={max_length}") in caplog.text


def test_shards_whose_stats_rule_out_long_pairs_are_not_read(data, monkeypatch):
    files = sorted(tf.io.gfile.glob(data["train"]))
    monkeypatch.setattr(translation_task, "count_long_pairs", lambda *arguments: pytest.fail(
        "the shards were read although their stats.json says max_length=128"))
    assert translation_task.report_long_pairs(files, max_length=128) == 0
    assert translation_task.report_long_pairs(files, max_length=129) == 0


def test_shards_whose_stats_allow_pairs_one_id_too_long_are_read(data, monkeypatch):
    files = sorted(tf.io.gfile.glob(data["train"]))
    counted = []
    monkeypatch.setattr(translation_task, "count_long_pairs", lambda files, max_length: (
        counted.append(max_length) or (0, TRAIN_PAIRS)))
    assert translation_task.report_long_pairs(files, max_length=127) == 0
    assert counted == [127]  # stats.json says max_length=128: they may hold such pairs

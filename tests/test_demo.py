"""The main job (`make demo`) on a few hundred real Multi30k pairs, with a
1+1-layer model of width 32 trained a few steps: the stages, not the
translations, are under test."""

import json
import os

import pytest
import sacrebleu
import tensorflow as tf

from tfnlp_cli.demo.__main__ import main
from tests.translation_helpers import TINY_SIZES, write_lines

TRAIN_PAIRS, EVAL_PAIRS, TRAIN_STEPS = 300, 8, 8


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, shared_data_dir):
    output_dir = tmp_path_factory.mktemp("demo")
    config = write_lines(output_dir.parent / "tiny.json", [json.dumps(TINY_SIZES)])
    summary = main([
        f"--data_dir={shared_data_dir}", f"--output_dir={output_dir}",
        f"--train_pairs={TRAIN_PAIRS}", f"--eval_pairs={EVAL_PAIRS}", "--vocab_size=400",
        f"--config={config}", f"--train_steps={TRAIN_STEPS}", "--max_tokens_per_batch=512",
        "--learning_rate=3e-3", "--beam_size=1", "--samples=2",
    ])
    return output_dir, summary


def references(shared_data_dir):
    with open(shared_data_dir / "mt" / "val.de", encoding="utf-8") as file:
        return [line.rstrip("\n") for _, line in zip(range(EVAL_PAIRS), file)]


def test_demo_runs_the_job_the_trainer_and_the_export(demo_run):
    output_dir, summary = demo_run
    assert json.loads((output_dir / "summary.json").read_text("utf-8")) == summary
    assert (summary["direction"], summary["train_pairs"], summary["eval_pairs"]) == (
        "en→de", TRAIN_PAIRS, EVAL_PAIRS)
    # A few pairs are over the job's 128 pieces with so small a vocabulary.
    assert TRAIN_PAIRS - 5 <= summary["pairs_kept"] <= TRAIN_PAIRS
    assert summary["vocabulary_size"] == 400
    assert {key: summary["model"][key] for key in TINY_SIZES} == TINY_SIZES
    assert summary["train_steps"] == summary["trainer_evaluation"]["step"] == TRAIN_STEPS
    assert summary["loss"]["last"] < summary["loss"]["first"]
    assert summary["export"] == str(output_dir / "export" / "1")
    assert os.listdir(output_dir / "run" / "tensorboard" / "train")


def test_bleu_is_sacrebleu_of_the_exports_translations_against_the_raw_references(
        demo_run, shared_data_dir):
    output_dir, summary = demo_run
    translations = (output_dir / "val.hyp.de").read_text("utf-8").splitlines()
    served = tf.saved_model.load(summary["export"]).signatures["serving_default"](
        inputs=tf.constant([sample["en"] for sample in summary["samples"]]))
    assert [text.decode("utf-8") for text in served["translations"].numpy()] == [
        sample["translation"] for sample in summary["samples"]] == translations[:2]
    expected = sacrebleu.corpus_bleu(translations, [references(shared_data_dir)])
    assert summary["bleu"] == round(expected.score, 2)
    assert "case:mixed" in summary["bleu_signature"] and "tok:13a" in summary["bleu_signature"]


def test_alignment_gives_a_source_piece_for_each_generated_piece(demo_run):
    _, summary = demo_run
    alignment = summary["alignment"]
    assert alignment["target_pieces"] and alignment["source_pieces"][-1] == "</s>"
    assert len(alignment["attended"]) == len(alignment["target_pieces"])
    assert set(alignment["attended"]) <= set(alignment["source_pieces"])


def test_demo_without_the_data_says_where_to_point_it(tmp_path):
    with pytest.raises(SystemExit, match="--data_dir"):
        main([f"--data_dir={tmp_path}", f"--output_dir={tmp_path}"])

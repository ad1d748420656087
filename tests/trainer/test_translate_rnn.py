"""`python -m trainer.translate --model=rnn`: the LSTM encoder-decoder on the
shared trainer, evaluated, exported and served like the Transformer, on the
dictionary task of `tests.translation_helpers` (which it learns well enough
in 80 steps for a BLEU far from zero)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.export.helpers import saved_op_types
from tests.trainer import helpers
from tests.translation_helpers import (
    assert_export_scores_the_best_bleu,
    dictionary_translation_data,
    evaluations,
    trainer_flags,
)
from tfnlp.models import TransformerSeq2Seq
from trainer.tasks.translation import load_translation_model, parse_flags


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return dictionary_translation_data(tmp_path_factory.mktemp("dictionary"), train_pairs=400,
                                       eval_pairs=24)


@pytest.fixture(scope="module")
def rnn_run(data, tmp_path_factory):
    """80 steps, evaluated at 40 and 80 (measured BLEU: 2.0, then 13.1)."""
    root = tmp_path_factory.mktemp("rnn")
    model_dir, export_dir = str(root / "model"), str(root / "export")
    helpers.run_here(trainer_flags(data, model_dir, "--model=rnn", "--attention=bahdanau",
                                   config="tiny", eval_data=data["val"], train_steps=80,
                                   eval_every_steps=40, checkpoint_every_steps=40,
                                   learning_rate=3e-2, warmup_steps=20, export_dir=export_dir),
                     module="trainer.translate")
    return model_dir, export_dir


def test_the_run_records_the_model_class_scores_and_alignments(rnn_run):
    model_dir, _ = rnn_run
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as file:
        config = json.load(file)
    assert config["class_name"] == "RNNSeq2Seq"
    assert config["config"]["attention"] == "bahdanau"
    evaluation = helpers.tensorboard_values(model_dir, "eval")
    assert {"metrics/bleu", "metrics/chrf", "loss/loss"} <= set(evaluation)
    assert sorted(tag for tag in evaluation if tag.startswith("pictures/alignment_")) == [
        "pictures/alignment_sentence_0", "pictures/alignment_sentence_1"]


def test_the_export_scores_the_logged_bleu_with_stock_ops(rnn_run, data):
    model_dir, export_dir = rnn_run
    bleus = [record["bleu"] for record in evaluations(model_dir)]
    assert len(bleus) == 2 and max(bleus) > 5, bleus
    assert_export_scores_the_best_bleu(model_dir, export_dir, data, best_is_not_the_last=False)
    op_types = saved_op_types(os.path.join(export_dir, "1"))
    text_ops = {op for op in op_types if op.startswith("Sentencepiece")}
    assert op_types - text_ops <= set(dir(tf.raw_ops)), sorted(op_types - set(dir(tf.raw_ops)))


@pytest.mark.parametrize("flag", ["--norm_first", "--alignment_heads=each",
                                  "--attention_dropout=0.1"])
def test_transformer_flags_are_refused_for_the_rnn_model(flag, data, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_flags(trainer_flags(data, str(tmp_path / "run"), "--model=rnn", flag,
                                  config="tiny"))
    assert exit_info.value.code == 2
    assert ("--norm_first, --position_encoding, --attention_dropout and --alignment_heads "
            "are Transformer flags" in capsys.readouterr().err)


def test_a_run_config_without_a_class_name_loads_as_a_transformer(tmp_path):
    # Runs written before config.json named the model's class.
    model = TransformerSeq2Seq.from_preset("tiny", vocabulary_size=50, num_encoder_layers=1,
                                           num_decoder_layers=1)
    (tmp_path / "config.json").write_text(json.dumps(model.get_config()))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt-1"))
    loaded = load_translation_model(str(tmp_path), checkpoint=path)
    assert type(loaded) is TransformerSeq2Seq
    assert loaded.get_config() == model.get_config()


def test_the_alignments_signature_gives_each_output_tokens_attention(rnn_run, data):
    _, export_dir = rnn_run
    signatures = tf.saved_model.load(os.path.join(export_dir, "1")).signatures
    sentences = tf.constant(data["val_sources"][:4])
    outputs = signatures["translate_with_alignments"](inputs=sentences)
    plain = signatures["serving_default"](inputs=sentences)
    assert outputs["translations"].numpy().tolist() == plain["translations"].numpy().tolist()
    alignments = outputs["alignments"].numpy()
    source_pieces = outputs["source_pieces"].numpy()
    target_pieces = outputs["target_pieces"].numpy()
    assert alignments.shape == target_pieces.shape + source_pieces.shape[1:]
    real = (target_pieces != b"")[:, :, None] & (source_pieces != b"")[:, None, :]
    assert not alignments[~real].any()
    rows = alignments.sum(-1)[target_pieces != b""]
    np.testing.assert_allclose(rows, 1.0, atol=1e-4)
    assert [row[row != b""][-1] for row in source_pieces] == [b"</s>"] * 4

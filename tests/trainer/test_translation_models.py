"""The runs of `trainer.tasks.translation` and their users on a run written here (no
training): the model the flags build, the serving record and the decoder
built from it, the best checkpoint, and the model that `load_translation_model`,
`trainer.translate_text` and `trainer.export` restore, with the decoding
flags that override the run's record.

The run's checkpoints hold weights this module drew, so each restored model
is compared with those arrays, not with another restore; every test runs in
about a second or less.
"""

import json
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from tests.translation_helpers import TINY_SIZES, dictionary_word_model, write_lines
from tfnlp import decoding
from tfnlp.command_line import UsageError
from tfnlp.models import RNNSeq2Seq, TransformerSeq2Seq
from tfnlp.text import SentencePieceTokenizer
from trainer import export, translate_text
from trainer.checkpoints import BEST_DIRECTORY, BEST_FILE, best_checkpoint
from trainer.tasks.translation import (
    build_translation_model,
    load_translation_model,
    make_decoder,
    parse_flags,
    run_config,
    serving_record,
    translation_signatures,
)

# Decoding settings unlike the flags' defaults (4, gnmt, 0.6, 1.5, 10, and
# max_length 128), each value different from the others, so that a setting
# read from the wrong field or not read at all shows.
RECORDED = {"beam_size": 3, "length_penalty": "average", "length_penalty_alpha": 0.7,
            "max_length_a": 1.25, "max_length_b": 7}
OVERRIDES = {"beam_size": 1, "length_penalty": "none", "length_penalty_alpha": 0.2,
             "max_length_a": 0.5, "max_length_b": 2}
MAX_LENGTH = 48


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    return dictionary_word_model(tmp_path_factory.mktemp("vocabulary") / "words.model")


def random_weights(model, seed):
    generator = np.random.default_rng(seed)
    return [generator.normal(size=weight.shape).astype(weight.dtype)
            for weight in model.get_weights()]


def tiny_model(vocabulary_size, **overrides):
    return TransformerSeq2Seq(vocabulary_size=vocabulary_size, max_sequence_length=MAX_LENGTH,
                              **{**TINY_SIZES, **overrides})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, vocab_file):
    """A `trainer.translate` run's files: config.json, serving.json (the
    `RECORDED` decoding), ckpt-1 and ckpt-2 (the latest), and best/ holding
    ckpt-1's weights, with the weights of each, by name."""
    directory = tmp_path_factory.mktemp("run")
    model = tiny_model(SentencePieceTokenizer(model_file=vocab_file).vocabulary_size)
    (directory / "config.json").write_text(json.dumps(run_config(model)))
    (directory / "serving.json").write_text(json.dumps({
        "model": "translation", "vocab_file": vocab_file, "max_length": MAX_LENGTH,
        **RECORDED}))
    checkpoint = tf.train.Checkpoint(model=model)
    manager = tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=None)
    weights = {}
    for step in (1, 2):
        weights[f"ckpt-{step}"] = random_weights(model, seed=step)
        model.set_weights(weights[f"ckpt-{step}"])
        manager.save(checkpoint_number=step)
        if step == 1:
            tf.train.Checkpoint(model=model).write(str(directory / BEST_DIRECTORY / "ckpt"))
            (directory / BEST_DIRECTORY / BEST_FILE).write_text(
                json.dumps({"step": 1, "checkpoint": "ckpt", "bleu": 12.5}))
    return types.SimpleNamespace(path=str(directory), weights=weights)


def assert_weights(model, expected):
    actual = model.get_weights()
    assert len(actual) == len(expected)
    for value, wanted in zip(actual, expected):
        np.testing.assert_array_equal(value, wanted)


@pytest.mark.parametrize("beam_size", [1, 2])
def test_make_decoder_is_greedy_for_a_beam_of_one_else_a_beam_search(beam_size):
    decoder = make_decoder(beam_size, "average", 0.7)
    if beam_size == 1:
        assert type(decoder) is decoding.GreedySearch
    else:
        assert type(decoder) is decoding.BeamSearch
        assert (decoder.beam_size, decoder.length_penalty, decoder.alpha) == (
            beam_size, "average", 0.7)


def test_serving_record_holds_the_vocabulary_max_length_and_each_decoding_flag(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flags = parse_flags(["--train_data=shards-*", f"--model_dir={tmp_path / 'run'}",
                         "--train_steps=1", f"--max_length={MAX_LENGTH}",
                         *[f"--{name}={value}" for name, value in RECORDED.items()]])
    assert serving_record(flags, "words.model") == {
        "model": "translation", "vocab_file": str(tmp_path / "words.model"),
        "max_length": MAX_LENGTH, **RECORDED}


@pytest.mark.parametrize("settings", [RECORDED, OVERRIDES], ids=["beam", "greedy"])
def test_translation_signatures_decode_as_the_record_says(vocab_file, settings):
    record = {"vocab_file": vocab_file, "max_length": MAX_LENGTH, **settings}
    model = tiny_model(SentencePieceTokenizer(model_file=vocab_file).vocabulary_size)
    signatures = translation_signatures(model, record)
    assert signatures.model is model
    assert (signatures.max_length, signatures.max_length_a, signatures.max_length_b) == (
        MAX_LENGTH, settings["max_length_a"], settings["max_length_b"])
    decoder = signatures.decoder
    if settings["beam_size"] == 1:
        assert type(decoder) is decoding.GreedySearch
    else:
        assert (type(decoder), decoder.beam_size, decoder.length_penalty, decoder.alpha) == (
            decoding.BeamSearch, settings["beam_size"], settings["length_penalty"],
            settings["length_penalty_alpha"])
    sentence = "a big dog runs on the grass ."
    assert signatures.tokenizer.detokenize(
        signatures.source_ids(tf.constant([sentence])))[0].numpy().decode() == sentence


@pytest.mark.parametrize("max_length, positions", [(255, 256), (256, 256), (257, 257)])
def test_the_transformer_has_positions_for_max_length_and_at_least_256(
        tmp_path, max_length, positions):
    config = tmp_path / "sizes.json"
    config.write_text(json.dumps(TINY_SIZES))
    flags = parse_flags(["--train_data=shards-*", f"--model_dir={tmp_path / 'run'}",
                         "--train_steps=1", f"--config={config}", f"--max_length={max_length}",
                         f"--max_tokens_per_batch={max_length}", "--dropout=0.25",
                         "--norm_first", "--position_encoding=learned",
                         "--attention_dropout=0.05"])
    model = build_translation_model(flags, vocabulary_size=40)
    assert type(model) is TransformerSeq2Seq
    config = model.get_config()
    assert {name: config[name] for name in TINY_SIZES} == TINY_SIZES
    assert (config["vocabulary_size"], config["max_sequence_length"], config["dropout"],
            config["attention_dropout"], config["norm_first"], config["position_encoding"]) == (
        40, positions, 0.25, 0.05, True, "learned")


def test_the_rnn_model_takes_its_preset_and_the_attention_flag(tmp_path):
    flags = parse_flags(["--train_data=shards-*", f"--model_dir={tmp_path / 'run'}",
                         "--train_steps=1", "--model=rnn", "--config=tiny",
                         "--attention=luong_dot", "--dropout=0.25"])
    model = build_translation_model(flags, vocabulary_size=40)
    assert type(model) is RNNSeq2Seq
    config = model.get_config()
    assert (config["vocabulary_size"], config["attention"], config["dropout"]) == (
        40, "luong_dot", 0.25)
    preset = RNNSeq2Seq.from_preset("tiny", vocabulary_size=40, attention="luong_dot",
                                    dropout=0.25).get_config()
    assert {**config, "name": None} == {**preset, "name": None}


def test_best_checkpoint_is_the_one_best_json_names_or_none(run_dir, tmp_path):
    assert best_checkpoint(run_dir.path) == os.path.join(run_dir.path, BEST_DIRECTORY, "ckpt")
    assert best_checkpoint(str(tmp_path)) is None


def test_a_run_loads_its_best_checkpoint_by_default_and_a_given_one_when_asked(run_dir):
    assert_weights(load_translation_model(run_dir.path), run_dir.weights["ckpt-1"])
    given = os.path.join(run_dir.path, "ckpt-2")
    assert_weights(load_translation_model(run_dir.path, checkpoint=given),
                   run_dir.weights["ckpt-2"])


def test_a_run_without_a_best_checkpoint_loads_its_latest(run_dir, tmp_path):
    copy = tmp_path / "run"
    tf.io.gfile.makedirs(str(copy))
    for name in os.listdir(run_dir.path):
        if name != BEST_DIRECTORY:
            tf.io.gfile.copy(os.path.join(run_dir.path, name), str(copy / name))
    assert_weights(load_translation_model(str(copy)), run_dir.weights["ckpt-2"])


def test_a_checkpoint_without_every_model_variable_is_refused(run_dir, tmp_path):
    """config.json says two decoder layers; the checkpoint has one."""
    bigger = tiny_model(run_dir.weights["ckpt-1"][0].shape[0], num_decoder_layers=2)
    (tmp_path / "config.json").write_text(json.dumps(run_config(bigger)))
    with pytest.raises(AssertionError):
        load_translation_model(str(tmp_path), checkpoint=os.path.join(run_dir.path, "ckpt-1"))


def test_errors_name_the_config_the_run_and_the_flag_to_fix(run_dir, tmp_path):
    not_sizes = tmp_path / "sizes.json"
    not_sizes.write_text("[64]")
    flags = parse_flags(["--train_data=shards-*", f"--model_dir={tmp_path / 'run'}",
                         "--train_steps=1", "--model=rnn", f"--config={not_sizes}"])
    with pytest.raises(UsageError, match=(
            r"neither a RNNSeq2Seq preset \(base, small, tiny\) nor a JSON file of its")):
        build_translation_model(flags, vocabulary_size=40)
    with pytest.raises(FileNotFoundError, match=(
            r"has no config.json: it is not the model_dir of a `python -m trainer.translate`")):
        load_translation_model(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(run_config(tiny_model(40))))
    with pytest.raises(FileNotFoundError,
                       match="--model_dir=.* without a TensorFlow checkpoint.*trainer.translate"):
        load_translation_model(str(tmp_path))


class SignaturesSpy:
    """Stands for `translation_signatures` in `trainer.translate_text`: keeps
    the model and record it is given and "translates" each line into itself."""

    def __init__(self):
        self.model = self.record = None

    def __call__(self, model, record):
        self.model, self.record = model, dict(record)
        return types.SimpleNamespace(translate_text=lambda text: {"translations": text})


@pytest.mark.parametrize("given", [{}, OVERRIDES], ids=["recorded", "flags"])
def test_translate_text_decodes_as_the_run_recorded_unless_a_flag_says_otherwise(
        run_dir, tmp_path, monkeypatch, given):
    spy = SignaturesSpy()
    monkeypatch.setattr(translate_text, "translation_signatures", spy)
    lines = ["a big dog runs on the grass .", "", "a small boy sits near the beach ."]
    input_file = write_lines(tmp_path / "input.en", lines)
    translations = translate_text.main([
        f"--model_dir={run_dir.path}", f"--input_file={input_file}",
        f"--output_file={tmp_path / 'output.de'}",
        *[f"--{name}={value}" for name, value in given.items()]])
    assert translations == lines
    assert spy.record == {"model": "translation", "vocab_file": spy.record["vocab_file"],
                          "max_length": MAX_LENGTH, **RECORDED, **given}
    assert_weights(spy.model, run_dir.weights["ckpt-1"])


def test_translate_text_loads_the_checkpoint_given(run_dir, tmp_path, monkeypatch):
    spy = SignaturesSpy()
    monkeypatch.setattr(translate_text, "translation_signatures", spy)
    input_file = write_lines(tmp_path / "input.en", ["a big dog runs on the grass ."])
    translate_text.main([f"--model_dir={run_dir.path}", f"--input_file={input_file}",
                         f"--checkpoint={os.path.join(run_dir.path, 'ckpt-2')}",
                         f"--output_file={tmp_path / 'output.de'}"])
    assert_weights(spy.model, run_dir.weights["ckpt-2"])


@pytest.mark.parametrize("given", [{}, OVERRIDES], ids=["recorded", "flags"])
def test_export_of_a_run_decodes_its_best_model_as_recorded_unless_a_flag_says_otherwise(
        run_dir, tmp_path, monkeypatch, given):
    exported = {}

    def export_spy(model, export_dir, record, text_signatures=True):
        exported.update(model=model, export_dir=export_dir, record=dict(record),
                        text_signatures=text_signatures)
        return export_dir

    monkeypatch.setattr("trainer.tasks.translation.export_translation_model", export_spy)
    export.main([f"--model_dir={run_dir.path}", f"--export_dir={tmp_path / 'export'}",
                 "--notext_signatures", *[f"--{name}={value}" for name, value in given.items()]])
    assert exported["record"] == {"model": "translation", "vocab_file": exported["record"][
        "vocab_file"], "max_length": MAX_LENGTH, **RECORDED, **given}
    assert (exported["export_dir"], exported["text_signatures"]) == (
        str(tmp_path / "export"), False)
    assert_weights(exported["model"], run_dir.weights["ckpt-1"])


@pytest.mark.parametrize("batch_size", [1, 3, 4, 5])
def test_translate_lines_puts_each_translation_on_its_source_line(batch_size):
    """Four sentences and two blank lines, in batches of one, of all but
    one, of all, and of one more than all."""
    lines = ["a big dog runs .", "", "a dog .", "a big black dog runs .", "   ", "a dog runs ."]
    batches = []

    def translate(batch):
        batches.append(list(batch))
        return [line.upper().encode("utf-8") for line in batch]

    translations = translate_text.translate_lines(lines, translate, batch_size)
    assert translations == [line.strip() and line.upper() for line in lines]
    assert sorted(line for batch in batches for line in batch) == sorted(
        line for line in lines if line.strip())
    assert [len(batch) for batch in batches] == [
        min(batch_size, 4 - start) for start in range(0, 4, batch_size)]
    lengths = [len(line) for batch in batches for line in batch]
    assert lengths == sorted(lengths)  # batches of sentences of similar length


@pytest.mark.parametrize("flag", ["--dropout=1", "--attention_dropout=-0.1",
                                  "--label_smoothing=1.5"])
def test_rates_outside_zero_to_one_are_refused(flag, tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse_flags(["--train_data=shards-*", f"--model_dir={tmp_path / 'run'}",
                     "--train_steps=1", flag])
    assert f"{flag.split('=')[0]} must be in [0, 1)" in capsys.readouterr().err

"""The trainers take from their inputs what the inputs say (a vocabulary's
size, the records' lengths, a checkpoint's sizes) and refuse a flag that
says otherwise before anything is written: checked on tiny files, with the
flag checks alone or `tfnlp COMMAND` in-process, without training."""

import json
import os

import pytest
import tensorflow as tf

from tests.trainer import helpers
from tfnlp_cli import commands
from tfnlp.command_line import UsageError
from tfnlp.data import pretraining_schema
from tfnlp.data.file_names import STATS_FILE
from tfnlp.models import BertConfig
from tfnlp.models.bert.huggingface import huggingface_config_dict
from tfnlp.text import write_vocabulary
from trainer.tasks import bert_pretraining, finetuning
from trainer.tasks import distillation as distillation_task
from trainer.tasks import translation as translation_task

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_vocabulary_of(path, size):
    """A WordPiece vocabulary of `size` tokens; returns its path."""
    write_vocabulary(SPECIAL_TOKENS + [f"w{index}" for index in range(size - 5)], path)
    return str(path)


def assert_nothing_written(model_dir):
    assert not os.path.exists(model_dir), os.listdir(model_dir)


@pytest.fixture(scope="module")
def pretraining_data(tmp_path_factory):
    """Records of `helpers` (ids below 100, lengths 32 and 5), the
    stats.json of a job run with --nodo_lower_case beside them, and a
    100-token vocabulary."""
    root = tmp_path_factory.mktemp("pretraining")
    (root / "data").mkdir()
    helpers.write_records(root / "data" / "pretraining-00000-of-00001.tfrecord", count=8)
    (root / "data" / STATS_FILE).write_text(json.dumps(
        {"parameters": {"do_lower_case": False, "max_seq_length": helpers.MAX_SEQ_LENGTH}}))
    return {"train_data": str(root / "data" / "pretraining-*"),
            "vocab_file": write_vocabulary_of(root / "vocab.txt", helpers.VOCAB_SIZE)}


def pretraining_flags(pretraining_data, model_dir, *extra):
    """The tour's command line, less what the inputs say."""
    return [f"--train_data={pretraining_data['train_data']}", f"--model_dir={model_dir}",
            f"--vocab_file={pretraining_data['vocab_file']}", "--config=tiny",
            "--global_batch_size=8", "--train_steps=5", "--warmup_steps=1", *extra]


def checked_pretraining_flags(arguments):
    flags = bert_pretraining.parse_flags(arguments)
    bert_pretraining.check_paths(flags)
    return flags


def test_pretrain_takes_the_vocabulary_size_lengths_and_casing_from_the_inputs(
        pretraining_data, tmp_path):
    flags = checked_pretraining_flags(pretraining_flags(pretraining_data, tmp_path / "run"))
    assert (flags.vocab_size, flags.max_seq_length, flags.max_predictions_per_seq,
            flags.do_lower_case) == (helpers.VOCAB_SIZE, helpers.MAX_SEQ_LENGTH,
                                     helpers.MAX_PREDICTIONS, False)
    # The same values, given, are taken.
    again = checked_pretraining_flags(pretraining_flags(
        pretraining_data, tmp_path / "run", f"--vocab_size={helpers.VOCAB_SIZE}",
        f"--max_seq_length={helpers.MAX_SEQ_LENGTH}", "--nodo_lower_case"))
    assert vars(again) == vars(flags)


def test_the_vocabulary_replaces_the_vocab_size_of_a_config_file(pretraining_data, tmp_path):
    config = tmp_path / "bert.json"
    BertConfig.preset("tiny", num_layers=1).to_json(str(config))
    flags = checked_pretraining_flags(pretraining_flags(
        pretraining_data, tmp_path / "run", f"--config={config}"))
    assert flags.vocab_size == helpers.VOCAB_SIZE
    assert bert_pretraining.bert_config(flags).vocab_size == helpers.VOCAB_SIZE


def test_pretrain_refuses_a_vocab_size_the_vocabulary_does_not_have_before_any_work(
        pretraining_data, tmp_path, capsys):
    """The tour's trap: a --vocab_size smaller than the vocabulary used to
    start the run, write its files and fail on the first batch with an
    index error."""
    model_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_status:
        commands.main(["pretrain", *pretraining_flags(
            pretraining_data, model_dir, "--vocab_size=50",
            f"--max_seq_length={helpers.MAX_SEQ_LENGTH}",
            f"--max_predictions_per_seq={helpers.MAX_PREDICTIONS}")])
    assert exit_status.value.code == 2
    vocab_file = pretraining_data["vocab_file"]
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"tfnlp pretrain: error: --vocab_size=50 but --vocab_file={vocab_file} has 100 "
        "tokens; leave --vocab_size out, or give 100.")
    assert_nothing_written(model_dir)


@pytest.mark.parametrize("flag, message", [
    ("--max_seq_length=64", r"--max_seq_length=64 but the records of --train_data=.* have "
                            r"max_seq_length 32; leave --max_seq_length out, or give 32\."),
    ("--max_predictions_per_seq=20", r"--max_predictions_per_seq=20 but .* have "
                                     r"max_predictions_per_seq 5; .* or give 5\."),
    ("--do_lower_case", r"--do_lower_case=true but the data's .*stats.json records "
                        r"do_lower_case=false; leave --do_lower_case out, or give false\."),
], ids=["max_seq_length", "max_predictions_per_seq", "do_lower_case"])
def test_pretrain_refuses_a_length_or_casing_the_data_does_not_have(
        pretraining_data, tmp_path, flag, message):
    model_dir = tmp_path / "run"
    with pytest.raises(UsageError, match=message):
        checked_pretraining_flags(pretraining_flags(pretraining_data, model_dir, flag))
    assert_nothing_written(model_dir)


def test_pretrain_refuses_evaluation_records_of_other_lengths(pretraining_data, tmp_path):
    other = tmp_path / "eval.tfrecord"
    with tf.io.TFRecordWriter(str(other)) as writer:
        writer.write(pretraining_schema.serialize_instance(
            [2, 7, 3], [0, 0, 0], [1], [7], False, 16, 2))
    with pytest.raises(UsageError, match=(
            r"--eval_data=.* have max_seq_length 16 and max_predictions_per_seq 2, those of "
            r"--train_data 32 and 5; write both with the same lengths")):
        checked_pretraining_flags(pretraining_flags(pretraining_data, tmp_path / "run",
                                                    f"--eval_data={other}"))


def test_pretrain_refuses_a_vocabulary_smaller_than_the_datas_ids(pretraining_data, tmp_path):
    small = write_vocabulary_of(tmp_path / "small.txt", 50)
    with pytest.raises(UsageError, match=(
            r"pretraining-00000-of-00001.tfrecord \(--train_data\) holds the token id \d+, "
            rf"but the model has 50 ids \(the tokens of --vocab_file={small}\); give the "
            "--vocab_file the data was written with")):
        checked_pretraining_flags(pretraining_flags(pretraining_data, tmp_path / "run",
                                                    f"--vocab_file={small}"))


def test_pretrain_refuses_records_longer_than_the_configs_positions(
        pretraining_data, tmp_path):
    config = tmp_path / "bert.json"
    BertConfig.preset("tiny", num_layers=1, max_position_embeddings=16).to_json(str(config))
    with pytest.raises(UsageError, match=(
            "--max_seq_length=32 is longer than the config's max_position_embeddings=16")):
        checked_pretraining_flags(pretraining_flags(pretraining_data, tmp_path / "run",
                                                    f"--config={config}"))


# ---------------------------------------------------------------------------
# Fine-tuning and distillation: the vocabulary, and a checkpoint's config


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A Hugging Face BERT directory whose config.json says vocab_size 40,
    2 layers and 32 positions; its weights file is empty (the checks read
    the config alone), and it holds a 30-token vocabulary."""
    directory = tmp_path_factory.mktemp("checkpoint")
    config = BertConfig.preset("tiny", num_layers=2, vocab_size=40, max_position_embeddings=32)
    (directory / "config.json").write_text(json.dumps(huggingface_config_dict(config)))
    (directory / "model.safetensors").write_bytes(b"")
    write_vocabulary_of(directory / "vocab.txt", 30)
    return directory


def checked_finetuning_flags(tmp_path, *extra):
    (tmp_path / "train.csv").write_text("text,label\ngood,1\n")
    vocab_file = tmp_path / "vocab.txt"
    if not vocab_file.exists():
        write_vocabulary_of(vocab_file, 30)
    flags = finetuning.parse_flags([
        "--task=classification", f"--train_data={tmp_path / 'train.csv'}",
        f"--vocab_file={vocab_file}", f"--model_dir={tmp_path / 'run'}", *extra])
    finetuning.check_paths(flags)
    return flags


def test_finetuning_from_scratch_takes_the_vocabulary_size_of_the_file(tmp_path):
    with pytest.raises(UsageError, match=(
            r"--vocab_size=40 but --vocab_file=.*vocab.txt has 30 tokens; leave "
            r"--vocab_size out, or give 30\.")):
        checked_finetuning_flags(tmp_path, "--config=tiny", "--vocab_size=40")
    assert_nothing_written(tmp_path / "run")
    assert checked_finetuning_flags(tmp_path, "--config=tiny").vocab_size == 30


def test_finetuning_takes_the_checkpoints_sizes_and_refuses_others(tmp_path, checkpoint):
    arguments = [f"--init_checkpoint={checkpoint}", "--max_seq_length=32"]
    with pytest.raises(UsageError, match=(
            rf"--num_layers=1 but --init_checkpoint={checkpoint} has num_layers 2 \(its "
            r"config.json\); leave --num_layers out, or give 2\.")):
        checked_finetuning_flags(tmp_path, *arguments, "--num_layers=1")
    assert_nothing_written(tmp_path / "run")
    flags = checked_finetuning_flags(tmp_path, *arguments)
    assert (flags.vocab_size, flags.num_layers) == (40, 2)
    assert vars(checked_finetuning_flags(
        tmp_path, *arguments, "--vocab_size=40", "--num_layers=2")) == vars(flags)


def test_finetuning_refuses_what_the_checkpoint_cannot_take_before_any_work(
        tmp_path, checkpoint):
    with pytest.raises(UsageError, match="The sequence length 128 is longer than the model's "
                                         "max_position_embeddings=32"):
        checked_finetuning_flags(tmp_path, f"--init_checkpoint={checkpoint}")
    write_vocabulary_of(tmp_path / "vocab.txt", 50)
    with pytest.raises(UsageError, match="has 50 tokens but the model only 40 embeddings"):
        checked_finetuning_flags(tmp_path, f"--init_checkpoint={checkpoint}",
                                 "--max_seq_length=32")
    assert_nothing_written(tmp_path / "run")


def test_distillation_refuses_a_bert_student_longer_than_the_teachers_positions(
        tmp_path, checkpoint):
    train_data = tmp_path / "train-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(train_data)) as writer:
        writer.write(b"")
    flags = distillation_task.parse_flags([
        f"--train_data={train_data}", f"--model_dir={tmp_path / 'run'}", "--student=bert",
        f"--teacher={checkpoint}", "--train_steps=1", "--max_seq_length=64"])
    with pytest.raises(UsageError, match="The sequence length 64 is longer than the model's "
                                         "max_position_embeddings=32"):
        distillation_task.check_paths(flags)
    assert_nothing_written(tmp_path / "run")


# ---------------------------------------------------------------------------
# Translation: --max_length as the data job recorded it


def checked_translation_flags(data_dir, *extra):
    flags = translation_task.parse_flags([
        f"--train_data={data_dir / 'translation-*'}", f"--model_dir={data_dir / 'run'}",
        "--train_steps=1", *extra])
    translation_task.check_paths(flags)
    return flags


def test_translation_takes_max_length_from_the_datas_stats(tmp_path):
    recorded, unrecorded = tmp_path / "recorded", tmp_path / "unrecorded"
    for directory in (recorded, unrecorded):
        directory.mkdir()
        shard = directory / "translation-00000-of-00001.tfrecord"
        with tf.io.TFRecordWriter(str(shard)) as writer:
            writer.write(b"")
    (recorded / STATS_FILE).write_text(json.dumps({"parameters": {"max_length": 200}}))
    assert checked_translation_flags(recorded).max_length == 200
    # A shorter one skips the longer pairs.
    assert checked_translation_flags(recorded, "--max_length=64").max_length == 64
    assert checked_translation_flags(unrecorded).max_length == 128


@pytest.fixture(scope="module")
def unmasked_data(tmp_path_factory):
    """Records stored unmasked, as `--dynamic_masking` writes them."""
    folder = tmp_path_factory.mktemp("unmasked")
    (folder / STATS_FILE).write_text(json.dumps({"parameters": {"masked_lm_prob": 0.2}}))
    path = folder / "pretraining-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for index in range(8):
            input_ids = [2] + [5 + (index * 7 + position) % 90 for position in range(20)] + [3]
            writer.write(pretraining_schema.serialize_instance(
                input_ids, [0] * len(input_ids), [], [], False, helpers.MAX_SEQ_LENGTH,
                helpers.MAX_PREDICTIONS))
    return str(path)


def test_pretrain_masks_records_stored_unmasked_with_the_vocabularys_ids(
        pretraining_data, unmasked_data, tmp_path):
    flags = checked_pretraining_flags(pretraining_flags(
        {**pretraining_data, "train_data": unmasked_data}, tmp_path / "run"))
    dataset = bert_pretraining.dataset_function(flags, 8, training=True)(
        tf.distribute.InputContext())
    batch = next(iter(dataset))
    weights = batch["masked_lm_weights"].numpy()
    # The share of the job's stats.json: 20% of 20 words, 4 predictions.
    assert weights.sum(axis=1).tolist() == [4.0] * 8
    assert (batch["masked_lm_ids"].numpy()[weights > 0] >= 5).all()


def test_pretrain_refuses_records_stored_unmasked_without_a_vocabulary(
        pretraining_data, unmasked_data, tmp_path):
    arguments = [argument for argument in pretraining_flags(
        {**pretraining_data, "train_data": unmasked_data}, tmp_path / "run")
        if not argument.startswith("--vocab_file")]
    with pytest.raises(UsageError, match=(
            r"are stored unmasked \(written with --dynamic_masking\) and are masked while "
            r"read, which takes the ids of \[CLS\], \[SEP\], \[MASK\] from the vocabulary; "
            "give --vocab_file")):
        checked_pretraining_flags(arguments + ["--vocab_size=100"])
    assert_nothing_written(tmp_path / "run")

"""`python -m trainer.finetune` on tiny synthetic files, in-process.

The runs are few and short (a 1-layer tiny encoder, a 26-token vocabulary,
sequences of 16) and shared by module-scoped fixtures: one classification
run from scratch, one token-classification run from a pretraining
checkpoint and one span run from a Hugging Face checkpoint.
"""

import csv
import json
import logging
import logging.handlers
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import save_file

from tfnlp.models import (
    BertConfig,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.models.bert.huggingface import encoder_tensors_from_encoder, huggingface_config_dict
from tfnlp.text.bert_tokenizer import BertTokenizer
from tests.export.helpers import saved_model_cli
from tests.test_readme import readme_commands
from tests.trainer.helpers import tensorboard_values
from trainer import bert_models, export, finetune, finetune_data, summaries
from trainer.tasks import finetuning

FILLER = "the a movie film book was is really very quite plot story".split()
# Words of two WordPieces (film ##s, book ##s): only their first piece is labelled.
PIECED = ["films", "books"]
WORDS = FILLER + ["good", "bad", "paris", "london", "where", "?", ".", "##s", "##ing"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
VOCAB_SIZE = 40  # The checkpoints' encoders'; at least len(VOCAB).
MAX_SEQ_LENGTH = 16


def tiny_config():
    return BertConfig.preset("tiny", num_layers=1, vocab_size=VOCAB_SIZE,
                             hidden_dropout=0.0, attention_dropout=0.0)


def common_flags(root, **overrides):
    values = {
        "vocab_file": root / "vocab.txt",
        "max_seq_length": MAX_SEQ_LENGTH,
        "global_batch_size": 16,
        "learning_rate": 2e-3,
        "dropout": 0.0,
        "verbose": 0,
        "eval_every_epochs": 0,
        # XLA compiles a step per bucket width: seconds each. One test
        # (evaluations every n steps) runs with it.
        "jit_compile": "false",
    }
    values.update(overrides)
    return [f"--{name}={value}" for name, value in values.items()]


def _sentence(rng, keyword):
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 7))]
    words.insert(rng.randint(0, len(words)), keyword)
    return " ".join(words)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A directory with the vocabulary and the data files of every task."""
    root = tmp_path_factory.mktemp("finetune")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    rng = random.Random(0)
    for name, count in (("train", 160), ("eval", 48)):
        with open(root / f"{name}.csv", "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            for index in range(count):
                keyword = ("good", "bad")[index % 2]
                writer.writerow([_sentence(rng, keyword), f"is_{keyword}"])
            if name == "eval":
                # Bad rows: no text, no label, a label the training file lacks.
                writer.writerows([["", "is_good"], ["good film", ""], ["bad film", "is_ugly"]])
    with open(root / "tags.jsonl", "w") as file:
        for _ in range(48):
            words = [rng.choice(FILLER + PIECED + ["paris", "london"])
                     for _ in range(rng.randint(3, 8))]
            tags = ["LOC" if word in ("paris", "london") else "O" for word in words]
            file.write(json.dumps({"tokens": words, "tags": tags}) + "\n")
        file.write("not json\n")
        file.write(json.dumps({"tokens": ["paris"], "tags": []}) + "\n")
    with open(root / "spans.jsonl", "w") as file:
        for index in range(48):
            city = ("paris", "london")[index % 2]
            before = " ".join(rng.choice(FILLER) for _ in range(rng.randint(1, 4)))
            context = f"{before} {city} is good ."
            file.write(json.dumps({
                "context": context, "question": "where ?",
                "answer_start": len(before) + 1, "answer_text": city,
            }) + "\n")
        # Truncated away: the answer lies past 16 tokens.
        long_context = "the " * 20 + "paris"
        file.write(json.dumps({"context": long_context, "question": "where ?",
                               "answer_start": len(long_context) - 5,
                               "answer_text": "paris"}) + "\n")
        # Not at its offset.
        file.write(json.dumps({"context": "the paris", "question": "where ?",
                               "answer_start": 0, "answer_text": "paris"}) + "\n")
    with open(root / "spans_eval.jsonl", "w") as file:
        # A third of the answers run on past the city ("paris is good") and a
        # third start a word before it ("film paris"): a model trained on
        # one-word answers misses their end or their start, so start
        # accuracy, end accuracy and exact match all differ.
        for index in range(24):
            city = ("paris", "london")[index % 2]
            before = [rng.choice(FILLER) for _ in range(rng.randint(1, 4))]
            context = f"{' '.join(before)} {city} is good ."
            answer_start = len(" ".join(before)) + 1
            answer = (city, f"{city} is good", f"{before[-1]} {city}")[index % 3]
            if index % 3 == 2:
                answer_start -= len(before[-1]) + 1
            file.write(json.dumps({
                "context": context, "question": "where ?",
                "answer_start": answer_start, "answer_text": answer,
            }) + "\n")
    return root


# ---------------------------------------------------------------------------
# Data


def test_classification_rows_and_bad_rows_counted(root):
    examples, report = finetune_data.read_classification(str(root / "train.csv"))
    assert report.kept == len(examples) == 160 and report.skipped_total == 0
    labels = finetune_data.discover_labels(label for _, _, label in examples)
    assert labels == ["is_bad", "is_good"]
    _, report = finetune_data.read_classification(str(root / "eval.csv"), labels=labels)
    assert (report.rows, report.kept) == (51, 48)
    assert report.skipped == {"missing text": 1, "missing label": 1, "unknown label": 1}
    assert "skipped 3" in report.summary() and "1 unknown label" in report.summary()


def test_text_pair_columns(tmp_path, root):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"text_a": "good film", "text_b": "bad", "label": 1}) + "\n")
    examples, _ = finetune_data.read_classification(str(path))
    assert examples == [("good film", "bad", "1")]
    tokenizer = BertTokenizer(str(root / "vocab.txt"))
    dataset = finetune_data.classification_dataset(examples, ["0", "1"], tokenizer, 8, 1)
    features, labels = next(iter(dataset))
    ids = [VOCAB[index] for index in features["input_ids"][0].numpy()]
    assert ids == ["[CLS]", "good", "film", "[SEP]", "bad", "[SEP]", "[PAD]", "[PAD]"]
    assert features["segment_ids"][0].numpy().tolist() == [0, 0, 0, 0, 1, 1, 0, 0]
    assert labels.numpy().tolist() == [1]


def test_token_labels_go_to_the_first_word_piece(root):
    tokenizer = BertTokenizer(str(root / "vocab.txt"))
    examples = [(["films", "paris", "books"], ["O", "LOC", "O"])]
    dataset = finetune_data.token_classification_dataset(examples, ["LOC", "O"], tokenizer, 8, 1)
    features, labels, weights = next(iter(dataset))
    ids = [VOCAB[index] for index in features["input_ids"][0].numpy()]
    assert ids == ["[CLS]", "film", "##s", "paris", "book", "##s", "[SEP]", "[PAD]"]
    assert weights[0].numpy().tolist() == [0, 1, 0, 1, 1, 0, 0, 0]
    assert labels[0].numpy().tolist() == [0, 1, 0, 0, 1, 0, 0, 0]
    # Truncation keeps the labels aligned with the pieces that remain.
    dataset = finetune_data.token_classification_dataset(examples, ["LOC", "O"], tokenizer, 5, 1)
    features, labels, weights = next(iter(dataset))
    assert [VOCAB[index] for index in features["input_ids"][0].numpy()] == [
        "[CLS]", "film", "##s", "paris", "[SEP]"]
    assert weights[0].numpy().tolist() == [0, 1, 0, 1, 0]
    assert labels[0].numpy().tolist() == [0, 1, 0, 0, 0]


def test_span_positions_and_truncated_answers(root):
    tokenizer = BertTokenizer(str(root / "vocab.txt"))
    examples, report = finetune_data.read_spans(str(root / "spans.jsonl"))
    assert report.skipped == {"answer not at answer_start": 1}
    encoded = finetune_data.encode_spans(examples, tokenizer, MAX_SEQ_LENGTH, report)
    assert report.skipped["answer truncated away"] == 1 and report.kept == 48
    for row in range(5):
        ids = encoded["input_ids"][row]
        start, end = encoded["start_positions"][row], encoded["end_positions"][row]
        assert start == end and VOCAB[ids[start]] in ("paris", "london")
        assert encoded["segment_ids"][row][start] == 1


# ---------------------------------------------------------------------------
# Initialization


def _pretraining_model_dir(directory):
    """A model_dir as trainer.pretrain writes it: ckpt-N and config.json."""
    config = tiny_config()
    model = BertPretrainingModel(BertEncoder(config))
    step = tf.Variable(7, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(model=model, step=step)
    tf.train.CheckpointManager(checkpoint, str(directory), 1, step_counter=step).save(7)
    config.to_json(str(directory / "config.json"))
    return model.encoder


def _huggingface_dir(directory):
    encoder = BertEncoder(tiny_config())
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(huggingface_config_dict(encoder.config)))
    save_file(encoder_tensors_from_encoder(encoder), str(directory / "model.safetensors"))
    return encoder


def _assert_same_weights(expected, actual):
    assert len(expected.weights) == len(actual.weights)
    for left, right in zip(expected.weights, actual.weights):
        np.testing.assert_allclose(left.numpy(), right.numpy(), err_msg=left.path)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretraining")
    return directory, _pretraining_model_dir(directory)


@pytest.fixture(scope="module")
def huggingface(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf") / "model"
    return directory, _huggingface_dir(directory)


def _flags(root, *extra):
    return finetuning.parse_flags([
        "--task=classification", f"--train_data={root}/train.csv",
        f"--model_dir={root}/unused", *common_flags(root), *extra,
    ])


def test_init_from_pretraining_dir_and_prefix_restores_the_encoder(root, pretrained):
    directory, expected = pretrained
    for path in (directory, directory / "ckpt-7"):
        encoder, source = finetuning.build_encoder(_flags(root, f"--init_checkpoint={path}"))
        assert "ckpt-7" in source
        _assert_same_weights(expected, encoder)


def test_init_from_huggingface_directory(root, huggingface):
    directory, expected = huggingface
    encoder, source = finetuning.build_encoder(_flags(root, f"--init_checkpoint={directory}"))
    assert "Hugging Face" in source
    _assert_same_weights(expected, encoder)


def test_init_errors_say_what_to_pass(root, tmp_path):
    with pytest.raises(FileNotFoundError, match="without a TensorFlow checkpoint"):
        finetuning.build_encoder(_flags(root, f"--init_checkpoint={tmp_path}"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        finetuning.build_encoder(_flags(root, f"--init_checkpoint={tmp_path}/ckpt-3"))


# ---------------------------------------------------------------------------
# End-to-end runs


@pytest.fixture(scope="module")
def classification_run(root):
    """The run's model_dir, export_dir, results and progress lines."""
    model_dir, export_dir = root / "classification", root / "export"
    progress_lines = logging.handlers.BufferingHandler(capacity=10_000)
    progress_logger = logging.getLogger("trainer.progress")
    progress_logger.addHandler(progress_lines)
    progress_logger.setLevel("INFO")
    try:
        results = finetune.main([
            "--task=classification", "--config=tiny", "--num_layers=1",
            "--hidden_dropout=0", "--attention_dropout=0",
            f"--train_data={root}/train.csv", f"--eval_data={root}/eval.csv",
            f"--model_dir={model_dir}", f"--export_dir={export_dir}",
            "--train_steps=40", "--warmup_steps=4", "--progress_every_seconds=0",
            *common_flags(root),
        ])
    finally:
        progress_logger.removeHandler(progress_lines)
    lines = [record.getMessage() for record in progress_lines.buffer]
    return model_dir, export_dir, results, lines


def test_classification_learns_a_separable_task(classification_run):
    model_dir, _, results, _ = classification_run
    assert results["step"] == 40
    assert results["accuracy"] > 0.9, results
    with open(model_dir / "eval_results.json") as file:
        written = json.load(file)
    assert written["accuracy"] == results["accuracy"]
    assert written["eval_examples"] == 48
    assert written["data"][1]["skipped"] == {
        "missing text": 1, "missing label": 1, "unknown label": 1}
    assert json.loads((model_dir / "labels.json").read_text()) == ["is_bad", "is_good"]
    assert tf.train.latest_checkpoint(str(model_dir)).endswith("ckpt-40")
    assert os.listdir(model_dir / "tensorboard" / "train")
    # The shared loop's log: a line per step.
    logged = [json.loads(line) for line in open(model_dir / "train_log.jsonl")]
    assert [line["step"] for line in logged] == list(range(1, 41))
    assert all(line["examples"] == 16 for line in logged)
    assert_hparams_metrics_are_logged(model_dir, "classification")


def classification_flags(root, model_dir, *extra):
    return ["--task=classification", "--config=tiny", "--num_layers=1",
            "--hidden_dropout=0", "--attention_dropout=0",
            f"--train_data={root}/train.csv", f"--eval_data={root}/eval.csv",
            f"--model_dir={model_dir}", "--warmup_steps=4", "--progress_every_seconds=0",
            *common_flags(root), *extra]


def test_evaluations_every_n_steps_keep_the_best_checkpoint(root):
    # With averaged weights: the evaluations, the best checkpoint and the
    # final evaluation all see the average.
    model_dir = root / "every_steps"
    results = finetune.main(classification_flags(
        root, model_dir, "--train_steps=30", "--eval_every_steps=10",
        "--bucket_boundaries=8", "--jit_compile", "--ema_momentum=0.9"))
    best = json.loads((model_dir / "best" / "best.json").read_text())
    assert best["step"] in (10, 20, 30)
    # The final evaluation is the best checkpoint's.
    assert results["step"] == best["step"]
    assert results["accuracy"] == pytest.approx(best["accuracy"])
    evaluations = tensorboard_values(str(model_dir), "eval")["metrics/accuracy"]
    assert [step for step, _ in evaluations] == [10, 20, 30]
    logged = [json.loads(line) for line in open(model_dir / "eval_log.jsonl")]
    assert [line["step"] for line in logged] == [10, 20, 30]
    evaluations = [float(value) for _, value in evaluations]
    assert best["accuracy"] == pytest.approx(max(evaluations))
    # trainer.export reads the best checkpoint (written without a save counter).
    model, _ = bert_models.load_trained_model(str(model_dir))
    written = tf.train.load_variable(str(model_dir / "best" / "ckpt"),
                                     "model/classifier_dense/_kernel/.ATTRIBUTES/VARIABLE_VALUE")
    np.testing.assert_array_equal(model.classifier_dense.kernel.numpy(), written)


def test_stop_time_hours_ends_training_early_and_the_run_resumes(root):
    model_dir = root / "stop_time"
    results = finetune.main(classification_flags(
        root, model_dir, "--train_steps=30", "--stop_time_hours=1e-9"))
    assert results["step"] == 1
    assert tf.train.latest_checkpoint(str(model_dir)).endswith("ckpt-1")
    # The same command without the time limit goes on from step 1.
    results = finetune.main(classification_flags(root, model_dir, "--train_steps=30"))
    assert results["step"] == 30
    steps = [json.loads(line)["step"] for line in open(model_dir / "train_log.jsonl")]
    assert steps == list(range(1, 31))


def test_a_run_of_the_earlier_fit_trainer_is_not_resumed(root, tmp_path):
    # Its checkpoints held the model and the step, with no optimizer beside them.
    tf.train.Checkpoint(step=tf.Variable(10, dtype=tf.int64)).save(str(tmp_path / "ckpt"))
    with pytest.raises(finetuning.UsageError, match="earlier fine-tuning trainer"):
        finetune.main(classification_flags(root, tmp_path, "--train_steps=30"))


# The tags of the metrics of each task's HParams.
TASK_TAGS = {
    "classification": ["loss/loss", "metrics/accuracy"],
    "token_classification": ["loss/loss", "metrics/token_accuracy"],
    "span": ["loss/loss", "metrics/start_accuracy", "metrics/end_accuracy"],
}


def assert_hparams_metrics_are_logged(model_dir, task):
    """The run's hparams are in `tensorboard/`, and every metric its HParams
    config declares is a scalar of the `train` run, at the last step (the
    runs of these tests skip validation during training; the `eval` run
    has the names of the `train` one), beside the learning rate."""
    hparams = tensorboard_values(str(model_dir))
    assert {"_hparams_/session_start_info", "_hparams_/experiment"} <= set(hparams)
    declared = finetuning.hparams_metrics(task)
    train_names = [name for group, name in declared if group == "train"]
    assert train_names == [name for group, name in declared if group == "eval"]
    assert [summaries.scalar_tag(name) for name in train_names] == TASK_TAGS[task]
    logged = tensorboard_values(str(model_dir), "train")
    last_step = max(step for step, _ in logged["loss/loss"])
    for tag in TASK_TAGS[task] + ["optimization/learning_rate"]:
        assert tag in logged, (tag, sorted(logged))
        assert logged[tag][-1][0] == last_step, (tag, logged[tag])


def test_fine_tuning_reports_progress_at_every_step_across_epochs(classification_run):
    *_, lines = classification_run
    assert [line.split()[2] for line in lines] == [f"{step}/40" for step in range(1, 41)]
    assert " examples/s | loss " in lines[-1]


def test_classification_export_serves_labels_for_text(classification_run):
    _, export_dir, _, _ = classification_run
    assert sorted(os.listdir(export_dir)) == ["1"]
    serving = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"]
    outputs = serving(text=tf.constant(["the film was good", "the film was bad"]))
    assert outputs["label"].numpy().tolist() == [b"is_good", b"is_bad"]
    assert outputs["probabilities"].shape == (2, 2)
    np.testing.assert_allclose(outputs["probabilities"].numpy().sum(-1), 1.0, rtol=1e-6)


def test_export_rebuilds_the_classifier_from_its_model_dir(classification_run):
    model_dir, export_dir, _, _ = classification_run
    version = export.main([f"--model_dir={model_dir}", f"--export_dir={export_dir}"])
    assert version == str(export_dir / "2")
    first, second = (tf.saved_model.load(str(export_dir / name)).signatures["serving_default"]
                     for name in ("1", "2"))
    text = tf.constant(["the film was good", "bad bad film"])
    np.testing.assert_allclose(second(text=text)["probabilities"].numpy(),
                               first(text=text)["probabilities"].numpy(), atol=1e-6)


FEATURES = ("input_ids", "input_mask", "segment_ids")


def _restored(model, model_dir):
    """`model` with the weights of the run's final checkpoint, restored here
    with a plain `tf.train.Checkpoint` (not by the code under test)."""
    model({name: np.zeros([1, MAX_SEQ_LENGTH], "int32") for name in FEATURES})
    status = tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(str(model_dir)))
    status.assert_existing_objects_matched()
    status.expect_partial()
    return model


def _run_encoder(model_dir):
    return BertEncoder(BertConfig.from_json(str(model_dir / "config.json")))


def _assert_started_from(trained, initial):
    """The token ids past the vocabulary's words never occur in the data, so
    their embedding rows get no gradient: after training they still hold
    the initial weights (shrunk only by a weight decay of lr * 0.01 a step).
    A run that did not start from `initial` has other rows there."""
    def unused_rows(encoder):
        table, = [weight for weight in encoder.weights if "token_embedding" in weight.path]
        return table.numpy()[len(VOCAB):]

    np.testing.assert_allclose(unused_rows(trained), unused_rows(initial), rtol=1e-3, atol=1e-7)


def test_token_classification_from_pretraining_checkpoint(root, pretrained):
    directory, initial = pretrained
    model_dir = root / "tagging"
    results = finetune.main([
        "--task=token_classification", f"--init_checkpoint={directory}",
        f"--train_data={root}/tags.jsonl", f"--model_dir={model_dir}",
        "--train_steps=6", *common_flags(root),
    ])
    assert results["step"] == 6
    assert results["data"][0]["skipped"] == {"malformed JSON": 1, "tags not one per token": 1}
    assert json.loads((model_dir / "labels.json").read_text()) == ["LOC", "O"]
    assert "ckpt-7" in results["init"]
    model = _restored(BertTokenClassifier(_run_encoder(model_dir), num_classes=2), model_dir)
    _assert_started_from(model.encoder, initial)
    # Token accuracy recomputed from the final checkpoint: over the first
    # piece of each word (weight 1), not over every position.
    examples, _ = finetune_data.read_token_classification(str(root / "tags.jsonl"), ["LOC", "O"])
    dataset = finetune_data.token_classification_dataset(
        examples, ["LOC", "O"], BertTokenizer(str(root / "vocab.txt")), MAX_SEQ_LENGTH, 16)
    first_right = first_pieces = every_right = positions = 0
    for features, labels, weights in dataset:
        right = np.argmax(model(features), axis=-1) == labels.numpy()
        first_right += (right * weights.numpy()).sum()
        first_pieces += weights.numpy().sum()
        every_right += right.sum()
        positions += right.size
    np.testing.assert_allclose(results["token_accuracy"], first_right / first_pieces, rtol=1e-6)
    # The data tells the two apart, so the assertion above could fail.
    print(f"\ntoken accuracy: first pieces {first_right / first_pieces:.4f}, "
          f"every position {every_right / positions:.4f}")
    assert abs(every_right / positions - first_right / first_pieces) > 0.01
    assert_hparams_metrics_are_logged(model_dir, "token_classification")


def test_span_from_huggingface_checkpoint(root, huggingface):
    directory, initial = huggingface
    model_dir = root / "span"
    results = finetune.main([
        "--task=span", f"--init_checkpoint={directory}",
        f"--train_data={root}/spans.jsonl", f"--eval_data={root}/spans_eval.jsonl",
        f"--model_dir={model_dir}", "--train_steps=6", *common_flags(root),
    ])
    assert results["step"] == 6
    assert "Hugging Face" in results["init"]
    assert results["data"][0]["skipped"] == {
        "answer not at answer_start": 1, "answer truncated away": 1}
    model = _restored(BertSpanExtractor(_run_encoder(model_dir)), model_dir)
    _assert_started_from(model.encoder, initial)
    # The metrics recomputed from the final checkpoint: exact match is both
    # argmax positions right.
    examples, report = finetune_data.read_spans(str(root / "spans_eval.jsonl"))
    encoded = finetune_data.encode_spans(
        examples, BertTokenizer(str(root / "vocab.txt")), MAX_SEQ_LENGTH, report)
    outputs = model({name: encoded[name] for name in FEATURES})
    start_right = np.argmax(outputs["start_logits"], -1) == encoded["start_positions"]
    end_right = np.argmax(outputs["end_logits"], -1) == encoded["end_positions"]
    print(f"\nspan: start {start_right.mean():.4f}, end {end_right.mean():.4f}, "
          f"exact {(start_right & end_right).mean():.4f}")
    np.testing.assert_allclose(results["start_accuracy"], start_right.mean(), rtol=1e-6)
    np.testing.assert_allclose(results["end_accuracy"], end_right.mean(), rtol=1e-6)
    np.testing.assert_allclose(results["exact_match"], (start_right & end_right).mean(), rtol=1e-6)
    # The data tells the three apart, so the assertions above could fail.
    assert (start_right & ~end_right).any() and (end_right & ~start_right).any()
    assert_hparams_metrics_are_logged(model_dir, "span")


def test_the_readme_serving_commands_run_on_a_classification_run(classification_run, tmp_path):
    """The README's `tfnlp export` and `saved_model_cli show` lines, with its
    `classifier/` a real run: the export has the `serving_default` that the
    TensorFlow Serving container would serve, taking strings."""
    model_dir, *_ = classification_run

    def local(word):
        return (word.replace("=classifier/", f"={model_dir}/")
                .replace("exports/", f"{tmp_path}/exports/"))

    [export_command] = readme_commands("tfnlp export")
    [show_command] = readme_commands("saved_model_cli")
    version = export.main([local(word) for word in export_command[2:]])
    assert version == f"{tmp_path}/exports/classifier/1"
    shown = saved_model_cli(*[local(word) for word in show_command[1:]])
    assert "The given SavedModel SignatureDef contains the following input(s):" in shown
    assert "inputs['text'] tensor_info:\n      dtype: DT_STRING" in shown
    assert "outputs['label'] tensor_info:\n      dtype: DT_STRING" in shown

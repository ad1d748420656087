"""`python -m trainer.distill` on tiny transfer sets, in-process.

The teacher's logits encode a separable rule (a text with "good" or
"great" is positive); the students are the tiny BiLSTM preset and a BERT
student of 3 layers of a tiny 6-layer teacher run. The runs are few and
short (a few dozen steps at most) and shared by module-scoped fixtures.
"""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the BERT export's text ops)

from tests.serve.client import call
from tests.trainer import helpers
from tfnlp.data import distillation_schema as schema
from tfnlp.export import BertTextPreprocessor
from tfnlp.losses import soft_target_loss
from tfnlp.models import BertClassifier, BertConfig, BertEncoder
from tfnlp.serve.http_server import start_server
from tfnlp.serve.model_store import ModelStore
from tfnlp.text import BertTokenizer, WordTokenizer, write_vocabulary
from tfnlp.command_line import UsageError
from trainer import average_checkpoints, distill, export
from trainer.tasks.distillation import (WORD_SEQUENCE_LENGTH, DistillationTask,
                                        distilled_bert_classifier, load_student,
                                        teacher_output_word_vectors)

FILLER = "the a movie film plot story was is really very quite".split()
POSITIVE, NEGATIVE = ["good", "great"], ["bad", "awful"]
LABELS = ["negative", "positive"]
MAX_SEQ_LENGTH = 16
TEXTS = ["a good film", "The plot was awful.", "really great", "bad bad movie"]


def sentence(rng, positive, mask=False):
    words = [rng.choice(FILLER) for _ in range(rng.randint(1, 6))]
    words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if positive else NEGATIVE))
    if mask:
        words[rng.randrange(len(words))] = "[MASK]"
    return " ".join(words)


def teacher_logits(text):
    """The rule's logits, as a confident teacher gives them."""
    positive = any(word in text.split() for word in POSITIVE)
    return [-2.0, 2.5] if positive else [2.5, -2.0]


def write_transfer_set(folder, seed=0, shuffled_logits=False, other_augmented=False,
                       labels_file=True):
    """Two shards of labelled and augmented records (every third labelled),
    and labels.json; optionally the labelled records' teacher logits
    permuted among them, or the augmented records' texts drawn anew."""
    rng = random.Random(seed)
    other = random.Random(seed + 1)
    records = []
    for index in range(96):
        positive = index % 2 == 0
        if index % 3 == 0:
            text = sentence(rng, positive)
            records.append([text, teacher_logits(text), int(positive), "labelled"])
        else:
            text = sentence(rng, positive, mask=True)
            if other_augmented:
                text = sentence(other, not positive, mask=True)
            records.append([text, teacher_logits(text), schema.NO_LABEL, "augmented"])
    if shuffled_logits:
        labelled = [record for record in records if record[3] == "labelled"]
        permuted = [record[1] for record in labelled][::-1]
        for record, logits in zip(labelled, permuted):
            record[1] = logits
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(2):
        with tf.io.TFRecordWriter(str(folder / f"train-{shard:05d}-of-00002.tfrecord")) as writer:
            for text, logits, label, origin in records[shard::2]:
                writer.write(schema.serialize_record(text, logits, label, origin))
    if labels_file:
        (folder / "labels.json").write_text(json.dumps(LABELS))
    return str(folder / "train-*")


def write_dev_set(path, seed=7, count=24):
    rng = random.Random(seed)
    lines = ["text\tlabel"]
    for index in range(count):
        lines.append(f"{sentence(rng, index % 2 == 1)}\t{LABELS[index % 2]}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def distill_flags(train_data, model_dir, **overrides):
    values = {
        "train_data": train_data,
        "model_dir": model_dir,
        "config": "tiny",
        "global_batch_size": 16,
        "train_steps": 40,
        "warmup_steps": 0,
        "learning_rate": 3e-2,
        "max_seq_length": MAX_SEQ_LENGTH,
        "log_every_steps": 10,
        "checkpoint_every_steps": 100,
        "progress_every_seconds": 0,
    }
    values.update(overrides)
    return [f"--{name}={value}" for name, value in values.items() if value is not None]


def eval_log(model_dir):
    with open(os.path.join(model_dir, "eval_log.jsonl"), encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def softmax(logits):
    return tf.nn.softmax(tf.cast(logits, tf.float32)).numpy()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("distill")
    return {"root": root, "train": write_transfer_set(root / "transfer"),
            "dev": write_dev_set(root / "dev.tsv")}


@pytest.fixture(scope="module")
def bilstm_run(data):
    model_dir, export_dir = data["root"] / "bilstm", data["root"] / "bilstm_export"
    distill.main(distill_flags(data["train"], model_dir, eval_data=data["dev"],
                               eval_every_steps=20, checkpoint_every_steps=20,
                               export_dir=export_dir))
    return model_dir, export_dir


def test_the_bilstm_student_learns_the_teacher(bilstm_run):
    model_dir, _ = bilstm_run
    steps = helpers.train_log(model_dir)
    assert [record["step"] for record in steps] == list(range(1, 41))
    first, last = (np.mean([record["loss"] for record in part])
                   for part in (steps[:5], steps[-5:]))
    assert last < 0.5 * first
    evaluations = eval_log(model_dir)
    assert [record["step"] for record in evaluations] == [20, 40]
    assert evaluations[-1]["accuracy"] >= 0.9
    with open(os.path.join(model_dir, "vocabulary.txt"), encoding="utf-8") as file:
        words = file.read().split()
    assert {"good", "bad", "[mask]", "film"} <= set(words)
    record = json.loads((model_dir / "serving.json").read_text())
    assert (record["model"], record["student"], record["labels"]) == (
        "distillation", "bilstm", LABELS)


def in_process_bilstm_probabilities(model_dir, texts):
    model = load_student(str(model_dir))
    tokenizer = WordTokenizer(str(model_dir / "vocabulary.txt"), sequence_length=MAX_SEQ_LENGTH)
    return softmax(model(tokenizer(tf.constant(texts)), training=False))


def test_the_bilstm_export_gives_the_in_process_probabilities(bilstm_run):
    model_dir, export_dir = bilstm_run
    loaded = tf.saved_model.load(str(export_dir / "1"))
    assert os.listdir(export_dir / "1" / "assets") == ["vocabulary.txt"]
    outputs = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    assert sorted(outputs) == ["class_id", "label", "logits", "probabilities"]
    expected = in_process_bilstm_probabilities(model_dir, TEXTS)
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-6)
    assert [label.decode() for label in outputs["label"].numpy()] == [
        "positive", "negative", "positive", "negative"]


def test_trainer_export_exports_a_distillation_run_that_tfnlp_serve_serves(bilstm_run,
                                                                           tmp_path):
    model_dir, _ = bilstm_run
    path = export.main([f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'served'}"])
    assert os.path.basename(path) == "1"
    server = start_server(ModelStore(str(tmp_path / "served")))
    try:
        status, body = call(server, "POST", "/v1/models/served:predict",
                            {"instances": TEXTS[:2]})
    finally:
        server.shutdown()
    assert status == 200, body
    predictions = body["predictions"]
    assert [prediction["label"] for prediction in predictions] == ["positive", "negative"]
    np.testing.assert_allclose([prediction["probabilities"] for prediction in predictions],
                               in_process_bilstm_probabilities(model_dir, TEXTS[:2]),
                               atol=1e-6)


def test_the_average_of_the_last_checkpoints_exports(bilstm_run, tmp_path):
    model_dir, _ = bilstm_run
    averaged = average_checkpoints.main([
        f"--model_dir={model_dir}", "--num_checkpoints=2",
        f"--output={tmp_path / 'averaged' / 'ckpt-40'}"])
    export.main([f"--model_dir={model_dir}", f"--checkpoint={averaged}",
                 f"--export_dir={tmp_path / 'averaged_export'}"])
    kept = [load_student(str(model_dir), str(model_dir / f"ckpt-{step}")).get_weights()
            for step in (20, 40)]
    assert any(np.abs(first - last).max() > 1e-3 for first, last in zip(*kept))
    model = load_student(str(model_dir))
    model.set_weights([(first + last) / 2 for first, last in zip(*kept)])
    tokenizer = WordTokenizer(str(model_dir / "vocabulary.txt"), sequence_length=MAX_SEQ_LENGTH)
    expected = softmax(model(tokenizer(tf.constant(TEXTS)), training=False))
    loaded = tf.saved_model.load(str(tmp_path / "averaged_export" / "1"))
    outputs = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5)


def checkpoint_weights(model_dir):
    return helpers.checkpoint_values(tf.train.latest_checkpoint(str(model_dir)), ("model/",))


def test_the_labels_objective_reads_only_the_labelled_records_gold_labels(data):
    """Shuffling the teacher's logits and replacing the augmented records
    changes nothing: the baseline reads the labelled records' labels
    alone."""
    runs = []
    for name, options in (("original", {}),
                          ("changed", dict(shuffled_logits=True, other_augmented=True))):
        train = write_transfer_set(data["root"] / f"labels_{name}", **options)
        model_dir = data["root"] / f"labels_run_{name}"
        distill.main(distill_flags(train, model_dir, objective="labels", train_steps=4,
                                   global_batch_size=8))
        runs.append((helpers.train_log(model_dir), checkpoint_weights(model_dir)))
    (log, weights), (changed_log, changed_weights) = runs
    assert [step["loss"] for step in log] == [step["loss"] for step in changed_log]
    assert all(step["labelled"] == step["examples"] == 8 for step in log)
    assert all("teacher_loss" not in step for step in log)
    assert sorted(weights) == sorted(changed_weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(value, changed_weights[name])


def test_the_temperature_reaches_the_loss(tmp_path):
    """One step at learning rate 0 (the warmup's first) on records of one
    text: the logged loss is T² KL at the flag's T of the initial student."""
    folder = tmp_path / "one_text"
    folder.mkdir()
    with tf.io.TFRecordWriter(str(folder / "train-00000-of-00001.tfrecord")) as writer:
        for _ in range(8):
            writer.write(schema.serialize_record("a good film", [1.5, -0.5], 1))
    model_dir = tmp_path / "run"
    distill.main(distill_flags(str(folder / "train-*"), model_dir, train_steps=1,
                               warmup_steps=1, temperature=4, global_batch_size=4))
    step, = helpers.train_log(model_dir)
    assert step["learning_rate"] == 0.0
    logits = load_student(str(model_dir))(
        WordTokenizer(str(model_dir / "vocabulary.txt"))(tf.constant(["a good film"])))
    teacher = tf.constant([[1.5, -0.5]])
    expected = float(soft_target_loss(teacher, logits, 4.0)[0])
    assert abs(expected - float(soft_target_loss(teacher, logits, 1.0)[0])) > 1e-3
    assert step["loss"] == pytest.approx(expected, rel=1e-5)


def test_the_task_weighs_the_labels_by_the_labelled_examples():
    task = DistillationTask(lambda logits, training=None: logits, ("logits",),
                            temperature=2.0, alpha=0.25)
    batch = {"logits": tf.constant([[0.0, 1.0], [2.0, 0.0]]),
             "teacher_logits": tf.constant([[1.0, 0.0], [0.0, 0.0]]),
             "label": tf.constant([1, -1]), "input_mask": tf.ones([2, 3])}
    loss = float(task.loss(batch, batch["logits"], task.batch_totals(batch)))
    teacher = float(tf.reduce_mean(soft_target_loss(batch["teacher_logits"],
                                                    batch["logits"], 2.0)))
    cross_entropy = float(np.log1p(np.exp(-1.0)))  # The one labelled example.
    assert loss == pytest.approx(0.25 * teacher + 0.75 * cross_entropy, rel=1e-6)
    labels_only = DistillationTask(lambda logits, training=None: logits, ("logits",),
                                   objective="labels")
    batch["teacher_logits"] = tf.fill([2, 2], float("nan"))
    assert float(labels_only.loss(batch, batch["logits"], labels_only.batch_totals(batch))) \
        == pytest.approx(cross_entropy, rel=1e-6)



def test_alpha_at_its_ends_gives_one_term_alone_and_just_past_them_is_refused():
    batch = {"logits": tf.constant([[0.0, 1.0], [2.0, 0.0]]),
             "teacher_logits": tf.constant([[1.0, 0.0], [0.0, 0.0]]),
             "label": tf.constant([1, -1]), "input_mask": tf.ones([2, 3])}

    def task(alpha):
        return DistillationTask(lambda logits, training=None: logits, ("logits",),
                                temperature=2.0, alpha=alpha)

    def loss_and_result(alpha):
        student = task(alpha)
        loss = float(student.loss(batch, batch["logits"], student.batch_totals(batch)))
        sums = {name: float(value) for name, value in
                student.sums(batch, batch["logits"]).items()}
        return loss, student.results(sums)["loss"]

    teacher = float(tf.reduce_mean(soft_target_loss(batch["teacher_logits"],
                                                    batch["logits"], 2.0)))
    cross_entropy = float(np.log1p(np.exp(-1.0)))
    assert loss_and_result(1.0) == pytest.approx((teacher, teacher), rel=1e-6)
    assert loss_and_result(0.0) == pytest.approx((cross_entropy, cross_entropy), rel=1e-6)
    for alpha in (-1e-9, 1.0 + 1e-9):
        with pytest.raises(ValueError, match=r"in \[0, 1\]"):
            task(alpha)

# --- The BERT student --------------------------------------------------------

WORDPIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *FILLER, *POSITIVE,
              *NEGATIVE]


def tiny_teacher(vocab_size):
    config = BertConfig.preset("tiny", num_layers=6, vocab_size=vocab_size, hidden_size=32,
                               num_heads=2, intermediate_size=64, max_position_embeddings=32,
                               hidden_dropout=0.0, attention_dropout=0.0)
    return BertClassifier(BertEncoder(config), num_classes=2, dropout=0.0)


def layer_weights(layer):
    return layer.get_weights()


def assert_same_weights(first, second):
    first, second = layer_weights(first), layer_weights(second)
    assert len(first) == len(second) > 0
    for one, other in zip(first, second):
        np.testing.assert_array_equal(one, other)


def test_the_bert_student_starts_from_every_other_teacher_layer():
    teacher = tiny_teacher(len(WORDPIECES))
    student, indices = distilled_bert_classifier(teacher, 3, num_classes=2)
    assert indices == [1, 3, 5]
    assert student.config.num_layers == 3
    for student_layer, index in zip(student.encoder.transformer_layers, indices):
        assert_same_weights(student_layer, teacher.encoder.transformer_layers[index])
    for name in ("token_embedding", "position_embedding", "embeddings_layer_norm",
                 "pooled_dense"):
        assert_same_weights(getattr(student.encoder, name), getattr(teacher.encoder, name))
    assert_same_weights(student.classifier_dense, teacher.classifier_dense)


def test_the_bert_student_pools_as_its_teacher_does():
    teacher = tiny_teacher(len(WORDPIECES))
    mean_teacher = BertClassifier(teacher.encoder, num_classes=2, pooling="mean")
    assert distilled_bert_classifier(mean_teacher, 3, num_classes=2)[0].pooling == "mean"
    assert distilled_bert_classifier(teacher, 3, num_classes=2)[0].pooling == "pooled_output"


@pytest.fixture(scope="module")
def teacher_dir(data):
    """A trainer.finetune run of a 6-layer teacher, as that trainer writes it."""
    folder = data["root"] / "teacher"
    folder.mkdir()
    write_vocabulary(WORDPIECES, str(folder / "vocab.txt"))
    teacher = tiny_teacher(len(WORDPIECES))
    teacher.encoder.config.to_json(str(folder / "config.json"))
    (folder / "serving.json").write_text(json.dumps({
        "model": "classification", "labels": LABELS, "dropout": 0.0,
        "vocab_file": str(folder / "vocab.txt"), "lower_case": True,
        "sequence_length": MAX_SEQ_LENGTH}))
    tf.train.Checkpoint(model=teacher).save(str(folder / "ckpt"))
    return folder, teacher


@pytest.fixture(scope="module")
def bert_run(data, teacher_dir):
    folder, _ = teacher_dir
    model_dir = data["root"] / "bert"
    distill.main(distill_flags(data["train"], model_dir, student="bert", teacher=folder,
                               student_layers=3, train_steps=1, warmup_steps=1,
                               eval_data=data["dev"], config=None, max_seq_length=None,
                               export_dir=data["root"] / "bert_export"))
    return model_dir, data["root"] / "bert_export"


def test_the_bert_student_run_starts_from_the_teacher_layers_1_3_5(bert_run, teacher_dir):
    model_dir, _ = bert_run
    _, teacher = teacher_dir
    student = load_student(str(model_dir))
    assert student.config.num_layers == 3
    for student_layer, index in zip(student.encoder.transformer_layers, (1, 3, 5)):
        assert_same_weights(student_layer, teacher.encoder.transformer_layers[index])
    evaluation, = eval_log(model_dir)
    assert 0.0 <= evaluation["teacher_agreement"] <= 1.0
    record = json.loads((model_dir / "serving.json").read_text())
    assert (record["student"], record["sequence_length"]) == ("bert", MAX_SEQ_LENGTH)


def test_the_bert_student_exports_like_a_bert_classifier(bert_run, tmp_path):
    model_dir, export_dir = bert_run
    student = load_student(str(model_dir))
    preprocessor = BertTextPreprocessor(
        BertTokenizer(str(model_dir.parent / "teacher" / "vocab.txt")), MAX_SEQ_LENGTH)
    expected = softmax(student(preprocessor(tf.constant(TEXTS)), training=False))
    path = export.main([f"--model_dir={model_dir}", f"--export_dir={tmp_path}"])
    for version in (export_dir / "1", path):
        outputs = tf.saved_model.load(str(version)).signatures["serving_default"](
            text=tf.constant(TEXTS))
        assert {"label", "class_id", "probabilities"} <= set(outputs)
        np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5)



def test_teacher_word_vectors_start_the_bilstm_embeddings(data, teacher_dir):
    folder, teacher = teacher_dir
    model_dir = data["root"] / "bilstm_teacher_vectors"
    # The teacher's vocabulary (all of it known from the training texts but
    # "[mask]"'s parts and "."), then words no training text has.
    extra_file = data["root"] / "extra_words.txt"
    extra_file.write_text("\n".join(WORDPIECES + ["##ly", "Terrible 4", "don't", "terrible",
                                                    "superb"]) + "\n")
    distill.main(distill_flags(data["train"], model_dir, teacher=folder,
                               word_vectors="teacher", train_steps=1, learning_rate=1e-9,
                               config=None, embedding_dim=None,
                               extra_vocabulary_file=extra_file))
    vocabulary = (model_dir / "vocabulary.txt").read_text().split()
    assert vocabulary[-3:] == [".", "terrible", "superb"]
    assert len(vocabulary) == len(set(vocabulary))
    student_tokenizer = WordTokenizer(str(model_dir / "vocabulary.txt"))
    ids = student_tokenizer(tf.constant(["superb and terrible"])).numpy()[0]
    assert ids[0] == 2 + vocabulary.index("superb") and ids[1] == 1
    student = load_student(str(model_dir))
    embeddings = student.token_embedding.embeddings.numpy()
    assert embeddings.shape[1] == teacher.encoder.config.hidden_size
    table = teacher.encoder.token_embedding_matrix.numpy()
    # The words are one WordPiece each (the ids start after padding and
    # [UNK]); "[mask]" is three: "[", "mask" and "]", all [UNK] here.
    words = [(index + 2, word) for index, word in enumerate(vocabulary)]
    checked = [(index, WORDPIECES.index(word)) for index, word in words if word in WORDPIECES]
    assert len(checked) == len(vocabulary) - 3
    for index, piece in checked:
        np.testing.assert_allclose(embeddings[index], table[piece], atol=1e-6)
    for word in ("[mask]", "terrible", "superb"):
        np.testing.assert_allclose(embeddings[2 + vocabulary.index(word)],
                                   table[WORDPIECES.index("[UNK]")], atol=1e-6)
    assert not embeddings[0].any()


@pytest.mark.parametrize("word_vectors", ["teacher", "teacher_output"])
def test_teacher_word_vectors_need_a_teacher(data, tmp_path, word_vectors):
    with pytest.raises(UsageError, match="give --teacher"):
        distill.main(distill_flags(data["train"], tmp_path / "run", word_vectors=word_vectors))


def test_teacher_output_vectors_are_the_teachers_sentence_vector_of_each_word(teacher_dir):
    folder, teacher = teacher_dir
    preprocessor = BertTextPreprocessor(BertTokenizer(str(folder / "vocab.txt")), 8)
    words = ["", "good", "awful", "film", "the"]
    vectors = teacher_output_word_vectors(teacher, preprocessor, words, batch_size=2)
    assert not vectors[0].any()
    for index, word in enumerate(words[1:], 1):
        alone = teacher.sentence_vector(preprocessor(tf.constant([word])), training=False)
        np.testing.assert_allclose(vectors[index], np.asarray(alone)[0], atol=1e-5)
    # They are what the classifier's dense layer reads.
    logits = teacher(preprocessor(tf.constant(["awful"])), training=False)
    np.testing.assert_allclose(teacher.classifier_dense(vectors[2:3]), logits, atol=1e-5)


def test_teacher_output_vectors_start_both_channels_of_the_bilstm(data, teacher_dir):
    folder, teacher = teacher_dir
    model_dir = data["root"] / "bilstm_teacher_output_vectors"
    distill.main(distill_flags(data["train"], model_dir, teacher=folder,
                               word_vectors="teacher_output", multichannel_word_vectors=True,
                               train_steps=1, learning_rate=1e-9, config=None,
                               embedding_dim=None))
    vocabulary = ["", "[UNK]"] + (model_dir / "vocabulary.txt").read_text().split()
    student = load_student(str(model_dir))
    preprocessor = BertTextPreprocessor(BertTokenizer(str(folder / "vocab.txt")),
                                        WORD_SEQUENCE_LENGTH)
    expected = teacher_output_word_vectors(teacher, preprocessor, vocabulary)
    assert student.multichannel
    for embedding in (student.token_embedding, student.static_embedding):
        np.testing.assert_allclose(embedding.embeddings.numpy(), expected, atol=1e-5)

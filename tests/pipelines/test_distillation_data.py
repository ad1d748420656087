"""Tests of the distillation transfer-set job, `pipelines.distillation_data`,
and of its composite transforms on `beam.Create` input: the texts
(`pipelines.transfer_set`) and the teacher's labelling
(`pipelines.teacher_inference`, with a plain-Python teacher).

The end-to-end runs use a tiny random `BertClassifier` with a vocabulary of
the test's own words, exported as `trainer.finetune --export_dir` exports
it (`trainer.export.export_trained_model`); its records must hold the
export's own logits for their texts.
"""

import hashlib
import json

import apache_beam as beam
import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 (the export's text signature)
from apache_beam.ml.inference.base import ModelHandler, PredictionResult
from apache_beam.testing.util import assert_that, equal_to

from pipelines import distillation_data, transfer_set
from pipelines.user_errors import user_error_message
from pipelines.teacher_inference import (LabelTransferSet, TeacherBatches,
                                         TeacherModelHandler, describe_teacher_export)
from tests.pipelines.conftest import dask_arguments
from tfnlp.data import distillation_schema, example_proto
from tfnlp.models import BertClassifier, BertConfig, BertEncoder
from tfnlp.text import write_vocabulary
from tfnlp.text.augmentation import TransferSetAugmenter
from trainer.bert_models import export_trained_model

LABELS = ["negative", "positive"]
WORDS = ("a the film movie good bad great dull fine boring fun plot was is not very "
         "and with story actors long short funny sad").split()
# The labelled file: one repeated text (with another label), a text with an
# unknown label, one without a label, one equal to a dev text once its
# spacing is collapsed, and a text that is also an unlabelled line.
LABELLED_ROWS = [
    ("a good film", "positive"),
    ("a bad  movie", "negative"),
    ("the plot was dull", "negative"),
    ("great fun with the actors", "positive"),
    ("a good film", "negative"),
    ("very long and boring", "neutral"),
    ("the story is fine", ""),
    ("a   funny short film", "positive"),
    ("not a sad story", "positive"),
    ("the movie was very long", "negative"),
]
DEV_TEXTS = ["a funny short film", "the actors were great"]
UNLABELLED_LINES = ["the film was fun", "", "a good film", "the actors were great",
                    "a dull plot", "the film was fun", "fine actors"]
SEQUENCE_LENGTH = 16


def write_tsv(path, header, rows):
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def teacher_export(tmp_path_factory):
    """A tiny random classifier, exported as fine-tuning exports it."""
    folder = tmp_path_factory.mktemp("teacher")
    vocab_file = folder / "vocab.txt"
    write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS], vocab_file)
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=5 + len(WORDS), num_layers=1,
                                            max_position_embeddings=SEQUENCE_LENGTH))
    model = BertClassifier(encoder, num_classes=len(LABELS), dropout=0.0)
    export_dir = folder / "export"
    export_trained_model(model, str(export_dir), vocab_file=str(vocab_file),
                         sequence_length=SEQUENCE_LENGTH, labels=LABELS)
    return export_dir


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    return {
        "labelled": write_tsv(folder / "train.tsv", ("sentence", "label"), LABELLED_ROWS),
        "dev": write_tsv(folder / "dev.tsv", ("sentence", "label"),
                         [(text, "positive") for text in DEV_TEXTS]),
        "unlabelled": folder / "unlabelled.txt",
    }


@pytest.fixture(scope="module", autouse=True)
def unlabelled_file(inputs):
    inputs["unlabelled"].write_text("\n".join(UNLABELLED_LINES) + "\n")


def job_arguments(inputs, teacher_export, output_dir, *extra):
    return [f"--labelled_file={inputs['labelled']}", "--text_column=sentence",
            f"--exclude_file={inputs['dev']}", f"--unlabelled_file={inputs['unlabelled']}",
            f"--teacher_export={teacher_export}", f"--output_dir={output_dir}",
            "--augmentations_per_sentence=4", "--mask_probability=0.2",
            "--swap_probability=0.3", "--teacher_batch_size=4", "--num_shards=2", *extra]


def read_records(output_dir):
    """The records of every shard as dicts, read without TensorFlow."""
    records = []
    for path in sorted(output_dir.glob("train-*-of-*.tfrecord")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            length = int.from_bytes(data[offset:offset + 8], "little")
            features = example_proto.Example.FromString(
                data[offset + 12:offset + 12 + length]).features.feature
            records.append({
                "text": features["text"].bytes_list.value[0].decode(),
                "teacher_logits": list(features["teacher_logits"].float_list.value),
                "label": features["label"].int64_list.value[0],
                "origin": features["origin"].bytes_list.value[0].decode(),
            })
            offset += 12 + length + 4
    return records


@pytest.fixture(scope="module")
def job_run(inputs, teacher_export, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("transfer-set")
    stats = distillation_data.main(job_arguments(inputs, teacher_export, output_dir))
    return stats, output_dir, read_records(output_dir)


def export_logits(teacher_export, texts):
    signature = tf.saved_model.load(str(teacher_export / "1")).signatures["serving_default"]
    return signature(text=tf.constant(texts))["logits"].numpy()


def test_records_hold_the_exports_own_logits_for_their_text(job_run, teacher_export):
    _, _, records = job_run
    texts = [record["text"] for record in records]
    expected = export_logits(teacher_export, texts)
    tolerance = 1e-5
    np.testing.assert_allclose([record["teacher_logits"] for record in records], expected,
                               rtol=0, atol=tolerance)
    # Misaligned logits would be seen: nearly every text's logits differ from
    # the next one's by more than the tolerance (a random teacher gives close
    # logits to a few texts, such as ones that differ in a masked word).
    differences = np.abs(expected - np.roll(expected, 1, axis=0)).max(axis=1)
    assert np.mean(differences > 2 * tolerance) > 0.9


def test_the_transfer_set_is_distinct_unexcluded_text_of_each_origin(job_run):
    stats, output_dir, records = job_run
    texts = [record["text"] for record in records]
    assert len(texts) == len(set(texts)) == stats["records_written"]
    assert not set(texts) & set(DEV_TEXTS)
    by_origin = {origin: {r["text"]: r["label"] for r in records if r["origin"] == origin}
                 for origin in distillation_schema.ORIGINS}
    # The first row of a repeated text gives its label; the unknown and the
    # missing label are skipped; the dev text is excluded.
    assert by_origin["labelled"] == {
        "a good film": 1, "a bad movie": 0, "the plot was dull": 0,
        "great fun with the actors": 1, "not a sad story": 1, "the movie was very long": 0}
    # "a good film" is labelled; "the actors were great" is a dev text.
    assert set(by_origin["unlabelled"]) == {"the film was fun", "a dull plot", "fine actors"}
    assert set(by_origin["augmented"].values()) == {-1} and len(by_origin["augmented"]) > 6
    assert not set(by_origin["augmented"]) & (set(by_origin["labelled"]) | set(DEV_TEXTS))
    assert json.loads((output_dir / "labels.json").read_text()) == LABELS


def test_stats_account_for_every_row_and_text(job_run):
    stats, output_dir, records = job_run
    assert json.loads((output_dir / "stats.json").read_text()) == stats
    labelled = stats["labelled"]
    assert labelled["rows_read"] == len(LABELLED_ROWS)
    assert labelled["rows_skipped"] == {"unknown label": 1, "missing label": 1}
    assert (labelled["rows_excluded"], labelled["rows_repeated"],
            labelled["rows_with_conflicting_label"]) == (1, 1, 1)
    assert labelled["texts"] == labelled["written"] == 6
    unlabelled = stats["unlabelled"]
    assert (unlabelled["lines_read"], unlabelled["lines_used"]) == (7, 6)
    assert (unlabelled["lines_excluded"], unlabelled["texts"], unlabelled["duplicates"],
            unlabelled["written"]) == (1, 5, 2, 3)
    augmented = stats["augmented"]
    assert augmented["sentences"] == 6 and augmented["candidates"] == 24
    assert augmented["candidates"] == (augmented["emitted"] + augmented["dropped_duplicates"]
                                       + augmented["dropped_excluded"])
    assert augmented["texts"] == augmented["duplicates"] + augmented["written"]
    counted = {origin: sum(record["origin"] == origin for record in records)
               for origin in distillation_schema.ORIGINS}
    assert stats["records_by_origin"] == counted
    assert stats["excluded"]["texts"] == 2
    teacher = stats["teacher"]
    agreeing = sum(int(np.argmax(record["teacher_logits"])) == record["label"]
                   for record in records if record["origin"] == "labelled")
    assert teacher["labelled_texts_agreeing"] == agreeing
    assert teacher["agreement_with_gold_labels"] == agreeing / 6
    assert sum(teacher["predicted_classes"]["augmented"].values()) == augmented["written"]
    assert teacher["labels"] == LABELS and stats["shards"]["num_shards"] == 2


def without_paths(stats, output_dir):
    """The stats without the Beam arguments and with `output_dir` as DIR."""
    stats = json.loads(json.dumps(stats).replace(str(output_dir), "DIR"))
    stats["parameters"].pop("beam_arguments")
    return stats


def test_the_same_bytes_on_two_dask_worker_processes(job_run, inputs, teacher_export, tmp_path,
                                                     dask_scheduler):
    stats, baseline, _ = job_run
    output_dir = tmp_path / "dask"
    runner_stats = distillation_data.main(job_arguments(
        inputs, teacher_export, output_dir, *dask_arguments(dask_scheduler)))
    shards = sorted(path.name for path in baseline.glob("train-*"))
    assert shards == ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    for name in shards:
        assert (output_dir / name).read_bytes() == (baseline / name).read_bytes(), name
    assert without_paths(runner_stats, output_dir) == without_paths(stats, baseline)


def test_the_export_records_its_labels_and_logits(teacher_export):
    teacher = describe_teacher_export(str(teacher_export))
    assert teacher.path == str(teacher_export / "1")
    assert (teacher.num_classes, teacher.labels) == (2, tuple(LABELS))


@pytest.mark.parametrize("extra, message", [
    (["--labels=positive,negative"], "differs from the labels"),
    (["--labels=a,b,c"], "differs from the labels"),
    (["--swap=part_of_speech"], "go together"),
    (["--mask_probability=0.7", "--swap_probability=0.7"], "at most 1"),
    (["--text_column=text"], "no column 'text'"),
])
def test_mistakes_are_one_usage_error_before_the_job(extra, message, inputs, teacher_export,
                                                     tmp_path, capsys):
    from tfnlp.command_line import run_main

    with pytest.raises(SystemExit) as exit_info:
        run_main(distillation_data.main,
                 job_arguments(inputs, teacher_export, tmp_path / "out", *extra))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and message in error, error
    assert not (tmp_path / "out" / "stats.json").exists()


def test_a_folder_without_a_saved_model_is_refused(inputs, tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no SavedModel"):
        distillation_data.main(job_arguments(inputs, tmp_path, tmp_path / "out"))


# ---------------------------------------------------------------------------
# The composite transforms on beam.Create input


def test_labelled_texts_keep_the_first_label_and_drop_excluded_rows():
    texts, counts = transfer_set.prepare_labelled_texts(
        [("b  a", "y"), ("dev", "x"), ("b a", "x"), ("c", "x")], ["x", "y"], {"dev"})
    assert texts == [("b a", 1), ("c", 0)]
    assert counts == {"labelled_examples": 4, "labelled_excluded": 1, "labelled_repeated": 1,
                      "labelled_conflicting_labels": 1}
    with pytest.raises(ValueError, match="not one of the teacher's labels"):
        transfer_set.prepare_labelled_texts([("a", "z")], ["x", "y"], set())


def test_select_keeps_one_text_each_labelled_first():
    with beam.Pipeline() as pipeline:
        selected, counts = {
            "labelled": pipeline | "Labelled" >> beam.Create([("a b", 1), ("c", 0)]),
            "augmented": pipeline | "Augmented" >> beam.Create(["a b", "d", "d", "e"]),
            "unlabelled": pipeline | "Unlabelled" >> beam.Create(["e", "c", "f"]),
        } | transfer_set.SelectTransferTexts()
        assert_that(selected, equal_to([
            (transfer_set.text_key(text), origin, text, label) for origin, text, label in (
                ("labelled", "a b", 1), ("labelled", "c", 0), ("augmented", "d", -1),
                ("augmented", "e", -1), ("unlabelled", "f", -1))]), label="Selected")
        assert_that(counts, equal_to([{
            "labelled_texts": 2, "labelled_selected": 2, "labelled_duplicates": 0,
            "augmented_texts": 4, "augmented_selected": 2, "augmented_duplicates": 2,
            "unlabelled_texts": 3, "unlabelled_selected": 1, "unlabelled_duplicates": 2}]),
            label="Counts")


def test_augmentation_and_exclusion_transforms_count_what_they_drop():
    augmenter = TransferSetAugmenter.from_sentences(
        [text.split() for text, _ in LABELLED_ROWS], samples_per_sentence=5, seed=3,
        mask_probability=0.3, swap_probability=0.3, excluded_sentences=DEV_TEXTS)
    reference = TransferSetAugmenter.from_sentences(
        [text.split() for text, _ in LABELLED_ROWS], samples_per_sentence=5, seed=3,
        mask_probability=0.3, swap_probability=0.3, excluded_sentences=DEV_TEXTS)
    sources = ["a good film", "the plot was dull", "not a sad story"]
    expected = [" ".join(words) for text in sources for words in reference.augment(text.split())]
    with beam.Pipeline() as pipeline:
        augmented, counts = (pipeline | "Texts" >> beam.Create(sources)
                             | transfer_set.AugmentTexts(augmenter))
        assert_that(augmented, equal_to(expected), label="Augmented")
        statistics = reference.statistics
        assert_that(counts, equal_to([{
            "augmentation_sentences": 3, "augmentation_candidates": 15,
            "augmentation_emitted": len(expected),
            "augmentation_dropped_duplicates": statistics.dropped_duplicates,
            "augmentation_dropped_excluded": statistics.dropped_excluded}]), label="Counts")
        kept, excluded_counts = (pipeline | "Lines" >> beam.Create([" x  y", "dev  text", "z"])
                                 | transfer_set.DropExcludedTexts({"dev text"}, "unlabelled"))
        assert_that(kept, equal_to(["x y", "z"]), label="Kept")
        assert_that(excluded_counts, equal_to([{"unlabelled_excluded": 1}]),
                    label="ExcludedCounts")


def hashed_logits(text):
    """A plain-Python teacher's logits: a function of the text alone."""
    digest = hashlib.sha256(text.encode()).digest()
    return [digest[0] / 10, digest[1] / 10, digest[2] / 10]


class HashTeacher(ModelHandler):
    """A teacher without TensorFlow: one call per batch of texts."""

    def load_model(self):
        return hashed_logits

    def run_inference(self, batch, model, inference_args=None):
        return [PredictionResult(texts, [model(text) for text in texts]) for texts in batch]


def test_each_record_holds_its_own_texts_logits_label_and_origin():
    rows = [(transfer_set.text_key(f"text {index}"), origin, f"text {index}", label)
            for index, (origin, label) in enumerate(
                [("labelled", 0), ("labelled", 2), ("augmented", -1), ("unlabelled", -1)] * 4)]

    def parsed(record):
        features = example_proto.Example.FromString(record).features.feature
        return (features["text"].bytes_list.value[0].decode(),
                tuple(features["teacher_logits"].float_list.value),
                features["label"].int64_list.value[0],
                features["origin"].bytes_list.value[0].decode())

    expected = [(text, tuple(np.float32(hashed_logits(text)).tolist()), label, origin)
                for _, origin, text, label in rows]
    labelled = [(text, label) for text, _, label, origin in expected if origin == "labelled"]
    agreeing = sum(int(np.argmax(hashed_logits(text))) == label for text, label in labelled)
    with beam.Pipeline() as pipeline:
        records, counts = (pipeline | beam.Create(rows)
                           | LabelTransferSet(HashTeacher(), num_classes=3, batch_size=3))
        assert_that(records | beam.Map(parsed), equal_to(expected), label="Records")
        assert_that(counts | beam.Map(lambda counts: (
            counts["labelled_written"], counts["augmented_written"],
            counts["unlabelled_written"], counts["labelled_teacher_agrees"],
            sum(counts[f"augmented_teacher_class_{index}"] for index in range(3)))),
            equal_to([(8, 4, 4, agreeing, 4)]), label="Counts")


def batch_rows(count):
    words = ["a", "good", "film", "the", "plot"]
    return [(transfer_set.text_key(text), "augmented", text, -1) for text in (
        " ".join(words[(index + position) % 5] for position in range(1 + index % 3)) + f" {index}"
        for index in range(count))]


def test_teacher_batches_are_the_same_whatever_the_input_order_and_bundles():
    rows = batch_rows(40)

    def same_batches_in_both(tags_of_batches):
        assert tags_of_batches and all(tags == ["first", "second"]
                                       for tags in tags_of_batches), tags_of_batches

    def well_formed(batches):
        texts = [text for _, batch in batches for text in batch]
        assert sorted(texts) == sorted(text for _, _, text, _ in rows)
        for row_keys, texts_of_batch in batches:
            assert 1 <= len(texts_of_batch) <= 3
            assert len({len(text.split()) for text in texts_of_batch}) == 1
            keys = [key for key, _, _ in row_keys]
            assert keys == sorted(keys) == [transfer_set.text_key(text)
                                            for text in texts_of_batch]

    with beam.Pipeline() as pipeline:
        first = (pipeline | "First" >> beam.Create(rows)
                 | "BatchFirst" >> TeacherBatches(batch_size=3))
        second = (pipeline | "Second" >> beam.Create(rows[::-1])
                  | beam.Reshuffle(num_buckets=7) | "BatchSecond" >> TeacherBatches(batch_size=3))
        tags = ((first | "TagFirst" >> beam.Map(lambda batch: (batch, "first")),
                 second | "TagSecond" >> beam.Map(lambda batch: (batch, "second")))
                | beam.Flatten() | beam.GroupByKey()
                | beam.MapTuple(lambda batch, tags: sorted(tags)))
        assert_that(tags, same_batches_in_both, label="Same")
        assert_that(first, well_formed, label="WellFormed")


def test_the_handler_calls_the_export_once_per_batch(teacher_export):
    handler = TeacherModelHandler(str(teacher_export / "1"))
    model = handler.load_model()
    batches = [("a good film", "the plot", "fun"), ("a",)]
    results = handler.run_inference(batches, model)
    assert [result.example for result in results] == batches
    for result, texts in zip(results, batches):
        np.testing.assert_array_equal(result.inference, export_logits(teacher_export, texts))


def test_stats_refuse_texts_that_do_not_add_up():
    report = {"path": "train.tsv", "rows": 3, "kept": 3, "skipped": {}}
    counts = {"labelled_examples": 3, "labelled_texts": 3, "labelled_selected": 3,
              "labelled_written": 2}
    with pytest.raises(RuntimeError, match="labelled texts are unaccounted for"):
        distillation_data.stats_from_counts(
            counts, {}, report, {}, LABELS, {}, None, {})


def test_a_teacher_with_the_wrong_number_of_classes_is_a_users_error():
    rows = [(transfer_set.text_key("a good film"), "labelled", "a good film", 0)]
    with pytest.raises(Exception) as raised:
        with beam.Pipeline() as pipeline:
            _ = pipeline | beam.Create(rows) | LabelTransferSet(
                HashTeacher(), num_classes=2, batch_size=3)
    assert user_error_message(raised.value).startswith(
        "The teacher gave logits of shape (3,) for 'a good film'; expected (2,), one per label.")

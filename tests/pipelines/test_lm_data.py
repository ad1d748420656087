"""Tests of the language-model data job, `pipelines.lm_data`, and of its
composite transforms on `beam.Create` input: splitting, tokenizing and
packing (`lm_data`, `lm_packing`), and the stats (`lm_data.stats_from_counts`).

The references are built here, independently: the stream of a bucket is
the documents' ids sorted by the SHA-256 of their text, each followed by
the end-of-document id, cut every `L` ids into windows of `L + 1`.
"""

import collections
import functools
import hashlib
import json
import math
import re
import subprocess
import sys

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines import lm_data, lm_packing
from tests.conftest import REPOSITORY
from tests.text.language_model_tokenizers import TEXT, character_spec
from tfnlp.data import example_proto
from tfnlp.text import plain_character_tokenizer as plain

EOD = plain.END_OF_DOCUMENT_ID


def sha256(text):
    return hashlib.sha256(text.encode()).digest()


def parse(record):
    features = example_proto.Example.FromString(record).features.feature
    return (tuple(features["token_ids"].int64_list.value),
            features["character_count"].int64_list.value[0])


def read_records(output_dir, split="train"):
    """Every record of a split's shards, `(ids, characters)`, read without
    TensorFlow (the TFRecord framing: length, its CRC, data, its CRC)."""
    records = []
    for path in sorted(output_dir.glob(f"{split}-*-of-*.tfrecord")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            length = int.from_bytes(data[offset:offset + 8], "little")
            records.append(parse(data[offset + 12:offset + 12 + length]))
            offset += 12 + length + 4
    return records


def expected_windows(documents, length):
    """The windows of one stream: `documents` is `[(key, ids)]`, ids with
    their end-of-document id; returns the windows and the dropped tail."""
    stream = [index for _, ids in sorted(documents) for index in ids]
    records = (len(stream) - 1) // length if len(stream) > length else 0
    windows = [tuple(stream[r * length:r * length + length + 1]) for r in range(records)]
    return windows, len(stream) - (records * length + 1 if records else 0)


# ---- pack_stream and PackLanguageModelRecords ----

@pytest.mark.parametrize("tokens", [0, 1, 4, 5, 6, 8, 9, 10, 13])
def test_pack_stream_cuts_overlapping_windows_and_drops_the_tail(tokens):
    length = 4
    ids = np.arange(100, 100 + tokens)
    windows, characters, tail = lm_packing.pack_stream(ids, np.arange(tokens) % 3, length)
    expected, expected_tail = expected_windows([(b"", list(ids))], length)
    assert [tuple(window) for window in windows] == expected
    assert tail == expected_tail
    # 4: all tail; 5: one window, nothing left; 9: two windows, nothing left.
    assert len(windows) == {0: 0, 1: 0, 4: 0, 5: 1, 6: 1, 8: 1, 9: 2, 10: 2, 13: 3}[tokens]
    assert characters.tolist() == [int((np.arange(tokens) % 3)[r * 4 + 1:r * 4 + 5].sum())
                                   for r in range(len(windows))]
    assert tokens == len(windows) * length + (len(windows) > 0) + tail


def keyed_documents(count, seed=0, eod=EOD):
    """`count` documents of 1 to 30 ids, keyed by hashes; the ids rise along
    the key order (so the stream's order can be read off the ids) and never
    equal the end-of-document id."""
    rng = np.random.default_rng(seed)
    keys = sorted(sha256(f"{seed}-{index}") for index in range(count))
    documents = []
    for rank, key in enumerate(keys):
        ids = [1000 * (rank + 1) + position for position in range(rng.integers(1, 31))]
        documents.append((key, (np.array(ids + [eod], np.int32),
                                np.ones(len(ids) + 1, np.int32))))
    rng.shuffle(documents)
    return documents


# What `collected` matchers saw, by name: the in-process runner pickles a
# matcher, and a module-level function is pickled by reference, so this
# dict is the test's own.
COLLECTED = {}


def store(values, name):
    COLLECTED[name] = sorted(values)


def collected(name):
    """An `assert_that` matcher that keeps the values (sorted) under `name`."""
    COLLECTED.pop(name, None)
    return functools.partial(store, name=name)


def run_packing(documents, length, bucket_tokens):
    """The records and counts of `PackLanguageModelRecords` on `documents`."""
    with beam.Pipeline() as pipeline:
        records, counts = (pipeline | beam.Create(documents)
                           | lm_packing.PackLanguageModelRecords(length, bucket_tokens, "train"))
        assert_that(records | beam.Map(parse), collected("records"), label="Records")
        assert_that(counts | beam.Map(lambda c: sorted(c.items())), collected("counts"),
                    label="Counts")
    return COLLECTED["records"], dict(COLLECTED["counts"][0])


def test_packing_neither_drops_nor_duplicates_a_token():
    documents = keyed_documents(40)
    length = 16
    records, counts = run_packing(documents, length, bucket_tokens=10**6)
    # One bucket: the stream is every document in key order. Its ids rise
    # (end-of-document ids aside), so the records' order is their largest id's.
    records.sort(key=lambda record: max(record[0]))
    predicted = [index for ids, _ in records for index in ids[1:]]
    stream = [int(index) for _, (ids, _) in sorted(documents, key=lambda d: d[0])
              for index in ids]
    tail = counts["train_dropped_tail_tokens"]
    assert predicted == stream[1:len(stream) - tail]
    assert 0 <= tail < length + 1 and len(records) > 20
    assert [ids[0] for ids, _ in records[1:]] == [ids[-1] for ids, _ in records[:-1]]
    assert all(characters == length for _, characters in records)
    assert counts["train_records"] == len(records)
    assert counts["train_packed_tokens"] == len(stream)


def test_buckets_are_streams_of_their_documents():
    documents = keyed_documents(60, seed=1)
    length, bucket_tokens = 8, 150
    records, counts = run_packing(documents, length, bucket_tokens)
    total = sum(len(ids) for _, (ids, _) in documents)
    buckets = math.ceil(total / bucket_tokens)
    assert buckets > 3
    by_bucket = collections.defaultdict(list)
    for key, (ids, _) in documents:
        by_bucket[int.from_bytes(key[:8], "big") % buckets].append((key, ids.tolist()))
    windows, tails = [], 0
    for bucket_documents in by_bucket.values():
        bucket_windows, tail = expected_windows(bucket_documents, length)
        windows += bucket_windows
        tails += tail
    assert sorted(ids for ids, _ in records) == sorted(windows)
    assert counts["train_buckets"] == len(by_bucket)
    assert counts["train_dropped_tail_tokens"] == tails
    assert total == (len(records) * length + counts["train_unpredicted_first_tokens"]
                     + counts["train_dropped_tail_tokens"])


def test_a_bucket_must_hold_a_record():
    with pytest.raises(ValueError, match="cannot hold one record"):
        lm_packing.PackLanguageModelRecords(8, 8, "train")
    lm_packing.PackLanguageModelRecords(8, 9, "train")  # The smallest accepted.


# ---- SplitDocuments and TokenizeLanguageModelDocuments ----

def split(texts, fraction):
    with beam.Pipeline() as pipeline:
        train, validation = (pipeline | beam.Create(texts)
                             | lm_data.SplitDocuments(fraction))
        for name, documents in (("train", train), ("validation", validation)):
            assert_that(documents | f"Texts{name}" >> beam.Values(), collected(name),
                        label=f"Keep{name}")
    return COLLECTED["train"], COLLECTED["validation"]


def test_the_validation_split_is_deterministic_and_disjoint():
    texts = [f"document {index}\nline two" for index in range(2000)]
    texts += texts[:50]  # duplicates
    train, validation = split(texts, 0.2)
    assert sorted(train + validation) == sorted(texts)
    assert not set(train) & set(validation)  # Duplicates fall on one side.
    assert split(list(reversed(texts)), 0.2) == (train, validation)
    # The key's bytes 8-15 against the fraction, computed here.
    expected = sorted(text for text in texts
                      if int.from_bytes(sha256(text)[8:16], "big") < 0.2 * 2**64)
    assert validation == expected
    assert 0.17 < len(validation) / len(texts) < 0.23
    assert split(texts, 0.0) == (sorted(texts), [])


def test_a_document_is_held_out_only_strictly_below_the_fraction():
    def key(value):  # bytes 8-15 hold the value compared with the fraction
        return bytes(8) + value.to_bytes(8, "big") + bytes(16)

    assert lm_data.is_validation(key(2**62 - 1), 0.25)
    assert not lm_data.is_validation(key(2**62), 0.25)
    # 0: none held out, not even the smallest key.
    assert not lm_data.is_validation(key(0), 0.0)
    assert lm_data.is_validation(key(0), 1e-9)


def test_tokenizing_counts_documents_tokens_characters_and_unknowns():
    spec = character_spec("abc\n")
    texts = ["abc\nab", "xa", "c"]
    with beam.Pipeline() as pipeline:
        tokenized, counts = (
            pipeline | beam.Create([lm_data.keyed(text) for text in texts])
            | lm_data.TokenizeLanguageModelDocuments(
                pipeline | "Spec" >> beam.Create([spec]), "validation"))
        assert_that(tokenized | beam.Map(lambda d: (d[1][0].tolist(), d[1][1].tolist())),
                    equal_to([([4, 5, 6, 3, 4, 5, EOD], [1] * 7), ([1, 4, EOD], [1] * 3),
                              ([6, EOD], [1, 1])]), label="Ids")
        assert_that(counts, equal_to([{
            "validation_documents": 3, "validation_documents_skipped_empty": 0,
            "validation_tokens": 12, "validation_end_of_document_tokens": 3,
            "validation_characters": 12, "validation_unknown_tokens": 1}]), label="Counts")


# ---- The job ----

def run_job(output_dir, *arguments):
    return lm_data.main([f"--output_dir={output_dir}", *arguments])


def shakespeare_files(folder, text=TEXT * 4):
    """The text's first 90% of lines to train.txt, the rest to val.txt."""
    lines = text.splitlines(keepends=True)
    cut = int(len(lines) * 0.9)
    (folder / "train.txt").write_text("".join(lines[:cut]))
    (folder / "val.txt").write_text("".join(lines[cut:]))
    return folder / "train.txt", folder / "val.txt"


def test_one_stream_per_file_holds_every_character(tmp_path):
    train, validation = shakespeare_files(tmp_path)
    length = 16
    stats = run_job(tmp_path / "out", f"--input_file={train}", f"--validation_file={validation}",
                    "--document_boundary=file", f"--sequence_length={length}")
    text = train.read_text()
    vocabulary = plain.parse_character_vocabulary((tmp_path / "out/characters.txt").read_bytes())
    assert vocabulary == plain.character_vocabulary(collections.Counter(text))
    ids = plain.PlainCharacterTokenizer(vocabulary).tokenize(text) + [EOD]
    windows, tail = expected_windows([(b"", ids)], length)
    records = read_records(tmp_path / "out")
    assert collections.Counter(ids for ids, _ in records) == collections.Counter(windows)
    assert all(characters == length for _, characters in records)
    assert stats["train"]["records"] == len(records) == (len(ids) - 1) // length
    assert stats["train"]["dropped_tail_tokens"] == tail
    assert stats["train"]["tokens"] == stats["train"]["characters"] == len(text) + 1
    assert stats["lines"]["input_file"]["read"] == text.count("\n")
    assert stats["validation"]["documents"] == 1 and read_records(tmp_path / "out",
                                                                  "validation")
    descriptor = json.loads((tmp_path / "out/tokenizer.json").read_text())
    assert descriptor["sha256"] == hashlib.sha256(
        (tmp_path / "out/characters.txt").read_bytes()).hexdigest()


def test_stats_account_for_every_line_and_token(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"First doc\n  indented\n\n\nsecond caf\xc3\n" + b"x" * 50 + b"\n\n"
                       + b"\n".join(f"doc {index} line".encode() for index in range(40))
                       + b"\n\n" + b"\n\n".join(f"short {i}".encode() for i in range(30)))
    stats = run_job(tmp_path / "out", f"--input_file={corpus}", "--max_line_bytes=40",
                    "--validation_fraction=0.3", "--sequence_length=8",
                    "--packing_bucket_tokens=100", "--num_shards=2")
    lines = stats["lines"]["input_file"]
    assert lines["read"] == corpus.read_bytes().count(b"\n") + 1
    assert lines["read"] == lines["used"] + sum(lines["skipped"].values())
    assert lines["skipped"]["too_long"] == 1 and lines["repaired"]["invalid_utf8"] == 1
    documents = stats["documents"]
    assert documents["read"] == 33 == documents["train"] + documents["validation"]
    assert documents["validation"] > 3
    for name in ("train", "validation"):
        split_stats = stats[name]
        assert split_stats["tokens"] == (split_stats["records"] * 8
                                         + split_stats["unpredicted_first_tokens"]
                                         + split_stats["dropped_tail_tokens"])
        assert split_stats["end_of_document_tokens"] == split_stats["documents"]
        assert split_stats["records"] == len(read_records(tmp_path / "out", name))
    assert stats["train"]["buckets"] > 2
    assert json.loads((tmp_path / "out/stats.json").read_text()) == stats


def test_stats_refuse_tokens_that_do_not_add_up():
    counts = {"train_tokens": 19, "train_packed_tokens": 19, "train_records": 2,
              "train_unpredicted_first_tokens": 1, "train_dropped_tail_tokens": 2}
    assert lm_data.split_statistics(counts, "train", 8)["records"] == 2
    for name, value in (("train_dropped_tail_tokens", 3), ("train_packed_tokens", 20),
                        ("train_unpredicted_first_tokens", 0)):
        with pytest.raises(RuntimeError, match="unaccounted"):
            lm_data.split_statistics({**counts, name: value}, "train", 8)
    with pytest.raises(RuntimeError, match="lines are unaccounted"):
        lm_data.line_statistics({"lines_read": 3, "lines_used": 1,
                                       "lines_skipped_blank": 1})


def test_the_vocabulary_is_learned_from_the_training_split_only(tmp_path):
    train, validation = tmp_path / "train.txt", tmp_path / "val.txt"
    train.write_text("to be or not to be\n")
    validation.write_text("Жить или не жить\n")
    stats = run_job(tmp_path / "out", f"--input_file={train}", f"--validation_file={validation}",
                    "--sequence_length=4")
    vocabulary = plain.parse_character_vocabulary((tmp_path / "out/characters.txt").read_bytes())
    assert vocabulary == plain.character_vocabulary(collections.Counter("to be or not to be"))
    assert stats["train"]["unknown_tokens"] == 0
    # Every Cyrillic letter is unknown; the spaces are not.
    assert stats["validation"]["unknown_tokens"] == len("Житьилинежить")
    assert stats["documents"] == {"read": 2, "skipped": {"empty": 0}, "train": 1,
                                  "validation": 1}


def test_a_given_model_is_copied_and_described(tmp_path):
    from tests.text.language_model_tokenizers import sentencepiece_spec

    model = tmp_path / "given.model"
    model.write_bytes(sentencepiece_spec().contents)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    stats = run_job(tmp_path / "out", f"--input_file={corpus}", "--tokenizer=sentencepiece",
                    f"--vocab_file={model}", "--sequence_length=8")
    assert (tmp_path / "out/sentencepiece.model").read_bytes() == model.read_bytes()
    assert stats["vocabulary"]["learned"] is False
    assert stats["vocabulary"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    documents = [document.strip("\n") for document in TEXT.split("\n\n")]
    assert stats["train"]["documents"] == len(documents) == 5
    # The documents' characters, each with its end of document.
    assert stats["train"]["characters"] == sum(len(document) + 1 for document in documents)


@pytest.mark.parametrize("arguments, message", [
    (["--validation_fraction=0.1", "--validation_file=x"], "pass one of them"),
    (["--validation_fraction=1"], "must be in \\[0, 1\\)"),
    (["--tokenizer=wordpiece"], "needs --vocab_file"),
    (["--tokenizer=character", "--vocab_file=x"], "leave out --vocab_file"),
    (["--sequence_length=8", "--packing_bucket_tokens=8"], "cannot hold one record"),
    (["--input_format=jsonl", "--document_boundary=file"], "for text input"),
    (["--sequence_length=0"], "--sequence_length must be at least 1"),
])
def test_inconsistent_flags_are_one_usage_error(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        lm_data.main(["--input_file=x", "--output_dir=y", *arguments])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert re.search(message, error)


def test_the_job_never_loads_tensorflow(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    code = (
        "import sys\n"
        "from pipelines import lm_data\n"
        f"lm_data.main(['--input_file={corpus}', '--output_dir={tmp_path / 'out'}',"
        " '--tokenizer=sentencepiece', '--vocab_size=400', '--sequence_length=8',"
        " '--validation_fraction=0.2'])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorflow', 'keras', 'tensorflow_text'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, check=True,
                   capture_output=True)
    assert (tmp_path / "out/stats.json").exists()


def test_tiny_shakespeare_at_the_character_level(shared_data_dir, tmp_path):
    """The acceptance layout on its first 20,000 characters: the last 10% of
    the lines validate; one stream each; the in-graph tokenizer reads the
    records back as the text."""
    with open(shared_data_dir / "lm/tinyshakespeare-train.txt", encoding="utf-8") as file:
        text = file.read(20_000)
    train, validation = shakespeare_files(tmp_path, text)
    stats = run_job(tmp_path / "out", f"--input_file={train}", f"--validation_file={validation}",
                    "--document_boundary=file", "--sequence_length=64")
    train_text = train.read_text()
    assert stats["train"]["tokens"] == len(train_text) + 1
    assert stats["train"]["records"] == len(train_text) // 64
    assert stats["vocabulary"]["size"] == 3 + len(set(train_text))
    assert stats["validation"]["records"] == (len(validation.read_text())) // 64
    assert stats["lines"]["input_file"]["read"] + stats["lines"]["validation_file"]["read"] == (
        text.count("\n") + (not text.endswith("\n")))
    import tensorflow as tf

    from tfnlp.text import load_language_model_tokenizer

    tokenizer = load_language_model_tokenizer(str(tmp_path / "out"))
    records = read_records(tmp_path / "out")
    windows = [ids for ids, _ in records if EOD not in ids]
    decoded = tokenizer.detokenize(tf.constant(windows)).numpy()
    assert len(windows) >= len(records) - 1 > 250
    assert all(len(value.decode()) == 65 and value.decode() in train_text
               for value in decoded)

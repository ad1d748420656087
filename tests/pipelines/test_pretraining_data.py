"""End-to-end tests of the Beam pretraining-data job on real and bad input,
and of its composite transform, `CreatePretrainingRecords`, alone on
`beam.Create` input. `test_runners.py` runs the job on Beam's
portable runner."""

import collections
import gzip
import json
import random

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.testing.util import assert_that, equal_to

from pipelines import pretraining_data, pretraining_instances, text_input
from pipelines.beam_options import pipeline_options
from tests.text.reference_bert_tokenizer import ReferenceBertTokenizer
from tfnlp.data import pretraining_schema
from tfnlp.text.vocabulary import load_vocabulary

UNCASED = "vocab/bert-base-uncased-vocab.txt"


def gutenberg_sample(shared_data_dir, lines_per_book):
    """The first lines of each of the 16 books (16 documents)."""
    books, book = [], []
    with open(shared_data_dir / "mono/gutenberg-16-books.txt", encoding="utf-8") as file:
        for line in file:
            if line.strip():
                book.append(line)
            elif book:
                books.append(book)
                book = []
    if book:
        books.append(book)
    return "\n".join("".join(book[:lines_per_book]) for book in books)


def run_job(shared_data_dir, input_file, output_dir, *arguments):
    return pretraining_data.main([
        f"--input_file={input_file}",
        f"--vocab_file={shared_data_dir / UNCASED}",
        f"--output_dir={output_dir}",
        *arguments,
    ])


def read_records(output_dir):
    records = []
    for path in sorted(output_dir.glob("pretraining-*")):
        compression = "GZIP" if path.name.endswith(".gz") else ""
        records.extend(
            record.numpy()
            for record in tf.data.TFRecordDataset(str(path), compression_type=compression)
        )
    return records


def parse(records, max_seq_length=128, max_predictions=20):
    return pretraining_schema.parse_examples(
        tf.constant(records), max_seq_length, max_predictions
    )


@pytest.fixture(scope="module")
def gutenberg_run(shared_data_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("gutenberg") / "output"
    stats = run_job(shared_data_dir, shared_data_dir / "mono/gutenberg-16-books.txt",
                    output, "--dupe_factor=1", "--random_seed=12345", "--num_shards=2")
    return stats, output


def test_real_text_matches_the_original_distribution(gutenberg_run):
    """The original on gutenberg-16-books (uncased, seq 128, 20 predictions,
    dupe factor 1, seed 12345) gives 18,138 instances, mean length 117.7,
    mask rate 0.1485, 80.0/10.0/10.0 and NSP random share 0.542."""
    stats, _ = gutenberg_run
    # Measured: 18,325 instances (1.0% more), mean length 116.86 (0.7% less),
    # mask rate 0.1486, shares 0.7996/0.1001/0.1003 of 318,244 masked
    # positions (sampling sd 5e-4), NSP random share 0.539 (sd 0.004).
    assert stats["documents"]["used"] == 17
    assert stats["instances"] == pytest.approx(18138, rel=0.02)
    assert stats["mean_instance_length"] == pytest.approx(117.7, rel=0.01)
    assert stats["mask_rate"] == pytest.approx(0.1485, abs=0.001)
    shares = stats["replacement_shares"]
    assert shares["mask"] == pytest.approx(0.80, abs=0.003)
    assert shares["random"] == pytest.approx(0.10, abs=0.003)
    assert shares["unchanged"] == pytest.approx(0.10, abs=0.003)
    assert stats["nsp_random_share"] == pytest.approx(0.542, abs=0.01)


def test_records_have_the_original_schema_and_account_for_the_stats(gutenberg_run):
    stats, output = gutenberg_run
    records = read_records(output)
    assert len(records) == stats["instances"]
    assert len(list(output.glob("pretraining-*-of-00002.tfrecord"))) == 2
    # The temporary token files are gone.
    assert sorted(path.name for path in output.iterdir() if not path.name.startswith(
        "pretraining-")) == ["stats.json"]
    features = parse(records)
    lengths = tf.reduce_sum(features["input_mask"], axis=1).numpy()
    assert int(lengths.sum()) == stats["instance_tokens"]
    assert int(tf.reduce_sum(features["masked_lm_weights"]).numpy()) == stats["masked_positions"]
    assert int(tf.reduce_sum(features["next_sentence_labels"]).numpy()) == round(
        stats["nsp_random_share"] * stats["instances"]
    )
    assert (features["input_ids"][:, 0].numpy() == 101).all()
    on_disk = json.loads((output / "stats.json").read_text())
    assert on_disk == stats
    assert sum(stats["instance_length_histogram"].values()) == stats["instances"]


def test_same_bytes_with_one_or_two_worker_processes(shared_data_dir, tmp_path):
    corpus = tmp_path / "sample.txt"
    corpus.write_text(gutenberg_sample(shared_data_dir, 40), encoding="utf-8")
    outputs = {}
    for workers in (1, 2):
        output = tmp_path / f"workers_{workers}"
        # A small pool, so the documents spread over several buckets.
        run_job(shared_data_dir, corpus, output, "--dupe_factor=2",
                "--random_pool_tokens=5000", "--num_shards=3",
                f"--direct_num_workers={workers}",
                "--direct_running_mode=multi_processing")
        outputs[workers] = {path.name: path.read_bytes()
                            for path in sorted(output.glob("pretraining-*"))}
    assert len(outputs[1]) == 3
    assert len(read_records(tmp_path / "workers_1")) > 100
    assert outputs[1] == outputs[2]


def test_same_records_however_the_input_is_split_into_files(shared_data_dir, tmp_path):
    text = gutenberg_sample(shared_data_dir, 30)
    documents = text.split("\n\n")
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "all.txt").write_text(text, encoding="utf-8")
    split = tmp_path / "split"
    split.mkdir()
    for index, document in enumerate(documents):
        (split / f"part{index:02d}.txt").write_text(document, encoding="utf-8")
    records = {}
    for name in ("whole", "split"):
        run_job(shared_data_dir, tmp_path / name / "*.txt", tmp_path / f"out_{name}")
        records[name] = collections.Counter(read_records(tmp_path / f"out_{name}"))
    assert records["whole"] == records["split"]


def test_bad_input_is_counted_not_fatal(shared_data_dir, tmp_path):
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(
        b"A first sentence with a bad byte \xff here.\nAnd a NUL \x00 byte.\n\n"
        b"\x00\x01\n\n"  # a document with no tokens
        + b"x" * 10_000_001 + b"\n"  # a 10 MB line, skipped
        + b"Another document has words.\nIt has two sentences.\n"
    )
    (tmp_path / "empty.txt").write_bytes(b"")
    stats = run_job(shared_data_dir, f"{corpus},{tmp_path / 'empty.txt'}",
                    tmp_path / "out", "--dupe_factor=1")
    assert stats["lines"]["read"] == 8
    assert stats["lines"]["skipped"]["too_long"] == 1
    assert stats["lines"]["skipped"]["blank"] == 2
    assert stats["lines"]["repaired"] == {"invalid_utf8": 1, "nul": 2}
    assert stats["documents"]["read"] == 3
    assert stats["documents"]["used"] == 2
    assert stats["documents"]["skipped"] == {"empty": 1}
    assert stats["instances"] >= 2


def test_buckets_hold_about_the_pool_size(shared_data_dir, tmp_path):
    corpus = tmp_path / "sample.txt"
    corpus.write_text(gutenberg_sample(shared_data_dir, 40), encoding="utf-8")
    stats = run_job(shared_data_dir, corpus, tmp_path / "out", "--dupe_factor=1",
                    "--random_pool_tokens=3000")
    assert pretraining_data.bucket_of(b"\x00" * 7 + b"\x05", 9000, 3000) == 2
    assert pretraining_data.bucket_of(b"\xff" * 8, 100, 3000) == 0
    assert stats["tokens"] > 3 * 3000
    assert stats["instances"] > 0
    assert 0.3 < stats["nsp_random_share"] < 0.8


def test_a_glob_matching_nothing_is_an_error_before_the_job(shared_data_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing_here"):
        run_job(shared_data_dir, tmp_path / "nothing_here*.txt", tmp_path / "out")


def test_jsonl_documents_are_split_into_sentences(shared_data_dir, tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        json.dumps({"id": "a", "text": "The cat sat. It was happy! Was it? Yes."}) + "\n"
        + json.dumps({"text": "Dr. Who arrived.\nThen he left."}) + "\n"
        + "{not json\n" + json.dumps({"title": "no text"}) + "\n",
        encoding="utf-8",
    )
    stats = run_job(shared_data_dir, corpus, tmp_path / "out", "--input_format=jsonl",
                    "--dupe_factor=1")
    assert stats["documents"]["read"] == 2
    assert stats["lines"]["skipped"]["bad_json"] == 1
    assert stats["lines"]["skipped"]["missing_text"] == 1
    assert stats["sentences"] == 7
    assert text_input.split_sentences("The cat sat. It was happy! Was it? Yes.") == [
        "The cat sat.", "It was happy!", "Was it?", "Yes."
    ]


def test_dynamic_masking_writes_unmasked_gzip_records(shared_data_dir, tmp_path):
    corpus = tmp_path / "sample.txt"
    corpus.write_text(gutenberg_sample(shared_data_dir, 20), encoding="utf-8")
    output = tmp_path / "out"
    stats = run_job(shared_data_dir, corpus, output, "--dynamic_masking", "--gzip",
                    "--dupe_factor=1", "--do_whole_word_mask=true")
    paths = list(output.glob("pretraining-*.tfrecord.gz"))
    assert paths
    for path in paths:
        assert path.read_bytes()[:2] == b"\x1f\x8b", f"{path} is not gzip"
        assert len(gzip.decompress(path.read_bytes())) > 0
    records = read_records(output)
    assert len(records) == stats["instances"] > 0
    features = parse(records)
    assert stats["masked_positions"] == 0
    assert float(tf.reduce_sum(features["masked_lm_weights"])) == 0.0
    assert not (features["input_ids"].numpy() == 103).any()


def test_original_flag_spellings_are_accepted():
    flags, beam_arguments = pretraining_data.parse_arguments([
        "--input_file=a.txt", "--vocab_file=v.txt", "--output_dir=out",
        "--do_lower_case=False", "--do_whole_word_mask", "--nogzip",
        "--runner=DirectRunner",
    ])
    assert flags.do_lower_case is False and flags.do_whole_word_mask is True
    assert flags.gzip is False
    assert beam_arguments == ["--runner=DirectRunner"]


def test_the_shuffle_buffer_reorders_without_losing_records():
    records = list(range(1000))
    first = list(pretraining_data.shuffled(iter(records), random.Random(1), buffer_size=64))
    second = list(pretraining_data.shuffled(iter(records), random.Random(1), buffer_size=64))
    assert sorted(first) == records
    assert first == second
    assert first != records
    # Bounded: a record leaves the buffer no earlier than 64 places before
    # its input position.
    assert all(position >= record - 64 for position, record in enumerate(first))


def test_create_pretraining_records_transform_on_created_documents(shared_data_dir, tmp_path):
    """The composite transform alone, on `beam.Create` documents: with one
    bucket (a pool larger than the corpus) its records are those of the
    original algorithm run document by document on the original tokenizer's
    ids, each document and dupe pass seeded by `document_seed`, the
    documents in the order of their content keys."""
    text = gutenberg_sample(shared_data_dir, 12)
    documents = [block.splitlines() for block in text.split("\n\n")]
    documents.append(["\x00", " "])  # no tokens: counted, not used
    vocab_file = shared_data_dir / UNCASED
    config = pretraining_instances.config_from_vocabulary(
        load_vocabulary(vocab_file), max_seq_length=64, max_predictions_per_seq=10
    )
    reference = ReferenceBertTokenizer(vocab_file, lower_case=True)
    tokenized = []
    for document in documents:
        sentences = [ids for ids in map(reference.tokenize_to_ids, document) if ids]
        if sentences:
            tokenized.append(sentences)
    keys = [pretraining_instances.document_key(document) for document in tokenized]
    order = sorted(range(len(tokenized)), key=lambda index: keys[index])
    corpus = [tokenized[index] for index in order]
    expected = []
    for dupe_index in range(2):
        for position, index in enumerate(order):
            rng = random.Random(pretraining_instances.document_seed(7, keys[index], dupe_index))
            for instance in pretraining_instances.create_instances_from_document(
                corpus, position, rng, config
            ):
                expected.append(pretraining_schema.serialize_instance(
                    instance.input_ids, instance.segment_ids,
                    instance.masked_lm_positions, instance.masked_lm_ids,
                    instance.is_random_next, 64, 10,
                ))
    assert len(expected) > 100

    def check_counts(results):
        # Dicts of counts, one per bundle of each step: summed by the job.
        counts = collections.Counter()
        for bundle_counts in results:
            counts.update(bundle_counts)
        assert counts["documents_used"] == len(tokenized) == len(documents) - 1
        assert counts["documents_skipped_empty"] == 1
        assert counts["tokens"] == sum(len(ids) for doc in tokenized for ids in doc)
        assert counts["instances"] == len(expected)

    token_directory = tmp_path / "tokens"
    token_directory.mkdir()
    pipeline = beam.Pipeline(options=pipeline_options([]))
    records, counts = (
        pipeline
        | beam.Create(documents)
        | pretraining_data.CreatePretrainingRecords(
            vocab_file=str(vocab_file), lower_case=True, config=config,
            dupe_factor=2, random_seed=7, random_pool_tokens=10**9,
            token_directory=str(token_directory),
        )
    )
    assert_that(records, equal_to(expected), label="CheckRecords")
    assert_that(counts, check_counts, label="CheckCounts")
    pipeline.run().wait_until_finish()

"""BERT pretraining data (masked LM + next sentence) with Apache Beam.

    python -m pipelines.pretraining_data \\
      --input_file=GLOB[,GLOB...] --vocab_file=vocab.txt --output_dir=DIR \\
      [--do_lower_case=true] [--max_seq_length=128] [--max_predictions_per_seq=20] \\
      [--masked_lm_prob=0.15] [--short_seq_prob=0.1] [--dupe_factor=10] \\
      [--random_seed=12345] [--do_whole_word_mask] [--num_shards=N] [--gzip] \\
      [--dynamic_masking] [--input_format=text|jsonl] [--random_pool_tokens=2000000] \\
      [Beam options: --runner, --direct_num_workers, --direct_running_mode, ...]

The flags are those of google-research/bert's `create_pretraining_data.py`
(booleans also as `--flag`, `--flag=false` or `--noflag`), plus
`--output_dir` for sharded output. It writes

- `DIR/pretraining-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with `--gzip`):
  `tf.train.Example`s in the schema of `tfnlp.data.pretraining_schema`,
  which is what the original `run_pretraining.py` parses;
- `DIR/stats.json`: every parameter and the seed; lines and documents read,
  used and skipped by reason; sentences, instances, tokens, the mean and a
  histogram of instance lengths, truncations, the mask rate, the shares of
  [MASK] / random / unchanged replacements, the NSP random share and the
  [UNK] share. The same counts are Beam metrics (namespace "tfnlp").

Input: `text` is the original format, one sentence per line and a blank
line between documents; `jsonl` is one document per line with a "text"
field, split into sentences at line breaks and after ".", "!", "?" or "…"
(optionally followed by closing quotes or brackets) that are followed by
whitespace and an upper-case letter, a digit or an opening quote.

Bad input never stops the job and is never lost silently: undecodable bytes
are replaced and then dropped by the tokenizer (as the original's
`errors="ignore"` decoding), NUL bytes are dropped, lines longer than
`--max_line_bytes` (1 MB) are skipped, documents with no tokens are
skipped, and every case is counted with its reason in the stats. A glob
that matches no file is an error before the job starts.

How it scales: files are read in parallel (each text file by one worker,
since documents span lines) and tokenized by `tfnlp.text.PlainBertTokenizer`
(the ids of the in-graph `BertTokenizer`, in plain Python with a word
cache, so no worker loads TensorFlow's 650 MB), and documents, as compact
bytes, are spread over buckets by a hash of their content. The original draws a "random next" segment from
any document of the whole corpus, which needs the corpus in memory; here
it comes from the other documents of the same bucket, which hold about
`--random_pool_tokens` tokens (2 million: a few thousand typical documents),
so one worker holds one bucket, never the corpus. The trade-off: random
segments come from a random sample of the corpus rather than from all of
it, which changes nothing in the distribution of instances as long as the
pool is large next to one document. A corpus smaller than the pool is one
bucket, as in the original. Records leave a bucket through a shuffle buffer
of 10,000 and stream to the files; with `--num_shards` Beam groups them by
shard first, which the local runner holds in memory.

Determinism: each document and dupe pass gets its own random generator,
seeded from a hash of `--random_seed`, the document's content and the pass
(`pipelines.pretraining_instances.document_seed`), and a bucket's documents
are taken in the order of their content hash. So the same inputs and seed
give the same multiset of records whatever the runner, the number of
workers, or how the input is split into files.
"""

import argparse
import json
import logging
import math
import os
import random
import re
import time
import uuid

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from pipelines import pretraining_instances, text_input, token_store
from pipelines.beam_options import pipeline_options
from tfnlp.command_line import add_boolean_flag
from tfnlp.data import pretraining_schema
from tfnlp.text.plain_bert_tokenizer import PlainBertTokenizer
from tfnlp.text.vocabulary import load_vocabulary

LOGGER = logging.getLogger(__name__)
NAMESPACE = text_input.METRICS_NAMESPACE
COUNTS_TAG = "counts"
LENGTH_BIN = 16
SHUFFLE_BUFFER_RECORDS = 10_000
SENTENCE_BOUNDARY = re.compile(
    r"\n+|(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])"
)


def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.pretraining_data",
        description="BERT masked-LM and next-sentence pretraining TFRecords, with Beam.",
        allow_abbrev=False,
    )
    parser.add_argument("--input_file", required=True,
                        help="Comma-separated globs of the input files.")
    parser.add_argument("--vocab_file", required=True,
                        help="The WordPiece vocabulary (one token per line).")
    parser.add_argument("--output_dir", required=True,
                        help="Where the TFRecord shards and stats.json go.")
    add_boolean_flag(parser, "do_lower_case", True,
                 "Lower-case and strip accents (uncased vocabularies).")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--dupe_factor", type=int, default=10,
                        help="How many times each document is used, masked anew.")
    parser.add_argument("--random_seed", type=int, default=12345)
    add_boolean_flag(parser, "do_whole_word_mask", False,
                 "Mask whole words (every piece of a word) at once.")
    parser.add_argument("--num_shards", type=int, default=0,
                        help="Number of output files (0: the runner decides).")
    add_boolean_flag(parser, "gzip", False, "Write gzip-compressed TFRecords.")
    add_boolean_flag(parser, "dynamic_masking", False,
                 "Write unmasked sequences; tfnlp.data's reader masks them anew "
                 "each epoch.")
    parser.add_argument("--input_format", choices=text_input.INPUT_FORMATS,
                        default="text")
    parser.add_argument("--random_pool_tokens", type=int, default=2_000_000,
                        help="About how many tokens a bucket of documents holds; "
                        "random next segments come from the same bucket.")
    parser.add_argument("--max_line_bytes", type=int, default=1_000_000,
                        help="Longer lines are skipped (and counted).")
    flags, beam_arguments = parser.parse_known_args(argv)
    problems = []
    if flags.max_seq_length < 5:
        problems.append("--max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP]).")
    if not 0 < flags.masked_lm_prob < 1:
        problems.append("--masked_lm_prob must be between 0 and 1.")
    if not 0 <= flags.short_seq_prob <= 1:
        problems.append("--short_seq_prob must be between 0 and 1.")
    for name in ("max_predictions_per_seq", "dupe_factor", "random_pool_tokens",
                 "max_line_bytes"):
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1.")
    if flags.num_shards < 0:
        problems.append("--num_shards must be 0 (automatic) or more.")
    if problems:
        parser.error(" ".join(problems))
    return flags, beam_arguments


def split_sentences(text):
    """Sentences of a jsonl document (see the module docstring)."""
    return [sentence.strip() for sentence in SENTENCE_BOUNDARY.split(text)
            if sentence.strip()]


class ReadDocuments(beam.DoFn):
    """Reads one text file into documents (lists of sentence strings).

    Counts lines (read, used, skipped as blank or too long, repaired) and
    documents read, in a dict emitted once per bundle under `COUNTS_TAG`.
    """

    def __init__(self, max_line_bytes):
        self._max_line_bytes = max_line_bytes

    def start_bundle(self):
        self._counts = {}

    def _count(self, name, value=1):
        self._counts[name] = self._counts.get(name, 0) + value

    def process(self, readable_file):
        document = []
        with readable_file.open() as file:
            while raw := file.readline():
                self._count("lines_read")
                raw = raw.rstrip(b"\r\n")
                if len(raw) > self._max_line_bytes:
                    self._count("lines_skipped_too_long")
                    continue
                text, invalid_utf8, nul = text_input.decode_line(raw)
                self._count("lines_with_invalid_utf8", invalid_utf8)
                self._count("lines_with_nul", nul)
                if text.strip():
                    self._count("lines_used")
                    document.append(text)
                    continue
                self._count("lines_skipped_blank")
                if document:
                    self._count("documents_read")
                    yield document
                document = []
        if document:
            self._count("documents_read")
            yield document

    def finish_bundle(self):
        yield counts_output(self._counts)


class SplitJsonlDocuments(beam.DoFn):
    """Turns each jsonl record's text into a document of sentences."""

    def start_bundle(self):
        self._counts = {}

    def process(self, text):
        self._counts["documents_read"] = self._counts.get("documents_read", 0) + 1
        yield split_sentences(text)

    def finish_bundle(self):
        yield counts_output(self._counts)


def counts_output(counts):
    for name, value in counts.items():
        if value:
            beam.metrics.Metrics.counter(NAMESPACE, name).inc(value)
    return beam.pvalue.TaggedOutput(
        COUNTS_TAG, beam.transforms.window.GlobalWindows.windowed_value(dict(counts))
    )


class TokenizeDocuments(beam.DoFn):
    """Tokenizes documents with `tfnlp.text.PlainBertTokenizer`.

    Writes each tokenized document to the bundle's temporary file under
    `token_directory` and emits `(document_key, DocumentReference)` (see
    `pipelines.token_store`); sentences with no tokens are dropped, as in the
    original, and documents left with none are counted as skipped ("empty").
    The tokenizer gives the ids of the in-graph `BertTokenizer` without
    loading TensorFlow, and its word cache makes a worker's cost about one
    dictionary lookup per word.
    """

    def __init__(self, vocab_file, lower_case, token_directory):
        self._vocab_file = vocab_file
        self._lower_case = lower_case
        self._token_directory = token_directory

    def setup(self):
        self._tokenizer = PlainBertTokenizer(
            load_vocabulary(self._vocab_file), lower_case=self._lower_case
        )
        self._typecode = token_store.id_typecode(self._tokenizer.vocab_size)

    def start_bundle(self):
        self._counts = {}
        self._writer = token_store.DocumentWriter(self._token_directory, self._typecode)

    def _count(self, name, value=1):
        self._counts[name] = self._counts.get(name, 0) + value

    def process(self, document):
        unk_id = self._tokenizer.unk_id
        tokenized = [ids for ids in map(self._tokenizer.tokenize, document) if ids]
        if tokenized:
            self._count("documents_used")
            self._count("sentences", len(tokenized))
            self._count("tokens", sum(map(len, tokenized)))
            self._count("unknown_tokens", sum(ids.count(unk_id) for ids in tokenized))
            yield (
                pretraining_instances.document_key(tokenized),
                self._writer.write(tokenized),
            )
        else:
            self._count("documents_skipped_empty")

    def finish_bundle(self):
        self._writer.close()
        yield counts_output(self._counts)


def bucket_of(key, corpus_tokens, pool_tokens):
    """The bucket of the document with content key `key`: one of
    `ceil(corpus_tokens / pool_tokens)` buckets, by the key's hash."""
    buckets = max(1, math.ceil(corpus_tokens / pool_tokens))
    return int.from_bytes(key[:8], "big") % buckets


class CreateInstances(beam.DoFn):
    """Creates and serializes the instances of one bucket of documents.

    The records leave through a shuffle buffer of `SHUFFLE_BUFFER_RECORDS`
    (seeded from the job's seed and the bucket), so that a document's
    instances do not reach the files side by side, while memory stays
    bounded (the original shuffles all instances in memory).
    """

    def __init__(self, config, flags):
        self._config = config
        self._dupe_factor = flags.dupe_factor
        self._seed = flags.random_seed
        self._max_seq_length = flags.max_seq_length
        self._max_predictions = flags.max_predictions_per_seq

    def start_bundle(self):
        self._counts = {}

    def _count(self, name, value=1):
        self._counts[name] = self._counts.get(name, 0) + value

    def process(self, bucket_and_documents):
        bucket, keyed_documents = bucket_and_documents
        keyed_documents = sorted(keyed_documents, key=lambda pair: pair[0])
        keys = [key for key, _ in keyed_documents]
        documents = token_store.read_documents(
            [reference for _, reference in keyed_documents]
        )
        del keyed_documents
        shuffle_rng = random.Random(f"tfnlp-shuffle-{self._seed}-{bucket}")
        yield from shuffled(self._records(keys, documents), shuffle_rng)

    def _records(self, keys, documents):
        for dupe_index in range(self._dupe_factor):
            for index, key in enumerate(keys):
                rng = random.Random(
                    pretraining_instances.document_seed(self._seed, key, dupe_index)
                )
                for instance in pretraining_instances.create_instances_from_document(
                    documents, index, rng, self._config
                ):
                    self._record(instance)
                    yield pretraining_schema.serialize_instance(
                        instance.input_ids,
                        instance.segment_ids,
                        instance.masked_lm_positions,
                        instance.masked_lm_ids,
                        instance.is_random_next,
                        self._max_seq_length,
                        self._max_predictions,
                    )

    def _record(self, instance):
        length = len(instance.input_ids)
        self._count("instances")
        self._count("instance_tokens", length)
        self._count(f"length_bin_{length // LENGTH_BIN}")
        self._count("truncated_instances", instance.truncated)
        self._count("random_next_instances", instance.is_random_next)
        self._count("masked_positions", len(instance.masked_lm_positions))
        for kind, value in instance.replacements.items():
            self._count(f"replaced_{kind}", value)

    def finish_bundle(self):
        yield counts_output(self._counts)


def shuffled(records, rng, buffer_size=None):
    """`records` in a random order, holding at most `buffer_size` at a time
    (tf.data's shuffle: each output is drawn from the buffer)."""
    buffer_size = buffer_size or SHUFFLE_BUFFER_RECORDS
    buffer = []
    for record in records:
        if len(buffer) < buffer_size:
            buffer.append(record)
            continue
        index = rng.randrange(buffer_size)
        yield buffer[index]
        buffer[index] = record
    rng.shuffle(buffer)
    yield from buffer


def share(part, whole):
    return part / whole if whole else 0.0


def stats_from_counts(counts, flags, beam_arguments):
    """The stats.json dict from the summed counts."""
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    instances = get("instances")
    masked = get("masked_positions")
    histogram = {
        f"{b * LENGTH_BIN:04d}-{(b + 1) * LENGTH_BIN - 1:04d}": get(f"length_bin_{b}")
        for b in range(math.ceil((flags.max_seq_length + 1) / LENGTH_BIN))
    }
    return {
        "parameters": {**vars(flags), "beam_arguments": list(beam_arguments)},
        "random_seed": flags.random_seed,
        "lines": {
            "read": get("lines_read"),
            "used": get("lines_used"),
            "skipped": {reason: get(f"lines_skipped_{reason}")
                        for reason in ("blank", "too_long", "bad_json", "not_object",
                                       "missing_text", "text_not_string")},
            "repaired": {"invalid_utf8": get("lines_with_invalid_utf8"),
                         "nul": get("lines_with_nul")},
        },
        "documents": {
            "read": get("documents_read"),
            "used": get("documents_used"),
            "skipped": {"empty": get("documents_skipped_empty")},
        },
        "sentences": get("sentences"),
        "tokens": get("tokens"),
        "unk_share": share(get("unknown_tokens"), get("tokens")),
        "instances": instances,
        "instance_tokens": get("instance_tokens"),
        "mean_instance_length": share(get("instance_tokens"), instances),
        "instance_length_histogram": histogram,
        "truncated_instances": get("truncated_instances"),
        "masked_positions": masked,
        "mask_rate": share(masked, get("instance_tokens")),
        "replacement_shares": {
            kind: share(get(f"replaced_{kind}"), masked)
            for kind in ("mask", "random", "unchanged")
        },
        "nsp_random_share": share(get("random_next_instances"), instances),
    }


def write_json(path, value):
    with FileSystems.create(path) as file:
        file.write(json.dumps(value, indent=2, sort_keys=True).encode("utf-8"))


def build_pipeline(pipeline, flags, beam_arguments, config, token_directory):
    """Adds the whole job to `pipeline`; tokenized documents are kept in
    temporary files under `token_directory` (see `pipelines.token_store`)."""
    patterns = text_input.parse_patterns(flags.input_file)
    if flags.input_format == "text":
        files = text_input.match_input_files(patterns)
        read = (
            pipeline
            | "ListFiles" >> beam.Create(files)
            | "MatchFiles" >> fileio.MatchAll()
            | "OpenFiles" >> fileio.ReadMatches()
            | "ReadDocuments" >> beam.ParDo(ReadDocuments(flags.max_line_bytes))
            .with_outputs(COUNTS_TAG, main="documents")
        )
        documents, read_counts = read.documents, [read[COUNTS_TAG]]
    else:
        texts, line_counts = pipeline | "ReadJsonl" >> text_input.ReadTextLines(
            patterns, "jsonl"
        )
        split = texts | "SplitSentences" >> beam.ParDo(
            SplitJsonlDocuments()
        ).with_outputs(COUNTS_TAG, main="documents")
        documents, read_counts = split.documents, [line_counts, split[COUNTS_TAG]]

    tokenized = (
        documents
        | "Tokenize" >> beam.ParDo(
            TokenizeDocuments(flags.vocab_file, flags.do_lower_case, token_directory)
        ).with_outputs(COUNTS_TAG, main="documents")
    )
    corpus_tokens = (
        tokenized.documents
        | "DocumentTokens" >> beam.Map(lambda keyed: keyed[1].tokens)
        | "CorpusTokens" >> beam.CombineGlobally(sum)
    )
    instances = (
        tokenized.documents
        | "Bucket" >> beam.Map(
            lambda keyed, tokens: (
                bucket_of(keyed[0], tokens, flags.random_pool_tokens), keyed
            ),
            tokens=beam.pvalue.AsSingleton(corpus_tokens),
        )
        | "GroupBuckets" >> beam.GroupByKey()
        | "CreateInstances" >> beam.ParDo(CreateInstances(config, flags))
        .with_outputs(COUNTS_TAG, main="records")
    )
    compressed = flags.gzip
    (
        instances.records
        | "Write" >> beam.io.WriteToTFRecord(
            os.path.join(flags.output_dir, "pretraining"),
            file_name_suffix=".tfrecord.gz" if compressed else ".tfrecord",
            num_shards=flags.num_shards,
            compression_type=CompressionTypes.GZIP if compressed else CompressionTypes.UNCOMPRESSED,
        )
    )
    all_counts = (
        [*read_counts, tokenized[COUNTS_TAG], instances[COUNTS_TAG]]
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(text_input.SumCounts())
    )
    stats_path = os.path.join(flags.output_dir, "stats.json")
    _ = all_counts | "WriteStats" >> beam.Map(
        lambda counts: write_json(stats_path, stats_from_counts(counts, flags, beam_arguments))
    )


def main(argv=None):
    """Runs the job; returns the stats dict (also written to stats.json)."""
    flags, beam_arguments = parse_arguments(argv)
    vocabulary = load_vocabulary(flags.vocab_file)
    config = pretraining_instances.config_from_vocabulary(
        vocabulary,
        max_seq_length=flags.max_seq_length,
        max_predictions_per_seq=flags.max_predictions_per_seq,
        masked_lm_prob=flags.masked_lm_prob,
        short_seq_prob=flags.short_seq_prob,
        do_whole_word_mask=flags.do_whole_word_mask,
        dynamic_masking=flags.dynamic_masking,
    )
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    start = time.monotonic()
    pipeline = beam.Pipeline(options=pipeline_options(beam_arguments))
    token_directory = FileSystems.join(flags.output_dir, f"tmp-tokens-{uuid.uuid4().hex}")
    FileSystems.mkdirs(token_directory)
    try:
        build_pipeline(pipeline, flags, beam_arguments, config, token_directory)
        state = pipeline.run().wait_until_finish()
    finally:
        FileSystems.delete([token_directory])
    if state != beam.runners.runner.PipelineState.DONE:
        raise RuntimeError(f"The pretraining-data pipeline ended in state {state}.")
    with FileSystems.open(os.path.join(flags.output_dir, "stats.json")) as file:
        stats = json.loads(file.read().decode("utf-8"))
    LOGGER.info(
        "Wrote %d instances from %d documents to %s in %.1f s (mean length %.1f, "
        "mask rate %.4f, NSP random share %.3f).",
        stats["instances"], stats["documents"]["used"], flags.output_dir,
        time.monotonic() - start, stats["mean_instance_length"], stats["mask_rate"],
        stats["nsp_random_share"],
    )
    return stats


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    from pipelines import pretraining_data

    pretraining_data.main()

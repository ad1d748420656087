"""BERT pretraining data (masked LM + next sentence) with Apache Beam.

Reads documents of raw text and a WordPiece vocabulary; writes TFRecord
shards of pretraining instances and DIR/stats.json.

    python -m pipelines.pretraining_data \\
      --input_file=GLOB[,GLOB...] --vocab_file=vocab.txt --output_dir=DIR \\
      [--max_seq_length=128] [--dupe_factor=10] [--num_shards=N] [--gzip] \\
      [Beam options: --runner, --direct_num_workers, --direct_running_mode, ...]

The flags are those of google-research/bert's `create_pretraining_data.py`
(booleans also as `--flag`, `--flag=false` or `--noflag`), plus
`--output_dir` for sharded output; `build_pipeline` says what it writes.
"""

import logging
import math
import os
import random
import uuid

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines import job, pretraining_instances, text_input, token_store
from pipelines.job_flags import (
    add_gzip_flag,
    add_input_file_flag,
    add_input_format_flag,
    add_max_line_bytes_flag,
    add_output_dir_flag,
)
from pipelines.sharded_tfrecords import WriteShardedTFRecords
from tfnlp.command_line import (
    ArgumentParser,
    add_boolean_flag,
    add_lower_case_flag,
    check_input_file,
    check_output_directory,
)
from tfnlp.data import pretraining_schema
from tfnlp.text.vocabulary import load_vocabulary

LOGGER = logging.getLogger(__name__)
STATS_FILE = "stats.json"
LENGTH_BIN = 16
SHUFFLE_BUFFER_RECORDS = 10_000


def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions."""
    parser = ArgumentParser(
        prog="python -m pipelines.pretraining_data",
        description="BERT masked-LM and next-sentence pretraining TFRecords, with Beam.",
        allow_abbrev=False,
    )
    add_input_file_flag(parser)
    parser.add_argument("--vocab_file", required=True,
                        help="The WordPiece vocabulary (one token per line).")
    add_output_dir_flag(parser, "the TFRecord shards and stats.json")
    add_lower_case_flag(parser, True, "uncased vocabularies")
    parser.add_argument("--max_seq_length", type=int, default=128,
                        help="Tokens per instance, [CLS] and both [SEP] included.")
    parser.add_argument("--max_predictions_per_seq", type=int, default=20,
                        help="The most masked positions per instance.")
    parser.add_argument("--masked_lm_prob", type=float, default=0.15,
                        help="The share of an instance's tokens masked, before the "
                             "--max_predictions_per_seq cap.")
    parser.add_argument("--short_seq_prob", type=float, default=0.1,
                        help="The probability that a document's instances get a random, "
                             "shorter length.")
    parser.add_argument("--dupe_factor", type=int, default=10,
                        help="How many times each document is used, masked anew.")
    parser.add_argument("--random_seed", type=int, default=12345,
                        help="Seeds every random choice (segments, masks, shuffling).")
    add_boolean_flag(parser, "do_whole_word_mask", False,
                     "Mask whole words (every piece of a word) at once.")
    parser.add_argument("--num_shards", type=int, default=0,
                        help="Number of output files (0: the runner decides).")
    add_gzip_flag(parser)
    add_boolean_flag(parser, "dynamic_masking", False,
                     "Write unmasked sequences; tfnlp.data's reader masks them anew "
                     "each epoch.")
    add_input_format_flag(parser, "one sentence a line, a blank line between documents",
                          "one document")
    parser.add_argument("--random_pool_tokens", type=int, default=2_000_000,
                        help="About how many tokens a bucket of documents holds; "
                        "random next segments come from the same bucket.")
    add_max_line_bytes_flag(parser)
    flags, beam_arguments = job.split_arguments(parser, argv)
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


def bucket_of(key, corpus_tokens, pool_tokens):
    """The bucket of the document with content key `key`: one of
    `ceil(corpus_tokens / pool_tokens)` buckets, by the key's hash."""
    buckets = max(1, math.ceil(corpus_tokens / pool_tokens))
    return int.from_bytes(key[:8], "big") % buckets


def keyed_by_bucket(keyed_reference, token_counts, pool_tokens):
    """`(bucket, (key, reference))` for a `(key, reference)` pair, given the
    summed counts of `TokenizeDocuments` (whose "tokens" are the corpus's)."""
    return (bucket_of(keyed_reference[0], token_counts["tokens"], pool_tokens),
            keyed_reference)


class _CreateBucketInstances(job.CountingDoFn):
    """Creates and serializes the instances of one bucket of documents.

    The records leave through a shuffle buffer of `SHUFFLE_BUFFER_RECORDS`
    (seeded from the job's seed and the bucket), so that a document's
    instances do not reach the files side by side, while memory stays
    bounded (the original shuffles all instances in memory). Each instance
    is serialized as soon as it is made, so only records (bytes) are held.
    """

    COUNTER_NAMES = (
        "instances",
        "instance_tokens",
        "truncated_instances",
        "random_next_instances",
        "masked_positions",
        *(f"replaced_{kind}" for kind in pretraining_instances.REPLACEMENT_KINDS),
    )

    def __init__(self, config, dupe_factor, random_seed):
        self._config = config
        self._dupe_factor = dupe_factor
        self._seed = random_seed

    def setup(self):
        self._serializer = pretraining_schema.InstanceSerializer(
            self._config.max_seq_length, self._config.max_predictions_per_seq
        )

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
        serialize = self._serializer.serialize
        for dupe_index in range(self._dupe_factor):
            for index, key in enumerate(keys):
                rng = random.Random(
                    pretraining_instances.document_seed(self._seed, key, dupe_index)
                )
                for instance in pretraining_instances.generate_instances_from_document(
                    documents, index, rng, self._config
                ):
                    self._record(instance)
                    yield serialize(
                        instance.input_ids,
                        instance.segment_ids,
                        instance.masked_lm_positions,
                        instance.masked_lm_ids,
                        instance.is_random_next,
                    )

    def _record(self, instance):
        counts = self.counts
        length = len(instance.input_ids)
        counts["instances"] += 1
        counts["instance_tokens"] += length
        counts["truncated_instances"] += instance.truncated
        counts["random_next_instances"] += instance.is_random_next
        counts["masked_positions"] += len(instance.masked_lm_positions)
        for kind, value in instance.replacements.items():
            counts[f"replaced_{kind}"] += value
        self.count(f"length_bin_{length // LENGTH_BIN}")


class CreatePretrainingRecords(beam.PTransform):
    """Documents in, serialized pretraining `tf.train.Example`s out.

    Applied to a PCollection of documents (lists of sentence strings, as
    `pipelines.text_input.ReadDocuments` gives), it tokenizes them into
    temporary files (`pipelines.token_store.TokenizeDocuments`), spreads
    the documents over `ceil(corpus tokens / random_pool_tokens)` buckets
    by their content key, makes each bucket's instances
    (`pipelines.pretraining_instances`, one random generator per document
    and dupe pass) and serializes them (`tfnlp.data.pretraining_schema`).
    It returns two PCollections: the records (bytes), and dicts of counts
    that `job.SumCounts` adds up (one per bundle of each step, so that the
    job sums all its counts once): `TokenizeDocuments`'s, plus "instances",
    "instance_tokens", "length_bin_<n>" (instances of `16 n` to `16 n + 15`
    tokens), "truncated_instances", "random_next_instances",
    "masked_positions" and "replaced_<kind>" (names never counted may be
    missing).

    How it scales: documents are tokenized by `tfnlp.text.PlainBertTokenizer`
    (the ids of the in-graph `BertTokenizer`, in plain Python with a word
    cache, so no worker loads TensorFlow's 650 MB) and spread, as compact
    bytes, over buckets by a hash of their content. The original draws a
    "random next" segment from any document of the whole corpus, which
    needs the corpus in memory; here it comes from the other documents of
    the same bucket, which hold about `random_pool_tokens` tokens (2
    million: a few thousand typical documents), so one worker holds one
    bucket, never the corpus. The trade-off: random segments come from a
    random sample of the corpus rather than from all of it, which changes
    nothing in the distribution of instances as long as the pool is large
    next to one document. A corpus smaller than the pool is one bucket, as
    in the original. Records leave a bucket through a shuffle buffer of
    10,000.

    Determinism: each document and dupe pass gets its own random generator,
    seeded from a hash of `random_seed`, the document's content and the
    pass (`pipelines.pretraining_instances.document_seed`), and a bucket's
    documents are taken in the order of their content hash. So the same
    inputs and seed give the same multiset of records whatever the runner,
    the number of workers, or how the input is split into files.

    Args:
        vocab_file: the WordPiece vocabulary (one token per line).
        lower_case: lower-case and strip accents (uncased vocabularies).
        config: the `pretraining_instances.InstanceConfig` (the
            vocabulary's ids, the sequence length, masking options).
        dupe_factor: how many times each document is used, masked anew.
        random_seed: the seed of every random choice.
        random_pool_tokens: about how many tokens a bucket holds; random
            next segments come from the same bucket.
        token_directory: an existing directory (any Beam filesystem) for
            the temporary token files; the caller deletes it after the run.
        label: an optional label for the transform.
    """

    def __init__(self, vocab_file, lower_case, config, dupe_factor, random_seed,
                 random_pool_tokens, token_directory, label=None):
        super().__init__(label)
        self.vocab_file = vocab_file
        self.lower_case = lower_case
        self.config = config
        self.dupe_factor = dupe_factor
        self.random_seed = random_seed
        self.random_pool_tokens = random_pool_tokens
        self.token_directory = token_directory

    def expand(self, documents):
        keyed_references, token_counts = documents | "TokenizeDocuments" >> (
            token_store.TokenizeDocuments(
                self.vocab_file, self.lower_case, self.token_directory
            )
        )
        # Without a default: a corpus whose tokenizing bundles sent no
        # counts has no document to put in a bucket either.
        token_totals = token_counts | "SumTokenCounts" >> beam.CombineGlobally(
            job.SumCounts(["tokens"])
        ).without_defaults()
        instances = (
            keyed_references
            | "Bucket" >> beam.Map(
                keyed_by_bucket,
                token_counts=beam.pvalue.AsSingleton(token_totals),
                pool_tokens=self.random_pool_tokens,
            )
            | "GroupBuckets" >> beam.GroupByKey()
            | "CreateInstances" >> beam.ParDo(
                _CreateBucketInstances(self.config, self.dupe_factor, self.random_seed)
            ).with_outputs(job.COUNTS_TAG, main="records")
        )
        counts = (token_counts, instances[job.COUNTS_TAG]) | "AllCounts" >> beam.Flatten()
        return instances.records, counts


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


def stats_from_counts(counts, parameters):
    """The stats.json dict.

    Args:
        counts: the job's summed counts (`ReadDocuments`'s and
            `CreatePretrainingRecords`'s).
        parameters: the job's parameters as recorded (every flag and
            "beam_arguments"); its "max_seq_length" sizes the length
            histogram.

    Returns:
        The stats dict (see `build_pipeline`).
    """
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    instances = get("instances")
    masked = get("masked_positions")
    histogram = {
        f"{b * LENGTH_BIN:04d}-{(b + 1) * LENGTH_BIN - 1:04d}": get(f"length_bin_{b}")
        for b in range(math.ceil((parameters["max_seq_length"] + 1) / LENGTH_BIN))
    }
    return {
        "parameters": parameters,
        "random_seed": parameters["random_seed"],
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
        "unk_share": job.share(get("unknown_tokens"), get("tokens")),
        "instances": instances,
        "instance_tokens": get("instance_tokens"),
        "mean_instance_length": job.share(get("instance_tokens"), instances),
        "instance_length_histogram": histogram,
        "truncated_instances": get("truncated_instances"),
        "masked_positions": masked,
        "mask_rate": job.share(masked, get("instance_tokens")),
        "replacement_shares": {
            kind: job.share(get(f"replaced_{kind}"), masked)
            for kind in ("mask", "random", "unchanged")
        },
        "nsp_random_share": job.share(get("random_next_instances"), instances),
    }


def summary_line(stats, seconds):
    """The line `job.run_job` logs: instances written, documents used,
    mean instance length, mask rate and NSP random share."""
    return (
        f"Wrote {stats['instances']} instances from {stats['documents']['used']} "
        f"documents to {stats['parameters']['output_dir']} in {seconds:.1f} s "
        f"(mean length {stats['mean_instance_length']:.1f}, mask rate "
        f"{stats['mask_rate']:.4f}, NSP random share {stats['nsp_random_share']:.3f})."
    )


def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no instance is an error."""
    if stats["instances"]:
        return None, []
    lines, documents = stats["lines"], stats["documents"]
    return (f"wrote no instance: {documents['used']} of {documents['read']} documents "
            f"used, from {lines['used']} of {lines['read']} lines read; check --input_file "
            "and --input_format (text: one sentence a line, a blank line between "
            "documents)"), []


def build_pipeline(pipeline, read_documents, create_records, output_dir, num_shards,
                   gzip, parameters):
    """Adds the whole job to `pipeline`.

    Input (`text_input.ReadDocuments`; each text file is read by one
    worker, since documents span lines): `text` is the original format, one
    sentence per line and a blank line between documents; `jsonl` is one
    document per line with a "text" field, split into sentences at line
    breaks and after ".", "!", "?" or "…" (optionally followed by closing
    quotes or brackets) that are followed by whitespace and an upper-case
    letter, a digit or an opening quote.

    Bad input never stops the job and is never lost silently: undecodable
    bytes are replaced and then dropped by the tokenizer (as the original's
    `errors="ignore"` decoding), NUL bytes are dropped, lines longer than
    `--max_line_bytes` (1 MB) are skipped, documents with no tokens are
    skipped, and every case is counted with its reason in the stats. A glob
    that matches no file is an error before the job starts.

    It writes:

    - `DIR/pretraining-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with
      `gzip`): `tf.train.Example`s in the schema of
      `tfnlp.data.pretraining_schema`, which is what the original
      `run_pretraining.py` parses; with `num_shards` Beam groups the records
      by shard first, which the local runner holds in memory;
    - `DIR/stats.json`: every parameter and the seed; lines and documents
      read, used and skipped by reason; sentences, instances, tokens, the
      mean and a histogram of instance lengths, truncations, the mask rate,
      the shares of [MASK] / random / unchanged replacements, the NSP random
      share and the [UNK] share. The same counts are Beam metrics
      (namespace "tfnlp").

    Args:
        pipeline: a `beam.Pipeline`.
        read_documents: the `text_input.ReadDocuments` of the input.
        create_records: the `CreatePretrainingRecords` to apply to its
            documents.
        output_dir: where the shards and stats.json go.
        num_shards: the number of shards, written byte-identically by
            `WriteShardedTFRecords` (0: the runner decides how many files
            and which records go where, streaming them).
        gzip: write gzip-compressed shards (`.tfrecord.gz`).
        parameters: the job's parameters, recorded in stats.json (see
            `stats_from_counts`).
    """
    documents, read_counts = pipeline | "ReadDocuments" >> read_documents
    records, record_counts = documents | "CreateRecords" >> create_records
    prefix = os.path.join(output_dir, "pretraining")
    if num_shards:
        # Byte-identical files: each record's shard and place are fixed by
        # its bytes.
        _ = records | "Write" >> WriteShardedTFRecords(prefix, num_shards, gzip)
    else:
        _ = records | "Write" >> beam.io.WriteToTFRecord(
            prefix,
            file_name_suffix=".tfrecord.gz" if gzip else ".tfrecord",
            compression_type=CompressionTypes.GZIP if gzip else CompressionTypes.UNCOMPRESSED,
        )
    # `read_counts` is always one dict, so the sum needs no default value.
    _ = (
        (read_counts, record_counts)
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts()).without_defaults()
        | "Stats" >> beam.Map(stats_from_counts, parameters)
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, STATS_FILE))
    )


def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        UsageError: `--vocab_file` cannot be read, or `--output_dir`
            cannot be written (before anything is written or run).
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = parse_arguments(argv)
    check_input_file("--vocab_file", flags.vocab_file,
                     "a WordPiece vocabulary, one token a line")
    read_documents = text_input.ReadDocuments(
        flags.input_file, flags.input_format, flags.max_line_bytes
    )
    check_output_directory("--output_dir", flags.output_dir)
    config = pretraining_instances.config_from_vocabulary(
        load_vocabulary(flags.vocab_file),
        max_seq_length=flags.max_seq_length,
        max_predictions_per_seq=flags.max_predictions_per_seq,
        masked_lm_prob=flags.masked_lm_prob,
        short_seq_prob=flags.short_seq_prob,
        do_whole_word_mask=flags.do_whole_word_mask,
        dynamic_masking=flags.dynamic_masking,
    )
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    token_directory = FileSystems.join(flags.output_dir, f"tmp-tokens-{uuid.uuid4().hex}")
    FileSystems.mkdirs(token_directory)
    create_records = CreatePretrainingRecords(
        vocab_file=flags.vocab_file,
        lower_case=flags.do_lower_case,
        config=config,
        dupe_factor=flags.dupe_factor,
        random_seed=flags.random_seed,
        random_pool_tokens=flags.random_pool_tokens,
        token_directory=token_directory,
    )
    parameters = {**vars(flags), "beam_arguments": list(beam_arguments)}
    try:
        return job.run_job(
            lambda pipeline: build_pipeline(
                pipeline, read_documents, create_records, flags.output_dir,
                flags.num_shards, flags.gzip, parameters,
            ),
            beam_arguments,
            name="pretraining-data",
            stats_file=os.path.join(flags.output_dir, STATS_FILE),
            summary_line=summary_line,
            logger=LOGGER,
            output_problems=output_problems,
        )
    finally:
        FileSystems.delete([token_directory])


if __name__ == "__main__":
    job.command_line_main("pipelines.pretraining_data")

"""Causal language-model training data (packed fixed-length windows) with Apache Beam.

Reads documents of raw text; writes TFRecord shards of windows of token ids
(training and, optionally, validation), the tokenizer and DIR/stats.json;
`build_pipeline` says how.

    python -m pipelines.lm_data --input_file=GLOB --output_dir=DIR \\
      [--validation_fraction=0.1 | --validation_file=GLOB] \\
      [--tokenizer=character|sentencepiece|wordpiece] [--sequence_length=256]

Tiny Shakespeare at the character level, as nanoGPT's `shakespeare_char`:

    python -m pipelines.lm_data --input_file=train.txt --validation_file=val.txt \\
      --document_boundary=file --tokenizer=character --output_dir=data/shakespeare
"""

import hashlib
import logging
import os

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from pipelines import (document_texts, job, lm_packing, lm_tokenizers, sentencepiece_model,
                       text_input)
from pipelines.job_flags import (
    add_gzip_flag,
    add_input_file_flag,
    add_input_format_flag,
    add_max_line_bytes_flag,
    add_num_shards_flag,
    add_output_dir_flag,
    add_sentencepiece_flags,
)
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name
from tfnlp.command_line import (
    ArgumentParser,
    add_lower_case_flag,
    check_input_file,
    check_output_directory,
    usage_errors,
)
from tfnlp.data import file_names
from tfnlp.text.vocabulary import load_vocabulary

LOGGER = logging.getLogger(__name__)
PROGRAM = "python -m pipelines.lm_data"
DEFAULT_SEQUENCE_LENGTH = 256
DEFAULT_BUCKET_TOKENS = 1_000_000
DEFAULT_NUM_SHARDS = 8
SHARD_PREFIXES = {
    "train": file_names.LANGUAGE_MODEL_TRAIN_PREFIX,
    "validation": file_names.LANGUAGE_MODEL_VALIDATION_PREFIX,
}
SPLITS = ("train", "validation")
TOKENIZE_COUNTERS = ("documents", "documents_skipped_empty", "tokens",
                     "end_of_document_tokens", "characters", "unknown_tokens")
LINE_SKIP_REASONS = ("blank", "too_long", "bad_json", "not_object", "missing_text",
                     "text_not_string")
VALIDATION_FILE_PREFIX = "validation_file_"
ACCOUNTING = ("tokens == records * sequence_length + unpredicted_first_tokens + "
              "dropped_tail_tokens")


# The flags: `parse_arguments` parses and checks their values (one usage
# error naming every problem); `main` then checks the paths they name (inputs
# matched, the given vocabulary or model read and validated, the output
# directory written) before the job starts.
def build_parser():
    """The job's `tfnlp.command_line.ArgumentParser` (every flag documented)."""
    parser = ArgumentParser(
        prog=PROGRAM,
        description="Causal language-model TFRecords (fixed-length windows of packed "
        "documents) from raw text, with Beam.",
        epilog="Writes DIR/train-SSSSS-of-NNNNN.tfrecord and, with a validation split, "
        "DIR/validation-SSSSS-of-NNNNN.tfrecord (each record: token_ids of "
        "sequence_length + 1 ids, character_count), the tokenizer's file and "
        "DIR/tokenizer.json (read by tfnlp.text.load_language_model_tokenizer), and "
        "DIR/stats.json. Other options go to Beam (--runner, --direct_num_workers, ...).",
        allow_abbrev=False,
    )
    inputs = parser.add_argument_group("input")
    add_input_file_flag(inputs, "the training text (.gz and .bz2 are decompressed)")
    inputs.add_argument("--validation_file",
                        help="Comma-separated globs of validation text, read like "
                        "--input_file; then nothing of --input_file is held out.")
    add_input_format_flag(inputs, "plain text", "one document")
    inputs.add_argument("--document_boundary", choices=document_texts.DOCUMENT_BOUNDARIES,
                        default="blank_line",
                        help="Text input: blank_line (blank lines separate documents, "
                        "each document's own line breaks kept) or file (each file is one "
                        "document, its exact text: one stream, as nanoGPT's "
                        "shakespeare_char).")
    add_max_line_bytes_flag(inputs, "With --document_boundary=blank_line")
    add_output_dir_flag(parser, "the shards, the tokenizer and stats.json")

    tokenizer = parser.add_argument_group("tokenizer")
    tokenizer.add_argument("--tokenizer", choices=lm_tokenizers.KINDS, default="character",
                           help="character: a vocabulary of every character of the "
                           "training split (learned); sentencepiece: a BPE or unigram "
                           "model learned from the training split, or --vocab_file; "
                           "wordpiece: the BERT vocabulary --vocab_file.")
    tokenizer.add_argument("--vocab_file",
                           help="sentencepiece: an existing .model (special ids pad 0, "
                           "unk 1, bos 2, eos 3) instead of learning one; wordpiece: the "
                           "vocabulary, one token a line, with [UNK] and [SEP] (the "
                           "end-of-document token).")
    tokenizer.add_argument("--min_character_count", type=int, default=1,
                           help="character: characters seen fewer times in the training "
                           "split map to <unk>.")
    add_sentencepiece_flags(tokenizer, "bpe", "lines of the training split",
                            mode="sentencepiece")
    add_lower_case_flag(tokenizer, True, "uncased vocabularies", name="lower_case",
                        mode="wordpiece")

    records = parser.add_argument_group("records")
    records.add_argument("--sequence_length", type=int, default=DEFAULT_SEQUENCE_LENGTH,
                         help="The ids a model reads per record; each record holds one "
                         "more (the inputs are ids[:-1], the targets ids[1:]).")
    records.add_argument("--packing_bucket_tokens", type=int, default=DEFAULT_BUCKET_TOKENS,
                         help="About how many ids one worker packs into one stream; each "
                         "stream drops fewer than sequence_length + 1 ids at its end.")
    records.add_argument("--validation_fraction", type=float, default=0.0,
                         help="Share of the documents held out for validation, chosen by "
                         "a hash of their text (0: none).")
    add_num_shards_flag(records, DEFAULT_NUM_SHARDS, "Training TFRecord files")
    records.add_argument("--num_validation_shards", type=int, default=1,
                         help="Validation TFRecord files.")
    add_gzip_flag(records)
    return parser

def flag_problems(flags):
    """The problems of the parsed flags' values, as sentences (empty: none)."""
    problems = []
    positive = ("sequence_length", "max_line_bytes", "min_character_count", "num_shards",
                "num_validation_shards", "vocab_sample_size")
    for name in positive:
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1, not {getattr(flags, name)}.")
    if flags.packing_bucket_tokens <= flags.sequence_length:
        problems.append(
            f"--packing_bucket_tokens={flags.packing_bucket_tokens} cannot hold one record "
            f"of --sequence_length + 1 = {flags.sequence_length + 1} ids; give at least "
            "100 times that (each bucket drops up to sequence_length ids at its end).")
    if not 0 <= flags.validation_fraction < 1:
        problems.append(f"--validation_fraction must be in [0, 1), not "
                        f"{flags.validation_fraction}.")
    if flags.validation_file and flags.validation_fraction:
        problems.append("--validation_file and --validation_fraction both give a "
                        "validation split; pass one of them.")
    if flags.tokenizer == "wordpiece" and not flags.vocab_file:
        problems.append("--tokenizer=wordpiece needs --vocab_file (a BERT vocabulary).")
    if flags.tokenizer == "character" and flags.vocab_file:
        problems.append("--tokenizer=character learns its vocabulary; leave out "
                        "--vocab_file (or pass --tokenizer=sentencepiece or wordpiece).")
    if flags.input_format == "jsonl" and flags.document_boundary == "file":
        problems.append("--document_boundary=file is for text input; each jsonl record is "
                        "one document.")
    return problems

def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`.

    Raises:
        SystemExit: a flag is missing, invalid or inconsistent (status 2,
            one line naming every problem).
    """
    return job.parse_job_arguments(build_parser(), flag_problems, argv)

def given_tokenizer(kind, path, lower_case):
    """The `TokenizerSpec` of `--vocab_file`, checked before the job.

    Raises:
        ValueError: the file is not a SentencePiece model with the special
            ids PAD 0, UNK 1, BOS 2, EOS 3, or not a WordPiece vocabulary
            with [UNK] and [SEP].
    """
    contents = job.read_file(path)
    if kind == "wordpiece":
        spec = lm_tokenizers.TokenizerSpec("wordpiece", contents, lower_case,
                                           tuple(load_vocabulary(path)))
    else:
        spec = lm_tokenizers.TokenizerSpec("sentencepiece", contents)
    try:
        lm_tokenizers.document_tokenizer(spec)
    except ValueError as error:
        raise ValueError(f"--vocab_file={path}: {error}") from None
    return spec

def tokenizer_options(flags):
    """The `lm_tokenizers.TokenizerOptions` of the flags; the given file is
    read and checked here, before the job."""
    if flags.vocab_file:
        return lm_tokenizers.TokenizerOptions(
            flags.tokenizer, given=given_tokenizer(flags.tokenizer, flags.vocab_file,
                                                   flags.lower_case))
    return lm_tokenizers.TokenizerOptions(
        flags.tokenizer,
        min_character_count=flags.min_character_count,
        sentencepiece=sentencepiece_model.SentencePieceOptions(
            vocab_size=flags.vocab_size, model_type=flags.model_type,
            character_coverage=flags.character_coverage, normalization_rule_name="identity",
            remove_extra_whitespaces=False) if flags.tokenizer == "sentencepiece" else None,
        sample_size=flags.vocab_sample_size,
    )

def vocabulary_settings(flags):
    """The flags that shaped the vocabulary, for its stats entry."""
    if flags.tokenizer == "character":
        return {"min_character_count": flags.min_character_count}
    if flags.tokenizer == "wordpiece":
        return {"vocab_file": flags.vocab_file, "lower_case": flags.lower_case}
    if flags.vocab_file:
        return {"vocab_file": flags.vocab_file}
    return {"model_type": flags.model_type, "vocab_size": flags.vocab_size,
            "character_coverage": flags.character_coverage, "normalization": "identity",
            "vocab_sample_size": flags.vocab_sample_size}

# The documents: `document_key`, a document's identity, the SHA-256 of its
# text, orders documents in the packed stream and chooses their bucket
# (`pipelines.lm_packing`) and their split, so that all three depend on the
# text alone, never on the runner, the workers or the files' order.
# Identical documents share a key and so a split (a duplicate never
# straddles training and validation) and give identical ids, so their
# relative order changes no byte of the output. `SplitDocuments` holds out
# those whose key falls in the first `validation_fraction` of the key space
# (bytes 8-15 of the digest, the bucket using bytes 0-7);
# `TokenizeLanguageModelDocuments` gives each its ids and per-id characters
# (`pipelines.lm_tokenizers`), the end-of-document id appended (1
# character), counting documents, tokens, characters and unknown tokens
# under a split's prefix.
def document_key(text):
    """The SHA-256 digest (32 bytes) of a document's UTF-8 text.

    Example:

    >>> document_key("ROMEO:\\n").hex()[:16]
    'adc511cab17a648e'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

def is_validation(key, validation_fraction):
    """Whether the document of `key` is held out: bytes 8-15 of the key, as
    a fraction of 2**64, are below `validation_fraction`."""
    return int.from_bytes(key[8:16], "big") < validation_fraction * 2**64

def keyed(text):
    """`(document_key(text), text)`."""
    return document_key(text), text

class SplitDocuments(beam.PTransform):
    """Keys documents and splits them into training and validation by key.

    Applied to a PCollection of texts, it returns the PCollections
    `(train, validation)` of `(key, text)` pairs (`document_key`); a
    document is held out when `is_validation(key, validation_fraction)`.

    Args:
        validation_fraction: the share of the key space held out, in
            [0, 1).
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     train, validation = (pipeline | beam.Create(["a", "b", "c", "d"])
    ...                          | SplitDocuments(0.5))
    ...     _ = (validation | beam.Values() | beam.combiners.ToList()
    ...          | beam.Map(lambda texts: print(sorted(texts))))
    ['b', 'c', 'd']
    """

    def __init__(self, validation_fraction, label=None):
        super().__init__(label)
        if not 0 <= validation_fraction < 1:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {validation_fraction}."
            )
        self.validation_fraction = validation_fraction

    def expand(self, texts):
        fraction = self.validation_fraction
        train, validation = (
            texts
            | "Key" >> beam.Map(keyed)
            | "Split" >> beam.Partition(
                lambda pair, _: int(is_validation(pair[0], fraction)), len(SPLITS))
        )
        return train, validation

class _TokenizeDocuments(job.CountingDoFn):
    """`(key, text)` → `(key, (ids, characters))`, the end-of-document id
    appended; documents without ids are counted and dropped."""

    def __init__(self, prefix):
        self._prefix = prefix
        self.COUNTER_NAMES = tuple(prefix + name for name in TOKENIZE_COUNTERS)

    def setup(self):
        self._spec = self._tokenizer = None

    def process(self, keyed_text, spec):
        if spec is not self._spec:
            self._spec, self._tokenizer = spec, lm_tokenizers.document_tokenizer(spec)
        tokenizer, prefix = self._tokenizer, self._prefix
        key, text = keyed_text
        ids, characters = tokenizer.encode(text)
        if not len(ids):
            self.count(prefix + "documents_skipped_empty")
            return
        ids = np.append(ids, np.int32(tokenizer.end_of_document_id))
        characters = np.append(characters, np.int32(1))
        self.count(prefix + "documents")
        self.count(prefix + "tokens", len(ids))
        self.count(prefix + "end_of_document_tokens")
        self.count(prefix + "characters", int(characters.sum()))
        self.count(prefix + "unknown_tokens", int(np.count_nonzero(ids == tokenizer.unknown_id)))
        yield key, (ids, characters)

class TokenizeLanguageModelDocuments(beam.PTransform):
    """Keyed documents in, their ids and per-id characters out.

    Applied to a PCollection of `(key, text)`, it returns two PCollections:
    `(key, (ids, characters))` per document with ids (int32 numpy arrays,
    the end-of-document id last), and a single dict of counts, each name
    prefixed with `split + "_"`: "documents", "documents_skipped_empty"
    (no id), "tokens" (end-of-document ids included),
    "end_of_document_tokens", "characters" and "unknown_tokens".

    Args:
        tokenizer_spec: a single-element PCollection of the
            `lm_tokenizers.TokenizerSpec` (a side input).
        split: "train" or "validation", the counters' prefix.
        label: an optional label for the transform.
    """

    def __init__(self, tokenizer_spec, split, label=None):
        super().__init__(label)
        self.tokenizer_spec = tokenizer_spec
        self.split = split

    def expand(self, keyed_texts):
        prefix = f"{self.split}_"
        tokenized = keyed_texts | "Tokenize" >> beam.ParDo(
            _TokenizeDocuments(prefix), spec=beam.pvalue.AsSingleton(self.tokenizer_spec)
        ).with_outputs(job.COUNTS_TAG, main="documents")
        counts = tokenized[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts([prefix + name for name in TOKENIZE_COUNTERS]))
        return tokenized.documents, counts

# The stats: `stats_from_counts` turns the job's summed counts into
# `DIR/stats.json` and checks, raising `RuntimeError` (a bug in the job) when
# one fails:
#
# - lines, per input (`--input_file`, `--validation_file`):
#   `read == used + sum(skipped.values())`;
# - documents: `read == train.documents + validation.documents +
#   sum(skipped.values())`;
# - tokens, per split, with `L = sequence_length` (`pipelines.lm_packing`):
#   `tokens == records * L + unpredicted_first_tokens + dropped_tail_tokens`,
#   where `tokens` counts every document's ids and its end-of-document id,
#   `records * L` are the predicted ids, `unpredicted_first_tokens` the
#   first id of each packed stream that yields a record (read, never
#   predicted) and `dropped_tail_tokens` the ids after a stream's last
#   record (or a whole stream shorter than one record); and the ids packed
#   equal the ids tokenized.
def line_statistics(counts, prefix=""):
    """The lines of one input: read, used, skipped by reason, repaired.

    Raises:
        RuntimeError: the lines read are not the lines used plus skipped.
    """
    get = lambda name: counts.get(prefix + name, 0)  # noqa: E731
    lines = {
        "read": get("lines_read"),
        "used": get("lines_used"),
        "skipped": {reason: get(f"lines_skipped_{reason}") for reason in LINE_SKIP_REASONS},
        "repaired": {"invalid_utf8": get("lines_with_invalid_utf8"),
                     "nul": get("lines_with_nul")},
    }
    if lines["read"] != lines["used"] + sum(lines["skipped"].values()):
        raise RuntimeError(f"Input lines are unaccounted for: {lines}.")
    return lines

def split_statistics(counts, split, sequence_length):
    """One split's documents, tokens, characters and records.

    Raises:
        RuntimeError: the split's tokens do not add up (see the stats'
            comment).
    """
    get = lambda name: counts.get(f"{split}_{name}", 0)  # noqa: E731
    records = get("records")
    predicted = records * sequence_length
    statistics = {
        "documents": get("documents"),
        "tokens": get("tokens"),
        "end_of_document_tokens": get("end_of_document_tokens"),
        "characters": get("characters"),
        "unknown_tokens": get("unknown_tokens"),
        "unknown_share": job.share(get("unknown_tokens"), get("tokens")),
        "buckets": get("buckets"),
        "records": records,
        "predicted_tokens": predicted,
        "predicted_characters": get("predicted_characters"),
        "characters_per_predicted_token": job.share(get("predicted_characters"), predicted),
        "unpredicted_first_tokens": get("unpredicted_first_tokens"),
        "dropped_tail_tokens": get("dropped_tail_tokens"),
        "dropped_tail_share": job.share(get("dropped_tail_tokens"), get("tokens")),
    }
    accounted = predicted + get("unpredicted_first_tokens") + get("dropped_tail_tokens")
    if not statistics["tokens"] == get("packed_tokens") == accounted:
        raise RuntimeError(
            f"The {split} tokens are unaccounted for: {statistics['tokens']} tokenized, "
            f"{get('packed_tokens')} packed, but {ACCOUNTING} gives {accounted} "
            f"(sequence_length {sequence_length}): {statistics}."
        )
    return statistics

def _warnings(statistics, parameters, has_validation):
    warnings = []
    if not has_validation:
        warnings.append("No validation split: pass --validation_fraction or "
                        "--validation_file to measure held-out loss.")
    for split in SPLITS if has_validation else ("train",):
        split_stats = statistics[split]
        if not split_stats["records"]:
            warnings.append(
                f"The {split} split has no record: it holds {split_stats['tokens']} ids, "
                f"fewer than one record of --sequence_length + 1 = "
                f"{parameters['sequence_length'] + 1} per bucket.")
        if split_stats["dropped_tail_share"] > 0.01:
            warnings.append(
                f"{split_stats['dropped_tail_share']:.1%} of the {split} ids are dropped "
                "stream tails; raise --packing_bucket_tokens for fewer, longer streams.")
        if split_stats["unknown_tokens"]:
            warnings.append(
                f"{split_stats['unknown_share']:.4%} of the {split} ids are unknown "
                "(characters or pieces the vocabulary lacks).")
    return warnings

def stats_from_counts(counts, parameters, vocabulary, shards):
    """The stats.json dict.

    Args:
        counts: the job's summed counts: the input reader's (unprefixed),
            the validation files' reader's (prefixed "validation_file_"),
            and each split's tokenizing and packing counts (prefixed
            "train_" and "validation_").
        parameters: every flag and "beam_arguments"; "sequence_length",
            "validation_file" and "validation_fraction" are read.
        vocabulary: the "vocabulary" entry (kind, file, size, SHA-256,
            whether learned and how).
        shards: `{split: {"files": glob, "num_shards": n}}` for the splits
            written.

    Returns:
        The dict with "parameters", "lines" ("input_file",
        "validation_file" or None), "documents", "train" and "validation"
        (`split_statistics`, and their "shards"), "accounting" (the
        identity checked), "vocabulary" and "warnings".

    Raises:
        RuntimeError: something is unaccounted for (see the stats'
            comment).
    """
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    length = parameters["sequence_length"]
    has_validation_files = bool(parameters.get("validation_file"))
    has_validation = has_validation_files or bool(parameters.get("validation_fraction"))
    splits = {split: split_statistics(counts, split, length) for split in SPLITS}
    for split, files in shards.items():
        splits[split]["shards"] = files
    read = get("documents_read") + get(VALIDATION_FILE_PREFIX + "documents_read")
    documents = {
        "read": read,
        "skipped": {"empty": sum(get(f"{split}_documents_skipped_empty")
                                 for split in SPLITS)},
        **{split: splits[split]["documents"] for split in SPLITS},
    }
    if read != sum(splits[split]["documents"] for split in SPLITS) + sum(
            documents["skipped"].values()):
        raise RuntimeError(f"Documents are unaccounted for: {documents}.")
    statistics = {
        "parameters": parameters,
        "lines": {
            "input_file": line_statistics(counts),
            "validation_file": (line_statistics(counts, VALIDATION_FILE_PREFIX)
                                if has_validation_files else None),
        },
        "documents": documents,
        **splits,
        "accounting": ACCOUNTING,
        "vocabulary": vocabulary,
    }
    statistics["warnings"] = _warnings(statistics, parameters, has_validation)
    return statistics

def _prefixed(counts, prefix):
    return {prefix + name: value for name, value in counts.items()}

def _vocabulary_entry(spec, units, learned, settings):
    """The stats' "vocabulary": the descriptor's fields and how it was made."""
    descriptor = lm_tokenizers.descriptor(spec, lm_tokenizers.TOKENIZER_FILES[spec.kind])
    return {
        "kind": descriptor.kind,
        "file": descriptor.file,
        "size": descriptor.vocabulary_size,
        "sha256": descriptor.sha256,
        "end_of_document_id": descriptor.end_of_document_id,
        "unknown_id": descriptor.unknown_id,
        "pad_id": descriptor.pad_id,
        "learned": learned,
        "learned_from": units if learned else None,
        **settings,
    }

def _shards_entry(output_dir, split, num_shards, gzip):
    suffix = ".tfrecord.gz" if gzip else ".tfrecord"
    prefix = os.path.join(output_dir, SHARD_PREFIXES[split])
    return {"files": shard_file_name(prefix, 0, num_shards, suffix).replace(
        "-00000-of-", "-?????-of-"), "num_shards": num_shards, "gzip": gzip}

def summary_line(stats, seconds):
    """The line `job.run_job` logs: records, tokens and characters per split."""
    parts = []
    for split in SPLITS:
        split_stats = stats[split]
        if split_stats["documents"] or split == "train":
            parts.append(
                f"{split}: {split_stats['records']} records from {split_stats['documents']} "
                f"documents, {split_stats['tokens']} tokens ({split_stats['dropped_tail_tokens']} "
                f"dropped), {split_stats['characters_per_predicted_token']:.2f} characters "
                "per token")
    return (f"Wrote {stats['parameters']['output_dir']} in {seconds:.1f} s; "
            f"{'; '.join(parts)}; vocabulary {stats['vocabulary']['size']} "
            f"({stats['vocabulary']['kind']}).")

def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no training record is an
    error; no validation record, where a validation split was asked for, a
    warning (a small split may hold less than one record)."""
    parameters = stats["parameters"]
    error = None
    if not stats["train"]["records"]:
        error = (f"wrote no training record: {_too_few_tokens(stats, 'train')}; give more "
                 "text or a shorter --sequence_length")
    warnings = []
    asked = parameters.get("validation_file") or parameters.get("validation_fraction")
    if asked and not stats["validation"]["records"]:
        more = ("more --validation_file text" if parameters.get("validation_file")
                else "a larger --validation_fraction")
        warnings.append(
            f"wrote no validation record: {_too_few_tokens(stats, 'validation')}; give "
            f"{more} or a shorter --sequence_length")
    return error, warnings

def _too_few_tokens(stats, split):
    """Why a split made no record: its tokens, too few for one."""
    split_stats, length = stats[split], stats["parameters"]["sequence_length"]
    documents = split_stats["documents"]
    tokens = (f"the {split} split's {split_stats['tokens']} tokens (from {documents} "
              f"document{'' if documents == 1 else 's'})")
    if split_stats["buckets"] > 1:
        return (f"{tokens}, packed in {split_stats['buckets']} streams of about "
                "--packing_bucket_tokens, fill no window of --sequence_length="
                f"{length} + 1 ids")
    return f"{tokens} are fewer than --sequence_length={length} + 1"

def build_pipeline(pipeline, read_input, output_dir, *, tokenizer_options, sequence_length,
                   packing_bucket_tokens, read_validation=None, validation_fraction=0.0,
                   num_shards=DEFAULT_NUM_SHARDS, num_validation_shards=1,
                   gzip=False, parameters=None, vocabulary_settings=None):
    """Adds the whole job to `pipeline`.

    1. Read documents whole, their line breaks kept
       (`document_texts.ReadDocumentTexts`: blank-line-separated blocks,
       whole files, or jsonl records), every line counted.
    2. Key each document by the SHA-256 of its text and split off
       validation (`SplitDocuments`: `validation_fraction` of
       the key space), or read `--validation_file` as the validation split.
    3. Learn the tokenizer from the training split only
       (`lm_tokenizers.LearnTokenizer`): every character seen
       (`--min_character_count`), or a SentencePiece BPE/unigram model
       (identity normalization, spaces kept, byte fallback, so detokenized
       text is the text and "\\n" survives as a byte piece) from a
       deterministic sample of lines; or take `--vocab_file` (a
       SentencePiece model, or a WordPiece vocabulary).
    4. Tokenize each document in the workers with the plain-Python
       tokenizer (no TensorFlow; the ids of the in-graph `tfnlp.text`
       tokenizer), append the end-of-document id
       (`TokenizeLanguageModelDocuments`).
    5. Pack (`lm_packing.PackLanguageModelRecords`): documents spread over
       `ceil(tokens / packing_bucket_tokens)` buckets by key, each bucket
       one stream in key order, cut into windows of `sequence_length + 1`
       ids overlapping by one.
    6. Write the records (`tfnlp.data.language_model_schema`) with
       `WriteShardedTFRecords`, the tokenizer's file and descriptor, and
       the stats.

    It writes, through Beam's filesystems:

    - `DIR/train-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with `gzip`) and,
      with a validation split, `DIR/validation-SSSSS-of-NNNNN.tfrecord`:
      `token_ids` (int64, `sequence_length + 1`) and `character_count`;
    - the tokenizer's file: `DIR/characters.txt`, `DIR/sentencepiece.model`
      (and `.vocab`, learned) or `DIR/vocab.txt`; and `DIR/tokenizer.json`
      (`tfnlp.text.tokenizer_descriptor`), which
      `tfnlp.text.load_language_model_tokenizer(DIR)` reads;
    - `DIR/stats.json` (`stats_from_counts`): every parameter; lines read, used
      and skipped by reason; documents read, per split, skipped; per split
      the documents, tokens, characters, unknown share, records, predicted
      tokens and characters, unpredicted first tokens and dropped tail
      tokens, with `tokens == records * sequence_length +
      unpredicted_first_tokens + dropped_tail_tokens` checked; the
      vocabulary (kind, size, SHA-256).

    Determinism: keys, splits, buckets, the stream's order, the learned
    vocabulary or model and the shards depend on the input text alone, so
    every file is byte-identical whatever the runner or the number of
    workers. Scale: files of blank-line documents and jsonl are read in
    parallel (a `--document_boundary=file` file is one document, held whole
    by one worker); a worker packs one bucket (about
    `packing_bucket_tokens` ids); a shard is sorted in one worker's memory.

    Args:
        pipeline: a `beam.Pipeline`.
        read_input: the `document_texts.ReadDocumentTexts` of `--input_file`.
        output_dir: where the shards, the tokenizer and stats.json go.
        tokenizer_options: the `lm_tokenizers.TokenizerOptions`.
        sequence_length: each record holds `sequence_length + 1` ids.
        packing_bucket_tokens: about how many ids one stream holds.
        read_validation: the `ReadDocumentTexts` of `--validation_file`, or
            None to split the input by `validation_fraction`.
        validation_fraction: the share of the input's documents held out.
        num_shards, num_validation_shards: the TFRecord files per split.
        gzip: write gzip-compressed shards.
        parameters: the job's parameters, recorded in stats.json (at least
            "sequence_length", "validation_file", "validation_fraction").
        vocabulary_settings: how the vocabulary was asked for, recorded in
            its stats entry.
    """
    texts, counts = pipeline | "ReadInput" >> read_input
    all_counts = [counts]
    if read_validation is None:
        train, validation = texts | "SplitDocuments" >> SplitDocuments(
            validation_fraction)
    else:
        train = texts | "KeyTrain" >> beam.Map(keyed)
        validation_texts, validation_counts = pipeline | "ReadValidation" >> read_validation
        validation = validation_texts | "KeyValidation" >> beam.Map(keyed)
        all_counts.append(validation_counts | "PrefixValidationCounts" >> beam.Map(
            _prefixed, VALIDATION_FILE_PREFIX))
    spec, units = (train | "TrainTexts" >> beam.Values()
                   | "Tokenizer" >> lm_tokenizers.LearnTokenizer(tokenizer_options))
    _ = spec | "WriteTokenizer" >> beam.Map(lm_tokenizers.write_tokenizer, output_dir)

    has_validation = read_validation is not None or validation_fraction > 0
    shards = {"train": num_shards, "validation": num_validation_shards}
    for split, documents in (("train", train), ("validation", validation)):
        label = split.capitalize()
        tokenized, tokenize_counts = documents | f"Tokenize{label}" >> (
            TokenizeLanguageModelDocuments(spec, split))
        records, pack_counts = tokenized | f"Pack{label}" >> (
            lm_packing.PackLanguageModelRecords(sequence_length, packing_bucket_tokens, split))
        all_counts += [tokenize_counts, pack_counts]
        if split == "train" or has_validation:
            _ = records | f"Write{label}" >> WriteShardedTFRecords(
                os.path.join(output_dir, SHARD_PREFIXES[split]), shards[split], gzip)
    vocabulary = spec | "DescribeVocabulary" >> beam.Map(
        _vocabulary_entry, units=beam.pvalue.AsSingleton(units),
        learned=tokenizer_options.given is None, settings=vocabulary_settings or {})
    shard_entries = {split: _shards_entry(output_dir, split, count, gzip)
                     for split, count in shards.items() if split == "train" or has_validation}
    _ = (
        all_counts
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        | "Stats" >> beam.Map(
            stats_from_counts,
            parameters or {"sequence_length": sequence_length,
                           "validation_file": read_validation is not None,
                           "validation_fraction": validation_fraction},
            vocabulary=beam.pvalue.AsSingleton(vocabulary), shards=shard_entries)
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, file_names.STATS_FILE))
    )

def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        UsageError (a ValueError): `--vocab_file` cannot be read or is not
            a valid model or vocabulary, a SentencePiece learning flag is
            out of range, or `--output_dir` cannot be written (all before
            anything is written or run); SentencePiece cannot learn the
            model (during the run), or no training record is written
            (after it).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = parse_arguments(argv)
    text_input.match_input_files(flags.input_file, flag="--input_file")
    if flags.validation_file:
        text_input.match_input_files(flags.validation_file, flag="--validation_file")
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "a SentencePiece model (.model)" if flags.tokenizer == "sentencepiece"
                         else "a WordPiece vocabulary, one token a line")
    with usage_errors(ValueError):
        options = tokenizer_options(flags)
        read_input = document_texts.ReadDocumentTexts(
            flags.input_file, flags.input_format, flags.document_boundary, flags.max_line_bytes)
        read_validation = document_texts.ReadDocumentTexts(
            flags.validation_file, flags.input_format, flags.document_boundary,
            flags.max_line_bytes) if flags.validation_file else None
    check_output_directory("--output_dir", flags.output_dir)
    parameters = {**vars(flags), "beam_arguments": list(beam_arguments)}
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, read_input, flags.output_dir,
            tokenizer_options=options,
            sequence_length=flags.sequence_length,
            packing_bucket_tokens=flags.packing_bucket_tokens,
            read_validation=read_validation,
            validation_fraction=flags.validation_fraction,
            num_shards=flags.num_shards,
            num_validation_shards=flags.num_validation_shards,
            gzip=flags.gzip,
            parameters=parameters,
            vocabulary_settings=vocabulary_settings(flags),
        ),
        beam_arguments,
        name="lm-data",
        stats_file=os.path.join(flags.output_dir, file_names.STATS_FILE),
        summary_line=summary_line,
        logger=LOGGER,
        output_problems=output_problems,
    )

if __name__ == "__main__":
    job.command_line_main("pipelines.lm_data")

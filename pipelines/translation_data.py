"""Translation training data (subword-id pairs) with Apache Beam.

Reads sentence pairs (line-aligned files, tsv or jsonl); writes TFRecord
shards of SentencePiece id pairs, the learned model(s) and DIR/stats.json;
`build_pipeline` says what it reads, drops and writes.

    python -m pipelines.translation_data --source_file=GLOB \\
      --target_file=GLOB --output_dir=DIR [--shared_vocab] [--vocab_file=MODEL]
    python -m pipelines.translation_data --input_format=tsv|jsonl \\
      --input_file=GLOB --output_dir=DIR ...
"""

import hashlib
import logging
import math
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import job, sentencepiece_model, text_input, translation_pairs
from pipelines.job_flags import (
    add_gzip_flag,
    add_input_file_flag,
    add_num_shards_flag,
    add_output_dir_flag,
    add_sentencepiece_flags,
)
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name
from tfnlp.command_line import (
    ArgumentParser,
    add_boolean_flag,
    check_input_file,
    check_output_directory,
    usage_errors,
)
from tfnlp.data import translation_schema
from tfnlp.data.file_names import (
    SENTENCEPIECE_MODEL,
    STATS_FILE,
    TRANSLATION_SHARD_PREFIX,
)

LOGGER = logging.getLogger(__name__)
DEFAULT_NUM_SHARDS = 16
SHARD_PREFIX = TRANSLATION_SHARD_PREFIX
SHARED_MODEL_NAME = os.path.splitext(SENTENCEPIECE_MODEL)[0]
SIDES = ("source", "target")
LENGTH_BIN = 8
TOKENIZE_DROP_REASONS = ("empty", "too_long", "length_ratio", "duplicate")
_SIDE_COUNTS = ("ids", "unk_ids", "byte_ids", "pairs_with_unk", "pairs_with_byte_fallback")
COUNTER_NAMES = (
    "pairs_kept",
    *(f"pairs_dropped_{reason}" for reason in TOKENIZE_DROP_REASONS),
    *(f"{side}_{name}" for side in SIDES for name in _SIDE_COUNTS),
)
DROP_REASONS = (*translation_pairs.READ_DROP_REASONS, *TOKENIZE_DROP_REASONS)
# What to change when every pair is dropped, by the reasons they were.
DROP_REMEDIES = {
    "too_long": "raise --max_length",
    "length_ratio": "raise --max_length_ratio (0 turns it off)",
}
INPUT_REMEDY = "check the input files, --input_format and the field flags"


# The flags: `parse_arguments` parses them, splits `--vocab_file` into its
# paths and checks the values (`flag_problems`: one usage error naming every
# problem); `main` then checks the paths they name (inputs matched, the given
# models read and validated, the output directory written) before the job
# starts.
def build_parser():
    """The job's argument parser (the checks of `flag_problems` come after)."""
    parser = ArgumentParser(
        prog="python -m pipelines.translation_data",
        description="Translation-pair TFRecords of SentencePiece ids, with Beam.",
        epilog="Text is normalized by SentencePiece's nmt_nfkc rules (NFKC, control "
        "characters dropped, spaces collapsed and trimmed) before tokenizing, and "
        "detokenizes to that normalized text. Writes DIR/translation-SSSSS-of-NNNNN"
        ".tfrecord, the learned model(s) (DIR/sentencepiece.model with "
        "--shared_vocab, else DIR/source.model and DIR/target.model, each with a "
        ".vocab) and DIR/stats.json. Other options go to Beam.",
        allow_abbrev=False,
    )
    _add_input_flags(parser)
    _add_vocabulary_flags(parser)
    _add_record_flags(parser)
    return parser

def _add_input_flags(parser):
    parser.add_argument("--source_file",
                        help="Comma-separated globs of the source-language files "
                        "(line-aligned input).")
    parser.add_argument("--target_file",
                        help="Comma-separated globs of the target-language files; "
                        "sorted, they pair one to one with the source files.")
    add_input_file_flag(parser, "the tsv or jsonl files", required=False)
    parser.add_argument("--input_format", choices=translation_pairs.INPUT_FORMATS,
                        default="aligned",
                        help="aligned: --source_file/--target_file, line i of one "
                        "translates line i of the other; tsv: source<TAB>target per "
                        "line; jsonl: a JSON object per line (see --source_field).")
    parser.add_argument("--source_field", default="source",
                        help="jsonl: the field of the source string (a dotted "
                        "name such as translation.en reaches into objects).")
    parser.add_argument("--target_field", default="target",
                        help="jsonl: the field of the target string.")
    add_output_dir_flag(parser, "the shards, the model(s) and stats.json")

def _add_vocabulary_flags(parser):
    add_boolean_flag(parser, "shared_vocab", False,
                     "Learn (or use) one SentencePiece model for both languages: "
                     "recommended, and required by a Transformer that shares its "
                     "embeddings. Without it each side has its own model.")
    vocabulary = parser.add_mutually_exclusive_group()
    vocabulary.add_argument("--vocab_file",
                            help="Use existing SentencePiece model(s) instead of "
                            "learning: one .model with --shared_vocab, else "
                            "SOURCE.model,TARGET.model. They must have pad_id=0, "
                            "unk_id=1, bos_id=2, eos_id=3.")
    add_sentencepiece_flags(parser, "unigram", "sentences (per model)",
                            models="each learned model",
                            coverage_examples="1.0 for alphabetic languages, 0.9995 for "
                                              "Chinese or Japanese",
                            vocab_size_group=vocabulary)

def _add_record_flags(parser):
    parser.add_argument("--max_length", type=int, default=128,
                        help="Drop pairs with more ids than this on either side, "
                        "EOS included.")
    parser.add_argument("--max_length_ratio", type=float, default=9.0,
                        help="Drop pairs whose longer side has more than this many "
                        "times the subword ids of the shorter (0: keep all).")
    add_boolean_flag(parser, "dedupe", False,
                     "Keep one of each set of identical pairs (identical ids, i.e. "
                     "identical normalized text).")
    add_num_shards_flag(parser, DEFAULT_NUM_SHARDS)
    add_gzip_flag(parser)
    add_boolean_flag(parser, "check_line_counts", True,
                     "Before the job, count the lines of each aligned file pair "
                     "and stop if they differ (streams the files through this "
                     "process once; turn off for huge remote corpora).")

def vocab_files_from_flag(value):
    """The paths of a comma-separated `--vocab_file`, empty entries ignored."""
    return [path.strip() for path in value.split(",") if path.strip()]

def flag_problems(flags):
    """The problems of the parsed flags' values, as sentences (empty: none);
    `flags.vocab_file` is already a list, or None."""
    problems = []
    if flags.vocab_file is not None:
        wanted = 1 if flags.shared_vocab else 2
        if len(flags.vocab_file) != wanted:
            problems.append(
                f"--vocab_file names {len(flags.vocab_file)} model(s) but "
                + ("--shared_vocab uses exactly one." if flags.shared_vocab else
                   "without --shared_vocab it takes SOURCE.model,TARGET.model (or "
                   "pass --shared_vocab to use one model for both sides).")
            )
    if flags.max_length < 2:
        problems.append("--max_length must be at least 2 (one subword and EOS).")
    if flags.max_length_ratio != 0 and flags.max_length_ratio < 1:
        problems.append("--max_length_ratio must be at least 1, or 0 to keep all.")
    for name in ("num_shards", "vocab_sample_size"):
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1.")
    return problems

def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`; `flags.vocab_file` is a list of one or
        two paths, or None.

    Raises:
        SystemExit: a flag is missing, invalid or inconsistent (argparse's
            usage error).
    """
    parser = build_parser()
    flags, beam_arguments = job.split_arguments(parser, argv)
    if flags.vocab_file is not None:
        flags.vocab_file = vocab_files_from_flag(flags.vocab_file)
    problems = flag_problems(flags)
    if problems:
        parser.error(" ".join(problems))
    return flags, beam_arguments

def check_input_paths(flags):
    """Checks, before the job, that each input glob matches and that each
    `--vocab_file` can be read.

    Raises:
        FileNotFoundError: an input glob matches no file.
        UsageError: a `--vocab_file` cannot be read.
    """
    for name in ("source_file", "target_file", "input_file"):
        if getattr(flags, name):
            text_input.match_input_files(getattr(flags, name), flag=f"--{name}")
    for path in flags.vocab_file or ():
        check_input_file("--vocab_file", path, "a SentencePiece model (.model)")

def read_given_models(vocab_files, shared_vocab):
    """The models of `--vocab_file`, read and checked before the job.

    Args:
        vocab_files: the paths, one with `shared_vocab`, else the source's
            and the target's.
        shared_vocab: one model for both sides.

    Returns:
        `(models, model_files)`: `{side: the model's bytes}` and
        `{side: path}`.

    Raises:
        ValueError: a model is not a SentencePiece model with the special
            ids PAD 0, UNK 1, BOS 2, EOS 3.
    """
    paths = vocab_files * 2 if shared_vocab else vocab_files
    model_files = dict(zip(SIDES, paths))
    models = {}
    for side, path in model_files.items():
        models[side] = job.read_file(path)
        sentencepiece_model.load_processor(models[side], f"--vocab_file {path}")
    return models, model_files

# From string pairs to translation records: `TokenizeTranslationPairs`
# drops pairs by the rules of `build_pipeline` ("empty", "too_long",
# "length_ratio", "duplicate": `TOKENIZE_DROP_REASONS`) and counts every
# pair: by reason, and per side of the kept pairs (`SIDES`) the ids, [UNK]
# and byte-fallback ids and lengths in bins of `LENGTH_BIN`.
class _TokenizePairs(job.CountingDoFn):
    """Tokenizes `(source, target)` pairs and drops those that fail a filter.

    The models come as side inputs (serialized bytes); each is loaded once
    per worker. The output is `(record, summary)` per pair kept, where
    `summary` is `pair_summary`'s tuple.
    """

    COUNTER_NAMES = tuple(f"pairs_dropped_{reason}" for reason in
                          ("empty", "too_long", "length_ratio"))

    def __init__(self, max_length, max_length_ratio):
        self._max_length = max_length
        self._max_length_ratio = max_length_ratio

    def setup(self):
        self._models = {}  # model bytes -> (processor, byte-piece ids)
        self._recent = []  # (bytes object, model): found by identity, no compare

    def _model(self, model_proto):
        for proto, model in self._recent:
            if proto is model_proto:
                return model
        model = self._models.get(model_proto)
        if model is None:
            processor = sentencepiece_model.load_processor(model_proto)
            byte_ids = frozenset(index for index in range(processor.get_piece_size())
                                 if processor.is_byte(index))
            model = self._models[model_proto] = (processor, byte_ids)
        self._recent = [(model_proto, model), *self._recent[:1]]
        return model

    def process(self, pair, source_model, target_model):
        source_processor, source_bytes = self._model(source_model)
        target_processor, target_bytes = self._model(target_model)
        source_ids = source_processor.encode(pair[0])
        target_ids = target_processor.encode(pair[1])
        source_length, target_length = len(source_ids), len(target_ids)
        if not source_length or not target_length:
            self.counts["pairs_dropped_empty"] += 1
            return
        if max(source_length, target_length) + 1 > self._max_length:
            self.counts["pairs_dropped_too_long"] += 1
            return
        ratio = self._max_length_ratio
        if ratio and max(source_length, target_length) > ratio * min(
                source_length, target_length):
            self.counts["pairs_dropped_length_ratio"] += 1
            return
        source_ids.append(translation_schema.EOS_ID)
        target_ids.append(translation_schema.EOS_ID)
        yield (
            translation_schema.serialize_pair(source_ids, target_ids),
            pair_summary(source_ids, source_bytes) + pair_summary(target_ids, target_bytes),
        )

def pair_summary(ids, byte_ids):
    """`(length, unk_ids, byte_ids)` of one side's ids (EOS included in the
    length, counted in neither share)."""
    return (
        len(ids),
        sum(1 for index in ids if index == translation_schema.UNK_ID),
        sum(1 for index in ids if index in byte_ids),
    )

class _KeepOne(beam.CombineFn):
    """Keeps one value per key and counts the values: `(value, count)`."""

    def create_accumulator(self):
        return None, 0

    def add_input(self, accumulator, value):
        kept, count = accumulator
        return (value if kept is None else kept), count + 1

    def merge_accumulators(self, accumulators):
        kept, total = None, 0
        for value, count in accumulators:
            if kept is None:
                kept = value
            total += count
        return kept, total

    def extract_output(self, accumulator):
        return accumulator

class _CountDuplicates(job.CountingDoFn):
    """`(record, (summary, count))` -> `(record, summary)`, counting the
    `count - 1` duplicates dropped."""

    COUNTER_NAMES = ("pairs_dropped_duplicate",)

    def process(self, keyed):
        record, (summary, count) = keyed
        self.counts["pairs_dropped_duplicate"] += count - 1
        yield record, summary

class _CountKeptPairs(job.CountingDoFn):
    """Counts the kept pairs (lengths, [UNK] and byte pieces per side) and
    yields their records."""

    COUNTER_NAMES = COUNTER_NAMES

    def process(self, record_and_summary):
        record, summary = record_and_summary
        counts = self.counts
        counts["pairs_kept"] += 1
        for side, (length, unknown, byte_pieces) in zip(
                SIDES, (summary[:3], summary[3:])):
            counts[f"{side}_ids"] += length - 1
            counts[f"{side}_unk_ids"] += unknown
            counts[f"{side}_byte_ids"] += byte_pieces
            counts[f"{side}_pairs_with_unk"] += unknown > 0
            counts[f"{side}_pairs_with_byte_fallback"] += byte_pieces > 0
            self.count(f"{side}_length_bin_{(length - 1) // LENGTH_BIN}")
        yield record

class TokenizeTranslationPairs(beam.PTransform):
    """String pairs in, serialized translation records out, every pair counted.

    Applied to a PCollection of `(source, target)` string pairs, it
    tokenizes each side with its SentencePiece model (the Python
    `sentencepiece` package: the ids of `tfnlp.text.SentencePieceTokenizer`
    with the same model), drops pairs by the rules of `build_pipeline`
    ("empty", "too_long", "length_ratio", and with `dedupe` "duplicate"),
    appends EOS to both sides and serializes the kept pairs with
    `tfnlp.data.translation_schema.serialize_pair`.

    It returns two PCollections: the records (bytes, in no particular
    order) and a single dict of counts: "pairs_kept",
    "pairs_dropped_<reason>", and per side ("source_", "target_") "ids"
    (without EOS), "unk_ids", "byte_ids", "pairs_with_unk",
    "pairs_with_byte_fallback" and "length_bin_<b>" (kept pairs whose side
    has `8 b + 1` to `8 b + 8` ids, EOS included). So
    `len(pairs) == pairs_kept + sum of the drops`.

    Args:
        source_model: a single-element PCollection of the source model's
            bytes (a `.model` file's contents), used as a side input.
        target_model: the same for the target side (the same PCollection
            for a shared model).
        max_length: the most ids a side may have, EOS included.
        max_length_ratio: the most times the longer side's subword ids may
            outnumber the shorter side's (0: no limit).
        dedupe: keep one of each set of pairs with identical records.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> from pipelines import sentencepiece_model
    >>> model = sentencepiece_model.train_sentencepiece(
    ...     [f"a small sentence {i}" for i in range(200)],
    ...     sentencepiece_model.SentencePieceOptions(vocab_size=280))
    >>> with beam.Pipeline() as pipeline:
    ...     models = pipeline | "Model" >> beam.Create([model])
    ...     records, counts = (
    ...         pipeline | beam.Create([("a small sentence", "a sentence"), ("", "x")])
    ...         | TokenizeTranslationPairs(models, models, max_length=16))
    ...     _ = counts | beam.Map(lambda c: print(c["pairs_kept"], c["pairs_dropped_empty"]))
    1 1

    References:
        - [Kudo & Richardson, 2018. SentencePiece](https://arxiv.org/abs/1808.06226)
        - [Koehn et al., 2007. Moses: Open Source Toolkit for Statistical
          Machine Translation](https://aclanthology.org/P07-2045)
          (clean-corpus-n.perl's length and ratio filters)
    """

    def __init__(self, source_model, target_model, max_length, max_length_ratio=9.0,
                 dedupe=False, label=None):
        super().__init__(label)
        self.source_model = source_model
        self.target_model = target_model
        self.max_length = max_length
        self.max_length_ratio = max_length_ratio
        self.dedupe = dedupe

    def expand(self, pairs):
        tokenized = pairs | "Tokenize" >> beam.ParDo(
            _TokenizePairs(self.max_length, self.max_length_ratio),
            source_model=beam.pvalue.AsSingleton(self.source_model),
            target_model=beam.pvalue.AsSingleton(self.target_model),
        ).with_outputs(job.COUNTS_TAG, main="records")
        records, counts = tokenized.records, [tokenized[job.COUNTS_TAG]]
        if self.dedupe:
            deduplicated = (
                records
                | "KeepOnePerRecord" >> beam.CombinePerKey(_KeepOne())
                | "CountDuplicates" >> beam.ParDo(_CountDuplicates()).with_outputs(
                    job.COUNTS_TAG, main="records")
            )
            records = deduplicated.records
            counts.append(deduplicated[job.COUNTS_TAG])
        kept = records | "CountKept" >> beam.ParDo(_CountKeptPairs()).with_outputs(
            job.COUNTS_TAG, main="records")
        counts.append(kept[job.COUNTS_TAG])
        summed = (
            counts
            | "AllCounts" >> beam.Flatten()
            | "SumCounts" >> beam.CombineGlobally(job.SumCounts(COUNTER_NAMES))
        )
        return kept.records, summed

def model_paths(output_dir, shared_vocab):
    """Where the learned models go: `{side: (model_file, vocab_file)}`."""
    names = dict.fromkeys(SIDES, SHARED_MODEL_NAME) if shared_vocab else {
        side: side for side in SIDES}
    return {
        side: (os.path.join(output_dir, f"{name}.model"),
               os.path.join(output_dir, f"{name}.vocab"))
        for side, name in names.items()
    }

def learn_models(pairs, files, shared_vocab, options, sample_size):
    """Adds the learning of the model(s) and the writing of their files.

    Args:
        pairs: the PCollection of `(source, target)` pairs.
        files: `model_paths`'s dict.
        shared_vocab: learn one model over both sides' sentences, else one
            per side.
        options: the `sentencepiece_model.SentencePieceOptions`.
        sample_size: the most sentences each model learns from.

    Returns:
        `(source_model, target_model, sample_sizes)`: the single-element
        PCollections of the serialized models (the same one when shared),
        and `{name: PCollection of the sample size}` ("shared", or "source"
        and "target").
    """
    if shared_vocab:
        sentences = (
            (pairs | "SourceSentences" >> beam.Keys(),
             pairs | "TargetSentences" >> beam.Values())
            | "BothSides" >> beam.Flatten()
        )
        learned = {"shared": sentences | "LearnSharedModel" >> (
            sentencepiece_model.LearnSentencePieceModel(
                options, sample_size, name="the shared"))}
    else:
        learned = {
            side: pairs | f"{side.capitalize()}Sentences" >> select()
            | f"Learn{side.capitalize()}Model" >> (
                sentencepiece_model.LearnSentencePieceModel(
                    options, sample_size, name=f"the {side}"))
            for side, select in (("source", beam.Keys), ("target", beam.Values))
        }
    for name, (model, _) in learned.items():
        model_file, vocab_file = files["source" if name == "shared" else name]
        label = name.capitalize()
        _ = model | f"Write{label}Model" >> beam.Map(job.write_file, model_file)
        _ = (model | f"{label}VocabBytes" >> beam.Map(sentencepiece_model.vocab_file_bytes)
             | f"Write{label}Vocab" >> beam.Map(job.write_file, vocab_file))
    models = [model for model, _ in learned.values()]
    return models[0], models[-1], {name: used for name, (_, used) in learned.items()}

def _create_models(pipeline, models, shared_vocab):
    """The single-element PCollections of the given models' bytes: the
    source's and the target's (the same one when shared)."""
    source_model = pipeline | "SourceModel" >> beam.Create([models["source"]])
    target_model = (source_model if shared_vocab else
                    pipeline | "TargetModel" >> beam.Create([models["target"]]))
    return source_model, target_model

# The stats, `DIR/stats.json` (`stats_from_counts`): every pair read is kept
# or dropped for one of `DROP_REASONS` (checked); per side the lengths and
# shares of the kept pairs (`side_statistics`); the vocabularies
# (`vocabulary_entry`); the shards. `summary_line` is the line `job.run_job`
# logs at the end; `output_problems`, its error when no pair is kept.
def side_statistics(counts, side, max_length):
    """One side's statistics over the kept pairs.

    Args:
        counts: the job's summed counts.
        side: "source" or "target".
        max_length: the job's `--max_length` (sizes the histogram).

    Returns:
        A dict: "ids" (subword ids, without EOS), "mean_length" (ids per
        pair, EOS included, like the records), "length_histogram" (kept
        pairs by length, EOS included, in bins of 8: "0001-0008", ...),
        "unk_share" and "byte_fallback_share" (of the subword ids),
        "pairs_with_unk" and "pairs_with_byte_fallback".
    """
    get = lambda name: counts.get(f"{side}_{name}", 0)  # noqa: E731
    kept = counts.get("pairs_kept", 0)
    return {
        "ids": get("ids"),
        "mean_length": job.share(get("ids") + kept, kept),
        "length_histogram": {
            f"{b * LENGTH_BIN + 1:04d}-{(b + 1) * LENGTH_BIN:04d}": get(f"length_bin_{b}")
            for b in range(math.ceil(max_length / LENGTH_BIN))
        },
        "unk_share": job.share(get("unk_ids"), get("ids")),
        "byte_fallback_share": job.share(get("byte_ids"), get("ids")),
        "pairs_with_unk": get("pairs_with_unk"),
        "pairs_with_byte_fallback": get("pairs_with_byte_fallback"),
    }

def model_description(model_proto, model_file, vocab_file):
    """A vocabulary's entry in stats.json: its files, size and SHA-256."""
    processor = sentencepiece_model.load_processor(model_proto, model_file)
    return {
        "model_file": model_file,
        "vocab_file": vocab_file,
        "size": processor.get_piece_size(),
        "sha256": hashlib.sha256(model_proto).hexdigest(),
    }

def vocabulary_entry(source_model, target_model, shared, learned, files,
                     sample_sentences):
    """The stats' "vocabulary": whether shared and learned, the sentences
    each learned model saw, and per side `model_description`'s dict.

    Args:
        source_model, target_model: the serialized models.
        shared: one model for both sides.
        learned: the job learned the model(s).
        files: `{side: (model_file, vocab_file)}`.
        sample_sentences: `{name: sentences learned from}` per learned
            model ("shared", or "source" and "target").
    """
    return {
        "shared": shared,
        "learned": learned,
        "sample_sentences": sample_sentences,
        **{side: model_description(model, *files[side])
           for side, model in zip(SIDES, (source_model, target_model))},
    }

def _describe_vocabulary(pipeline, source_model, target_model, sample_sizes, files,
                         shared_vocab, learned):
    """The single-element PCollection of the stats' "vocabulary"
    (`vocabulary_entry`)."""
    sample_sentences = [
        used | f"NameSampleSize{name.capitalize()}" >> beam.Map(lambda n, name=name: (name, n))
        for name, used in sample_sizes.items()
    ] or [pipeline | "NoSample" >> beam.Create([])]
    return source_model | "DescribeVocabulary" >> beam.Map(
        vocabulary_entry,
        target_model=beam.pvalue.AsSingleton(target_model),
        shared=shared_vocab,
        learned=learned,
        files=files,
        sample_sentences=beam.pvalue.AsDict(
            sample_sentences | "SampleSizes" >> beam.Flatten()),
    )

def _shards_entry(prefix, num_shards, gzip):
    """The stats' "shards": the shard-name pattern, the count, gzip."""
    suffix = ".tfrecord.gz" if gzip else ".tfrecord"
    return {
        "files": shard_file_name(prefix, 0, num_shards, suffix).replace(
            "-00000-of-", "-?????-of-"),
        "num_shards": num_shards,
        "gzip": gzip,
    }

def _warnings(read, kept, dropped, unknown, max_length):
    warnings = []
    if not kept:
        warnings.append("No pair was kept: the shards are empty. See pairs_dropped.")
    if unknown:
        warnings.append(
            f"{unknown} of the kept ids are [UNK]: the model lacks byte fallback "
            "(or the pieces for some characters); learn one with the job, which "
            "uses byte_fallback=True, to keep every character."
        )
    if read and dropped["too_long"] > 0.05 * read:
        warnings.append(
            f"{dropped['too_long'] / read:.1%} of the pairs are longer than "
            f"--max_length={max_length}; raise it to keep them."
        )
    return warnings

def stats_from_counts(counts, parameters, vocabulary, shards):
    """The stats.json dict.

    Args:
        counts: the job's summed counts (`ReadTranslationPairs`'s and
            `TokenizeTranslationPairs`'s).
        parameters: the job's parameters (every flag and "beam_arguments");
            its "max_length" sizes the histograms.
        vocabulary: the "vocabulary" entry: "shared", "learned",
            "sample_sentences" (per learned model) and per side
            `model_description`'s dict.
        shards: the "shards" entry: "files" (the shard-name pattern),
            "num_shards", "gzip".

    Returns:
        The dict with the keys "parameters", "pairs_read", "pairs_kept",
        "pairs_dropped" (by reason, every reason present),
        "pairs_dropped_total", "pairs_with_invalid_utf8", "records_written",
        "source" and "target" (`side_statistics`), "unk_share" and
        "byte_fallback_share" (both sides together), "vocabulary", "shards"
        and "warnings".

    Raises:
        RuntimeError: the pairs read are not the pairs kept plus the pairs
            dropped (a bug in the job).
    """
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    dropped = {reason: get(f"pairs_dropped_{reason}") for reason in DROP_REASONS}
    read, kept = get("pairs_read"), get("pairs_kept")
    if read != kept + sum(dropped.values()):
        raise RuntimeError(
            f"Pairs are unaccounted for: {read} read, {kept} kept, dropped {dropped}."
        )
    sides = {side: side_statistics(counts, side, parameters["max_length"])
             for side in SIDES}
    ids = sum(get(f"{side}_ids") for side in SIDES)
    unknown = sum(get(f"{side}_unk_ids") for side in SIDES)
    return {
        "parameters": parameters,
        "pairs_read": read,
        "pairs_kept": kept,
        "pairs_dropped": dropped,
        "pairs_dropped_total": sum(dropped.values()),
        "pairs_with_invalid_utf8": get("pairs_with_invalid_utf8"),
        "records_written": kept,
        **sides,
        "unk_share": job.share(unknown, ids),
        "byte_fallback_share": job.share(sum(get(f"{side}_byte_ids") for side in SIDES), ids),
        "vocabulary": vocabulary,
        "shards": shards,
        "warnings": _warnings(read, kept, dropped, unknown, parameters["max_length"]),
    }

def job_parameters(flags, beam_arguments):
    """The job's parameters, as the stats record them: every flag (the
    learning flags None with given models), the normalization, the shard
    prefix and the Beam options."""
    return {
        **vars(flags),
        # The learning flags do not apply to given models.
        **(dict.fromkeys(("vocab_size", "model_type", "character_coverage",
                          "vocab_sample_size")) if flags.vocab_file else {}),
        "normalization": None if flags.vocab_file else sentencepiece_model.NORMALIZATION,
        "shard_prefix": SHARD_PREFIX,
        "beam_arguments": list(beam_arguments),
    }

def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no pair kept is an error that
    names the reasons the pairs were dropped and the flags to change."""
    if stats["pairs_kept"]:
        return None, []
    dropped = {reason: count for reason, count in stats["pairs_dropped"].items() if count}
    remedies = dict.fromkeys(DROP_REMEDIES.get(reason, INPUT_REMEDY) for reason in dropped)
    reasons = ", ".join(f"{reason} {count}" for reason, count in dropped.items())
    return (f"wrote no pair: {stats['pairs_read']} pairs read"
            + (f", all dropped ({reasons}); " if dropped else "; ")
            + ", or ".join(remedies or [INPUT_REMEDY])), []

def summary_line(stats, seconds):
    """The line `job.run_job` logs: pairs written, read and dropped (by
    reason), mean lengths, vocabulary sizes and byte-fallback share."""
    dropped = ", ".join(f"{reason} {count}" for reason, count in
                        stats["pairs_dropped"].items() if count)
    return (
        f"Wrote {stats['records_written']} pairs of {stats['pairs_read']} read "
        f"(dropped: {dropped or 'none'}) to {stats['shards']['files']} in "
        f"{seconds:.1f} s; mean lengths {stats['source']['mean_length']:.1f} / "
        f"{stats['target']['mean_length']:.1f} ids, vocabulary "
        f"{stats['vocabulary']['source']['size']} / "
        f"{stats['vocabulary']['target']['size']}, byte-fallback share "
        f"{stats['byte_fallback_share']:.4%}."
    )

def build_pipeline(pipeline, read_pairs, output_dir, *, shared_vocab,
                   sentencepiece_options=None, vocab_sample_size=1_000_000,
                   models=None, model_files=None, max_length=128,
                   max_length_ratio=9.0, dedupe=False,
                   num_shards=DEFAULT_NUM_SHARDS,
                   gzip=False, parameters=None):
    """Adds the whole job to `pipeline`.

    Input (`pipelines.translation_pairs`): line-aligned files (the default;
    the sorted files of `--source_file` and `--target_file` are paired one
    to one, and each pair must have the same number of lines, which is
    checked before the job runs), or one pair a line as `source<TAB>target`
    (`tsv`) or as a JSON object (`jsonl`). `.gz` and `.bz2` files are
    decompressed.

    Tokenization is SentencePiece (`pipelines.sentencepiece_model`),
    reversible: SentencePiece's `nmt_nfkc` normalization (NFKC, control
    characters dropped, spaces collapsed), then unigram (default) or BPE
    pieces, with byte fallback so that any character survives as its UTF-8
    bytes. Without given `models` the job learns them itself, in the same
    pipeline, from a deterministic sample of `vocab_sample_size` sentences;
    `shared_vocab` learns one model over both languages (what a Transformer
    with shared source, target and output embeddings needs; recommended for
    related languages such as English-German), otherwise one per side. The
    ids are those of `tfnlp.text.SentencePieceTokenizer` with the same model
    (which the trainer uses in-graph), with the special ids PAD 0, UNK 1,
    BOS 2, EOS 3.

    It writes, through Beam's filesystems (gs:// and the like work):

    - `DIR/translation-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with
      `gzip`): one `tf.train.Example` per kept pair, in the schema of
      `tfnlp.data.translation_schema` (`inputs` and `targets`, each the
      subword ids followed by EOS);
    - the learned model(s): `DIR/sentencepiece.model` with `shared_vocab`,
      else `DIR/source.model` and `DIR/target.model`, each with its `.vocab`
      (one "piece<TAB>score" line per id, as SentencePiece writes it). With
      given `models` nothing is learned or copied;
    - `DIR/stats.json` (see `stats_from_counts`): every parameter;
      pairs read, kept and dropped by reason (`pairs_read == pairs_kept +
      sum(pairs_dropped.values())`, checked); per side the length
      histogram, mean length, [UNK] share and byte-fallback share of the
      kept pairs; the vocabularies (files, sizes, SHA-256, sample sizes);
      the shards and the records written. The counts are also Beam metrics
      (namespace "tfnlp").

    Pairs are dropped, in this order, when: a tsv/jsonl line is blank or
    malformed (see `pipelines.translation_pairs`); either side is empty
    after normalization ("empty"); either side has more than `max_length`
    ids, EOS included ("too_long"); the longer side has more than
    `max_length_ratio` times the subword ids of the shorter
    ("length_ratio", as Moses' clean-corpus-n.perl does on words, default
    9; 0 turns it off); with `dedupe`, the pair's record equals an earlier
    one ("duplicate": the same ids on both sides, that is the same
    normalized text; one is kept).

    How it scales: aligned files are read one file pair per worker,
    streaming (split a huge corpus into aligned parts to read it in
    parallel); tsv and jsonl files are split across workers. The model is
    learned on one worker from at most `vocab_sample_size` sentences, chosen
    by Beam's `Top` combiner, so the driver never reads the corpus (only,
    for aligned input, a newline count of each file before the job;
    `--nocheck_line_counts` skips it). Tokenizing runs on every worker with
    the Python `sentencepiece` package (the model arrives as a side input;
    workers load no TensorFlow). `dedupe` groups records by their bytes.
    Each shard is sorted in one worker's memory, so choose `num_shards` for
    shards of at most a few hundred MB: the default, 16, suits corpora up
    to tens of millions of pairs (WMT14 En-De's 4.5M pairs make shards of
    about 50 MB).

    Determinism: the sample, the model (one trainer thread, fixed input
    order), the ids and the shards (`pipelines.sharded_tfrecords`) depend on
    the input text alone, so the model and the shard files are
    byte-identical whatever the runner or the number of workers.

    Args:
        pipeline: a `beam.Pipeline`.
        read_pairs: the `translation_pairs.ReadTranslationPairs` of the input.
        output_dir: where the shards, the learned models and stats.json go.
        shared_vocab: one model for both sides.
        sentencepiece_options: the `sentencepiece_model.SentencePieceOptions`
            to learn with (when `models` is None).
        vocab_sample_size: the most sentences each model learns from.
        models: None to learn the model(s), else `{"source": bytes,
            "target": bytes}`, the serialized models to use.
        model_files: with `models`, `{side: path}` of the given models (for
            the stats).
        max_length, max_length_ratio, dedupe: `TokenizeTranslationPairs`'s.
        num_shards: the number of shards (`WriteShardedTFRecords`).
        gzip: write gzip-compressed shards.
        parameters: the job's parameters, recorded in stats.json.
    """
    pairs, read_counts = pipeline | "ReadPairs" >> read_pairs
    if models is None:
        files = model_paths(output_dir, shared_vocab)
        source_model, target_model, sample_sizes = learn_models(
            pairs, files, shared_vocab, sentencepiece_options, vocab_sample_size)
    else:
        files = {side: (model_files[side], None) for side in SIDES}
        source_model, target_model = _create_models(pipeline, models, shared_vocab)
        sample_sizes = {}

    records, record_counts = pairs | "TokenizePairs" >> TokenizeTranslationPairs(
        source_model, target_model, max_length, max_length_ratio, dedupe)
    prefix = os.path.join(output_dir, SHARD_PREFIX)
    _ = records | "WriteShards" >> WriteShardedTFRecords(prefix, num_shards, gzip)

    vocabulary = _describe_vocabulary(pipeline, source_model, target_model, sample_sizes,
                                      files, shared_vocab, learned=models is None)
    _ = (
        (read_counts, record_counts)
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        | "Stats" >> beam.Map(
            stats_from_counts,
            parameters or {"max_length": max_length},
            vocabulary=beam.pvalue.AsSingleton(vocabulary),
            shards=_shards_entry(prefix, num_shards, gzip))
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, STATS_FILE))
    )

def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        UsageError (a ValueError): a `--vocab_file` cannot be read, or
            `--output_dir` cannot be written; aligned files differ in
            number or line count, or a `--vocab_file` is not a
            SentencePiece model with the special ids PAD 0, UNK 1, BOS 2,
            EOS 3, or --vocab_size or --character_coverage is out of range
            (all before anything is written or run).
        UsageError: SentencePiece cannot learn the model (during the
            run), or no pair is kept (after it).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = parse_arguments(argv)
    check_input_paths(flags)
    models = model_files = options = None
    with usage_errors(ValueError):
        read_pairs = translation_pairs.ReadTranslationPairs(
            input_format=flags.input_format,
            source_file=flags.source_file,
            target_file=flags.target_file,
            input_file=flags.input_file,
            source_field=flags.source_field,
            target_field=flags.target_field,
            check_line_counts=flags.check_line_counts,
        )
        if flags.vocab_file:
            models, model_files = read_given_models(flags.vocab_file, flags.shared_vocab)
        else:
            options = sentencepiece_model.SentencePieceOptions(
                vocab_size=flags.vocab_size,
                model_type=flags.model_type,
                character_coverage=flags.character_coverage,
            )
    check_output_directory("--output_dir", flags.output_dir)
    parameters = job_parameters(flags, beam_arguments)
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, read_pairs, flags.output_dir,
            shared_vocab=flags.shared_vocab,
            sentencepiece_options=options,
            vocab_sample_size=flags.vocab_sample_size,
            models=models,
            model_files=model_files,
            max_length=flags.max_length,
            max_length_ratio=flags.max_length_ratio,
            dedupe=flags.dedupe,
            num_shards=flags.num_shards,
            gzip=flags.gzip,
            parameters=parameters,
        ),
        beam_arguments,
        name="translation-data",
        stats_file=os.path.join(flags.output_dir, STATS_FILE),
        summary_line=summary_line,
        logger=LOGGER,
        output_problems=output_problems,
    )

if __name__ == "__main__":
    job.command_line_main("pipelines.translation_data")

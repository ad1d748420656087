"""Learns a BERT WordPiece vocabulary from raw text with Apache Beam.

Reads lines of text (or jsonl records); writes the vocabulary, one token a
line, and `<output_file>.stats.json`. Options other than the job's go to
Beam's `PipelineOptions` (`pipelines.beam_options`; remote workers need
tfnlp installed, e.g. with `--setup_file=./setup.py`).

    python -m pipelines.wordpiece_vocab \\
        --input_file=GLOB[,GLOB...] --output_file=vocab.txt --vocab_size=30000 \\
        [--lower_case | --nolower_case] [--reserved_tokens=TOKEN,...] \\
        [--input_format=text|jsonl] [Beam pipeline options]
"""

import argparse
import collections
import logging

import apache_beam as beam

from tfnlp.quiet_start import import_quietly

if __name__ == "__main__":
    # `python -m pipelines.wordpiece_vocab`: TensorFlow without its start-up lines.
    import_quietly(("tensorflow",))

import tensorflow as tf  # noqa: E402 (after the quiet import)
import tensorflow_text as tf_text  # noqa: E402

from pipelines import job, text_input, wordpiece_learner  # noqa: E402
from pipelines.job_flags import add_input_file_flag, add_input_format_flag  # noqa: E402
from pipelines.wordpiece_learner import SUFFIX_INDICATOR, VocabularyOptions  # noqa: E402
from tfnlp.command_line import (  # noqa: E402
    ArgumentParser,
    add_boolean_flag,
    check_output_file,
)
from tfnlp.data.file_names import STATS_SUFFIX  # noqa: E402
from tfnlp.text import normalization  # noqa: E402
from tfnlp.text.vocabulary import SPECIAL_TOKENS  # noqa: E402

LOGGER = logging.getLogger(__name__)
# Words split as the original BasicTokenizer splits them: on whitespace,
# punctuation and around CJK ideographs, the latter two kept as words.
WORD_DELIMITER = normalization.WHITESPACE + "|" + normalization.PUNCTUATION_OR_CJK
KEPT_DELIMITER = normalization.PUNCTUATION_OR_CJK
LONG_WORDS_TAG = "long_words"
# The learner's integer flags, each a `VocabularyOptions` field of the same
# name (its default), with their help; each must be at least 1.
LEARNER_INTEGER_FLAGS = (
    ("max_input_words", "Only the most frequent words (this many) go to the learner."),
    ("min_token_count", "The lowest count threshold the learner searches for a piece."),
    ("max_token_length", "Longer words (in characters) are left out of learning."),
    ("max_unique_characters", "The alphabet: words with a character outside the most "
     "frequent ones are left out of learning."),
    ("num_iterations", "The learner's iterations."),
)


# The flags: `parse_arguments` parses them, turns `--reserved_tokens` into a
# list (`reserved_tokens_from_flag`) and checks the values (`flag_problem`:
# the first problem is argparse's usage error); `main` then checks the paths
# they name (inputs matched, the output file written) before the job starts.
# `--lower_case` is an absl-style boolean (`--lower_case=false`,
# `--nolower_case`; `--no-lower_case` is accepted too). The learner's
# defaults are those of `wordpiece_learner.VocabularyOptions`.
def build_parser():
    """The job's argument parser (the checks of `flag_problem` come after)."""
    parser = ArgumentParser(
        prog="python -m pipelines.wordpiece_vocab",
        description="Learns a BERT WordPiece vocabulary from raw text with Beam.",
        # Unknown options go to Beam whole, never taken as abbreviations.
        allow_abbrev=False,
    )
    _add_input_output_flags(parser)
    _add_learner_flags(parser)
    return parser


def _add_input_output_flags(parser):
    add_input_file_flag(parser, "the input files (any Beam filesystem)")
    parser.add_argument(
        "--output_file",
        required=True,
        help="Where to write the vocabulary; the stats go to <output_file>.stats.json.",
    )
    parser.add_argument(
        "--vocab_size",
        type=int,
        required=True,
        help="The largest number of tokens, the reserved ones included.",
    )
    add_boolean_flag(
        parser,
        "lower_case",
        VocabularyOptions.lower_case,
        "Lower-case and strip accents (uncased BERT; the default). "
        "--nolower_case learns a cased vocabulary.",
    )
    # The spelling of argparse's BooleanOptionalAction, which this flag took
    # before it became absl-style like the other jobs' flags.
    parser.add_argument(
        "--no-lower_case", dest="lower_case", action="store_false", help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--reserved_tokens",
        default="",
        help="Comma-separated tokens placed after [PAD], [UNK], [CLS], [SEP] "
        "and [MASK] (which are always reserved, with ids 0 to 4).",
    )
    add_input_format_flag(parser, "one record a line", "the record")


def _add_learner_flags(parser):
    for name, help_text in LEARNER_INTEGER_FLAGS:
        parser.add_argument(f"--{name}", type=int,
                            default=getattr(VocabularyOptions, name), help=help_text)
    parser.add_argument(
        "--slack_ratio",
        type=float,
        default=VocabularyOptions.slack_ratio,
        help="The learner accepts a size between (1 - slack_ratio) * vocab_size "
        "and vocab_size.",
    )


def reserved_tokens_from_flag(value):
    """The extra reserved tokens of a comma-separated `--reserved_tokens`.

    Args:
        value: e.g. "[unused0],[unused1]"; surrounding spaces are removed
            and empty entries ignored.

    Returns:
        The tokens, in order.

    Raises:
        ValueError: a token contains whitespace, repeats, or is one of the
            always-reserved `SPECIAL_TOKENS`.
    """
    tokens = [token.strip() for token in value.split(",") if token.strip()]
    for token in tokens:
        if any(character.isspace() for character in token):
            raise ValueError(f"Reserved token {token!r} contains whitespace.")
        if token in SPECIAL_TOKENS:
            raise ValueError(
                f"Reserved token {token} is always reserved; leave it out of "
                "--reserved_tokens."
            )
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"--reserved_tokens repeats a token: {tokens}.")
    return tokens


def flag_problem(flags):
    """The first problem of the parsed flags' values, as a sentence (None:
    none); `flags.reserved_tokens` is already a list."""
    reserved_count = len(SPECIAL_TOKENS) + len(flags.reserved_tokens)
    if flags.vocab_size <= reserved_count:
        return (
            f"--vocab_size={flags.vocab_size} leaves no room for learned tokens "
            f"after the {reserved_count} reserved ones."
        )
    for name, _ in LEARNER_INTEGER_FLAGS:
        if getattr(flags, name) < 1:
            return f"--{name} must be at least 1."
    if not 0 <= flags.slack_ratio < 1:
        return "--slack_ratio must be in [0, 1)."
    return None


def parse_arguments(argv=None):
    """Splits the command line into this job's flags and Beam's options.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`: an argparse namespace (with
        `reserved_tokens` as a list) and the arguments left for
        `PipelineOptions`.

    Raises:
        SystemExit: a flag is missing or invalid (argparse's usage error).
    """
    parser = build_parser()
    flags, beam_arguments = job.split_arguments(parser, argv)
    try:
        flags.reserved_tokens = reserved_tokens_from_flag(flags.reserved_tokens)
    except ValueError as error:
        parser.error(str(error))
    problem = flag_problem(flags)
    if problem:
        parser.error(problem)
    return flags, beam_arguments


def vocabulary_options(flags):
    """The `wordpiece_learner.VocabularyOptions` of the parsed flags."""
    return wordpiece_learner.VocabularyOptions(
        vocab_size=flags.vocab_size,
        lower_case=flags.lower_case,
        reserved_tokens=tuple(flags.reserved_tokens),
        max_input_words=flags.max_input_words,
        min_token_count=flags.min_token_count,
        max_token_length=flags.max_token_length,
        max_unique_characters=flags.max_unique_characters,
        num_iterations=flags.num_iterations,
        slack_ratio=flags.slack_ratio,
    )



# The transforms: `CountWords` counts the words as the tokenizer splits
# them, `CountUnknownPieces` splits them into pieces of the learned
# vocabulary; `LearnWordPieceVocabulary` is the whole learning.
@beam.typehints.with_output_types(tuple[str, int])
class CountWords(beam.DoFn):
    """Splits a batch of lines into words like the tokenizer and counts them.

    The main output is `(word, count)` per distinct word of the batch; the
    output tagged `LONG_WORDS_TAG` is the number of words of more than 200
    characters in the batch (each becomes one [UNK] in the tokenizer).

    Args:
        lower_case: lower-case and strip accents before splitting.
    """

    def __init__(self, lower_case):
        self._lower_case = lower_case
        self._split = None

    def setup(self):
        lower_case = self._lower_case

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def split_words(lines):
            lines = normalization.normalize(lines, lower_case)
            words = tf_text.regex_split(
                lines,
                delim_regex_pattern=WORD_DELIMITER,
                keep_delim_regex_pattern=KEPT_DELIMITER,
            )
            return words.flat_values

        self._split = split_words
        self._words_counter = beam.metrics.Metrics.counter(
            job.METRICS_NAMESPACE, "words_counted"
        )

    def process(self, lines):
        words = self._split(tf.constant(lines, dtype=tf.string)).numpy()
        self._words_counter.inc(len(words))
        counts = collections.Counter(words)
        long_words = 0
        for word, count in counts.items():
            word = word.decode("utf-8")
            if len(word) > normalization.MAX_CHARS_PER_WORD:
                long_words += count
            else:
                yield word, count
        if long_words:
            yield beam.pvalue.TaggedOutput(LONG_WORDS_TAG, long_words)


def batch_size_of_line(text):
    """A line's weight in a batch: one unit per 256 characters (at least 1),
    so that a batch of at most 4096 units holds about 1 MB of text."""
    return 1 + len(text) // 256


class CountUnknownPieces(beam.DoFn):
    """Splits batches of `(word, count)` pairs into pieces of the learned
    vocabulary and yields `(pieces, unknown_pieces)`, weighted by count.

    The vocabulary's tokens come as a side input (`process`'s `tokens`);
    the tokenizer is built from them once per worker.
    """

    def __init__(self):
        self._tokens = None
        self._tokenizer = None

    def process(self, batch, tokens):
        if self._tokenizer is None or (
            tokens is not self._tokens and tokens != self._tokens
        ):
            self._tokens = tokens
            self._tokenizer = tf_text.FastWordpieceTokenizer(
                vocab=tokens,
                suffix_indicator=SUFFIX_INDICATOR,
                max_bytes_per_word=4 * normalization.MAX_CHARS_PER_WORD,
                token_out_type=tf.int64,
                unknown_token="[UNK]",
                no_pretokenization=True,
            )
            self._unknown_id = tokens.index("[UNK]")
        words = tf.constant([word for word, _ in batch], dtype=tf.string)
        ids = self._tokenizer.tokenize(words)
        pieces = ids.row_lengths().numpy()
        unknown = tf.reduce_sum(
            tf.cast(tf.equal(ids, self._unknown_id), tf.int64), axis=1
        ).numpy()
        counts = [count for _, count in batch]
        yield (
            int(sum(int(c) * int(p) for c, p in zip(counts, pieces))),
            int(sum(int(c) * int(u) for c, u in zip(counts, unknown))),
        )


def sum_pairs(pairs):
    """Adds `(pieces, unknown_pieces)` pairs element-wise.

    Args:
        pairs: an iterable of pairs of integers.

    Returns:
        The pair of sums, `(0, 0)` for no pairs.
    """
    pieces = unknown = 0
    for piece_count, unknown_count in pairs:
        pieces += piece_count
        unknown += unknown_count
    return pieces, unknown


class LearnWordPieceVocabulary(beam.PTransform):
    """Learns a WordPiece vocabulary from lines of text.

    None of the steps holds the corpus in one process:

    1. Batches of lines are normalized exactly as `tfnlp.text.BertTokenizer`
       does (`tfnlp.text.normalization.normalize`) and split, as the
       original BasicTokenizer does, on whitespace, punctuation and around
       CJK ideographs; the (word, count) pairs are summed per word
       (`CountWords`). Words of more than 200 characters, which the
       tokenizer turns into one [UNK], are only counted.
    2. The `max_input_words` most frequent words (ties broken by the word,
       so the result does not depend on the number of workers) go, as one
       list, to one step that runs tensorflow-text's WordPiece learner
       (`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
       keras_hub's `compute_word_piece_vocabulary`; `wordpiece_learner`).
    3. Every unique word is split with the learned vocabulary
       (tensorflow-text's `FastWordpieceTokenizer`) to measure the [UNK]
       share, weighted by count (`CountUnknownPieces`).

    Applied to a PCollection of lines (str), it returns two single-element
    PCollections: the vocabulary's tokens (a list, in id order: the
    reserved tokens first, at most `options.vocab_size`) and its
    statistics over the lines (the dict of
    `word_statistics`).

    Args:
        options: a `wordpiece_learner.VocabularyOptions`.
        label: an optional label for the transform.
    """

    def __init__(self, options, label=None):
        super().__init__(label)
        self.options = options

    def expand(self, lines):
        options = self.options
        counted = (
            lines
            | "BatchLines"
            >> beam.BatchElements(
                min_batch_size=1,
                max_batch_size=4096,
                element_size_fn=batch_size_of_line,
            )
            | "CountWords"
            >> beam.ParDo(CountWords(options.lower_case)).with_outputs(
                LONG_WORDS_TAG, main="word_counts"
            )
        )
        word_counts = counted.word_counts | "SumPerWord" >> beam.CombinePerKey(sum)
        long_words = counted[LONG_WORDS_TAG] | (
            "SumLongWords" >> beam.CombineGlobally(sum)
        )
        total_words = (
            word_counts
            | "Counts" >> beam.Values()
            | "SumWords" >> beam.CombineGlobally(sum)
        )
        unique_words = word_counts | "CountUniqueWords" >> beam.combiners.Count.Globally()

        vocabulary = (
            word_counts
            | "RankWords" >> beam.Map(wordpiece_learner.ranking_key)
            | "TopWords" >> beam.combiners.Top.Of(options.max_input_words)
            | "Learn"
            >> beam.Map(
                wordpiece_learner.learn_vocabulary,
                vocab_size=options.vocab_size,
                reserved_tokens=options.all_reserved_tokens,
                learner_options=options.learner_options(),
            )
        )
        tokens = vocabulary | "Tokens" >> beam.Map(lambda result: result["tokens"])
        piece_counts = (
            word_counts
            | "BatchWords" >> beam.BatchElements(min_batch_size=1, max_batch_size=4096)
            | "CountUnknownPieces"
            >> beam.ParDo(
                CountUnknownPieces(), beam.pvalue.AsSingleton(tokens)
            )
            | "SumPieces" >> beam.CombineGlobally(sum_pairs)
        )
        statistics = vocabulary | "Statistics" >> beam.Map(
            word_statistics,
            words_in_vocabulary_range=beam.pvalue.AsSingleton(total_words),
            long_words=beam.pvalue.AsSingleton(long_words),
            unique_words=beam.pvalue.AsSingleton(unique_words),
            piece_counts=beam.pvalue.AsSingleton(piece_counts),
        )
        return tokens, statistics



# The stats, `<output_file>.stats.json`: `word_statistics` (what
# `LearnWordPieceVocabulary` measures over its lines), with the job's
# parameters, the accounting of every input line and the warnings
# (`build_stats`); `summary_line` is the line `job.run_job` logs at the end.
def word_statistics(
    vocabulary, words_in_vocabulary_range, long_words, unique_words, piece_counts
):
    """The statistics of a learned vocabulary over its corpus.

    Args:
        vocabulary: `wordpiece_learner.learn_vocabulary`'s result.
        words_in_vocabulary_range: occurrences of words of up to 200
            characters.
        long_words: occurrences of longer words (each one [UNK] piece).
        unique_words: distinct words of up to 200 characters.
        piece_counts: `(pieces, unknown_pieces)` over all word occurrences
            of up to 200 characters.

    Returns:
        A dict with "words_counted" (occurrences), "unique_words",
        "words_over_200_characters", "words_given_to_learner",
        "learned_vocabulary_size" (before any cut), "vocabulary_size",
        "word_pieces", "unknown_word_pieces" and "unk_share" (their ratio,
        0.0 without pieces).
    """
    pieces, unknown = piece_counts
    pieces += long_words
    unknown += long_words
    return {
        "words_counted": words_in_vocabulary_range + long_words,
        "unique_words": unique_words,
        "words_over_200_characters": long_words,
        "words_given_to_learner": vocabulary["words_used"],
        "learned_vocabulary_size": vocabulary["learned_size"],
        "vocabulary_size": len(vocabulary["tokens"]),
        "word_pieces": pieces,
        "unknown_word_pieces": unknown,
        "unk_share": unknown / pieces if pieces else 0.0,
    }


def build_stats(statistics, parameters, input_counts):
    """The stats dict of a run.

    Args:
        statistics: `LearnWordPieceVocabulary`'s statistics.
        parameters: the job's parameters.
        input_counts: `ReadTextLines`'s counts.

    Returns:
        The stats dict (see `build_pipeline`): `statistics` with
        "parameters", "input" (`text_input.input_accounting`) and
        "warnings".
    """
    warnings = []
    if statistics["words_counted"] == 0:
        warnings.append(
            "The input holds no word; the vocabulary has only the reserved tokens."
        )
    return {
        "parameters": parameters,
        "input": text_input.input_accounting(input_counts),
        **statistics,
        "warnings": warnings,
    }


def summary_line(stats, seconds):
    """The line `job.run_job` logs: tokens written, lines read, used and
    skipped, words counted and the [UNK] share."""
    accounting = stats["input"]
    skipped = sum(accounting["lines_skipped"].values())
    return (
        f"Wrote {stats['vocabulary_size']} tokens to "
        f"{stats['parameters']['output_file']} in {seconds:.1f} s: "
        f"{accounting['lines_read']} lines read ({accounting['lines_used']} used, "
        f"{skipped} skipped), {stats['words_counted']} words "
        f"({stats['unique_words']} unique), [UNK] share {stats['unk_share']:.4%}."
    )


def job_parameters(reader, input_file, input_format, output_file, options, beam_arguments):
    """The job's parameters, as the stats record them."""
    return {
        "input_file": input_file,
        "input_patterns": reader.patterns,
        "input_files_matched": len(reader.files),
        "input_format": input_format,
        "output_file": output_file,
        "vocab_size": options.vocab_size,
        "lower_case": options.lower_case,
        "reserved_tokens": options.all_reserved_tokens,
        "max_input_words": options.max_input_words,
        "min_token_count": options.min_token_count,
        "max_token_length": options.max_token_length,
        "max_unique_characters": options.max_unique_characters,
        "num_iterations": options.num_iterations,
        "slack_ratio": options.slack_ratio,
        "upper_count_threshold": wordpiece_learner.UPPER_COUNT_THRESHOLD,
        "suffix_indicator": wordpiece_learner.SUFFIX_INDICATOR,
        "beam_arguments": list(beam_arguments),
    }



def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: a vocabulary of the reserved
    tokens alone, which cannot tokenize text, is an error (both files are
    written first)."""
    parameters, accounting = stats["parameters"], stats["input"]
    output_file = parameters["output_file"]
    if stats["words_counted"] == 0:
        return (f"The input holds no word: {accounting['lines_read']} lines read, "
                f"{accounting['lines_used']} used, skipped: {accounting['lines_skipped']} "
                f"(see {output_file + STATS_SUFFIX}). {output_file} has only the reserved "
                "tokens, which cannot tokenize text. Check --input_file and "
                "--input_format."), []
    if stats["vocabulary_size"] <= len(parameters["reserved_tokens"]):
        return (f"Learned no token from {stats['words_given_to_learner']} words: each is "
                f"longer than --max_token_length={parameters['max_token_length']} "
                "characters or has a character outside the --max_unique_characters="
                f"{parameters['max_unique_characters']} most frequent. {output_file} has "
                "only the reserved tokens; raise those flags."), []
    return None, []



def build_pipeline(pipeline, input_file, input_format, output_file, options,
                   beam_arguments):
    """Adds the vocabulary job's steps to `pipeline`: `text_input.ReadTextLines`
    reads and decodes every line, `LearnWordPieceVocabulary` learns, and
    two files are written through Beam's filesystems (gs:// and the like
    work):

    - `output_file`: the vocabulary in the format of google-research/bert's
      vocab.txt (UTF-8, one token per line, the id is the line number,
      continuation pieces carry "##"). It starts with [PAD]=0, [UNK]=1,
      [CLS]=2, [SEP]=3, [MASK]=4, then the reserved tokens in the order
      given, each exactly once, then the single characters and the learned
      pieces. It has at most `vocab_size` lines: the learner aims at
      between `(1 - slack_ratio) * vocab_size` and `vocab_size` tokens and
      may end up with fewer (a small corpus has few pieces above
      `min_token_count`; lower it to get more) or more, in which case the
      least frequent pieces of more than one character are cut
      (keras_hub's `compute_word_piece_vocabulary` cuts the tail, which can
      drop "##" single characters and make common words [UNK]). The stats
      record the learner's size before the cut.
    - `<output_file>.stats.json` (`build_stats`): every
      parameter, the accounting of every input line (read, used, skipped by
      reason, repaired; see `pipelines.text_input`), the words counted
      (occurrences) and unique words, the size written, and `unk_share`,
      the share of the corpus's word pieces that become [UNK] with the
      learned vocabulary.

    Args:
        pipeline: a `beam.Pipeline`.
        input_file: the globs of the input, comma-separated (as
            `--input_file`) or a list.
        input_format: "text" or "jsonl" (see `pipelines.text_input`).
        output_file: where the vocabulary goes; the stats go to
            `output_file + STATS_SUFFIX`.
        options: a `wordpiece_learner.VocabularyOptions`.
        beam_arguments: the Beam options given, recorded in the stats.

    Raises:
        FileNotFoundError: an input glob matches no file.
    """
    reader = text_input.ReadTextLines(input_file, input_format)
    parameters = job_parameters(reader, input_file, input_format, output_file, options,
                                beam_arguments)

    texts, input_counts = pipeline | "ReadText" >> reader
    tokens, statistics = texts | "LearnVocabulary" >> LearnWordPieceVocabulary(options)
    _ = (
        tokens
        | "VocabularyBytes" >> beam.Map(wordpiece_learner.vocabulary_file_bytes)
        | "WriteVocabulary" >> beam.Map(job.write_file, output_file)
    )
    _ = (
        statistics
        | "BuildStats"
        >> beam.Map(
            build_stats,
            parameters=parameters,
            input_counts=beam.pvalue.AsSingleton(input_counts),
        )
        | "WriteStats" >> job.WriteStats(output_file + STATS_SUFFIX)
    )



def main(argv=None):
    """Runs the vocabulary job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to `<output_file>.stats.json`.

    Raises:
        FileNotFoundError: an input glob matches no file (before the
            pipeline starts).
        UsageError: `--output_file` cannot be written (before the pipeline
            starts); or the vocabulary has only the reserved tokens (the
            input holds no word, for example only empty files, or text read
            with --input_format=jsonl; or none the learner takes): it and
            the stats are written first (`output_problems`).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = parse_arguments(argv)
    text_input.match_input_files(flags.input_file, flag="--input_file")
    check_output_file("--output_file", flags.output_file)
    options = vocabulary_options(flags)
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, flags.input_file, flags.input_format, flags.output_file,
            options, beam_arguments,
        ),
        beam_arguments,
        name="vocabulary",
        stats_file=flags.output_file + STATS_SUFFIX,
        summary_line=summary_line,
        logger=LOGGER,
        output_problems=output_problems,
    )


if __name__ == "__main__":
    job.command_line_main("pipelines.wordpiece_vocab")

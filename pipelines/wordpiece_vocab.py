"""Learns a BERT WordPiece vocabulary from raw text with Apache Beam.

    python -m pipelines.wordpiece_vocab \\
        --input_file=GLOB[,GLOB...] --output_file=vocab.txt --vocab_size=30000 \\
        [--lower_case | --nolower_case] [--reserved_tokens=TOKEN,...] \\
        [--input_format=text|jsonl] [Beam pipeline options]

`build_pipeline` says what it writes, `LearnWordPieceVocabulary` how it
learns. `--lower_case` is an absl-style boolean (`--lower_case=false`,
`--nolower_case`; `--no-lower_case` is accepted too); every other option
goes to Beam's `PipelineOptions` unchanged (`pipelines.beam_options`;
remote workers need tfnlp installed, e.g. with `--setup_file=./setup.py`).
"""

import logging

import apache_beam as beam

from tfnlp.quiet_start import import_quietly

if __name__ == "__main__":
    # `python -m pipelines.wordpiece_vocab`: TensorFlow without its start-up lines.
    import_quietly(("tensorflow",))

from pipelines import (  # noqa: E402 (after the quiet import)
    job,
    text_input,
    wordpiece_learner,
    wordpiece_vocab_flags,
    wordpiece_vocab_stats,
    wordpiece_words,
)
from tfnlp.command_line import check_output_file  # noqa: E402
from tfnlp.data.file_names import STATS_SUFFIX  # noqa: E402

LOGGER = logging.getLogger(__name__)


class LearnWordPieceVocabulary(beam.PTransform):
    """Learns a WordPiece vocabulary from lines of text.

    None of the steps holds the corpus in one process:

    1. Batches of lines are normalized exactly as `tfnlp.text.BertTokenizer`
       does (`tfnlp.text.normalization.normalize`) and split, as the
       original BasicTokenizer does, on whitespace, punctuation and around
       CJK ideographs; the (word, count) pairs are summed per word
       (`wordpiece_words`). Words of more than 200 characters, which the
       tokenizer turns into one [UNK], are only counted.
    2. The `max_input_words` most frequent words (ties broken by the word,
       so the result does not depend on the number of workers) go, as one
       list, to one step that runs tensorflow-text's WordPiece learner
       (`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
       keras_hub's `compute_word_piece_vocabulary`; `wordpiece_learner`).
    3. Every unique word is split with the learned vocabulary
       (tensorflow-text's `FastWordpieceTokenizer`) to measure the [UNK]
       share, weighted by count (`wordpiece_words`).

    Applied to a PCollection of lines (str), it returns two single-element
    PCollections: the vocabulary's tokens (a list, in id order: the
    reserved tokens first, at most `options.vocab_size`) and its
    statistics over the lines (the dict of
    `wordpiece_vocab_stats.word_statistics`).

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
                element_size_fn=wordpiece_words.batch_size_of_line,
            )
            | "CountWords"
            >> beam.ParDo(wordpiece_words.CountWords(options.lower_case)).with_outputs(
                wordpiece_words.LONG_WORDS_TAG, main="word_counts"
            )
        )
        word_counts = counted.word_counts | "SumPerWord" >> beam.CombinePerKey(sum)
        long_words = counted[wordpiece_words.LONG_WORDS_TAG] | (
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
                wordpiece_words.CountUnknownPieces(), beam.pvalue.AsSingleton(tokens)
            )
            | "SumPieces" >> beam.CombineGlobally(wordpiece_words.sum_pairs)
        )
        statistics = vocabulary | "Statistics" >> beam.Map(
            wordpiece_vocab_stats.word_statistics,
            words_in_vocabulary_range=beam.pvalue.AsSingleton(total_words),
            long_words=beam.pvalue.AsSingleton(long_words),
            unique_words=beam.pvalue.AsSingleton(unique_words),
            piece_counts=beam.pvalue.AsSingleton(piece_counts),
        )
        return tokens, statistics


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
    - `<output_file>.stats.json` (`wordpiece_vocab_stats`): every
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
            wordpiece_vocab_stats.build_stats,
            parameters=parameters,
            input_counts=beam.pvalue.AsSingleton(input_counts),
        )
        | "WriteStats" >> job.WriteStats(output_file + STATS_SUFFIX)
    )


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
    flags, beam_arguments = wordpiece_vocab_flags.parse_arguments(argv)
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
        summary_line=wordpiece_vocab_stats.summary_line,
        logger=LOGGER,
        output_problems=output_problems,
    )


if __name__ == "__main__":
    job.command_line_main("pipelines.wordpiece_vocab")

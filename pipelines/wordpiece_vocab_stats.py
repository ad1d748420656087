"""The stats of `python -m pipelines.wordpiece_vocab`: `<output_file>.stats.json`.

- `word_statistics`: what `LearnWordPieceVocabulary` measures over its
  lines: words counted and unique, words given to the learner, the sizes
  learned and written, and the [UNK] share of the word pieces.
- `build_stats`: those with the job's parameters, the accounting of every
  input line (`text_input.input_accounting`) and the warnings: the dict
  that the job writes and `main` returns.
- `summary_line`: the line `job.run_job` logs at the end.
"""

from pipelines import text_input


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
        The stats dict (see `pipelines.wordpiece_vocab`): `statistics` with
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

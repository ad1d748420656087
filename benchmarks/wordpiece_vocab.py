"""tfnlp's Beam WordPiece vocabulary job against keras_hub's vocabulary learner.

    python -m benchmarks.wordpiece_vocab [--input_file=../shared/data/mono/wikitext-2-test.txt
        --vocab_size=8000 --lower_case --repeats=1]

Learns a vocabulary of at most `--vocab_size` tokens from `--input_file`
(default: the WikiText-2 test split, about 1.3 MB), in the same run, with

- tfnlp's Beam job, `pipelines.wordpiece_vocab.main` with its default runner
  (Beam's in-process FnApiRunner, one worker); its time includes its own
  [UNK]-share pass and writing the vocabulary and stats files;
- keras_hub's `compute_word_piece_vocabulary(data=[input_file], ...)`, with
  the reserved tokens [PAD], [UNK], [CLS], [SEP], [MASK] and
  `lowercase=strip_accents=--lower_case`, writing its vocabulary to a file.

Both run tensorflow-text's pure-Python WordPiece learner
(`wordpiece_tokenizer_learner_lib.learn`) with the same parameters; the
benchmark wraps that function with a timer (both call it through the
module, in this process), so the table also gives each method's seconds in
the learner and the learner's vocabulary size before any cut. Each repeat
runs keras_hub first, then tfnlp, and the best wall time of each is
reported.

Each resulting vocabulary is then measured on the same corpus with the same
tokenizer, `tfnlp.text.BertTokenizer(vocab_file, lower_case)` (the ids of
the original BERT; special tokens are looked up by name): the share of
word pieces that are [UNK], the total number of pieces, pieces per
non-empty line, and pieces per word, where words come from a
vocabulary-independent split (tfnlp's normalization, then the original
BasicTokenizer's split on whitespace, punctuation and CJK, as the Beam job
counts them). It also lists the words that become [UNK] most often, the
characters of the corpus that each vocabulary lacks (alone or as a "##"
continuation) and how much the two vocabularies overlap. Prints a table and
writes JSON (`--output`, default benchmarks/results/wordpiece_vocab.json)
whose "figures" are tfnlp's seconds, [UNK] share and pieces per word against
keras_hub's. Ratio = tfnlp / keras_hub (below 1 means tfnlp is faster, or
has fewer [UNK] or pieces). Relative `--input_file` and `--output` paths are
resolved from the repository root. With the defaults it runs in about two
and a half minutes on 2 cores, with `--vocab_size=2000` in about 75 seconds.
"""

import argparse
import collections
import functools
import logging
import os
import tempfile
import time

import keras_hub
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner_lib,
)

from benchmarks.reporting import FIGURES_KEY, figure, from_root, machine_description, write_report
from pipelines import wordpiece_vocab
from tfnlp.text import normalization
from tfnlp.text.bert_tokenizer import BertTokenizer
from tfnlp.text.vocabulary import SPECIAL_TOKENS, load_vocabulary

STRINGS = tf.TensorSpec([None], tf.string)
METHODS = ("keras_hub compute_word_piece_vocabulary", "tfnlp Beam wordpiece_vocab")


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as file:
        return [line for line in file.read().splitlines() if line.strip()]


class LearnerTimer:
    """Wraps the tensorflow-text learner's `learn` to record each call's
    seconds and vocabulary size (before any cut by its caller)."""

    def __init__(self):
        self.calls = []
        self._learn = learner_lib.learn

    def __enter__(self):
        @functools.wraps(self._learn)
        def timed_learn(*args, **kwargs):
            start = time.perf_counter()
            tokens = self._learn(*args, **kwargs)
            self.calls.append({"seconds": time.perf_counter() - start, "size": len(tokens)})
            return tokens

        learner_lib.learn = timed_learn
        return self

    def __exit__(self, *exc):
        learner_lib.learn = self._learn


def run_keras_hub(input_file, vocab_size, lower_case, vocab_file):
    keras_hub.tokenizers.compute_word_piece_vocabulary(
        data=[input_file],
        vocabulary_size=vocab_size,
        vocabulary_output_file=vocab_file,
        lowercase=lower_case,
        strip_accents=lower_case,
        reserved_tokens=list(SPECIAL_TOKENS),
    )
    return None


def run_tfnlp(input_file, vocab_size, lower_case, vocab_file):
    return wordpiece_vocab.main([
        f"--input_file={input_file}",
        f"--output_file={vocab_file}",
        f"--vocab_size={vocab_size}",
        "--lower_case" if lower_case else "--no-lower_case",
    ])


def timed_run(run, *args):
    with LearnerTimer() as timer:
        start = time.perf_counter()
        stats = run(*args)
        seconds = time.perf_counter() - start
    if len(timer.calls) != 1:
        raise RuntimeError(f"Expected one call of the learner, saw {len(timer.calls)}.")
    return seconds, timer.calls[0], stats


def split_words(lines, lower_case, batch_size):
    """Word counts of the corpus, split as the original BasicTokenizer does
    (the same split as the Beam job's word counting)."""

    @tf.function(input_signature=[STRINGS])
    def split(strings):
        strings = normalization.normalize(strings, lower_case)
        return tf_text.regex_split(
            strings,
            delim_regex_pattern=wordpiece_vocab.WORD_DELIMITER,
            keep_delim_regex_pattern=wordpiece_vocab.KEPT_DELIMITER,
        ).flat_values

    counts = collections.Counter()
    for start in range(0, len(lines), batch_size):
        counts.update(split(tf.constant(lines[start:start + batch_size])).numpy())
    return {word.decode("utf-8"): count for word, count in counts.items()}


def measure(vocab_file, lower_case, lines, word_counts, batch_size, examples):
    """[UNK] share, pieces and alphabet of one vocabulary on the corpus."""
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    unk_id = tokenizer.unk_id

    @tf.function(input_signature=[STRINGS])
    def count(strings):
        ids = tokenizer.tokenize(strings)
        pieces = ids.row_lengths()
        unknown = tf.reduce_sum(tf.cast(tf.equal(ids, unk_id), tf.int64), axis=1)
        return pieces, unknown

    def count_all(texts):
        pieces, unknown = [], []
        for start in range(0, len(texts), batch_size):
            p, u = count(tf.constant(texts[start:start + batch_size]))
            pieces.append(p.numpy())
            unknown.append(u.numpy())
        return np.concatenate(pieces), np.concatenate(unknown)

    start = time.perf_counter()
    line_pieces, line_unknown = count_all(lines)
    tokenize_seconds = time.perf_counter() - start
    total_pieces, total_unknown = int(line_pieces.sum()), int(line_unknown.sum())

    # The same count per distinct word, weighted by its occurrences: which
    # words are [UNK] (WordPiece makes a word it cannot split one [UNK]).
    words = list(word_counts)
    occurrences = np.array([word_counts[word] for word in words], dtype=np.int64)
    word_pieces, word_unknown = count_all(words)
    unknown_words = sorted(
        ((occurrences[i], words[i]) for i in np.flatnonzero(word_unknown)), reverse=True)

    vocabulary = tokenizer.vocabulary
    tokens = set(vocabulary)
    characters = collections.Counter()
    continuations = collections.Counter()
    for word, count_ in word_counts.items():
        if len(word) > normalization.MAX_CHARS_PER_WORD:
            continue
        characters[word[0]] += count_
        for character in word[1:]:
            continuations[character] += count_
    missing_first = sorted(((n, c) for c, n in characters.items() if c not in tokens), reverse=True)
    missing_continuation = sorted(
        ((n, c) for c, n in continuations.items() if "##" + c not in tokens), reverse=True)
    return {
        "vocabulary_size": len(vocabulary),
        "unk_id": unk_id,
        "single_character_tokens": sum(len(t) == 1 for t in vocabulary),
        "continuation_character_tokens": sum(len(t) == 3 and t.startswith("##") for t in vocabulary),
        "word_pieces": total_pieces,
        "unknown_pieces": total_unknown,
        "unk_share": total_unknown / total_pieces if total_pieces else 0.0,
        "lines_with_unk": int(np.count_nonzero(line_unknown)),
        "pieces_per_line": total_pieces / len(lines),
        "pieces_per_word": total_pieces / int(occurrences.sum()),
        "tokenize_seconds": round(tokenize_seconds, 3),
        # Cross-check: per-word counting gives the same totals as per line.
        "word_level_pieces": int((word_pieces * occurrences).sum()),
        "word_level_unknown_pieces": int((word_unknown * occurrences).sum()),
        "distinct_unknown_words": len(unknown_words),
        "top_unknown_words": [[word, int(n)] for n, word in unknown_words[:examples]],
        "corpus_characters_missing_as_first": len(missing_first),
        "corpus_characters_missing_as_continuation": len(missing_continuation),
        "top_missing_first": [[c, int(n)] for n, c in missing_first[:examples]],
        "top_missing_continuation": [["##" + c, int(n)] for n, c in missing_continuation[:examples]],
    }


def headline_figures(keras_row, tfnlp_row):
    """tfnlp's seconds, [UNK] share and pieces per word against keras_hub's
    (all lower is better)."""
    reference = f"keras-hub {keras_hub.__version__} compute_word_piece_vocabulary"
    return [
        figure("vocabulary learning seconds", tfnlp_row["seconds"], "s", reference=reference,
               reference_value=keras_row["seconds"], higher_is_better=False),
        figure("[UNK] share of the corpus's word pieces", 100 * tfnlp_row["unk_share"], "%",
               reference=reference, reference_value=100 * keras_row["unk_share"],
               higher_is_better=False),
        figure("word pieces per word", tfnlp_row["pieces_per_word"], "pieces/word",
               reference=reference, reference_value=keras_row["pieces_per_word"],
               higher_is_better=False),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input_file", default="../shared/data/mono/wikitext-2-test.txt")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--lower_case", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each method (keras_hub, then tfnlp, per repeat); best is reported")
    parser.add_argument("--batch_size", type=int, default=1024, help="lines per tokenizer batch")
    parser.add_argument("--examples", type=int, default=10,
                        help="how many [UNK] words and missing characters to list")
    parser.add_argument("--keep_vocabularies", default=None,
                        help="a folder to keep both vocabularies in (default: a temporary one)")
    parser.add_argument("--output", default="benchmarks/results/wordpiece_vocab.json")
    args = parser.parse_args()

    tf.get_logger().setLevel("ERROR")
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    input_file = from_root(args.input_file)
    lines = read_lines(input_file)
    megabytes = os.path.getsize(input_file) / 1e6

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep_vocabularies or scratch
        os.makedirs(folder, exist_ok=True)
        vocab_files = {METHODS[0]: os.path.join(folder, "keras_hub_vocab.txt"),
                       METHODS[1]: os.path.join(folder, "tfnlp_vocab.txt")}
        runners = {METHODS[0]: run_keras_hub, METHODS[1]: run_tfnlp}
        runs = {name: [] for name in METHODS}
        beam_stats, vocabularies = None, {}
        with tf.device("/CPU:0"):
            for _ in range(args.repeats):
                for name in METHODS:  # keras_hub first, then tfnlp
                    seconds, learner_call, stats = timed_run(
                        runners[name], input_file, args.vocab_size, args.lower_case,
                        vocab_files[name])
                    runs[name].append({"seconds": seconds, "learner_seconds": learner_call["seconds"],
                                       "learned_size": learner_call["size"]})
                    tokens = load_vocabulary(vocab_files[name])
                    if vocabularies.setdefault(name, tokens) != tokens:
                        raise RuntimeError(f"{name} learned a different vocabulary on a repeat.")
                    beam_stats = stats or beam_stats
                    print(f"  {name}: {seconds:.1f} s ({learner_call['seconds']:.1f} s in the learner)",
                          flush=True)

            word_counts = split_words(lines, args.lower_case, args.batch_size)
            measures = {name: measure(vocab_files[name], args.lower_case, lines, word_counts,
                                      args.batch_size, args.examples)
                        for name in METHODS}

    rows = []
    for name in METHODS:
        best = min(runs[name], key=lambda run: run["seconds"])
        rows.append({
            "method": name,
            "seconds": round(best["seconds"], 3),
            "all_seconds": [round(run["seconds"], 3) for run in runs[name]],
            "learner_seconds": round(best["learner_seconds"], 3),
            "learned_size_before_cut": best["learned_size"],
            **measures[name],
        })
    keras_row, tfnlp_row = rows
    shared = set(vocabularies[METHODS[0]]) & set(vocabularies[METHODS[1]])
    only = {name: sorted(set(vocabularies[name]) - shared) for name in METHODS}
    comparison = {
        "time_ratio_tfnlp_over_keras_hub": round(tfnlp_row["seconds"] / keras_row["seconds"], 3),
        "shared_tokens": len(shared),
        "tokens_only_in_keras_hub": len(only[METHODS[0]]),
        "tokens_only_in_tfnlp": len(only[METHODS[1]]),
        "examples_only_in_keras_hub": only[METHODS[0]][:args.examples],
        "examples_only_in_tfnlp": only[METHODS[1]][:args.examples],
        "beam_stats_unk_share": beam_stats["unk_share"],
        "beam_stats_word_pieces": beam_stats["word_pieces"],
        "beam_stats_words_counted": beam_stats["words_counted"],
    }

    words = sum(word_counts.values())
    print(f"{len(lines)} non-empty lines, {words} words ({len(word_counts)} distinct), "
          f"{megabytes:.3f} MB, of {input_file}; vocab_size={args.vocab_size}, "
          f"lower_case={args.lower_case}; best of {args.repeats} (keras_hub first each time); "
          f"on {machine_description()}; measured with "
          "tfnlp.text.BertTokenizer")
    print(f"{'method':40} {'seconds':>8} {'learner s':>9} {'vocab':>6} {'learned':>7} "
          f"{'[UNK] share':>11} {'pieces':>9} {'pieces/line':>11} {'pieces/word':>11}")
    for row in rows:
        print(f"{row['method']:40} {row['seconds']:8.1f} {row['learner_seconds']:9.1f} "
              f"{row['vocabulary_size']:6d} {row['learned_size_before_cut']:7d} "
              f"{row['unk_share']:11.4%} {row['word_pieces']:9d} {row['pieces_per_line']:11.2f} "
              f"{row['pieces_per_word']:11.4f}")
    print(f"time ratio tfnlp / keras_hub: {comparison['time_ratio_tfnlp_over_keras_hub']:.2f}x; "
          f"shared tokens {comparison['shared_tokens']}, only keras_hub "
          f"{comparison['tokens_only_in_keras_hub']}, only tfnlp {comparison['tokens_only_in_tfnlp']}; "
          f"Beam job's own unk_share {comparison['beam_stats_unk_share']:.4%}")
    for row in rows:
        print(f"  {row['method'][:9]}: alphabet {row['single_character_tokens']} + "
              f"{row['continuation_character_tokens']} '##' characters; corpus characters missing "
              f"{row['corpus_characters_missing_as_first']} alone, "
              f"{row['corpus_characters_missing_as_continuation']} as '##'; "
              f"{row['distinct_unknown_words']} distinct [UNK] words, most frequent: "
              f"{row['top_unknown_words'][:6]}")
        if (row["word_level_pieces"], row["word_level_unknown_pieces"]) != (
                row["word_pieces"], row["unknown_pieces"]):
            print(f"    note: per-word counts ({row['word_level_pieces']} pieces, "
                  f"{row['word_level_unknown_pieces']} [UNK]) differ from per-line counts")

    result = {"settings": {**vars(args), "input_file": input_file, "lines": len(lines),
                           "megabytes": round(megabytes, 6), "words": words,
                           "distinct_words": len(word_counts),
                           "reserved_tokens": list(SPECIAL_TOKENS),
                           "tfnlp_runner": "default (FnApiRunner, in-process)"},
              "results": rows, "comparison": comparison,
              FIGURES_KEY: headline_figures(keras_row, tfnlp_row)}
    write_report(result, args.output)


if __name__ == "__main__":
    main()

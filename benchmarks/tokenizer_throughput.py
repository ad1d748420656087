"""Throughput of tfnlp's BertTokenizer against tensorflow-text and Hugging Face.

    python -m benchmarks.tokenizer_throughput [--input_file=../shared/data/mono/gutenberg-16-books.txt
        --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --batch_size=1024
        --lower_case --breakdown]

Tokenizes every non-empty line of `--input_file` (default: 16 Gutenberg books,
about 7.6 MB), in batches of `--batch_size` lines, all on ONE CPU thread, with

- tfnlp's `BertTokenizer.tokenize` (exact ids of the original BERT), inside a
  `tf.function` traced once;
- tensorflow-text's `FastBertTokenizer` with its built-in normalization
  (`lower_case_nfd_strip_accents`, which is not exact w.r.t. the original),
  the same way;
- Hugging Face `tokenizers.BertWordPieceTokenizer.encode_batch` (Rust), with
  `RAYON_NUM_THREADS=1` and `TOKENIZERS_PARALLELISM=false` set before it is
  imported.

TensorFlow runs with one inter-op and one intra-op thread. The TensorFlow
timings include fetching each batch's ids to NumPy (forcing execution); the
Hugging Face timing is the `encode_batch` calls. The timed pass over all
batches is repeated `--repeats` times, interleaving the three tokenizers so
that machine noise hits all alike, and the best pass of each is reported, in
MB/s of UTF-8 input (1 MB = 10^6 bytes). "cpu/wall" is process CPU time over
wall time during the passes: about 1 confirms one thread. The agreement
columns count the lines whose ids equal tfnlp's. With `--breakdown` it also
times each step of tfnlp's pipeline alone (each under its own `tf.function`,
on the inputs that step sees). Prints tables and writes JSON (`--output`,
default benchmarks/results/tokenizer_throughput.json) whose "figures" are
tfnlp's MB/s against Hugging Face's (goal: at least 10x) and against the
built-in FastBertTokenizer's (goal: the built-in at most 1.5x faster).
Relative `--input_file`, `--vocab_file` and `--output` paths are resolved
from the repository root.
"""

import os

# Before tokenizers is imported: its Rust thread pool reads these once.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import time  # noqa: E402

import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402
import tokenizers  # noqa: E402

from benchmarks.reporting import (  # noqa: E402
    FIGURES_KEY, figure, from_root, machine_description, write_report)
from tfnlp.text import normalization  # noqa: E402
from tfnlp.text.bert_tokenizer import BertTokenizer  # noqa: E402
from tfnlp.text.vocabulary import load_vocabulary  # noqa: E402

STRINGS = tf.TensorSpec([None], tf.string)
# tfnlp at least this many times as fast as Hugging Face's Rust tokenizer.
HUGGING_FACE_SPEED_GOAL = 10.0
# tensorflow-text's built-in (inexact) normalization at most this many
# times as fast as tfnlp.
BUILTIN_SPEED_LIMIT = 1.5


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line for line in file.read().splitlines() if line.strip()]


def compiled(tokenize):
    @tf.function(input_signature=[STRINGS])
    def run(strings):
        ids = tokenize(strings)
        return ids.flat_values, ids.row_splits

    return run


def to_lists(flat, splits):
    return [flat[start:end].tolist() for start, end in zip(splits[:-1], splits[1:])]


class Timed:
    """Wall and process CPU seconds of one pass."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def tf_pass(run, batches, keep=False):
    outputs = []
    with Timed() as timed:
        for batch in batches:
            flat, splits = run(batch)
            flat, splits = flat.numpy(), splits.numpy()
            if keep:
                outputs.append((flat, splits))
    ids = [line for flat, splits in outputs for line in to_lists(flat, splits)] if keep else None
    return timed, ids


def hf_pass(tokenizer, batches, keep=False):
    wall = cpu = 0.0
    ids = []
    for batch in batches:
        with Timed() as timed:
            encodings = tokenizer.encode_batch(batch, add_special_tokens=False)
        wall, cpu = wall + timed.wall, cpu + timed.cpu
        if keep:
            ids.extend(encoding.ids for encoding in encodings)
    timed.wall, timed.cpu = wall, cpu
    return timed, (ids if keep else None)


def agreement(ids, reference, vocabulary, lines, examples=3):
    """Lines with the same ids as `reference`, and a few that differ."""
    same, differing = 0, []
    for index, (ours, theirs) in enumerate(zip(ids, reference)):
        if ours == theirs:
            same += 1
            continue
        if len(differing) < examples:
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                      min(len(ours), len(theirs)))
            differing.append({
                "line": index,
                "text": lines[index][:120],
                "tfnlp": [vocabulary[i] for i in theirs[max(0, at - 2):at + 4]],
                "this": [vocabulary[i] for i in ours[max(0, at - 2):at + 4]],
            })
    return same, differing


def breakdown(tokenizer, lower_case, batches, repeats):
    """Seconds of each step of tfnlp's pipeline alone, best of `repeats`."""
    transcode = lambda s: tf.strings.unicode_transcode(
        s, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    steps = [
        ("clean_text", normalization.clean_text),
        ("  unicode_transcode", transcode),
        ("  regex_replace (control chars)",
         lambda s: tf.strings.regex_replace(s, normalization.CONTROL_CHARACTERS, "")),
    ]
    if lower_case:
        steps += [
            ("lower_case_and_strip_accents", normalization.lower_case_and_strip_accents),
            ("  strings.lower (utf-8)", lambda s: tf.strings.lower(s, encoding="utf-8")),
            ("  normalize_utf8 NFD", lambda s: tf_text.normalize_utf8(s, "NFD")),
            ("  regex_replace (\\p{Mn})",
             lambda s: tf.strings.regex_replace(s, normalization.NON_SPACING_MARKS, "")),
        ]
    steps += [
        ("replace_long_words", lambda s: normalization.replace_long_words(
            s, tokenizer._long_word_replacement)),
        ("FastWordpieceTokenizer.tokenize", lambda s: tokenizer._wordpiece.tokenize(s)),
        ("(baseline: strings.length only)", lambda s: s),
        ("whole BertTokenizer.tokenize", None),
    ]
    # The input each step sees: raw lines for the normalization steps and the
    # whole tokenizer, normalized (and long-word-replaced) text for the rest.
    normalized = [normalization.normalize(b, lower_case) for b in batches]
    replaced = [normalization.replace_long_words(b, tokenizer._long_word_replacement)
                for b in normalized]
    inputs = {
        "clean_text": batches, "  unicode_transcode": batches,
        "  regex_replace (control chars)": [transcode(b) for b in batches],
        "lower_case_and_strip_accents": [normalization.clean_text(b) for b in batches],
        "replace_long_words": normalized,
        "FastWordpieceTokenizer.tokenize": replaced,
        "(baseline: strings.length only)": batches,
        "whole BertTokenizer.tokenize": batches,
    }
    inputs["  strings.lower (utf-8)"] = inputs["lower_case_and_strip_accents"]
    inputs["  normalize_utf8 NFD"] = [tf.strings.lower(b, encoding="utf-8")
                                      for b in inputs["lower_case_and_strip_accents"]]
    inputs["  regex_replace (\\p{Mn})"] = [tf_text.normalize_utf8(b, "NFD")
                                           for b in inputs["  normalize_utf8 NFD"]]

    def forced(step):
        # A small result that needs the whole output: sum of string lengths,
        # or of the ids.
        @tf.function(input_signature=[STRINGS])
        def run(strings):
            out = tokenizer.tokenize(strings) if step is None else step(strings)
            if isinstance(out, tf.RaggedTensor):
                return tf.reduce_sum(out.flat_values)
            return tf.reduce_sum(tf.strings.length(out, unit="BYTE"))
        return run

    runs = {name: forced(step) for name, step in steps}
    for name, _ in steps:
        runs[name](inputs[name][0])  # trace
        assert runs[name].experimental_get_tracing_count() == 1
    seconds = {name: [] for name, _ in steps}
    for _ in range(repeats):
        for name, _ in steps:
            with Timed() as timed:
                for batch in inputs[name]:
                    runs[name](batch).numpy()
            seconds[name].append(timed.wall)
    return [(name, min(seconds[name])) for name, _ in steps]


def headline_figures(names, speed):
    """tfnlp's MB/s against Hugging Face's and the built-in
    FastBertTokenizer's (`speed`: MB/s by tokenizer name)."""
    tfnlp, builtin, hugging_face = names
    return [
        figure("tokenizer throughput", speed[tfnlp], "MB/s",
               reference=f"Hugging Face tokenizers {tokenizers.__version__} BertWordPiece",
               reference_value=speed[hugging_face], goal=HUGGING_FACE_SPEED_GOAL),
        figure("tokenizer throughput", speed[tfnlp], "MB/s",
               reference=(f"tensorflow-text {tf_text.__version__} FastBertTokenizer "
                          "(built-in normalization)"),
               reference_value=speed[builtin], goal=1 / BUILTIN_SPEED_LIMIT),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input_file", default="../shared/data/mono/gutenberg-16-books.txt")
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--lower_case", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each step of tfnlp's pipeline alone")
    parser.add_argument("--output", default="benchmarks/results/tokenizer_throughput.json")
    args = parser.parse_args()

    # The breakdown's many one-trace tf.functions would set off retracing
    # warnings.
    tf.get_logger().setLevel("ERROR")
    # One thread, before any TensorFlow op runs.
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)

    input_file, vocab_file = from_root(args.input_file), from_root(args.vocab_file)
    lines = read_lines(input_file)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    line_batches = [lines[i:i + args.batch_size] for i in range(0, len(lines), args.batch_size)]
    with tf.device("/CPU:0"):
        batches = [tf.constant(batch) for batch in line_batches]
    vocabulary = load_vocabulary(vocab_file)

    ours = BertTokenizer(vocab_file, lower_case=args.lower_case)
    builtin = tf_text.FastBertTokenizer(
        vocab=vocabulary, suffix_indicator="##",
        # As tfnlp's WordPiece, so that only the normalization differs.
        max_bytes_per_word=4 * normalization.MAX_CHARS_PER_WORD,
        token_out_type=tf.int64, unknown_token="[UNK]",
        lower_case_nfd_strip_accents=args.lower_case)
    hugging_face = tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=args.lower_case)

    names = ["tfnlp BertTokenizer", "tf-text FastBertTokenizer (built-in norm.)",
             "HF tokenizers BertWordPiece (Rust)"]
    runs = [compiled(ours.tokenize), compiled(builtin.tokenize)]
    with tf.device("/CPU:0"):
        for run in runs:
            run(batches[0])  # trace once, warm up
        hugging_face.encode_batch(line_batches[0], add_special_tokens=False)
        passes = {name: [] for name in names}
        ids = {}
        for repeat in range(args.repeats):
            keep = repeat == 0
            for name, run in zip(names, runs):
                timed, result = tf_pass(run, batches, keep)
                passes[name].append(timed)
                ids.setdefault(name, result)
            timed, result = hf_pass(hugging_face, line_batches, keep)
            passes[names[2]].append(timed)
            ids.setdefault(names[2], result)
        traces = [run.experimental_get_tracing_count() for run in runs]

    rows = []
    for name in names:
        best = min(passes[name], key=lambda timed: timed.wall)
        same, examples = agreement(ids[name], ids[names[0]], vocabulary, lines)
        rows.append({
            "tokenizer": name,
            "seconds": round(best.wall, 4),
            "mb_per_s": round(megabytes / best.wall, 3),
            "all_mb_per_s": [round(megabytes / timed.wall, 3) for timed in passes[name]],
            "cpu_over_wall": round(best.cpu / best.wall, 3),
            "tokens": sum(len(line) for line in ids[name]),
            "lines_same_as_tfnlp": same,
            "lines_differing_from_tfnlp": len(lines) - same,
            "differing_examples": examples,
        })
    speed = {row["tokenizer"]: row["mb_per_s"] for row in rows}
    ratios = {
        "tfnlp_over_hugging_face": round(speed[names[0]] / speed[names[2]], 3),
        "builtin_over_tfnlp": round(speed[names[1]] / speed[names[0]], 3),
    }

    print(f"{len(lines)} non-empty lines, {megabytes:.3f} MB of UTF-8, of {input_file}; "
          f"batches of {args.batch_size} lines; lower_case={args.lower_case}; one thread; "
          f"best of {args.repeats} interleaved passes; on {machine_description()}, "
          f"traces per tf.function: {traces}")
    print(f"{'tokenizer':44} {'MB/s':>8} {'seconds':>8} {'cpu/wall':>8} {'tokens':>10} "
          f"{'lines = tfnlp':>14} {'differ':>7}")
    for row in rows:
        print(f"{row['tokenizer']:44} {row['mb_per_s']:8.2f} {row['seconds']:8.3f} "
              f"{row['cpu_over_wall']:8.2f} {row['tokens']:10d} "
              f"{row['lines_same_as_tfnlp']:8d} {100 * row['lines_same_as_tfnlp'] / len(lines):4.1f}% "
              f"{row['lines_differing_from_tfnlp']:7d}")
    print(f"tfnlp / Hugging Face: {ratios['tfnlp_over_hugging_face']:.2f}x "
          f"(goal >= {HUGGING_FACE_SPEED_GOAL:g}x); built-in FastBertTokenizer / tfnlp: "
          f"{ratios['builtin_over_tfnlp']:.2f}x (goal <= {BUILTIN_SPEED_LIMIT:g}x)")
    for row in rows[1:]:
        for example in row["differing_examples"]:
            print(f"  {row['tokenizer'][:24]} differs on line {example['line']}: "
                  f"tfnlp {example['tfnlp']} vs {example['this']}")

    result = {"settings": {**vars(args), "input_file": input_file, "vocab_file": vocab_file,
                           "lines": len(lines), "megabytes": round(megabytes, 6),
                           "threads": 1},
              "results": rows, "ratios": ratios,
              FIGURES_KEY: headline_figures(names, speed)}
    if args.breakdown:
        with tf.device("/CPU:0"):
            steps = breakdown(ours, args.lower_case, batches, args.repeats)
        print(f"\ntfnlp pipeline, each step alone under tf.function, best of {args.repeats} "
              "(its output forced by a sum of lengths)")
        print(f"{'step':36} {'seconds':>8} {'MB/s':>8}")
        for name, seconds in steps:
            print(f"{name:36} {seconds:8.3f} {megabytes / seconds:8.2f}")
        result["breakdown_seconds"] = {name.strip(): round(seconds, 4) for name, seconds in steps}

    write_report(result, args.output)


if __name__ == "__main__":
    main()

"""Translation quality and training speed of RNNSeq2Seq's attention variants,
each trained for the same budget: a number of steps, or wall-clock time.

    python -m benchmarks.rnn_attention_variants [--train_data='mt/train/translation-*' \\
        --eval_data='mt/val/translation-*'] [--runs_dir=RUNS_DIR] \\
        [--train_steps=2300 | --stop_time_hours=0.33] [--attentions=none,luong_dot,...] \\
        [-- --config=small --learning_rate=2e-3 ...]
    python -m benchmarks.rnn_attention_variants --quick    # a smoke run of about 2 minutes

The data: `--train_data` and `--eval_data`, shards of `python -m
pipelines.translation_data`. Without them the benchmark makes both in a
temporary directory first (`benchmarks.translation_inputs`; about 15 s):
the first `--train_pairs` (0: all 29,000) pairs of Multi30k's training text
(../shared/data/mt/train.en, train.de) with a shared `--vocab_size`-piece
SentencePiece model learned from them, 4 shards, and the first
`--eval_pairs` (0: all 1,014) validation pairs (val.en, val.de) tokenized
with that model.

For each variant of `--attentions` (default all; the `attention` argument
of `RNNSeq2Seq`, `none` for the encoder-decoder without attention) this runs
`python -m trainer.translate --model=rnn --attention=VARIANT` in its own
process, into `RUNS_DIR/VARIANT` (`--runs_dir`; without it a temporary
directory, removed at the end), for `--train_steps` steps (the same
batches for every variant, whatever else the machine runs) or, without
it, `--stop_time_hours` (compilation counts; only fair on an idle
machine), with an evaluation only at the end and every flag after `--`
(the same for every variant). Then it reads each run's files:

- the validation scores of the final evaluation (`eval_log.jsonl`):
  sacrebleu BLEU (cased, detokenized), lowercased BLEU, chrF and
  perplexity, decoded as the flags say (beam 4 by default);
- the steps reached (`train_log.jsonl`);
- training throughput: the median `tokens_per_second` (real source plus
  target tokens) of the trainer's log lines, the first one (which holds the
  compilation) left out.

The reference is the model without attention, trained in the same run: the
table gives each variant's BLEU gain over it and its throughput ratio to
it, and the report's figures each variant's validation BLEU and training
tokens/s against it. The runs take turns on the machine; give each one the
whole machine (nothing else running) for throughputs worth comparing.

The default budget, 20 minutes a variant, makes a run of all six variants
take over two hours. `--quick` trains `none` and `luong_general` (unless
`--attentions` says otherwise) 20 steps each on 2,000 training pairs with
a 1,000-piece vocabulary, logging every 5 steps, and evaluates greedily on
50 validation pairs; a smoke run only, its scores mean nothing.

Prints a table and writes JSON (default
benchmarks/results/rnn_attention_variants.json).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from benchmarks.translation_inputs import (
    SENTENCEPIECE_MODEL,
    SHARD_PATTERN,
    TRAIN_SOURCE,
    TRAIN_TARGET,
    VALIDATION_SOURCE,
    VALIDATION_TARGET,
    make_shards,
)
from tfnlp.models.seq2seq.rnn_seq2seq import ATTENTIONS

REFERENCE = "none"
VARIANTS = (REFERENCE, *ATTENTIONS)
REFERENCE_NAME = "RNNSeq2Seq without attention, same budget"
QUICK_ATTENTIONS = "none,luong_general"
# Trainer flags of --quick, before those after `--` (which override them).
QUICK_TRAINER_FLAGS = ["--max_tokens_per_batch=1024", "--log_every_steps=5",
                       "--beam_size=1", "--sample_sentences=0"]
THROUGHPUT_PATTERN = re.compile(r"INFO trainer\.training_loop: step \d+: .*tokens_per_second=([0-9.e+]+)")


def parse_flags(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train_data", default=None,
                        help="Training shards of pipelines.translation_data (default: made "
                             "here from Multi30k, see --train_pairs).")
    parser.add_argument("--eval_data", default=None,
                        help="Validation shards, with --train_data (default: made here).")
    parser.add_argument("--train_pairs", type=int, default=0,
                        help="Without --train_data: the first pairs of the training text "
                             "(0: all 29,000).")
    parser.add_argument("--eval_pairs", type=int, default=0,
                        help="Without --eval_data: the first pairs of the validation text "
                             "(0: all 1,014).")
    parser.add_argument("--vocab_size", type=int, default=8000,
                        help="Without --train_data: the shared SentencePiece model's pieces.")
    parser.add_argument("--runs_dir", default=None,
                        help="Each variant's model_dir is RUNS_DIR/VARIANT; a variant whose "
                             "run has finished there already is read, not trained again (an "
                             "unfinished one stops the benchmark). Default: a temporary "
                             "directory, removed at the end.")
    parser.add_argument("--attentions", default=None,
                        help=f"Comma-separated (default: all, {QUICK_ATTENTIONS} with --quick).")
    parser.add_argument("--train_steps", type=int, default=None,
                        help="Budget in steps; without it, --stop_time_hours.")
    parser.add_argument("--stop_time_hours", type=float, default=1 / 3)
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: 2,000 training and 50 validation pairs, a "
                             "1,000-piece vocabulary, 20 steps, greedy evaluation.")
    parser.add_argument("--output", default="benchmarks/results/rnn_attention_variants.json")
    own, trainer_flags = _split(argv)
    flags = parser.parse_args(own)
    if (flags.train_data is None) != (flags.eval_data is None):
        parser.error("give both --train_data and --eval_data, or neither (to make both here).")
    flags.trainer_flags = trainer_flags
    if flags.quick:
        flags.train_pairs, flags.eval_pairs, flags.vocab_size = 2000, 50, 1000
        flags.train_steps = 20
        flags.trainer_flags = QUICK_TRAINER_FLAGS + trainer_flags
    attentions = flags.attentions or (QUICK_ATTENTIONS if flags.quick else ",".join(VARIANTS))
    flags.attentions = [name.strip() for name in attentions.split(",") if name.strip()]
    unknown = sorted(set(flags.attentions) - set(VARIANTS))
    if unknown:
        parser.error(f"--attentions: unknown {', '.join(unknown)}; choose from "
                     f"{', '.join(VARIANTS)}.")
    return flags


def _split(argv):
    """The benchmark's own arguments, and the trainer's (those after `--`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        return argv, []
    index = argv.index("--")
    return argv[:index], argv[index + 1:]


def budget_flags(flags):
    """The trainer's flags of the budget: steps, or wall-clock time."""
    if flags.train_steps is not None:
        return [f"--train_steps={flags.train_steps}"]
    return [f"--stop_time_hours={flags.stop_time_hours}", "--train_steps=1000000"]


def train_variant(attention, flags):
    """Runs the trainer for one variant (unless its final evaluation is
    there already); returns its model_dir."""
    model_dir = os.path.join(flags.runs_dir, attention)
    if os.path.exists(os.path.join(model_dir, "eval_log.jsonl")):
        print(f"{attention}: reading the finished run in {model_dir}", flush=True)
        return model_dir
    if os.path.exists(model_dir):
        raise SystemExit(
            f"{model_dir} holds an unfinished run (no eval_log.jsonl). Remove it to train "
            f"{attention} again from scratch: resuming it would give it more than the budget.")
    os.makedirs(model_dir)
    command = [
        sys.executable, "-m", "trainer.translate", "--model=rnn", f"--attention={attention}",
        f"--train_data={flags.train_data}", f"--eval_data={flags.eval_data}",
        f"--model_dir={model_dir}", *budget_flags(flags), "--eval_every_steps=0",
        *flags.trainer_flags,
    ]
    print(f"{attention}: {' '.join(command[1:])}", flush=True)
    with open(os.path.join(model_dir, "trainer.log"), "w", encoding="utf-8") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True,
                       cwd=from_root("."))
    return model_dir


def prepare_data(flags, directory):
    """Training and validation shards of Multi30k (the first `--train_pairs`
    and `--eval_pairs`), the validation pairs tokenized with the model
    learned from the training text; returns their globs."""
    train_dir = make_shards(os.path.join(directory, "train"), TRAIN_SOURCE, TRAIN_TARGET,
                            pairs=flags.train_pairs, vocab_size=flags.vocab_size, num_shards=4)
    eval_dir = make_shards(os.path.join(directory, "val"), VALIDATION_SOURCE, VALIDATION_TARGET,
                           pairs=flags.eval_pairs,
                           vocab_file=os.path.join(train_dir, SENTENCEPIECE_MODEL), num_shards=1)
    return os.path.join(train_dir, SHARD_PATTERN), os.path.join(eval_dir, SHARD_PATTERN)


def read_json_lines(path):
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def read_run(model_dir):
    """The scores, steps and throughput of one finished run."""
    evaluation = read_json_lines(os.path.join(model_dir, "eval_log.jsonl"))[-1]
    steps = read_json_lines(os.path.join(model_dir, "train_log.jsonl"))[-1]["step"]
    with open(os.path.join(model_dir, "trainer.log"), encoding="utf-8") as file:
        throughputs = [float(match.group(1)) for match in THROUGHPUT_PATTERN.finditer(file.read())]
    return {
        "steps": steps,
        "tokens_per_second": statistics.median(throughputs[1:] or throughputs or [0.0]),
        "bleu": evaluation["bleu"],
        "bleu_lowercase": evaluation["bleu_lowercase"],
        "chrf": evaluation["chrf"],
        "perplexity": evaluation["perplexity"],
    }


def summarise(results, reference=REFERENCE):
    """Prints the table, each variant against `reference` when it ran."""
    base = results.get(reference)
    print(f"{'attention':<20} {'steps':>6} {'tokens/s':>9} {'ratio':>6} {'BLEU':>6} "
          f"{'gain':>6} {'BLEU-lc':>8} {'chrF':>6} {'ppl':>6}")
    for name, row in results.items():
        ratio = gain = ""
        if base and name != reference:
            ratio = f"{row['tokens_per_second'] / max(base['tokens_per_second'], 1e-9):.2f}"
            gain = f"{row['bleu'] - base['bleu']:+.1f}"
            row["throughput_ratio"] = float(ratio)
            row["bleu_gain"] = round(row["bleu"] - base["bleu"], 2)
        print(f"{name:<20} {row['steps']:>6} {row['tokens_per_second']:>9,.0f} {ratio:>6} "
              f"{row['bleu']:>6.1f} {gain:>6} {row['bleu_lowercase']:>8.1f} "
              f"{row['chrf']:>6.1f} {row['perplexity']:>6.2f}")


def figures(results, reference=REFERENCE):
    """Each variant's validation BLEU and training tokens/s against
    `reference`'s; each run's alone when the reference did not run or ran
    alone."""
    base = results.get(reference)
    variants = {name: row for name, row in results.items() if name != reference}
    if base is None or not variants:
        base, variants = None, results
    reference_name = REFERENCE_NAME if base else None
    rows = []
    for name, row in variants.items():
        rows.append(figure(f"{name} validation BLEU", row["bleu"], "BLEU",
                           reference=reference_name, reference_value=base and base["bleu"]))
        rows.append(figure(f"{name} training tokens/s", row["tokens_per_second"], "tokens/s",
                           reference=reference_name,
                           reference_value=base and base["tokens_per_second"]))
    return rows


def main(argv=None):
    flags = parse_flags(argv)
    data = {"train_data": flags.train_data, "eval_data": flags.eval_data}
    if flags.train_data is None:
        data = {"made_from": [TRAIN_SOURCE, TRAIN_TARGET, VALIDATION_SOURCE, VALIDATION_TARGET],
                "train_pairs": flags.train_pairs or "all", "eval_pairs": flags.eval_pairs or "all",
                "vocab_size": flags.vocab_size}
    with tempfile.TemporaryDirectory(prefix="rnn_attention_variants_") as work_dir:
        if flags.train_data is None:
            flags.train_data, flags.eval_data = prepare_data(flags, work_dir)
        flags.runs_dir = from_root(flags.runs_dir or os.path.join(work_dir, "runs"))
        results = {name: read_run(train_variant(name, flags)) for name in flags.attentions}
    summarise(results)
    budget = ({"train_steps": flags.train_steps} if flags.train_steps is not None
              else {"stop_time_hours": flags.stop_time_hours})
    write_report({**budget, "data": data, "trainer_flags": flags.trainer_flags,
                  "results": results, FIGURES_KEY: figures(results)}, flags.output)


if __name__ == "__main__":
    main()

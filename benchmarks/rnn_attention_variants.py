"""Translation quality and training speed of RNNSeq2Seq's attention variants,
each trained for the same budget: a number of steps, or wall-clock time.

    python -m benchmarks.rnn_attention_variants \\
        --train_data='/tmp/mt/train/translation-*.tfrecord' \\
        --eval_data='/tmp/mt/val/translation-*.tfrecord' --runs_dir=/tmp/variants \\
        [--train_steps=2300 | --stop_time_hours=0.33] [--attentions=none,luong_dot,...] \\
        [-- --config=small --learning_rate=2e-3 ...]

For each variant of `--attentions` (the `attention` argument of
`RNNSeq2Seq`, `none` for the encoder-decoder without attention) this runs
`python -m trainer.translate --model=rnn --attention=VARIANT` in its own
process, into `RUNS_DIR/VARIANT`, for `--train_steps` steps (the same
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
it. The runs take turns on the machine; give each one the whole machine
(nothing else running) for throughputs worth comparing.

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

from benchmarks.reporting import from_root, write_report
from tfnlp.models.seq2seq.rnn_seq2seq import ATTENTIONS

VARIANTS = ("none", *ATTENTIONS)
THROUGHPUT_PATTERN = re.compile(r"INFO trainer\.training_loop: step \d+: .*tokens_per_second=([0-9.e+]+)")


def parse_flags(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train_data", required=True)
    parser.add_argument("--eval_data", required=True)
    parser.add_argument("--runs_dir", required=True,
                        help="Each variant's model_dir is RUNS_DIR/VARIANT; a variant whose "
                             "run has finished there already is read, not trained again (an "
                             "unfinished one stops the benchmark).")
    parser.add_argument("--attentions", default=",".join(VARIANTS))
    parser.add_argument("--train_steps", type=int, default=None,
                        help="Budget in steps; without it, --stop_time_hours.")
    parser.add_argument("--stop_time_hours", type=float, default=1 / 3)
    parser.add_argument("--output", default="benchmarks/results/rnn_attention_variants.json")
    own, trainer_flags = _split(argv)
    flags = parser.parse_args(own)
    flags.trainer_flags = trainer_flags
    flags.attentions = [name.strip() for name in flags.attentions.split(",") if name.strip()]
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


def summarise(results, reference="none"):
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


def main(argv=None):
    flags = parse_flags(argv)
    results = {name: read_run(train_variant(name, flags)) for name in flags.attentions}
    summarise(results)
    budget = ({"train_steps": flags.train_steps} if flags.train_steps is not None
              else {"stop_time_hours": flags.stop_time_hours})
    write_report({**budget, "trainer_flags": flags.trainer_flags, "results": results},
                 flags.output)


if __name__ == "__main__":
    main()

"""The benchmark suite: every benchmark, the size it runs at, and
benchmarks/RESULTS.md.

`BENCHMARKS` names each benchmark module with the flags of a run that,
all of them together, fits an hour on a 2-core CPU ("hour"), and of a smoke
run of a minute or so ("quick"). `run_benchmark` runs one as a subprocess
(`python -m benchmarks.NAME FLAGS --output=REPORT`), so that each is
measured in a fresh process, and `results_section` turns the "figures" of
its JSON report (see `benchmarks.reporting.figure`) into its section of
RESULTS.md: the machine, the date and commit, each figure with its
reference and their ratio, and the command that reproduces it.
`update_results_file` replaces the sections of the benchmarks that ran and
keeps the others, so a subset can be run again on its own and the file's
history in git shows each figure over time.

Example:

    >>> sorted(BENCHMARKS)[:2]
    ['attention_layers', 'bert_pretraining_throughput']
"""

import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys
import time

from benchmarks.reporting import (
    DETAILS_KEY,
    FIGURES_KEY,
    REPOSITORY_ROOT,
    from_root,
    machine_description,
)

DATA_DIR = "../shared/data"
RESULTS_FILE = "benchmarks/RESULTS.md"
REPORTS_DIR = "benchmarks/results"
SIZES = ("hour", "quick")
SECTION_START = "<!-- benchmark: {name} -->"
SECTION_END = "<!-- end: {name} -->"
LOG_TAIL_LINES = 15


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One benchmark of the suite.

    Attributes:
        name: its module, `benchmarks.NAME`.
        summary: what it measures against what, one line.
        hour_flags: the flags of its run in the hour-long suite.
        quick_flags: the flags of a smoke run.
        minutes: about how long the hour-size run takes on 2 CPU cores
            (measured on the machine of RESULTS.md, rounded up).
        needs_data: whether it reads the shared real data (`DATA_DIR`).
    """

    name: str
    summary: str
    hour_flags: tuple = ()
    quick_flags: tuple = ()
    minutes: float = 1.0
    needs_data: bool = True

    def flags(self, size):
        return self.hour_flags if size == "hour" else self.quick_flags

    def module_command(self, size):
        """`python -m benchmarks.NAME FLAGS` at `size`, as words."""
        return ["python", "-m", f"benchmarks.{self.name}", *self.flags(size)]

    def command(self, size, output):
        """The command line that runs it at `size`, writing its report to
        `output` (before a `--`, after which flags are passed on)."""
        words = [sys.executable, *self.module_command(size)[1:]]
        end = words.index("--") if "--" in words else len(words)
        return [*words[:end], f"--output={output}", *words[end:]]

    def reproduce_line(self, size):
        """The command a reader types to measure it again."""
        return " ".join(["python -m benchmarks", *(["--quick"] if size == "quick" else []),
                         self.name])


BENCHMARKS = {benchmark.name: benchmark for benchmark in (
    Benchmark("wordpiece_vocab",
              "WordPiece vocabulary job (Beam) against keras-hub's "
              "compute_word_piece_vocabulary",
              quick_flags=("--vocab_size=2000",), minutes=1),
    Benchmark("pretraining_data",
              "BERT pretraining-data job (Beam) against the original create_pretraining_data, "
              "on 4 copies of 16 books",
              hour_flags=("--scale=4",), minutes=1.5),
    Benchmark("pretraining_scaling",
              "BERT pretraining-data job on 1, 4, 16 and 64 copies of 16 books: the default "
              "runner against a Dask cluster of 1 and 2 worker processes",
              quick_flags=("--scales=1", "--dask_workers=2"), minutes=10),
    Benchmark("tokenizer_throughput",
              "BertTokenizer against tensorflow-text's and Hugging Face's",
              hour_flags=("--breakdown",), minutes=0.5),
    Benchmark("bert_pretraining_throughput",
              "BERT pretraining steps against keras-hub's BertMaskedLM",
              hour_flags=("--steps=50",), quick_flags=("--quick",), minutes=1.5,
              needs_data=False),
    Benchmark("attention_layers",
              "attention layers against keras.layers.MultiHeadAttention and keras-hub",
              quick_flags=("--quick",), minutes=1, needs_data=False),
    Benchmark("decoding",
              "beam search against keras-hub's BeamSampler, cached against uncached greedy",
              quick_flags=("--quick",), minutes=0.5, needs_data=False),
    Benchmark("serving",
              "serving latency and throughput against Keras calls and Python tokenization",
              quick_flags=("--quick",), minutes=1.5),
    Benchmark("classifier_serving",
              "distillation students against their teacher through the REST server: "
              "p50/p99 latency at batch 1, throughput at batch 32",
              quick_flags=("--quick",), minutes=4),
    Benchmark("distillation_training",
              "distillation students' training on length-bucketed batches against "
              "batches padded to 128 tokens, on SST-2",
              quick_flags=("--quick",), minutes=5),
    Benchmark("bilstm_export",
              "an exported BiLSTM classifier on the fused LSTM kernel against Keras' loop",
              quick_flags=("--quick",), minutes=0.5, needs_data=False),
    Benchmark("serving_memory",
              "the REST server's peak memory under load, with and without its limits",
              quick_flags=("--quick",), minutes=1.5),
    Benchmark("translation_batching",
              "token-budget translation batches against plain batching, on Multi30k",
              minutes=0.5),
    Benchmark("translation_training",
              "Transformer translation training against the same model from keras-hub's "
              "layers", quick_flags=("--quick",), minutes=2),
    Benchmark("translation_serving",
              "exported translation model: text signatures against ids, beam against greedy",
              quick_flags=("--quick",), minutes=1.5),
    Benchmark("rnn_translation_training",
              "RNNSeq2Seq training against the same model from Keras layers",
              hour_flags=("--attentions=luong_general,luong_concat,bahdanau,"
                          "bahdanau_normalized",),
              quick_flags=("--quick",), minutes=3),
    Benchmark("rnn_beam_search", "RNN beam search under XLA against a Python loop",
              quick_flags=("--quick",), minutes=0.5, needs_data=False),
    Benchmark("rnn_attention_variants",
              "an RNN attention variant against none, for the same short training budget",
              # The recipe of the comparison of all six variants
              # (benchmarks/RESULTS.md), for half its steps and two variants.
              hour_flags=("--attentions=none,luong_general", "--train_steps=1200",
                          "--eval_pairs=500", "--", "--config=small", "--dropout=0.3",
                          "--learning_rate=2e-3", "--warmup_steps=400", "--clip_norm=5",
                          "--jit_compile", "--max_tokens_per_batch=2048",
                          "--log_every_steps=100", "--beam_size=1"),
              quick_flags=("--quick",), minutes=22),
    Benchmark("book_classification",
              "which book a sentence is from: BERT fine-tuned with and without pretraining, "
              "and bag-of-words baselines",
              hour_flags=("--pretrain_steps=2000",),
              quick_flags=("--pretrain_steps=20", "--train_per_book=50", "--test_per_book=25",
                           "--epochs=1"), minutes=6.5),
    Benchmark("lm_training",
              "GPTCausalLM training against keras-hub's GPT2CausalLM of the same size",
              quick_flags=("--quick",), minutes=1.5, needs_data=False),
    Benchmark("lm_generation",
              "top-p generation against keras-hub's GPT2CausalLM.generate on the same "
              "weights, cached against uncached, the export against the Keras model",
              quick_flags=("--quick",), minutes=6, needs_data=False),
)}


def data_present():
    """Whether the shared real data is beside the checkout."""
    return os.path.isfile(os.path.join(from_root(DATA_DIR), "README.md"))


@dataclasses.dataclass
class Outcome:
    """What one benchmark's run gave.

    Attributes:
        benchmark: the `Benchmark`.
        size: "hour" or "quick".
        status: "ran", "failed" or "skipped".
        seconds: the run's wall time.
        report: its JSON report (a dict), when it ran.
        detail: why it failed or was skipped (the end of its log).
    """

    benchmark: Benchmark
    size: str
    status: str
    seconds: float = 0.0
    report: dict = None
    detail: str = ""


def run_benchmark(benchmark, size, reports_dir, log_dir):
    """Runs `benchmark` at `size` in its own process; returns its `Outcome`.

    Its report goes to REPORTS_DIR/NAME.json and its output to
    LOG_DIR/NAME.log; a benchmark that needs the shared data, where it is
    missing, is skipped.
    """
    if benchmark.needs_data and not data_present():
        return Outcome(benchmark, size, "skipped",
                       detail=f"needs the shared real data at {DATA_DIR} beside the checkout")
    report_path = os.path.join(reports_dir, f"{benchmark.name}.json")
    log_path = os.path.join(log_dir, f"{benchmark.name}.log")
    os.makedirs(reports_dir, exist_ok=True)
    os.makedirs(log_dir, exist_ok=True)
    if os.path.exists(report_path):
        os.remove(report_path)
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        finished = subprocess.run(benchmark.command(size, report_path), cwd=REPOSITORY_ROOT,
                                  stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    report = None
    if os.path.exists(report_path):
        with open(report_path, encoding="utf-8") as file:
            report = json.load(file)
    if finished.returncode != 0 or report is None or FIGURES_KEY not in report:
        problem = (f"exited with status {finished.returncode}" if finished.returncode
                   else "wrote no report with figures")
        return Outcome(benchmark, size, "failed", seconds, report,
                       f"{problem}; the end of {log_path}:\n{log_tail(log_path)}")
    return Outcome(benchmark, size, "ran", seconds, report)


def log_tail(path, lines=LOG_TAIL_LINES):
    with open(path, encoding="utf-8", errors="replace") as file:
        return "".join(file.readlines()[-lines:])


def commit_description():
    """The checkout's commit, marked "+ changes" if files differ from it."""
    def git(*arguments):
        return subprocess.run(["git", *arguments], cwd=REPOSITORY_ROOT, capture_output=True,
                              text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit} + changes" if changed else commit


def format_number(value):
    """A figure for a table: thousands separated, two or three significant
    digits below 100."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    magnitude = abs(value)
    if magnitude >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def goal_cell(row):
    if row.get("goal") is None:
        return ""
    sign = "≥" if row.get("higher_is_better", True) else "≤"
    verdict = {True: "met", False: "**not met**"}.get(row.get("met"), "")
    return f"{sign} {format_number(row['goal'])}× {verdict}".strip()


def figures_table(figures):
    """The markdown table of a report's figures."""
    lines = ["| figure | tfnlp | reference | ratio | goal |", "|---|---|---|---|---|"]
    for row in figures:
        reference = ""
        if row.get("reference"):
            reference = (f"{format_number(row.get('reference_value'))} {row['unit']} "
                         f"({row['reference']})")
        ratio = "" if row.get("ratio") is None else f"{format_number(row['ratio'])}×"
        name = row["name"]
        if not row.get("higher_is_better", True):
            name += " (lower is better)"
        lines.append(f"| {name} | {format_number(row['value'])} {row['unit']} | "
                     f"{reference} | {ratio} | {goal_cell(row)} |")
    return "\n".join(lines)


def results_section(outcome, when, machine, commit):
    """The RESULTS.md section of one `Outcome`, between its markers."""
    benchmark = outcome.benchmark
    size = "" if outcome.size == "hour" else " (quick size: a smoke run, not a measurement)"
    module_command = " ".join(benchmark.module_command(outcome.size))
    lines = [SECTION_START.format(name=benchmark.name), f"## {benchmark.name}", "",
             f"{benchmark.summary}.", "",
             f"Measured {when}{size} at commit {commit}, on {machine}. "
             f"Reproduce: `{benchmark.reproduce_line(outcome.size)}` (runs "
             f"`{module_command}`; {outcome.seconds:,.0f} s here).", ""]
    figures = (outcome.report or {}).get(FIGURES_KEY)
    if figures is not None:
        # A run that failed after writing its report still shows its figures.
        lines.append(figures_table(figures))
    if (outcome.report or {}).get(DETAILS_KEY):
        lines += ["", *outcome.report[DETAILS_KEY]]
    if outcome.status == "skipped":
        lines.append(f"Skipped: {outcome.detail}.")
    elif outcome.status == "failed":
        if figures is not None:
            lines.append("")
        lines += [f"**Failed**: {outcome.detail.splitlines()[0]}", "", "```",
                  *outcome.detail.splitlines()[1:], "```"]
    lines.append(SECTION_END.format(name=benchmark.name))
    return "\n".join(lines)


HEADER = """# Benchmark results

Written by `python -m benchmarks` (`make bench`), which runs every benchmark
in `benchmarks/` at a size that fits an hour on a 2-core CPU;
`python -m benchmarks NAME ...` runs some of them again and replaces only
their sections. Each ratio is tfnlp's figure over its reference's,
measured in the same run on the same machine: these machines are noisy,
so compare ratios, not raw figures, across runs. The file's git history
shows each figure over time. The sections after the benchmarks' hold
training runs recorded by hand, with their commands; the suite keeps them.
"""


def update_results_file(path, sections):
    """Writes `sections` (name → section text) into the results file at
    `path`, replacing those benchmarks' earlier sections, keeping the
    others, in `BENCHMARKS` order; sections of other names (the runs
    recorded by hand) follow in the order the file has them."""
    existing = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            text = file.read()
        for match in re.finditer(r"<!-- benchmark: (\w+) -->.*?<!-- end: \1 -->", text, re.S):
            existing[match.group(1)] = match.group(0)
    existing.update(sections)
    order = [name for name in BENCHMARKS if name in existing]
    order += [name for name in existing if name not in BENCHMARKS]
    with open(path, "w", encoding="utf-8") as file:
        file.write(HEADER + "\n" + "\n\n".join(existing[name] for name in order) + "\n")


def run_suite(names, size, results_file, reports_dir, log_dir, echo=print):
    """Runs the benchmarks `names` at `size`, one after another, and writes
    their sections of `results_file`; returns their `Outcome`s."""
    machine, commit = machine_description(), commit_description()
    outcomes, sections = [], {}
    for index, name in enumerate(names, 1):
        benchmark = BENCHMARKS[name]
        echo(f"[{index}/{len(names)}] {name} (about {benchmark.minutes:g} min at the "
             f"{size} size) ...")
        outcome = run_benchmark(benchmark, size, reports_dir, log_dir)
        echo(f"[{index}/{len(names)}] {name}: {outcome.status} in {outcome.seconds:.0f} s"
             + (f": {outcome.detail.splitlines()[0]}" if outcome.detail else ""))
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        sections[name] = results_section(outcome, when, machine, commit)
        update_results_file(results_file, sections)
        outcomes.append(outcome)
    return outcomes

"""tfnlp's Beam pretraining-data job against the original create_pretraining_data.

    python -m benchmarks.pretraining_data [--input_file=../shared/data/mono/gutenberg-16-books.txt
        --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt --max_seq_length=128
        --max_predictions_per_seq=20 --masked_lm_prob=0.15 --dupe_factor=1
        --random_seed=12345 --do_lower_case=true --scale=1 --direct_num_workers=1
        --reference_venv=benchmarks/.reference_venv]

Creates BERT masked-LM / next-sentence pretraining instances from the same
corpus with the same flags, in the same run, with

- tfnlp's Beam job, `python -m pipelines.pretraining_data` run with this
  interpreter (`sys.executable`) from the repository root, on Beam's
  in-process FnApiRunner with `--direct_num_workers` (default 1); its
  instances come from `OUTPUT_DIR/stats.json`;
- the original algorithm as published on PyPI: `tf-models-official==2.20.0`,
  `python -m official.nlp.data.create_pretraining_data`, installed
  `--no-deps` into its own virtual environment (`--reference_venv`, default
  benchmarks/.reference_venv, created on first use with `sys.executable -m
  venv` and pip: tensorflow==2.20.*, tf-keras==2.20.*, absl-py,
  sentencepiece, six). Its instances are counted by reading the framing of
  its output TFRecord (no TensorFlow in this process).

Both use whole-piece masking (`--nodo_whole_word_mask`), short_seq_prob 0.1
and uncompressed output. Each tool runs as a subprocess of a fresh wrapper
process (`python -c`), so each measurement is isolated: wall seconds are the
wrapper's time around the tool (interpreter start and the TensorFlow import
included), "peak RSS" is the wrapper's `getrusage(RUSAGE_CHILDREN).ru_maxrss`
(the largest single process of the tree), and "tree RSS" is the peak of the
summed RSS of the whole process tree, sampled from /proc every 50 ms (it
differs from peak RSS only if the tool runs several processes at once).

`--scale=N` (N > 1) first builds a corpus of N copies of the input (in a
temporary directory), each document of copy k starting with the sentence
"copy k." so that no two documents are identical, and runs both tools on
it, and runs tfnlp on the corpus once as well: to see whether peak memory
stays flat as the corpus grows N times (goal: at most 10% more).

Prints a table and the ratios (tfnlp instances/s / reference, tfnlp peak RSS
/ reference) against the goals (at least 3x the speed, at most 0.5x the
memory), and writes JSON (`--output`, default
benchmarks/results/pretraining_data.json, or pretraining_data_scaleN.json
with `--scale=N`) whose "figures" are those ratios (and the growth with
`--scale`). Relative paths are resolved from the repository root. With the
defaults it runs in about 40 seconds on 2 cores (plus the reference
environment's installation on first use), with `--scale=4` in about 90.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from benchmarks.reporting import FIGURES_KEY, REPOSITORY_ROOT, figure, from_root, write_report

REFERENCE_PACKAGE = "tf-models-official==2.20.0"
REFERENCE_REQUIREMENTS = (
    "tensorflow==2.20.*", "tf-keras==2.20.*", "absl-py", "sentencepiece", "six")
SPEED_GOAL = 3.0
MEMORY_GOAL = 0.5
# "Flat": peak memory on N copies of the corpus at most 10% above one copy.
FLAT_MEMORY_GOAL = 1.1

# Runs argv[1:] as a child; writes {"seconds", "returncode", "max_rss_kb",
# "tree_rss_kb"} as JSON to stdout's last line. Only the standard library.
WRAPPER = r"""
import json, os, resource, subprocess, sys, threading, time

def children():
    table = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                table.setdefault(ppid, []).append(int(pid))
            except (OSError, IndexError, ValueError):
                pass
    return table

def tree_rss_kb(root):
    table, stack, total = children(), [root], 0
    while stack:
        pid = stack.pop()
        stack.extend(table.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total

start = time.perf_counter()
process = subprocess.Popen(sys.argv[1:])
peak = [0]
done = threading.Event()
def sample():
    while not done.wait(0.05):
        peak[0] = max(peak[0], tree_rss_kb(process.pid))
thread = threading.Thread(target=sample, daemon=True)
thread.start()
returncode = process.wait()
seconds = time.perf_counter() - start
done.set()
thread.join()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "returncode": returncode,
                  "max_rss_kb": usage.ru_maxrss, "tree_rss_kb": peak[0]}))
"""


def parse_bool(text):
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text}")


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def ensure_reference_venv(venv):
    """Creates the reference's virtual environment unless it already works."""
    python = venv_python(venv)
    check = [python, "-c", "import official.nlp.data.create_pretraining_data"]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"Creating the reference environment in {venv} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *REFERENCE_REQUIREMENTS], check=True)
    subprocess.run([*pip, "--no-deps", REFERENCE_PACKAGE], check=True)
    result = subprocess.run(check, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"The reference does not import:\n{result.stderr[-3000:]}")
    return python


def package_versions(python, names):
    code = ("import importlib.metadata as m, json, sys; print(json.dumps("
            "{n: m.version(n) for n in sys.argv[1:]}))")
    result = subprocess.run([python, "-c", code, *names], capture_output=True, text=True)
    return json.loads(result.stdout) if result.returncode == 0 else {}


def scaled_corpus(input_file, scale, directory):
    """`scale` copies of the corpus; every document of copy k starts with the
    sentence "copy k." (documents are separated by blank lines)."""
    with open(input_file, encoding="utf-8", errors="replace") as file:
        lines = file.read().splitlines()
    path = os.path.join(directory, f"corpus_x{scale}.txt")
    with open(path, "w", encoding="utf-8") as out:
        for copy in range(scale):
            new_document = True
            for line in lines:
                if not line.strip():
                    new_document = True
                    out.write("\n")
                    continue
                if new_document:
                    out.write(f"copy {copy}.\n")
                    new_document = False
                out.write(line + "\n")
            out.write("\n")
    return path


def count_tfrecords(path):
    """Records of an uncompressed TFRecord file, from its framing: 8-byte
    length, 4-byte CRC, data, 4-byte CRC."""
    count = 0
    with open(path, "rb") as file:
        while True:
            header = file.read(12)
            if not header:
                return count
            if len(header) < 12:
                raise ValueError(f"Truncated record header in {path}")
            (length,) = struct.unpack("<Q", header[:8])
            file.seek(length + 4, os.SEEK_CUR)
            count += 1


def measured(command, cwd, log_path, env=None):
    """Runs `command` under a fresh wrapper process; its output goes to log_path."""
    with open(log_path, "w") as log:
        result = subprocess.run(
            [sys.executable, "-c", WRAPPER, *command], cwd=cwd, env=env,
            stdout=subprocess.PIPE, stderr=log, text=True)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"The wrapper failed; see {log_path}")
    measurement = json.loads(lines[-1])
    if measurement["returncode"] != 0:
        with open(log_path) as log:
            tail = log.read()[-3000:]
        raise RuntimeError(f"{command[:3]} exited with {measurement['returncode']}:\n{tail}")
    return measurement


def run_tfnlp(flags, corpus, work, name="tfnlp"):
    output_dir = os.path.join(work, name)
    command = [
        sys.executable, "-m", "pipelines.pretraining_data",
        f"--input_file={corpus}", f"--vocab_file={flags.vocab_file}",
        f"--output_dir={output_dir}",
        f"--do_lower_case={str(flags.do_lower_case).lower()}",
        f"--max_seq_length={flags.max_seq_length}",
        f"--max_predictions_per_seq={flags.max_predictions_per_seq}",
        f"--masked_lm_prob={flags.masked_lm_prob}", "--short_seq_prob=0.1",
        f"--dupe_factor={flags.dupe_factor}", f"--random_seed={flags.random_seed}",
        "--nodo_whole_word_mask", f"--direct_num_workers={flags.direct_num_workers}",
    ]
    measurement = measured(command, REPOSITORY_ROOT, os.path.join(work, f"{name}.log"))
    with open(os.path.join(output_dir, "stats.json")) as file:
        measurement["instances"] = json.load(file)["instances"]
    measurement["command"] = command
    return measurement


def run_reference(flags, python, corpus, work):
    output_file = os.path.join(work, "reference.tfrecord")
    command = [
        python, "-m", "official.nlp.data.create_pretraining_data",
        f"--input_file={corpus}", f"--output_file={output_file}",
        f"--vocab_file={flags.vocab_file}",
        f"--do_lower_case={flags.do_lower_case}",
        f"--max_seq_length={flags.max_seq_length}",
        f"--max_predictions_per_seq={flags.max_predictions_per_seq}",
        f"--masked_lm_prob={flags.masked_lm_prob}", "--short_seq_prob=0.1",
        f"--dupe_factor={flags.dupe_factor}", f"--random_seed={flags.random_seed}",
        "--nodo_whole_word_mask", "--nogzip_compress",
    ]
    # A neutral working directory, so the repository is not on its path.
    measurement = measured(command, work, os.path.join(work, "reference.log"))
    measurement["instances"] = count_tfrecords(output_file)
    measurement["command"] = command
    return measurement


def headline_figures(results, scale):
    """tfnlp's speed and peak memory against the reference, and with
    `scale` > 1 its peak memory against its own on the corpus once."""
    tfnlp, reference = results["tfnlp"], results["reference"]
    name = f"{REFERENCE_PACKAGE.replace('==', ' ')} create_pretraining_data"
    figures = [
        figure("pretraining instances per second", tfnlp["instances_per_second"],
               "instances/s", reference=name,
               reference_value=reference["instances_per_second"], goal=SPEED_GOAL),
        figure("peak RSS", tfnlp["peak_rss_mb"], "MB", reference=name,
               reference_value=reference["peak_rss_mb"], goal=MEMORY_GOAL,
               higher_is_better=False),
    ]
    if scale > 1:
        figures.append(figure(
            f"peak RSS on {scale} copies of the corpus", tfnlp["peak_rss_mb"], "MB",
            reference="tfnlp on the corpus once",
            reference_value=results["tfnlp_scale1"]["peak_rss_mb"], goal=FLAT_MEMORY_GOAL,
            higher_is_better=False))
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input_file", default="../shared/data/mono/gutenberg-16-books.txt")
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--dupe_factor", type=int, default=1)
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--do_lower_case", type=parse_bool, default=True)
    parser.add_argument("--scale", type=int, default=1,
                        help="Run on N copies of the corpus (documents made distinct).")
    parser.add_argument("--direct_num_workers", type=int, default=1,
                        help="Passed to tfnlp's Beam job.")
    parser.add_argument("--reference_venv", default="benchmarks/.reference_venv")
    parser.add_argument("--output", default=None,
                        help="Default: benchmarks/results/pretraining_data[_scaleN].json")
    parser.add_argument("--keep", action="store_true",
                        help="Keep the working directory (outputs and logs).")
    flags = parser.parse_args(argv)
    flags.input_file = from_root(flags.input_file)
    flags.vocab_file = from_root(flags.vocab_file)
    flags.reference_venv = from_root(flags.reference_venv)
    suffix = f"_scale{flags.scale}" if flags.scale > 1 else ""
    flags.output = flags.output or f"benchmarks/results/pretraining_data{suffix}.json"

    python = ensure_reference_venv(flags.reference_venv)
    work = tempfile.mkdtemp(prefix="pretraining_data_bench_")
    try:
        corpus = flags.input_file
        if flags.scale > 1:
            corpus = scaled_corpus(flags.input_file, flags.scale, work)
        corpus_mb = os.path.getsize(corpus) / 1e6
        print(f"Corpus {corpus} ({corpus_mb:.1f} MB); work directory {work}", flush=True)
        results = {}
        print("Running the reference ...", flush=True)
        results["reference"] = run_reference(flags, python, corpus, work)
        print("Running tfnlp ...", flush=True)
        results["tfnlp"] = run_tfnlp(flags, corpus, work)
        if flags.scale > 1:
            print("Running tfnlp on the corpus once ...", flush=True)
            results["tfnlp_scale1"] = run_tfnlp(
                flags, flags.input_file, work, name="tfnlp_scale1")
    finally:
        if not flags.keep:
            shutil.rmtree(work, ignore_errors=True)

    names = {"reference": f"reference ({REFERENCE_PACKAGE})",
             "tfnlp": f"tfnlp Beam (workers={flags.direct_num_workers})",
             "tfnlp_scale1": "tfnlp Beam, the corpus once"}
    header = (f"{'tool':<40} {'corpus MB':>9} {'instances':>10} {'seconds':>8} "
              f"{'inst/s':>9} {'peak RSS MB':>11} {'tree RSS MB':>11}")
    print(header)
    print("-" * len(header))
    for key, result in results.items():
        result["instances_per_second"] = result["instances"] / result["seconds"]
        result["peak_rss_mb"] = result["max_rss_kb"] / 1024
        result["tree_rss_mb"] = result["tree_rss_kb"] / 1024
        size_mb = corpus_mb if key != "tfnlp_scale1" else os.path.getsize(flags.input_file) / 1e6
        print(f"{names[key]:<40} {size_mb:>9.1f} {result['instances']:>10d} "
              f"{result['seconds']:>8.1f} {result['instances_per_second']:>9.0f} "
              f"{result['peak_rss_mb']:>11.0f} {result['tree_rss_mb']:>11.0f}")
    figures = headline_figures(results, flags.scale)
    print()
    for row in figures:
        bound = ">=" if row["higher_is_better"] else "<="
        print(f"{row['name']}, tfnlp / {row['reference']}: {row['ratio']:.2f}x "
              f"(goal {bound} {row['goal']}x: {'met' if row['met'] else 'NOT met'})")
    tree_memory = results["tfnlp"]["tree_rss_mb"] / results["reference"]["tree_rss_mb"]
    print(f"tree RSS, tfnlp / reference: {tree_memory:.2f}x")

    report = {
        "input_file": flags.input_file,
        "scale": flags.scale,
        "corpus_mb": corpus_mb,
        "parameters": {k: v for k, v in vars(flags).items() if k != "output"},
        "results": results,
        FIGURES_KEY: figures,
        "versions": {
            "reference": package_versions(python, ["tf-models-official", "tensorflow", "tf-keras"]),
            "tfnlp": package_versions(
                sys.executable, ["tensorflow", "tensorflow-text", "apache-beam"]),
        },
    }
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

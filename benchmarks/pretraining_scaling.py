"""The pretraining-data job as its corpus grows, on the default runner and
on a Dask cluster of 1 and 2 worker processes.

    python -m benchmarks.pretraining_scaling [--scales=1,4,16,64]
        [--dask_workers=1,2] [--files_per_copy=4] [--shards_per_copy=4]
        [--input_file=../shared/data/mono/gutenberg-16-books.txt
         --vocab_file=../shared/data/vocab/bert-base-uncased-vocab.txt]

For each scale N it writes a corpus of N copies of the input, each document
of copy k starting with the sentence "copy k." (so no two are alike), as
N × `--files_per_copy` files cut at document boundaries (a large corpus is
many files, and the job reads each file whole on one worker), and runs
`python -m pipelines.pretraining_data` on it with N × `--shards_per_copy`
shards (records per shard stay the same as the corpus grows), dupe factor
1, sequences of 128:

- on the default runner (Beam's in-process runner, one process);
- on a Dask cluster started for the run: `dask scheduler` and `dask worker
  --nworkers W --nthreads 1` on 127.0.0.1, then the job with
  `--runner=dask --dask_client_address=...`.

Each job's wall time is that of its driver process (interpreter start and
imports included, the cluster's start not). Peak memory is each process's
`VmHWM` (its peak resident set) read from /proc when the job has ended:
the driver, the scheduler, the `dask worker` process that runs the nannies,
and each worker. Every run's shards are compared by SHA-256 with the
default runner's at the same scale.

Prints a table, writes a PNG plot of seconds and peak worker memory against
corpus size beside the JSON report, and the report's figures: records per
second of each runner at the largest scale, the 2-worker speed-up over 1,
how far time per megabyte and peak memory grew from the smallest to the
largest scale, and whether every run wrote the default runner's bytes.
With the defaults it runs in about 10 minutes on 2 cores.
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from benchmarks.pretraining_data import measured
from benchmarks.reporting import (
    DETAILS_KEY,
    FIGURES_KEY,
    REPOSITORY_ROOT,
    figure,
    from_root,
    write_report,
)

# "Linear" and "flat": at most 25% more time per megabyte and 25% more peak
# memory per process at the largest scale than at the smallest.
GROWTH_GOAL = 1.25
CLUSTER_START_SECONDS = 60


def copy_documents(lines, copy):
    """The documents of `lines` (blank-line separated), each starting with
    the sentence "copy `copy`.", as lists of lines."""
    documents, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    return [[f"copy {copy}.", *document] for document in documents]


def write_corpus(input_file, scale, files_per_copy, directory):
    """Writes `scale` copies of `input_file` as `scale * files_per_copy`
    files of whole documents under `directory`; returns their glob and size
    in MB."""
    with open(input_file, encoding="utf-8", errors="replace") as file:
        lines = file.read().splitlines()
    os.makedirs(directory, exist_ok=True)
    size = 0
    for copy in range(scale):
        documents = copy_documents(lines, copy)
        per_file = -(-len(documents) // files_per_copy)
        for part in range(files_per_copy):
            path = os.path.join(directory, f"copy{copy:03d}-part{part}.txt")
            with open(path, "w", encoding="utf-8") as out:
                for document in documents[part * per_file:(part + 1) * per_file]:
                    out.write("\n".join(document) + "\n\n")
            size += os.path.getsize(path)
    return os.path.join(directory, "*.txt"), size / 1e6


def free_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def process_tree(root):
    """`root` and its descendants' pids."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as file:
                    parents.setdefault(int(file.read().rsplit(")", 1)[1].split()[1]),
                                       []).append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(parents.get(pid, []))
    return tree


def peak_memory_mb(pid):
    """The process's peak resident set (`VmHWM`) in MB, or None once gone."""
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class DaskCluster:
    """A scheduler and `workers` single-threaded worker processes on
    127.0.0.1, as `dask scheduler` and `dask worker` start them."""

    def __init__(self, workers, log_path):
        self.workers = workers
        self.log = open(log_path, "w")
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        bin_dir = os.path.dirname(sys.executable)
        self.scheduler = subprocess.Popen(
            [os.path.join(bin_dir, "dask"), "scheduler", "--host", "127.0.0.1",
             "--port", str(port), "--no-dashboard"], stdout=self.log, stderr=self.log)
        self.worker = subprocess.Popen(
            [os.path.join(bin_dir, "dask"), "worker", self.address,
             "--nworkers", str(workers), "--nthreads", "1", "--no-dashboard",
             "--host", "127.0.0.1"], stdout=self.log, stderr=self.log)
        self._wait_for_workers()

    def _wait_for_workers(self):
        import distributed

        with distributed.Client(self.address, timeout=CLUSTER_START_SECONDS) as client:
            client.wait_for_workers(self.workers, timeout=CLUSTER_START_SECONDS)

    def peak_memory(self):
        """Peak MB of the scheduler, the worker command (its nannies) and
        each worker process."""
        peaks = {"scheduler": peak_memory_mb(self.scheduler.pid),
                 "nannies": peak_memory_mb(self.worker.pid)}
        workers = [pid for pid in process_tree(self.worker.pid)[1:]
                   if "distributed" in command_line(pid) or "spawn" in command_line(pid)]
        for index, pid in enumerate(sorted(workers)):
            peaks[f"worker {index + 1}"] = peak_memory_mb(pid)
        return peaks

    def close(self):
        for process in (self.worker, self.scheduler):
            process.terminate()
        for process in (self.worker, self.scheduler):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.log.close()


def shard_digests(output_dir):
    digests = {}
    for name in sorted(os.listdir(output_dir)):
        if name.endswith(".tfrecord"):
            with open(os.path.join(output_dir, name), "rb") as file:
                digests[name] = hashlib.sha256(file.read()).hexdigest()
    return digests


def run_job(flags, corpus, num_shards, work, name, runner_arguments=()):
    """Runs the job once; its measurement, output digests and stats."""
    output_dir = os.path.join(work, name)
    command = [
        sys.executable, "-m", "pipelines.pretraining_data", f"--input_file={corpus}",
        f"--vocab_file={flags.vocab_file}", f"--output_dir={output_dir}",
        "--do_lower_case=true", "--max_seq_length=128", "--max_predictions_per_seq=20",
        "--dupe_factor=1", "--random_seed=12345", f"--num_shards={num_shards}",
        *runner_arguments,
    ]
    measurement = measured(command, REPOSITORY_ROOT, os.path.join(work, f"{name}.log"))
    with open(os.path.join(output_dir, "stats.json")) as file:
        measurement["instances"] = json.load(file)["instances"]
    measurement["digests"] = shard_digests(output_dir)
    measurement["command"] = " ".join(command[1:])
    shutil.rmtree(output_dir)
    return measurement


def run_scale(flags, scale, work):
    """Every runner on `scale` copies; a row per runner."""
    corpus, corpus_mb = write_corpus(flags.input_file, scale, flags.files_per_copy,
                                     os.path.join(work, f"corpus_x{scale}"))
    num_shards = scale * flags.shards_per_copy
    rows = []
    print(f"scale {scale}: {corpus_mb:.0f} MB in {scale * flags.files_per_copy} files, "
          f"{num_shards} shards", flush=True)
    default = run_job(flags, corpus, num_shards, work, f"default_x{scale}")
    rows.append({"runner": "default", "workers": 1,
                 "peak_mb": {"driver": default["max_rss_kb"] / 1024}, **default})
    for workers in flags.dask_workers:
        cluster = DaskCluster(workers, os.path.join(work, f"dask{workers}_x{scale}.cluster.log"))
        try:
            result = run_job(flags, corpus, num_shards, work, f"dask{workers}_x{scale}",
                             ["--runner=dask", f"--dask_client_address={cluster.address}"])
            peaks = {"driver": result["max_rss_kb"] / 1024, **cluster.peak_memory()}
        finally:
            cluster.close()
        rows.append({"runner": "dask", "workers": workers, "peak_mb": peaks, **result})
    shutil.rmtree(os.path.dirname(corpus))
    for row in rows:
        row.update(scale=scale, corpus_mb=corpus_mb, num_shards=num_shards,
                   records_per_second=row["instances"] / row["seconds"],
                   same_bytes=row["digests"] == default["digests"])
        row["worker_peak_mb"] = max(value for key, value in row["peak_mb"].items()
                                    if key == "driver" or key.startswith("worker"))
        print(f"  {label(row):<16} {row['seconds']:>8.1f} s {row['instances']:>9,} records "
              f"{row['records_per_second']:>7,.0f}/s  peak MB "
              + ", ".join(f"{key} {value:,.0f}" for key, value in row["peak_mb"].items()
                          if value is not None)
              + ("" if row["same_bytes"] else "  DIFFERENT BYTES"), flush=True)
    return rows


def label(row):
    if row["runner"] == "default":
        return "default runner"
    return f"Dask, {row['workers']} worker{'s' if row['workers'] > 1 else ''}"


def plot(rows, path):
    """Seconds and the largest process's peak memory against corpus MB."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure_, (time_axes, memory_axes) = pyplot.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(label(row) for row in rows):
        series = [row for row in rows if label(row) == name]
        sizes = [row["corpus_mb"] for row in series]
        time_axes.plot(sizes, [row["seconds"] for row in series], marker="o", label=name)
        memory_axes.plot(sizes, [row["worker_peak_mb"] for row in series], marker="o",
                         label=name)
    sizes = sorted({row["corpus_mb"] for row in rows})
    first = min((row for row in rows if row["corpus_mb"] == sizes[0]), key=lambda r: r["seconds"])
    time_axes.plot(sizes, [first["seconds"] * size / sizes[0] for size in sizes], "k:",
                   label="linear in the corpus")
    time_axes.set_xscale("log")
    time_axes.set_yscale("log")
    time_axes.set_title("wall seconds")
    memory_axes.set_xscale("log")
    memory_axes.set_ylim(bottom=0)
    memory_axes.set_title("peak MB of the largest process")
    for axes in (time_axes, memory_axes):
        axes.set_xlabel("corpus MB")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
    scales = sorted({row["scale"] for row in rows})
    figure_.suptitle(f"pretraining-data on {', '.join(map(str, scales))} copies of the corpus")
    figure_.tight_layout()
    figure_.savefig(path, dpi=100)
    pyplot.close(figure_)


def growth(rows, name, key):
    series = [row for row in rows if label(row) == name]
    first, last = series[0], series[-1]
    if key == "seconds_per_mb":
        return ((last["seconds"] / last["corpus_mb"]) / (first["seconds"] / first["corpus_mb"]),
                first, last)
    return last[key] / first[key], first, last


def headline_figures(rows):
    largest = max(row["scale"] for row in rows)
    at_largest = {label(row): row for row in rows if row["scale"] == largest}
    default = at_largest["default runner"]
    figures = []
    for name, row in at_largest.items():
        reference = None if row is default else "default runner"
        figures.append(figure(
            f"records per second on {largest} copies, {name}", row["records_per_second"],
            "records/s", reference=reference,
            reference_value=None if row is default else default["records_per_second"]))
    one, two = at_largest.get("Dask, 1 worker"), at_largest.get("Dask, 2 workers")
    if one and two:
        figures.append(figure(
            f"speed-up of a second Dask worker on {largest} copies", two["records_per_second"],
            "records/s", reference="Dask, 1 worker", reference_value=one["records_per_second"]))
    for name in at_largest:
        ratio, first, last = growth(rows, name, "seconds_per_mb")
        figures.append(figure(
            f"seconds per MB at {last['scale']} copies, {name}", last["seconds"] / last["corpus_mb"],
            "s/MB", reference=f"at {first['scale']} copy", higher_is_better=False,
            reference_value=first["seconds"] / first["corpus_mb"], goal=GROWTH_GOAL))
        ratio, first, last = growth(rows, name, "worker_peak_mb")
        figures.append(figure(
            f"peak MB of the largest process at {last['scale']} copies, {name}",
            last["worker_peak_mb"], "MB", reference=f"at {first['scale']} copy",
            reference_value=first["worker_peak_mb"], goal=GROWTH_GOAL, higher_is_better=False))
    figures.append(figure("runs that wrote the default runner's bytes",
                          sum(row["same_bytes"] for row in rows), "runs",
                          reference="runs", reference_value=len(rows), goal=1.0))
    return figures


def markdown_table(rows):
    lines = ["| copies | MB | runner | records | seconds | records/s | peak MB per process | "
             "same bytes |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        peaks = ", ".join(f"{key} {value:,.0f}" for key, value in row["peak_mb"].items()
                          if value is not None)
        lines.append(f"| {row['scale']} | {row['corpus_mb']:,.0f} | {label(row)} | "
                     f"{row['instances']:,} | {row['seconds']:,.1f} | "
                     f"{row['records_per_second']:,.0f} | {peaks} | "
                     f"{'yes' if row['same_bytes'] else '**no**'} |")
    return lines


# What grows with the corpus, and why (RESULTS.md, under the table).
GROWTH = (
    "Time per MB falls while start-up costs spread and then stays level: time is linear in "
    "the corpus. In-process, memory holds one shard being sorted and a reference (file, "
    "offset, length) to every tokenized document, which the grouping into buckets collects: "
    "the growth left. On Dask, a bag's shuffle holds its whole input in the workers' memory "
    "and the tokenizing step's outputs are kept for the side input that counts the tokens, "
    "so each worker holds its share of every document's reference."
)


def parse_list(text):
    return [int(value) for value in text.split(",") if value]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input_file", default="../shared/data/mono/gutenberg-16-books.txt")
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--scales", type=parse_list, default=[1, 4, 16, 64],
                        help="Copies of the input, comma-separated, smallest first.")
    parser.add_argument("--dask_workers", type=parse_list, default=[1, 2],
                        help="Worker processes of each Dask cluster, comma-separated.")
    parser.add_argument("--files_per_copy", type=int, default=4)
    parser.add_argument("--shards_per_copy", type=int, default=4)
    parser.add_argument("--output", default="benchmarks/results/pretraining_scaling.json")
    parser.add_argument("--plot", default="benchmarks/pretraining_scaling.png",
                        help="The PNG plot (from the repository root).")
    flags = parser.parse_args(argv)
    flags.input_file = from_root(flags.input_file)
    flags.vocab_file = from_root(flags.vocab_file)
    flags.plot = from_root(flags.plot)

    work = tempfile.mkdtemp(prefix="pretraining_scaling_")
    start = time.perf_counter()
    try:
        rows = [row for scale in flags.scales for row in run_scale(flags, scale, work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plot(rows, flags.plot)
    print(f"wrote {flags.plot}; {time.perf_counter() - start:.0f} s in all")
    for row in rows:
        del row["digests"]
    report = {
        "parameters": {key: value for key, value in vars(flags).items() if key != "output"},
        "rows": rows,
        DETAILS_KEY: [*markdown_table(rows), "", GROWTH, "",
                     f"![seconds and peak memory against corpus size]"
                     f"({os.path.relpath(flags.plot, os.path.dirname(from_root('benchmarks/RESULTS.md')))})"],
        FIGURES_KEY: headline_figures(rows),
    }
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

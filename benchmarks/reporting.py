"""What the benchmarks share to report: paths from the repository root, the
headline figures `python -m benchmarks` collects, the machine, and the
JSON report.

Every benchmark's report (the JSON it writes with `write_report`) holds a
list under "figures": its headline measurements, each made by `figure`
with the reference it was measured against in the same run, optionally
under "details" markdown lines that follow them in RESULTS.md, and under
"machine" what `machine` says of the machine it ran on (`write_report`
adds it). The suite (`benchmarks.suite`) reads the figures into
benchmarks/RESULTS.md, under `machine_description`.

Example:

    >>> row = figure("instances per second", 4332.0, "instances/s",
    ...              reference="create_pretraining_data.py", reference_value=1013.0,
    ...              goal=3.0)
    >>> round(row["ratio"], 2), row["met"]
    (4.28, True)
"""

import importlib.metadata
import json
import os
import platform
import sys

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES_KEY = "figures"
# Optional: markdown lines (a table, a plot) that follow the figures.
DETAILS_KEY = "details"
MACHINE_KEY = "machine"
# The packages whose versions a report gives, where the benchmark imported
# them: module name → distribution name.
REPORTED_PACKAGES = {
    "tensorflow": "tensorflow", "tensorflow_text": "tensorflow-text", "keras": "keras",
    "keras_hub": "keras-hub", "jax": "jax", "apache_beam": "apache-beam",
    "tokenizers": "tokenizers", "numpy": "numpy",
}


def from_root(path):
    """`path`, relative paths taken from the repository root."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(REPOSITORY_ROOT, path))


def figure(name, value, unit, reference=None, reference_value=None, goal=None,
           higher_is_better=True):
    """One headline figure of a benchmark, as a dict for its report.

    Args:
        name: what was measured, e.g. "pretraining instances per second".
        value: tfnlp's measurement.
        unit: its unit, e.g. "instances/s", "ms", "MB", "BLEU".
        reference: what it was compared with in the same run, e.g.
            "tf-models-official 2.20 create_pretraining_data"; None for a
            figure without a reference.
        reference_value: the reference's measurement, in the same unit.
        goal: the ratio `value / reference_value` the project aims at, if
            any (at least `goal` when higher is better, at most otherwise).
        higher_is_better: whether a larger value is better (speed) or a
            smaller one (latency, memory).

    Returns:
        A dict with those keys plus "ratio" (`value / reference_value`, or
        None) and "met" (whether the ratio meets the goal, or None).
    """
    ratio = None
    if reference_value:
        ratio = value / reference_value
    met = None
    if goal is not None and ratio is not None:
        met = ratio >= goal if higher_is_better else ratio <= goal
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "reference": reference,
        "reference_value": reference_value,
        "ratio": ratio,
        "goal": goal,
        "higher_is_better": higher_is_better,
        "met": met,
    }


def time_figures(rows, name):
    """One lower-is-better figure in ms per row of a timing table, each row
    holding "tfnlp_ms", "reference" and "reference_ms"; `name(row)` names
    the figure."""
    return [figure(name(row), row["tfnlp_ms"], "ms", reference=row["reference"],
                   reference_value=row["reference_ms"], higher_is_better=False)
            for row in rows]


def machine_description():
    """The CPU, its cores, the memory, the OS and Python, in one line."""
    cpu = platform.processor() or platform.machine()
    memory = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            names = [line.split(":", 1)[1].strip() for line in file
                     if line.startswith("model name")]
        cpu = names[0] if names else cpu
        with open("/proc/meminfo", encoding="utf-8") as file:
            kilobytes = int(file.readline().split()[1])
        memory = f", {kilobytes / 2**20:.0f} GB memory"
    except (OSError, IndexError, ValueError):
        pass
    return (f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}")


def machine():
    """The machine of a report, as a dict: `machine_description`, the
    platform, the cores, Python, Keras' backend (where Keras is imported)
    and the versions of the `REPORTED_PACKAGES` the benchmark imported."""
    versions = {}
    for module, distribution in REPORTED_PACKAGES.items():
        if module in sys.modules:
            try:
                versions[module] = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                pass
    description = {"description": machine_description(), "platform": platform.platform(),
                   "cpus": os.cpu_count(), "python": platform.python_version()}
    if "keras" in sys.modules:
        description["backend"] = sys.modules["keras"].backend.backend()
    return {**description, "versions": versions}


def write_report(report, output):
    """Writes `report`, with the `machine` it ran on, as indented JSON to
    `output` (from the repository root), creating its folder, and says
    where."""
    report = {**report, MACHINE_KEY: machine()}
    output = from_root(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w", encoding="utf-8") as file:
        json.dump(report, file, indent=2)
    print(f"wrote {output}")

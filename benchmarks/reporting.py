"""What the benchmarks share to report: paths from the repository root, the
headline figures `python -m benchmarks` collects, and the JSON report.

Every benchmark's report (the JSON it writes with `write_report`) holds a
list under "figures": its headline measurements, each made by `figure`
with the reference it was measured against in the same run. The suite
(`benchmarks.suite`) reads that list into benchmarks/RESULTS.md.

Example:

    >>> row = figure("instances per second", 4332.0, "instances/s",
    ...              reference="create_pretraining_data.py", reference_value=1013.0,
    ...              goal=3.0)
    >>> round(row["ratio"], 2), row["met"]
    (4.28, True)
"""

import json
import os

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES_KEY = "figures"


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


def write_report(report, output):
    """Writes `report` as indented JSON to `output` (from the repository
    root), creating its folder, and says where."""
    output = from_root(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w", encoding="utf-8") as file:
        json.dump(report, file, indent=2)
    print(f"wrote {output}")

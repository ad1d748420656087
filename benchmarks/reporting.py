"""What the benchmarks share to report: paths from the repository root and
the JSON report."""

import json
import os

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def from_root(path):
    """`path`, relative paths taken from the repository root."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(REPOSITORY_ROOT, path))


def write_report(report, output):
    """Writes `report` as indented JSON to `output` (from the repository
    root), creating its folder, and says where."""
    output = from_root(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w", encoding="utf-8") as file:
        json.dump(report, file, indent=2)
    print(f"wrote {output}")

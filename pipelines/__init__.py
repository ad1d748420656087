"""Apache Beam jobs that turn raw text into tfnlp's vocabulary and training data."""

import sys

from tfnlp.quiet_start import import_quietly

# Run as `python -m pipelines.X` (argv[0] is "-m" while the package loads):
# start quietly. Only Beam: most jobs never load TensorFlow (it would cost
# seconds and hundreds of MB in every run); the one that does imports it
# quietly itself. A Beam worker that imports a job's DoFns loads neither.
if sys.argv[:1] == ["-m"]:
    import_quietly(("apache_beam",))

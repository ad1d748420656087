"""absl-style boolean flags for the `argparse` command lines of the jobs.

The Beam jobs (`pipelines`) and the trainers (`trainer`) take the boolean
flags of google-research/bert's scripts in all their absl spellings:
`--flag`, `--flag=true`, `--flag=False`, `--noflag`. TensorFlow-free, so the
Beam workers can import it.
"""

import argparse


def boolean(value):
    """Parses an absl-style boolean flag value ("true", "False", "1", ...)."""
    lowered = str(value).strip().lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


def add_boolean_flag(parser, name, default, help_text):
    """Adds `--name[=BOOL]` and `--noname` to `parser` (or an argument group)."""
    parser.add_argument(
        f"--{name}", type=boolean, nargs="?", const=True, default=default, help=help_text
    )
    parser.add_argument(f"--no{name}", dest=name, action="store_false", help=argparse.SUPPRESS)

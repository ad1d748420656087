"""The command-line flags every trainer shares: the strategy, precision and
XLA flags, and the positivity checks of step counts."""

from tfnlp.command_line import add_boolean_flag
from trainer.distribution import STRATEGIES
from trainer.runtime import MIXED_PRECISION


def add_distribution_flags(group, jit_compile=True):
    """Adds `--strategy`, `--tpu`, `--mixed_precision` (and `--jit_compile`)."""
    group.add_argument("--strategy", choices=STRATEGIES, default="default")
    group.add_argument("--tpu", default="", help="The TPU name or address (--strategy=tpu).")
    group.add_argument("--mixed_precision", choices=MIXED_PRECISION, default=None)
    if jit_compile:
        add_boolean_flag(group, "jit_compile", False, "Compile the replica step with XLA.")


def check_counts(parser, flags, positive=(), non_negative=()):
    """Exits through `parser.error` unless each flag in `positive` is at least
    1 and each in `non_negative` at least 0."""
    for name in positive:
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(flags, name)}.")
    for name in non_negative:
        if getattr(flags, name) < 0:
            parser.error(f"--{name} must not be negative, got {getattr(flags, name)}.")

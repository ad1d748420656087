"""The command-line flags every trainer shares: the strategy, precision and
XLA flags, the wall-clock budget, and the positivity checks of step counts."""

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


def add_stop_time_flag(group):
    """Adds `--stop_time_hours` (fairseq's name): a wall-clock budget (the
    trainers on `training_loop.train`)."""
    group.add_argument(
        "--stop_time_hours", type=float, default=0.0,
        help="Stop after the first step that ends this many hours after training "
             "began (compilation and evaluations count), evaluating, saving and "
             "exporting as at --train_steps; 0: no limit. The learning-rate "
             "schedule still runs to --train_steps.")


def check_counts(parser, flags, positive=(), non_negative=()):
    """Exits through `parser.error` unless each flag in `positive` is at least
    1 and each in `non_negative` at least 0."""
    for name in positive:
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(flags, name)}.")
    for name in non_negative:
        if getattr(flags, name) < 0:
            parser.error(f"--{name} must not be negative, got {getattr(flags, name)}.")

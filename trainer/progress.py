"""Progress a person can follow: where a long loop is, in a terminal and in
a log file alike.

`Progress` is told each finished step (with the examples and tokens it
took) and reports step/total, the share done, examples and tokens per
second, the loss, the time elapsed and an estimate of the time left:

- on a terminal (stderr is a TTY), as one line redrawn in place at most
  every half second, with a bar;
- otherwise (output to a log file, a pipe, a cluster's log collector), as
  a log line every `interval_seconds` (and at the first and last step), so
  that a log never goes silent for long.

Rates and the time left are measured from the end of the first step seen,
so that the first step's tracing and compilation do not skew them.

Why our own: Keras' `Progbar` draws per epoch, prints nothing in between
when not on a TTY, and knows no tokens; the custom training loop has no
epochs, and fine-tuning must not be silent for a whole epoch.

Example:

    >>> import io
    >>> progress = Progress(total=3, stream=io.StringIO(), interval_seconds=0)
    >>> for step in (1, 2, 3):
    ...     progress.update(step, examples=32, tokens=4096, loss=2.5)
    >>> progress.lines_written
    3
"""

import logging
import sys
import time

LOGGER = logging.getLogger("trainer.progress")
TERMINAL_REDRAW_SECONDS = 0.5
BAR_WIDTH = 24


def format_duration(seconds):
    """`3h02m`, `4m05s` or `12s`."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


class Progress:
    """Reports the progress of a loop of `total` steps.

    Args:
        total: the step the loop runs to.
        start: the step it starts after (a resumed run's checkpoint step).
        interval_seconds: seconds between log lines when not on a terminal.
        stream: where to write; default stderr. On a TTY the line is
            redrawn in place; otherwise lines go to the `trainer.progress`
            logger (or to `stream` when one is given).
        name: the loop's name, first on the line ("train", "epoch 2").
    """

    def __init__(self, total, start=0, interval_seconds=30.0, stream=None, name="train"):
        self.total = total
        self.start = start
        self.interval_seconds = interval_seconds
        self.stream = stream
        self.name = name
        self.terminal = stream is None and sys.stderr.isatty()
        self.lines_written = 0
        self.first_step = None
        self.first_time = None
        self.last_write = None
        self.examples = 0
        self.tokens = 0
        self.started = time.monotonic()

    def update(self, step, examples=0, tokens=0, loss=None):
        """Records that step `step` finished, having taken `examples`
        examples and `tokens` tokens; writes when due."""
        now = time.monotonic()
        if self.first_step is None:
            self.first_step, self.first_time = step, now
        else:
            self.examples += examples
            self.tokens += tokens
        last = step >= self.total
        if self.terminal:
            due = last or self.last_write is None or (
                now - self.last_write >= TERMINAL_REDRAW_SECONDS)
        else:
            due = last or self.last_write is None or (
                now - self.last_write >= self.interval_seconds)
        if due:
            self.write(self.line(step, now, loss), last)
            self.last_write = now

    def line(self, step, now, loss=None):
        """The progress line at `step`, `now` (a `time.monotonic()` reading)."""
        parts = [f"{self.name}: step {step:,}/{self.total:,} ({100 * step / self.total:.0f}%)"]
        if self.terminal:
            filled = int(BAR_WIDTH * step / self.total)
            parts[0] += " [" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"
        measured = now - self.first_time
        steps = step - self.first_step
        if steps > 0 and measured > 0:
            rates = [f"{self.examples / measured:,.1f} examples/s"]
            if self.tokens:
                rates.insert(0, f"{self.tokens / measured:,.0f} tokens/s")
            parts.append(", ".join(rates))
        if loss is not None:
            parts.append(f"loss {loss:.4g}")
        timing = f"{format_duration(now - self.started)} elapsed"
        if steps > 0 and step < self.total:
            left = (self.total - step) * measured / steps
            timing += f", ~{format_duration(left)} left"
        parts.append(timing)
        return " | ".join(parts)

    def write(self, line, last=False):
        self.lines_written += 1
        if self.terminal:
            sys.stderr.write("\r\033[K" + line + ("\n" if last else ""))
            sys.stderr.flush()
        elif self.stream is not None:
            self.stream.write(line + "\n")
            self.stream.flush()
        else:
            LOGGER.info("%s", line)

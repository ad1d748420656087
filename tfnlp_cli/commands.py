"""`tfnlp`: one command for every job, trainer and server of tfnlp.

    tfnlp wordpiece-vocab --input_file='corpus/*.txt' --output_file=vocab.txt --vocab_size=30000
    tfnlp pretrain --config_file=run.yaml --train_steps=20000
    tfnlp --help

Each subcommand runs the `main` of a `python -m` entry point with that
module's own parser, so it takes the same flags and gives the same exit
statuses and one-line errors; only the program's name changes, to `tfnlp
SUBCOMMAND` (`tfnlp.command_line.invoked_as`). The subcommand's module is
imported only when it runs: `tfnlp --help` and `tfnlp --version` load
neither TensorFlow nor Beam.

Installed by setup.py as the console script `tfnlp` (`main`).
"""

import argparse
import dataclasses
import difflib
import importlib
import logging
import os
import sys
import textwrap
import typing

import tfnlp
from tfnlp import command_line, quiet_start

PROGRAM = "tfnlp"


def run_entry_point(module_name, arguments):
    """Runs the `main` of `module_name` as its `__main__` block does:
    through `command_line.run_main`."""
    command_line.run_main(importlib.import_module(module_name).main, arguments)


def run_beam_job(module_name, arguments):
    """Runs a Beam job as its `__main__` block does:
    `pipelines.job.command_line_main` (the job's logging, then `run_main`)."""
    from pipelines import job  # Imports Beam: only when a job runs.

    job.command_line_main(module_name, arguments)


def run_server(module_name, arguments):
    """Runs the server as `python -m tfnlp.serve` does: `run_main`, then,
    after a clean stop, an exit without the interpreter's teardown, in which
    TensorFlow's resources can abort (see `tfnlp/serve/__main__.py`)."""
    run_entry_point(module_name, arguments)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_demo(module_name, arguments):
    """Runs the demo as `python -m tfnlp_cli.demo` does: its logging, then
    its `main`."""
    demo = importlib.import_module(module_name)
    demo.configure_logging()
    demo.main(arguments)


@dataclasses.dataclass(frozen=True)
class Subcommand:
    """A subcommand of `tfnlp`.

    Attributes:
        name: what the user types, e.g. "wordpiece-vocab".
        module: the `python -m` module whose `main` it runs.
        summary: its line in `tfnlp --help`.
        runner: `runner(module, arguments)` runs it as the module's
            `__main__` block does (`run_entry_point`, `run_beam_job`, ...).
        frameworks: the modules imported first, without their start-up
            lines (`tfnlp.quiet_start`).
        aliases: other names that run it (an earlier name), not listed in
            `tfnlp --help`.
    """

    name: str
    module: str
    summary: str
    runner: typing.Callable = run_entry_point
    frameworks: tuple = ("tensorflow",)
    aliases: tuple = ()

    @property
    def program(self):
        """The program's name in its help and errors: "tfnlp NAME"."""
        return f"{PROGRAM} {self.name}"

    def run(self, arguments, name=None):
        """Runs the subcommand on `arguments` (without the program and the
        subcommand's name), as `tfnlp NAME` (`name`: the alias typed, if
        one was)."""
        quiet_start.import_quietly(self.frameworks, arguments)
        with command_line.invoked_as(f"{PROGRAM} {name}" if name else self.program):
            self.runner(self.module, arguments)


# Only the WordPiece and distillation jobs load TensorFlow in the launching
# process; the others would pay seconds and hundreds of MB for an import
# they never use.
BEAM_FRAMEWORKS = ("apache_beam",)
SUBCOMMANDS = (
    Subcommand("wordpiece-vocab", "pipelines.wordpiece_vocab",
               "Learn a BERT WordPiece vocabulary from raw text (Beam).", run_beam_job,
               ("tensorflow", "apache_beam")),
    Subcommand("pretraining-data", "pipelines.pretraining_data",
               "Write BERT pretraining TFRecords from raw text (Beam).", run_beam_job,
               BEAM_FRAMEWORKS),
    Subcommand("translation-data", "pipelines.translation_data",
               "Learn a SentencePiece model and write translation-pair TFRecords (Beam).",
               run_beam_job, BEAM_FRAMEWORKS),
    Subcommand("lm-data", "pipelines.lm_data",
               "Write causal language-model TFRecords (packed windows) from raw text (Beam).",
               run_beam_job, BEAM_FRAMEWORKS),
    Subcommand("distillation-data", "pipelines.distillation_data",
               "Label a distillation transfer set with a fine-tuned teacher's logits (Beam).",
               run_beam_job, ("tensorflow", "apache_beam")),
    Subcommand("train", "trainer.train",
               "Train any registered task (--task=NAME) on tf.distribute."),
    Subcommand("pretrain", "trainer.pretrain",
               "Pretrain BERT (masked LM and next sentence) on tf.distribute."),
    Subcommand("finetune", "trainer.finetune",
               "Fine-tune BERT for classification, token classification or spans."),
    Subcommand("translate", "trainer.translate",
               "Train a translation model (Transformer, or LSTM with attention)."),
    Subcommand("lm", "trainer.lm",
               "Train a GPT-style decoder language model on tf.distribute."),
    Subcommand("distill", "trainer.distill",
               "Distil a BERT teacher's logits into a small student (BiLSTM or BERT)."),
    Subcommand("export", "trainer.export",
               "Export a run or a Hugging Face model as a SavedModel for TF Serving."),
    Subcommand("average-checkpoints", "trainer.average_checkpoints",
               "Average the weights of a run's last checkpoints.", aliases=("average",)),
    Subcommand("translate-text", "trainer.translate_text",
               "Translate a text file with a translation run or export."),
    Subcommand("serve", "tfnlp.serve.__main__",
               "Serve a SavedModel export over TensorFlow Serving's REST API.", run_server),
    Subcommand("load-test", "tfnlp.serve.load_test",
               "Send concurrent requests to a server; print latencies and errors.",
               frameworks=()),
    Subcommand("demo", "tfnlp_cli.demo.__main__",
               "The main job (make demo): from raw text to a served model and its scores.",
               run_demo),
)
SUBCOMMANDS_BY_NAME = {subcommand.name: subcommand for subcommand in SUBCOMMANDS}
SUBCOMMANDS_BY_ALIAS = {alias: subcommand for subcommand in SUBCOMMANDS
                        for alias in subcommand.aliases}


class TopLevelParser(argparse.ArgumentParser):
    """The parser of `tfnlp` itself (`--help`, `--version`), whose errors
    are one line, as the subcommands' are."""

    def error(self, message):
        message = message.rstrip(".")
        if not message.endswith("?"):
            message += "."
        self.exit(command_line.USAGE_EXIT_STATUS,
                  f"{self.prog}: error: {message} Run {PROGRAM} --help for the commands.\n")


def top_level_parser():
    """The parser of `tfnlp`: its help lists the subcommands, one line each."""
    width = max(len(subcommand.name) for subcommand in SUBCOMMANDS)
    commands = "\n".join(f"  {subcommand.name:<{width}}  {subcommand.summary}"
                         for subcommand in SUBCOMMANDS)
    parser = TopLevelParser(
        prog=PROGRAM,
        description="tfnlp's jobs, trainers and server, from raw text to a served model.",
        epilog=f"commands:\n{commands}\n\n" + textwrap.fill(
            f"`{PROGRAM} COMMAND --help` shows a command's flags (those of `python -m "
            "MODULE`). Every command also takes --config_file=FILE (flag values in YAML "
            "or JSON; the command line overrides them) and --verbose (the traceback of "
            "an error).", width=79),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROGRAM} {tfnlp.__version__}")
    parser.add_argument("command", nargs="?", metavar="COMMAND", help="One of the commands below.")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="FLAGS",
                        help="The command's flags.")
    return parser


def find_subcommand(parser, name):
    """The subcommand called `name` (or one of its aliases); an unknown name
    exits through `parser.error` with the closest names."""
    subcommand = SUBCOMMANDS_BY_NAME.get(name) or SUBCOMMANDS_BY_ALIAS.get(name)
    if subcommand is not None:
        return subcommand
    parser.error(f"unknown command {name!r}; {suggestion(name)}")


def suggestion(name):
    """What the user may have meant by the unknown command `name`: the
    closest subcommand names (a module's name, `trainer.average_checkpoints`
    or `wordpiece_vocab`, counts as its subcommand's), or the list of them."""
    aliases = {}
    for subcommand in SUBCOMMANDS:
        module = subcommand.module.removesuffix(".__main__")
        for alias in (subcommand.name, *subcommand.aliases, module, module.rsplit(".", 1)[-1]):
            aliases.setdefault(alias, subcommand.name)
    close = dict.fromkeys(aliases[alias] for alias in
                          difflib.get_close_matches(name, list(aliases), n=3, cutoff=0.6))
    if close:
        return f"did you mean {' or '.join(close)}?"
    return f"the commands are {', '.join(SUBCOMMANDS_BY_NAME)}."


def main(argv=None):
    """Runs `tfnlp COMMAND [FLAGS]` (the console script).

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        0, the exit status, once the subcommand has finished.

    Raises:
        SystemExit: status 0 after `--help` or `--version`; status 2 on an
            unknown or missing command and on a user's mistake in the
            subcommand (`command_line.run_main`).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = top_level_parser()
    if not arguments or arguments[0].startswith("-"):
        parser.parse_args(arguments[:1])  # --help and --version exit; other options fail.
        parser.error(f"no command given; expected one of {', '.join(SUBCOMMANDS_BY_NAME)}")
    find_subcommand(parser, arguments[0]).run(arguments[1:], name=arguments[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What `tfnlp COMMAND --help` tells a user: every flag of every command
has help text and shows its default (`tfnlp.command_line.HelpFormatter`),
and docs/COMMAND_LINE.md lists the commands that `tfnlp --help` lists.

Each parser is the one that `tfnlp COMMAND --help` prints, caught in this
process as it prints its help.
"""

import argparse
import re

import pytest

from tests.conftest import REPOSITORY
from tfnlp import command_line
from tfnlp_cli import commands

# The command lines whose help a user reads: each subcommand's, and the
# translation demo's (`tfnlp demo --data_dir=DIR --help`).
HELP_COMMANDS = [[subcommand.name, "--help"] for subcommand in commands.SUBCOMMANDS] + [
    ["demo", "--data_dir=data", "--help"]]
# What a flag's help says of its default: "(default: 10000)", "(default:
# the best checkpoint)", "; default: as recorded", "(tiny; the default)".
DEFAULT = re.compile(r"\bdefault:|\bthe default\b", re.IGNORECASE)


def printed_parser(arguments, monkeypatch, capsys):
    """The parser that prints its help for `tfnlp ARGUMENTS`, and that help."""
    printed = []
    print_help = command_line.ArgumentParser.print_help

    def record(parser, file=None):
        printed.append(parser)
        print_help(parser, file)

    monkeypatch.setattr(command_line.ArgumentParser, "print_help", record)
    with pytest.raises(SystemExit) as exit_info:
        commands.main(arguments)
    assert exit_info.value.code == 0
    assert len(printed) == 1
    return printed[0], capsys.readouterr().out


def flag_help(parser, action, out):
    """The entry of one flag in the help `out` that `parser` printed, on one
    line: its invocation ("--steps STEPS"), then its help."""
    invocation = parser._get_formatter()._format_action_invocation(action)
    entries = re.findall(r"^  (-.*\n(?:   .*\n)*)", out, re.MULTILINE)
    found = [entry for entry in entries if entry.startswith(invocation)
             and entry[len(invocation):].startswith(("  ", "\n"))]
    assert len(found) == 1, (invocation, found)
    return " ".join(found[0].split())


def shows_a_default(parser, action):
    """Whether `--help` must show the flag's default: it takes a value, is
    neither required (alone or as one of a required group) nor hidden, and
    has a default."""
    required = action.required or any(action in group._group_actions
                                      for group in parser._mutually_exclusive_groups
                                      if group.required)
    return (action.nargs != 0 and not required
            and action.help is not argparse.SUPPRESS and action.default is not argparse.SUPPRESS)


@pytest.mark.parametrize("arguments", HELP_COMMANDS, ids=" ".join)
def test_every_flag_has_help_text_and_shows_its_default(arguments, monkeypatch, capsys):
    parser, out = printed_parser(arguments, monkeypatch, capsys)
    flags = [action for action in parser._actions
             if action.option_strings and action.help is not argparse.SUPPRESS]
    assert len(flags) >= 4  # -h, --verbose, --config_file and one of its own.
    problems = []
    for action in flags:
        text = flag_help(parser, action, out)
        invocation = action.option_strings[-1]
        if not (action.help or "").strip():
            problems.append(f"{invocation}: no help text")
        elif shows_a_default(parser, action) and not DEFAULT.search(text):
            problems.append(f"{invocation}: no default shown (it is {action.default!r})")
        elif "(default: None)" in text or text.count("(default:") > 1:
            problems.append(f"{invocation}: {text}")
    assert not problems, f"tfnlp {' '.join(arguments)}: " + "; ".join(problems)


def test_a_required_flag_and_a_stated_default_show_no_default_line(capsys):
    parser = command_line.ArgumentParser(prog="example")
    parser.add_argument("--data", required=True, help="The data.")
    parser.add_argument("--steps", type=int, default=100, help="Steps.")
    parser.add_argument("--dir", default="", help="Output (default: the data's folder).")
    parser.add_argument("--dropout", type=float, default=None, help="The dropout.")
    parser.add_argument("--share", type=float, default=0.1, help="A 10%% share.")
    command_line.add_boolean_flag(parser, "gzip", False, "Compress.")
    parser.add_argument("--dry_run", action="store_true", help="Only check.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model_dir", help="A run.")
    source.add_argument("--export_dir", help="An export.")
    help_text = " ".join(parser.format_help().split())
    assert "--data DATA The data. --steps" in help_text
    assert "Steps. (default: 100)" in help_text
    assert "Output (default: the data's folder). --dropout" in help_text
    assert "The dropout. (default: none)" in help_text
    assert "A 10% share. (default: 0.1)" in help_text
    assert "Compress. (default: false)" in help_text
    assert "--nogzip" not in help_text
    assert "Only check. --model_dir MODEL_DIR A run. --export_dir EXPORT_DIR An export." \
        in help_text
    assert "environment does). --config_file FILE A YAML" in help_text
    assert help_text.count("(default:") == 5


def command_line_doc_commands():
    """The commands that docs/COMMAND_LINE.md lists: (name, what it does,
    module) of each row of its table of commands."""
    text = (REPOSITORY / "docs" / "COMMAND_LINE.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `([\w-]+)` \| (.+?) \| `python -m ([\w.]+)`[^|]* \|$", text,
                      re.MULTILINE)


def test_the_command_line_doc_lists_every_command():
    listed = command_line_doc_commands()
    assert listed == [(subcommand.name, subcommand.summary,
                       subcommand.module.removesuffix(".__main__"))
                      for subcommand in commands.SUBCOMMANDS]

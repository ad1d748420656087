"""The command line of `python -m pipelines.wordpiece_vocab`: its flags and their checks.

`parse_arguments` parses the flags, turns `--reserved_tokens` into a list
(`reserved_tokens_from_flag`) and checks the values (`flag_problem`: the
first problem is argparse's usage error); `pipelines.wordpiece_vocab.main`
then checks the paths they name (inputs matched, the output file written)
before the job starts. The learner's defaults are those of
`wordpiece_learner.VocabularyOptions`.
"""

import argparse

from pipelines import job
from pipelines.job_flags import add_input_file_flag, add_input_format_flag
from pipelines.wordpiece_learner import VocabularyOptions
from tfnlp.command_line import ArgumentParser, add_boolean_flag
from tfnlp.text.vocabulary import SPECIAL_TOKENS

# The learner's integer flags, each a `VocabularyOptions` field of the same
# name (its default), with their help; each must be at least 1.
LEARNER_INTEGER_FLAGS = (
    ("max_input_words", "Only the most frequent words (this many) go to the learner."),
    ("min_token_count", "The lowest count threshold the learner searches for a piece."),
    ("max_token_length", "Longer words (in characters) are left out of learning."),
    ("max_unique_characters", "The alphabet: words with a character outside the most "
     "frequent ones are left out of learning."),
    ("num_iterations", "The learner's iterations."),
)


def build_parser():
    """The job's argument parser (the checks of `flag_problem` come after)."""
    parser = ArgumentParser(
        prog="python -m pipelines.wordpiece_vocab",
        description="Learns a BERT WordPiece vocabulary from raw text with Beam.",
        # Unknown options go to Beam whole, never taken as abbreviations.
        allow_abbrev=False,
    )
    _add_input_output_flags(parser)
    _add_learner_flags(parser)
    return parser


def _add_input_output_flags(parser):
    add_input_file_flag(parser, "the input files (any Beam filesystem)")
    parser.add_argument(
        "--output_file",
        required=True,
        help="Where to write the vocabulary; the stats go to <output_file>.stats.json.",
    )
    parser.add_argument(
        "--vocab_size",
        type=int,
        required=True,
        help="The largest number of tokens, the reserved ones included.",
    )
    add_boolean_flag(
        parser,
        "lower_case",
        VocabularyOptions.lower_case,
        "Lower-case and strip accents (uncased BERT; the default). "
        "--nolower_case learns a cased vocabulary.",
    )
    # The spelling of argparse's BooleanOptionalAction, which this flag took
    # before it became absl-style like the other jobs' flags.
    parser.add_argument(
        "--no-lower_case", dest="lower_case", action="store_false", help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--reserved_tokens",
        default="",
        help="Comma-separated tokens placed after [PAD], [UNK], [CLS], [SEP] "
        "and [MASK] (which are always reserved, with ids 0 to 4).",
    )
    add_input_format_flag(parser, "one record a line", "the record")


def _add_learner_flags(parser):
    for name, help_text in LEARNER_INTEGER_FLAGS:
        parser.add_argument(f"--{name}", type=int,
                            default=getattr(VocabularyOptions, name), help=help_text)
    parser.add_argument(
        "--slack_ratio",
        type=float,
        default=VocabularyOptions.slack_ratio,
        help="The learner accepts a size between (1 - slack_ratio) * vocab_size "
        "and vocab_size.",
    )


def reserved_tokens_from_flag(value):
    """The extra reserved tokens of a comma-separated `--reserved_tokens`.

    Args:
        value: e.g. "[unused0],[unused1]"; surrounding spaces are removed
            and empty entries ignored.

    Returns:
        The tokens, in order.

    Raises:
        ValueError: a token contains whitespace, repeats, or is one of the
            always-reserved `SPECIAL_TOKENS`.
    """
    tokens = [token.strip() for token in value.split(",") if token.strip()]
    for token in tokens:
        if any(character.isspace() for character in token):
            raise ValueError(f"Reserved token {token!r} contains whitespace.")
        if token in SPECIAL_TOKENS:
            raise ValueError(
                f"Reserved token {token} is always reserved; leave it out of "
                "--reserved_tokens."
            )
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"--reserved_tokens repeats a token: {tokens}.")
    return tokens


def flag_problem(flags):
    """The first problem of the parsed flags' values, as a sentence (None:
    none); `flags.reserved_tokens` is already a list."""
    reserved_count = len(SPECIAL_TOKENS) + len(flags.reserved_tokens)
    if flags.vocab_size <= reserved_count:
        return (
            f"--vocab_size={flags.vocab_size} leaves no room for learned tokens "
            f"after the {reserved_count} reserved ones."
        )
    for name, _ in LEARNER_INTEGER_FLAGS:
        if getattr(flags, name) < 1:
            return f"--{name} must be at least 1."
    if not 0 <= flags.slack_ratio < 1:
        return "--slack_ratio must be in [0, 1)."
    return None


def parse_arguments(argv=None):
    """Splits the command line into this job's flags and Beam's options.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`: an argparse namespace (with
        `reserved_tokens` as a list) and the arguments left for
        `PipelineOptions`.

    Raises:
        SystemExit: a flag is missing or invalid (argparse's usage error).
    """
    parser = build_parser()
    flags, beam_arguments = job.split_arguments(parser, argv)
    try:
        flags.reserved_tokens = reserved_tokens_from_flag(flags.reserved_tokens)
    except ValueError as error:
        parser.error(str(error))
    problem = flag_problem(flags)
    if problem:
        parser.error(problem)
    return flags, beam_arguments

"""The command line of `python -m pipelines.translation_data`: its flags and their checks.

`parse_arguments` parses the flags, splits `--vocab_file` into its paths
and checks the values (`flag_problems`: one usage error naming every
problem); `pipelines.translation_data.main` then checks the paths they name
(inputs matched, the given models read and validated, the output directory
written) before the job starts.
"""

from pipelines import job, translation_pairs
from pipelines.job_flags import (
    add_gzip_flag,
    add_input_file_flag,
    add_num_shards_flag,
    add_output_dir_flag,
    add_sentencepiece_flags,
)
from tfnlp.command_line import ArgumentParser, add_boolean_flag

DEFAULT_NUM_SHARDS = 16


def build_parser():
    """The job's argument parser (the checks of `flag_problems` come after)."""
    parser = ArgumentParser(
        prog="python -m pipelines.translation_data",
        description="Translation-pair TFRecords of SentencePiece ids, with Beam.",
        epilog="Text is normalized by SentencePiece's nmt_nfkc rules (NFKC, control "
        "characters dropped, spaces collapsed and trimmed) before tokenizing, and "
        "detokenizes to that normalized text. Writes DIR/translation-SSSSS-of-NNNNN"
        ".tfrecord, the learned model(s) (DIR/sentencepiece.model with "
        "--shared_vocab, else DIR/source.model and DIR/target.model, each with a "
        ".vocab) and DIR/stats.json. Other options go to Beam.",
        allow_abbrev=False,
    )
    _add_input_flags(parser)
    _add_vocabulary_flags(parser)
    _add_record_flags(parser)
    return parser


def _add_input_flags(parser):
    parser.add_argument("--source_file",
                        help="Comma-separated globs of the source-language files "
                        "(line-aligned input).")
    parser.add_argument("--target_file",
                        help="Comma-separated globs of the target-language files; "
                        "sorted, they pair one to one with the source files.")
    add_input_file_flag(parser, "the tsv or jsonl files", required=False)
    parser.add_argument("--input_format", choices=translation_pairs.INPUT_FORMATS,
                        default="aligned",
                        help="aligned: --source_file/--target_file, line i of one "
                        "translates line i of the other; tsv: source<TAB>target per "
                        "line; jsonl: a JSON object per line (see --source_field).")
    parser.add_argument("--source_field", default="source",
                        help="jsonl: the field of the source string (a dotted "
                        "name such as translation.en reaches into objects).")
    parser.add_argument("--target_field", default="target",
                        help="jsonl: the field of the target string.")
    add_output_dir_flag(parser, "the shards, the model(s) and stats.json")


def _add_vocabulary_flags(parser):
    add_boolean_flag(parser, "shared_vocab", False,
                     "Learn (or use) one SentencePiece model for both languages: "
                     "recommended, and required by a Transformer that shares its "
                     "embeddings. Without it each side has its own model.")
    vocabulary = parser.add_mutually_exclusive_group()
    vocabulary.add_argument("--vocab_file",
                            help="Use existing SentencePiece model(s) instead of "
                            "learning: one .model with --shared_vocab, else "
                            "SOURCE.model,TARGET.model. They must have pad_id=0, "
                            "unk_id=1, bos_id=2, eos_id=3.")
    add_sentencepiece_flags(parser, "unigram", "sentences (per model)",
                            models="each learned model",
                            coverage_examples="1.0 for alphabetic languages, 0.9995 for "
                                              "Chinese or Japanese",
                            vocab_size_group=vocabulary)


def _add_record_flags(parser):
    parser.add_argument("--max_length", type=int, default=128,
                        help="Drop pairs with more ids than this on either side, "
                        "EOS included.")
    parser.add_argument("--max_length_ratio", type=float, default=9.0,
                        help="Drop pairs whose longer side has more than this many "
                        "times the subword ids of the shorter (0: keep all).")
    add_boolean_flag(parser, "dedupe", False,
                     "Keep one of each set of identical pairs (identical ids, i.e. "
                     "identical normalized text).")
    add_num_shards_flag(parser, DEFAULT_NUM_SHARDS)
    add_gzip_flag(parser)
    add_boolean_flag(parser, "check_line_counts", True,
                     "Before the job, count the lines of each aligned file pair "
                     "and stop if they differ (streams the files through this "
                     "process once; turn off for huge remote corpora).")


def vocab_files_from_flag(value):
    """The paths of a comma-separated `--vocab_file`, empty entries ignored."""
    return [path.strip() for path in value.split(",") if path.strip()]


def flag_problems(flags):
    """The problems of the parsed flags' values, as sentences (empty: none);
    `flags.vocab_file` is already a list, or None."""
    problems = []
    if flags.vocab_file is not None:
        wanted = 1 if flags.shared_vocab else 2
        if len(flags.vocab_file) != wanted:
            problems.append(
                f"--vocab_file names {len(flags.vocab_file)} model(s) but "
                + ("--shared_vocab uses exactly one." if flags.shared_vocab else
                   "without --shared_vocab it takes SOURCE.model,TARGET.model (or "
                   "pass --shared_vocab to use one model for both sides).")
            )
    if flags.max_length < 2:
        problems.append("--max_length must be at least 2 (one subword and EOS).")
    if flags.max_length_ratio != 0 and flags.max_length_ratio < 1:
        problems.append("--max_length_ratio must be at least 1, or 0 to keep all.")
    for name in ("num_shards", "vocab_sample_size"):
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1.")
    return problems


def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`; `flags.vocab_file` is a list of one or
        two paths, or None.

    Raises:
        SystemExit: a flag is missing, invalid or inconsistent (argparse's
            usage error).
    """
    parser = build_parser()
    flags, beam_arguments = job.split_arguments(parser, argv)
    if flags.vocab_file is not None:
        flags.vocab_file = vocab_files_from_flag(flags.vocab_file)
    problems = flag_problems(flags)
    if problems:
        parser.error(" ".join(problems))
    return flags, beam_arguments

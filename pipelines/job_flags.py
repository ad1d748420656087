"""The command-line flags that several Beam jobs of `pipelines` share:
their input (`--input_file`, `--input_format`, `--max_line_bytes`), where
the output goes (`--output_dir`), in how many TFRecord files
(`--num_shards`), compressed or not (`--gzip`), and the SentencePiece
learner's (`add_sentencepiece_flags`). Each function takes only what
differs between the jobs."""

from pipelines import sentencepiece_model, text_input
from tfnlp.command_line import add_boolean_flag, mode_help


def add_input_file_flag(group, files="the input files", required=True):
    """Adds `--input_file`: comma-separated globs of `files`."""
    group.add_argument("--input_file", required=required,
                       help=f"Comma-separated globs of {files}.")


def add_input_format_flag(group, text, record):
    """Adds `--input_format` (text, the default, or jsonl) of the jobs that
    read `text_input`: `text` says what a text file holds, `record` what
    the "text" field of a JSON line is."""
    group.add_argument("--input_format", choices=text_input.INPUT_FORMATS, default="text",
                       help=f"text: {text}; jsonl: one JSON object a line, its \"text\" "
                            f"field {record}.")


def add_output_dir_flag(group, contents):
    """Adds the required `--output_dir`: "Where `contents` go."."""
    group.add_argument("--output_dir", required=True, help=f"Where {contents} go.")


def add_num_shards_flag(group, default, files="TFRecord files"):
    """Adds `--num_shards` of a job that sorts each shard in one worker's
    memory: how many `files` it writes."""
    group.add_argument("--num_shards", type=int, default=default,
                       help=f"{files} (each sorted in one worker's memory: keep shards "
                            "below a few hundred MB).")


def add_gzip_flag(group):
    """Adds `--gzip` (default false): gzip-compressed TFRecords."""
    add_boolean_flag(group, "gzip", False, "Write gzip-compressed TFRecords.")


def add_max_line_bytes_flag(group, condition=""):
    """Adds `--max_line_bytes` (default 1,000,000); `condition`, when
    given, says when it applies ("With --document_boundary=blank_line")."""
    lines = f"{condition}, longer lines" if condition else "Longer lines"
    group.add_argument("--max_line_bytes", type=int, default=1_000_000,
                       help=f"{lines} are skipped (and counted).")


def add_sentencepiece_flags(group, model_type, sample, mode="", models="the learned model",
                            coverage_examples="", vocab_size_group=None):
    """Adds the SentencePiece learner's `--model_type` (`model_type` by
    default), `--vocab_size` (8000; in `vocab_size_group` when given, and
    then first), `--character_coverage` (1.0) and `--vocab_sample_size`
    (1,000,000 `sample`, e.g. "sentences (per model)").

    Args:
        mode: the job's mode these flags are for, which begins each help
            ("sentencepiece"), or "".
        models: the models learned, e.g. "each learned model".
        coverage_examples: a parenthesis of `--character_coverage`'s help,
            e.g. the values for some languages.
    """
    vocab_size_help = mode_help(mode, f"the pieces of {models}, the 4 special and 256 "
                                      "byte pieces included.")
    if vocab_size_group is not None:
        vocab_size_group.add_argument("--vocab_size", type=int, default=8000,
                                      help=vocab_size_help)
    group.add_argument("--model_type", choices=sentencepiece_model.MODEL_TYPES,
                       default=model_type,
                       help=mode_help(mode, "the learned model's type: unigram (Kudo 2018) "
                                            "or bpe."))
    if vocab_size_group is None:
        group.add_argument("--vocab_size", type=int, default=8000, help=vocab_size_help)
    coverage = f" ({coverage_examples})" if coverage_examples else ""
    group.add_argument("--character_coverage", type=float, default=1.0,
                       help=mode_help(mode, f"share of the sample's characters made pieces"
                                            f"{coverage}; the others fall back to bytes."))
    group.add_argument("--vocab_sample_size", type=int, default=1_000_000,
                       help=mode_help(mode, f"learn from at most this many {sample}, those "
                                            "of smallest content hash."))

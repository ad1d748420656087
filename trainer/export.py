"""Exporting a trained model as a versioned SavedModel for serving.

    python -m trainer.export --model_dir=RUN --export_dir=EXPORT_DIR

writes `EXPORT_DIR/<next version>/` with `tfnlp.export.export_saved_model`
and prints its path; `run` says which model_dirs it exports, each through
its task's `export_run` (`trainer.tasks.registry`).
"""

import logging

from tfnlp.command_line import (
    ArgumentParser,
    add_boolean_flag,
    add_lower_case_flag,
    check_input_directory,
    check_input_file,
    check_output_directory,
    run_main,
)
from tfnlp.export.bert_signatures import POOLINGS
from trainer import run_files, runtime
from trainer.bert_models import DEFAULT_SEQUENCE_LENGTH, export_bert_run
from trainer.run_flags import add_checkpoint_flag, check_counts
from trainer.tasks.registry import get_task, task_entries

LOGGER = logging.getLogger("trainer.export")

# ---------------------------------------------------------------------------
# The command line


def export_parser():
    """The `argparse` parser of the export flags."""
    parser = ArgumentParser(
        prog="python -m trainer.export",
        description="Exports a trained model to EXPORT_DIR/<version>/ for TensorFlow Serving.",
        allow_abbrev=False,
    )
    parser.add_argument("--model_dir", required=True,
                        help="A trainer.pretrain or trainer.finetune model_dir, or a "
                             "Hugging Face BERT directory.")
    parser.add_argument("--export_dir", required=True,
                        help="The base directory; the export is its next version.")
    add_checkpoint_flag(parser)
    parser.add_argument("--vocab_file", default=None,
                        help="The WordPiece vocabulary (default: the one the run recorded).")
    add_lower_case_flag(parser, None, "default: as recorded, else true")
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="The sequence length of the text signatures (default: as "
                             f"recorded, else {DEFAULT_SEQUENCE_LENGTH}); longer text is "
                             "truncated.")
    add_boolean_flag(parser, "text_signatures", True,
                     "Include the signatures on raw text (they need the tensorflow-text "
                     "ops to load).")
    parser.add_argument("--pooling", choices=POOLINGS, default=None,
                        help="Encoders: what pooled_output is (default: pooler, or the "
                             "sentence-transformers pooling).")
    add_boolean_flag(parser, "normalize", None,
                     "Encoders: L2-normalize pooled_output (default: as the "
                     "sentence-transformers config says, else false).")
    parser.add_argument("--top_k", type=int, default=5, help="Fill-mask: tokens per mask.")
    parser.add_argument("--max_masks", type=int, default=8,
                        help="Fill-mask: masks predicted per example.")
    parser.add_argument("--max_answer_length", type=int, default=30,
                        help="Span extraction: the longest answer, in tokens.")
    for entry in task_entries():
        if entry.add_export_flags:
            entry.add_export_flags(parser)
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = export_parser()
    flags = parser.parse_args(argv)
    given = [name for name in ("max_seq_length", "top_k", "max_masks", "max_answer_length")
             if getattr(flags, name) is not None]
    check_counts(parser, flags, positive=given)
    for entry in task_entries():
        if entry.check_export_flags:
            entry.check_export_flags(parser, flags)
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before loading
    the model.

    Raises:
        UsageError: `--model_dir` or `--vocab_file` cannot be read, or
            `--export_dir` cannot be written.
    """
    check_input_directory("--model_dir", flags.model_dir,
                          "the model_dir of a trainer run or a Hugging Face BERT directory")
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "the vocabulary the model was trained with")
    check_output_directory("--export_dir", flags.export_dir)


def run(flags):
    """Exports as the flags say; returns the new version's directory.

    The run's serving record names its task ("model"), whose `export_run`
    exports it (`trainer.tasks.registry`); a directory without one is a
    Hugging Face directory. `--model_dir` is one of:

    - a `trainer.finetune` run: the classifier, token classifier or span
      extractor of its best checkpoint by the validation figure (else its
      latest), with the labels, vocabulary, lower-casing and sequence
      length the run recorded in `serving.json`;
    - a `trainer.pretrain` run: the encoder and its masked-LM head (encoder
      and fill-mask signatures). Pretraining reads TFRecords, so give the
      vocabulary of its data with `--vocab_file` unless the run was given
      one;
    - a `trainer.translate` run: the model (Transformer or LSTM) of its best
      checkpoint by validation BLEU (else its latest), with a
      text-in/text-out `serving_default` and `translate_ids`, decoding as
      the run recorded (`--beam_size`, `--length_penalty`, ... override it);
    - a `trainer.distill` run: its student (BiLSTM or BERT) of its best
      checkpoint by dev accuracy (else its latest), with a text-in
      `serving_default` that gives what a BERT classifier's does (the
      BiLSTM's word vocabulary in the graph, as an asset);
    - a Hugging Face BERT directory (`config.json`, `model.safetensors`,
      `vocab.txt`): its encoder, with the masked-LM head when the checkpoint
      has one. For a sentence-transformers model (`modules.json`) the
      pooled output is its sentence embedding: its pooling (mean or [CLS])
      and normalization, and its `max_seq_length`.

    Flags given on the command line override what the model_dir records.
    `--notext_signatures` writes the ids signatures only: the export then
    holds no tensorflow-text op and loads in any TensorFlow Serving build.
    """
    record = run_files.read_serving_record(flags.model_dir)
    if "model" not in record:  # A Hugging Face directory.
        return export_bert_run(flags, record)
    return get_task(record["model"]).export_run(flags, record)


def main(argv=None):
    runtime.configure_logging()
    flags = parse_flags(argv)
    check_paths(flags)
    path = run(flags)
    print(path)
    return path


if __name__ == "__main__":
    run_main(main)

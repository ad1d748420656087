"""Exporting a trained model as a versioned SavedModel for serving.

    python -m trainer.export --model_dir=RUN --export_dir=EXPORT_DIR

writes `EXPORT_DIR/<next version>/` with `tfnlp.export.export_saved_model`
and prints its path; `run` says which model_dirs it exports. The trainers'
`--export_dir` flags call `export_trained_model` at the end of training.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    add_lower_case_flag,
    check_input_directory,
    check_input_file,
    check_output_directory,
    run_main,
)
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.export.bert_signatures import POOLINGS
from tfnlp.models import (
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
)
from tfnlp.models.bert import huggingface
from tfnlp.text import BertTokenizer
from trainer import distillation_models, language_models, run_files, runtime
from trainer.bert_models import check_inputs_fit, huggingface_model, load_run_model
from trainer.run_flags import add_checkpoint_flag, check_counts
from trainer.translate_flags import add_decoding_flags, check_decoding_flags
from trainer.translation_models import (
    DECODING_SETTINGS,
    export_translation_model,
    load_translation_model,
)

LOGGER = logging.getLogger("trainer.export")

DEFAULT_SEQUENCE_LENGTH = 128


def export_trained_model(model, export_dir, vocab_file=None, lower_case=True,
                         sequence_length=DEFAULT_SEQUENCE_LENGTH, text_signatures=True,
                         **options):
    """Exports `model` to the next version of `export_dir`; returns its path.

    Without `vocab_file` only the ids signatures are written (and a
    pretraining model exports its encoder alone: fill-mask needs the
    vocabulary). `options` go to `tfnlp.export.export_saved_model`.
    """
    preprocessor = None
    if vocab_file:
        preprocessor = BertTextPreprocessor(
            BertTokenizer(vocab_file, lower_case=lower_case), sequence_length
        )
        check_inputs_fit(model.config, vocab_file, preprocessor.tokenizer.vocab_size,
                         sequence_length)
    elif isinstance(model, BertPretrainingModel):
        LOGGER.warning(
            "No vocabulary: exporting the encoder's ids signatures only (fill-mask "
            "and text signatures need --vocab_file)."
        )
        model = model.encoder
        options = {name: value for name, value in options.items()
                   if name in ("pooling", "normalize")}
    return export_saved_model(
        model, export_dir, preprocessor, text_signatures=text_signatures, **options
    )


# ---------------------------------------------------------------------------
# Loading a trained model from its model_dir


def sentence_transformers_options(model_dir):
    """Pooling, normalization and sequence length of a sentence-transformers
    directory (`modules.json`), or `{}` for a plain Hugging Face model."""
    modules = run_files.read_json(os.path.join(model_dir, "modules.json"), [])
    options = {}
    for module in modules:
        kind = module.get("type", "").rsplit(".", 1)[-1]
        if kind == "Pooling":
            pooling = run_files.read_json(
                os.path.join(model_dir, module["path"], "config.json"), {})
            if pooling.get("pooling_mode_mean_tokens"):
                options["pooling"] = "mean"
            elif pooling.get("pooling_mode_cls_token"):
                options["pooling"] = "cls"
            else:
                raise UsageError(
                    f"{model_dir}: the sentence-transformers pooling {pooling} is not "
                    "supported; tfnlp exports mean and [CLS] pooling."
                )
        elif kind == "Normalize":
            options["normalize"] = True
    settings = run_files.read_json(os.path.join(model_dir, "sentence_bert_config.json"), {})
    if modules and "max_seq_length" in settings:
        options["sequence_length"] = settings["max_seq_length"]
    return options


def _huggingface_model(model_dir):
    """The model of a Hugging Face directory and what its files say about
    serving it (vocabulary, lower-casing, pooling, sequence length)."""
    model = huggingface_model(model_dir)
    record = {"model": "huggingface"}
    vocab_file = os.path.join(model_dir, "vocab.txt")
    if tf.io.gfile.exists(vocab_file):
        record["vocab_file"] = vocab_file
    tokenizer_config = run_files.read_json(os.path.join(model_dir, "tokenizer_config.json"), {})
    if "do_lower_case" in tokenizer_config:
        record["lower_case"] = bool(tokenizer_config["do_lower_case"])
    options = sentence_transformers_options(model_dir)
    if "sequence_length" in options:
        record["sequence_length"] = options.pop("sequence_length")
    record.update(options)
    return model, record


def load_trained_model(model_dir, checkpoint=""):
    """The trained model of `model_dir` and its serving record.

    Args:
        model_dir: a trainer.pretrain or trainer.finetune run, or a Hugging
            Face BERT directory.
        checkpoint: a checkpoint prefix of the run (default: its latest).

    Returns:
        `(model, record)`, the record as `run_files.write_serving_record`
        writes it (plus `pooling`/`normalize` for sentence-transformers
        directories).
    """
    if huggingface.is_huggingface_directory(model_dir):
        return _huggingface_model(model_dir)
    return load_run_model(model_dir, checkpoint), run_files.read_serving_record(model_dir)


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
    add_decoding_flags(parser.add_argument_group("translation (default: as the run recorded)"),
                       recorded=True)
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = export_parser()
    flags = parser.parse_args(argv)
    given = [name for name in ("max_seq_length", "top_k", "max_masks", "max_answer_length")
             if getattr(flags, name) is not None]
    check_counts(parser, flags, positive=given)
    check_decoding_flags(parser, flags)
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


def _first(*values):
    return next((value for value in values if value is not None), None)


def _signature_options(model, flags, record):
    options = {}
    if isinstance(model, (BertEncoder, BertPretrainingModel)):
        options["pooling"] = _first(flags.pooling, record.get("pooling"), "pooler")
        options["normalize"] = bool(_first(flags.normalize, record.get("normalize"), False))
    if isinstance(model, BertPretrainingModel):
        options.update(top_k=flags.top_k, max_masks=flags.max_masks)
    if isinstance(model, BertSpanExtractor):
        options["max_answer_length"] = flags.max_answer_length
    if record.get("labels"):
        options["labels"] = record["labels"]
    return options


def run(flags):
    """Exports as the flags say; returns the new version's directory.

    The run's serving record names its kind of model ("model"); a kind in
    `RUN_EXPORTERS` exports with its own function, any other kind (the BERT
    runs, Hugging Face directories) with `export_bert_run`. `--model_dir` is
    one of:

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
    export = RUN_EXPORTERS.get(record.get("model"), export_bert_run)
    return export(flags, record)


def export_bert_run(flags, record):
    """Exports a `trainer.pretrain` or `trainer.finetune` run, or a Hugging
    Face BERT directory, with the flags' overrides of `record`."""
    model, record = load_trained_model(flags.model_dir, flags.checkpoint)
    vocab_file = _first(flags.vocab_file, record.get("vocab_file"))
    if vocab_file is None and flags.text_signatures:
        raise UsageError(
            f"{flags.model_dir} records no vocabulary, and the text signatures need "
            "one: give --vocab_file (the vocabulary the model was trained with), or "
            "--notext_signatures to export the ids signatures only."
        )
    return export_trained_model(
        model,
        flags.export_dir,
        vocab_file=vocab_file,
        lower_case=bool(_first(flags.do_lower_case, record.get("lower_case"), True)),
        sequence_length=_first(flags.max_seq_length, record.get("sequence_length"),
                               DEFAULT_SEQUENCE_LENGTH),
        text_signatures=flags.text_signatures,
        **_signature_options(model, flags, record),
    )


def export_translation_run(flags, record):
    """Exports a `trainer.translate` run with the decoding flags' overrides."""
    record = dict(record)
    record.update({name: getattr(flags, name) for name in DECODING_SETTINGS
                   if getattr(flags, name) is not None})
    if flags.vocab_file:
        record["vocab_file"] = flags.vocab_file
    model = load_translation_model(flags.model_dir, flags.checkpoint)
    return export_translation_model(model, flags.export_dir, record,
                                    text_signatures=flags.text_signatures)


# The exporters of the run kinds (a serving record's "model") other than BERT's.
RUN_EXPORTERS = {"translation": export_translation_run,
                 language_models.RUN_KIND: language_models.export_language_model_run,
                 distillation_models.RUN_KIND: distillation_models.export_distillation_run}


def main(argv=None):
    runtime.configure_logging()
    flags = parse_flags(argv)
    check_paths(flags)
    path = run(flags)
    print(path)
    return path


if __name__ == "__main__":
    run_main(main)

"""The BERT models of the trainers, and the sources an encoder starts from.

`trainer.pretrain` and `trainer.finetune` build their models here, and
`trainer.export` rebuilds a run's model here from what the run wrote
(`trainer.run_files`), so the three agree on what each model kind is:

- `MODEL_KINDS` and `build_model(kind, encoder, ...)`: the pretraining
  model, or a fine-tuning model around an encoder;
- `config_from_name(name, overrides)`: a `BertConfig` preset or JSON file;
  `check_bert_config_flag(config)`: `--config` names one;
- `check_inputs_fit(config, ...)`, `check_sequence_fits(config, ...)`: a
  vocabulary and sequence length the model can take;
  `checkpoint_config(path)`: the config a checkpoint records, to check
  them before its weights are read;
- `encoder_from_source(init_checkpoint, config, overrides)`: the encoder of
  a pretraining or fine-tuning checkpoint (the `config.json` beside it), of
  a Hugging Face directory, or new from a config;
- `load_run_model(model_dir, checkpoint)`: a run's model with the weights of
  its latest (or a given) checkpoint; `huggingface_model(path)`: the model
  of a Hugging Face directory;
- `export_trained_model(model, export_dir, ...)`: a BERT model's SavedModel;
  `export_bert_run(export_flags, record)`: a BERT run's or Hugging Face
  directory's, as `trainer.export` asks.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import UsageError
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.models import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.models.bert import huggingface
from tfnlp.text import BertTokenizer
from trainer import finetune_data, run_files
from trainer.checkpoints import best_checkpoint, find_checkpoint
from trainer.run_flags import check_config_flag

LOGGER = logging.getLogger(__name__)

# The BERT models by the task that trains them (a run's serving.json "model").
MODEL_KINDS = ("pretraining", *finetune_data.TASKS)


def build_model(kind, encoder, num_labels=0, dropout=0.1, pooling="pooled_output"):
    """The model of `kind` (one of `MODEL_KINDS`) around `encoder`.

    Args:
        kind: "pretraining" (masked LM and next sentence), "classification",
            "token_classification" or "span".
        encoder: the `BertEncoder`.
        num_labels: the classes of the (token) classifier.
        dropout: the dropout before the (token) classification layer.
        pooling: the classifier's sentence vector (`BertClassifier`).
    """
    if kind == "pretraining":
        return BertPretrainingModel(encoder)
    if kind == "classification":
        return BertClassifier(encoder, num_classes=num_labels, dropout=dropout,
                              pooling=pooling)
    if kind == "token_classification":
        return BertTokenClassifier(encoder, num_classes=num_labels, dropout=dropout)
    if kind == "span":
        return BertSpanExtractor(encoder)
    raise UsageError(f"Unknown model kind {kind!r}; expected one of {', '.join(MODEL_KINDS)}.")


def check_inputs_fit(config, vocab_file, vocab_size, sequence_length):
    """Raises ValueError unless the vocabulary and the sequence length fit
    the model of `config` (its embeddings and position embeddings)."""
    if vocab_size > config.vocab_size:
        raise UsageError(
            f"The vocabulary {vocab_file} has {vocab_size} tokens but the model only "
            f"{config.vocab_size} embeddings. Give the vocabulary the model was "
            "(pre)trained with (--vocab_file)."
        )
    check_sequence_fits(config, sequence_length)


def check_sequence_fits(config, sequence_length):
    """Raises UsageError unless the model of `config` has a position
    embedding for each of `sequence_length` tokens."""
    if sequence_length > config.max_position_embeddings:
        raise UsageError(
            f"The sequence length {sequence_length} is longer than the model's "
            f"max_position_embeddings={config.max_position_embeddings}; give a shorter "
            "--max_seq_length."
        )


def check_bert_config_flag(config):
    """Raises `UsageError` unless `--config` is a `BertConfig` preset or a
    file that can be read."""
    check_config_flag(config, BertConfig.preset_names(), "a BertConfig JSON file")


def config_from_name(name, overrides=None, flag="--config"):
    """The `BertConfig` of a preset name or a BertConfig JSON file, with
    `overrides` (a dict of config fields) applied."""
    overrides = overrides or {}
    if name in BertConfig.preset_names():
        return BertConfig.preset(name, **overrides)
    if name.endswith(".json"):
        return BertConfig.from_dict({**BertConfig.from_json(name).to_dict(), **overrides})
    raise UsageError(
        f"{flag}={name!r} is neither a preset ({', '.join(BertConfig.preset_names())}) "
        "nor a .json BertConfig file."
    )


def encoder_from_source(init_checkpoint="", config="", overrides=None):
    """The encoder to start from, and a short description of where it came from.

    Call inside the strategy's scope.

    Args:
        init_checkpoint: a model_dir of `trainer.pretrain` or
            `trainer.finetune` (its latest checkpoint) or a checkpoint prefix
            (`DIR/ckpt-N`), with the `config.json` beside it; or a Hugging
            Face BERT directory; or "" for new random weights.
        config: without `init_checkpoint`, a preset name or a BertConfig
            JSON file.
        overrides: config fields to change (dropouts; more from scratch).

    Returns:
        `(encoder, source)`.
    """
    overrides = overrides or {}
    if not init_checkpoint:
        encoder = BertEncoder(config_from_name(config, overrides))
        return encoder, f"random weights of --config={config}"
    if huggingface.is_huggingface_directory(init_checkpoint):
        encoder = BertEncoder.from_huggingface(init_checkpoint, config_overrides=overrides)
        return encoder, f"the Hugging Face checkpoint {init_checkpoint}"
    prefix = find_checkpoint(init_checkpoint, "--init_checkpoint")
    config = BertConfig.from_dict({**_run_config(prefix).to_dict(), **overrides})
    encoder = BertEncoder(config)
    restore_encoder(encoder, prefix)
    return encoder, f"the encoder of the checkpoint {prefix}"


def checkpoint_config(path, flag="--init_checkpoint"):
    """The `BertConfig` that a checkpoint records, read without its weights:
    the `config.json` of a Hugging Face directory, or the one beside a
    checkpoint of `trainer.pretrain` or `trainer.finetune` (`path` its
    model_dir or a prefix), as `encoder_from_source` reads them.

    Raises:
        FileNotFoundError: `path` holds no checkpoint, or no config.json.
    """
    if huggingface.is_huggingface_directory(path):
        return BertConfig.from_huggingface_dict(huggingface.read_config(path, "BERT"))
    return _run_config(find_checkpoint(path, flag))


def _run_config(prefix):
    """The `BertConfig` of the `config.json` beside a checkpoint prefix."""
    config_path = os.path.join(os.path.dirname(prefix), run_files.CONFIG_FILE)
    if not tf.io.gfile.exists(config_path):
        raise FileNotFoundError(
            f"No {run_files.CONFIG_FILE} beside the checkpoint {prefix}. The pretraining "
            "trainer writes the BertConfig there; copy it back (or write one with "
            "BertConfig.to_json)."
        )
    return BertConfig.from_json(config_path)


def restore_encoder(encoder, prefix):
    """Restores `encoder` from the `model/encoder` object of a checkpoint.

    That is the encoder of a `trainer.pretrain` checkpoint
    (`tf.train.Checkpoint(model=BertPretrainingModel, ...)`) and of
    `trainer.finetune`'s checkpoints (`model=` a fine-tuning model).
    Everything else in the checkpoint (heads, optimizer) is left alone.

    Raises:
        ValueError: if the checkpoint has no encoder, or an encoder
            variable is missing from it (a different architecture).
    """
    reader = tf.train.load_checkpoint(prefix)
    names = reader.get_variable_to_shape_map()
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=encoder)).restore(prefix)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as error:
        raise UsageError(
            f"The checkpoint {prefix} does not hold every variable of a "
            f"{encoder.config.num_layers}-layer encoder at model/encoder ({error}). "
            f"It has {len(names)} variables. Pass a checkpoint of trainer.pretrain "
            "or trainer.finetune, with the config.json written beside it."
        ) from None
    status.expect_partial()
    LOGGER.info("Restored the encoder's %d variables from %s.", len(encoder.weights), prefix)


def huggingface_model(path):
    """The model of a Hugging Face BERT directory, read once: its
    `BertPretrainingModel` when the checkpoint has pretraining heads
    (`cls.*`), else its `BertEncoder`."""
    checkpoint = huggingface.read_huggingface_checkpoint(path)
    model_class = BertPretrainingModel if checkpoint.head_tensors else BertEncoder
    return model_class.from_huggingface_checkpoint(checkpoint, path)


def load_run_model(model_dir, checkpoint=""):
    """The model of a `trainer.pretrain` or `trainer.finetune` run, restored.

    Rebuilt from the run's `config.json` and `serving.json` (model kind,
    labels, dropout), with the weights of `checkpoint` (a prefix; default
    the run's best checkpoint, `trainer.checkpoints.BestCheckpoint`, else
    its latest).
    """
    config_path = os.path.join(model_dir, run_files.CONFIG_FILE)
    if not tf.io.gfile.exists(config_path):
        raise FileNotFoundError(
            f"{model_dir} has no {run_files.CONFIG_FILE}: pass the --model_dir of a "
            "trainer.pretrain or trainer.finetune run, or a Hugging Face BERT directory."
        )
    record = run_files.read_serving_record(model_dir)
    kind = record.get("model", "pretraining")
    if kind not in MODEL_KINDS:
        raise UsageError(
            f"{model_dir}/{run_files.SERVING_FILE} names an unknown model {kind!r}; "
            f"expected one of {', '.join(MODEL_KINDS)}."
        )
    model = build_model(kind, BertEncoder(BertConfig.from_json(config_path)),
                        len(record.get("labels") or []), record.get("dropout", 0.1),
                        record.get("pooling", "pooled_output"))
    prefix = (find_checkpoint(checkpoint, "--checkpoint") if checkpoint
              else best_checkpoint(model_dir) or find_checkpoint(model_dir, "--model_dir"))
    # `read`, not `restore`: a best checkpoint (`Checkpoint.write`) has no
    # save counter to match.
    status = tf.train.Checkpoint(model=model).read(prefix)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as error:
        raise UsageError(
            f"The checkpoint {prefix} does not match the model rebuilt from "
            f"{config_path} ({error}). Export with the config.json the run wrote "
            "beside its checkpoints."
        ) from None
    status.expect_partial()
    LOGGER.info("Restored %s from %s.", type(model).__name__, prefix)
    return model


# ---------------------------------------------------------------------------
# Exporting

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

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
  of a Hugging Face directory.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import UsageError
from tfnlp.models import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.models.bert import huggingface
from trainer import run_files
from trainer.checkpoints import best_checkpoint, find_checkpoint
from trainer.run_flags import check_config_flag

LOGGER = logging.getLogger(__name__)

MODEL_KINDS = ("pretraining", "classification", "token_classification", "span")


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

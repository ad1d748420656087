"""The language models of training runs: record, load and export.

Used by `trainer.lm` (training) and `trainer.export` (a language-model
run's `--model_dir`). A run's `config.json` holds the model serialized by
Keras (`run_config`) and its `serving.json` the data directory whose
tokenizer the model reads, the sequence length it trained on and the
generation defaults of its export (`serving_record`).
"""

import os

import keras
import tensorflow as tf

from tfnlp.export.language_model_signatures import LanguageModelSignatures
from tfnlp.export.saved_model import write_next_version
from tfnlp.text import load_language_model_tokenizer
from trainer import run_files
from trainer.checkpoints import read_run_config, restore_run_model

RUN_KIND = "language_model"
# What an export's `generate` signature does when a request leaves an option
# out.
GENERATION_DEFAULTS = {"temperature": 0.8, "top_k": 0, "top_p": 0.9, "max_new_tokens": 256}
# The most new tokens a request may ask for, as a share of the model's
# context (the rest holds the prompt), and at most.
NEW_TOKENS_SHARE = 0.75
MAX_NEW_TOKENS = 1024


def run_config(model):
    """What a run's `config.json` holds: the model serialized by Keras."""
    return keras.saving.serialize_keras_object(model)


def serving_record(tokenizer_dir, sequence_length, max_sequence_length):
    """What export needs besides the checkpoints: the tokenizer's data
    directory, the training sequence length and the generation settings
    (a request's defaults and its limit on new tokens, which leaves a
    quarter of the model's `max_sequence_length` to the prompt)."""
    limit = max(1, min(MAX_NEW_TOKENS, int(max_sequence_length * NEW_TOKENS_SHARE)))
    defaults = {**GENERATION_DEFAULTS,
                "max_new_tokens": min(GENERATION_DEFAULTS["max_new_tokens"], limit)}
    return {"model": RUN_KIND, "tokenizer_dir": os.path.abspath(tokenizer_dir),
            "sequence_length": sequence_length, **defaults, "max_new_tokens_limit": limit}


def language_model_signatures(model, tokenizer, record):
    """The `LanguageModelSignatures` of a model, its tokenizer and a run's
    serving record."""
    return LanguageModelSignatures(
        model, tokenizer,
        max_new_tokens=record["max_new_tokens_limit"],
        defaults={name: record[name] for name in GENERATION_DEFAULTS},
    )


def export_language_model(model, export_dir, record):
    """Exports `model` as the next version of `export_dir`; returns its path."""
    tokenizer = load_language_model_tokenizer(record["tokenizer_dir"])
    signatures = language_model_signatures(model, tokenizer, record)
    return write_next_version(export_dir, signatures.signatures(),
                              {"tokenizer": signatures.tokenizer},
                              extra_files=signatures.extra_files())


def load_language_model(model_dir, checkpoint=""):
    """The model of a `trainer.lm` run with its trained weights.

    Args:
        model_dir: the run's directory.
        checkpoint: a checkpoint prefix; by default the best one by
            validation loss (`best/`), else the latest.
    """
    model = keras.saving.deserialize_keras_object(read_run_config(model_dir, "trainer.lm"))
    record = run_files.read_serving_record(model_dir)
    model(tf.zeros([1, record.get("sequence_length", 8)], tf.int32))
    return restore_run_model(model, model_dir, checkpoint)


def export_language_model_run(flags, record):
    """Exports a `trainer.lm` run (`trainer.export`'s exporter of the kind)."""
    model = load_language_model(flags.model_dir, flags.checkpoint)
    return export_language_model(model, flags.export_dir, record)

"""The translation models of training runs: build, load, decode and export.

Used by `trainer.translate` (training), `trainer.export` (a translation
run's `--model_dir`) and `trainer.translate_text` (translating a file).
A run's `config.json` holds the model serialized by Keras (its class,
`TransformerSeq2Seq` or `RNNSeq2Seq`, and config: `run_config`) and its
`serving.json` the SentencePiece model and the decoding settings
(`serving_record`).
"""

import os

import keras

from tfnlp import decoding
from tfnlp.export.saved_model import write_next_version
from tfnlp.export.translation_signatures import TranslationSignatures
from tfnlp.models.seq2seq import TransformerSeq2Seq
from tfnlp.text import SentencePieceTokenizer
from trainer.checkpoints import read_run_config, restore_run_model
from trainer.model_registry import model_family

# The decoding settings of a serving record, with their command-line flags.
DECODING_SETTINGS = ("beam_size", "length_penalty", "length_penalty_alpha",
                     "max_length_a", "max_length_b")


def build_translation_model(flags, vocabulary_size):
    """The model of `--model` and `--config` (a preset of that model or a
    JSON file of its constructor arguments) with the model flags."""
    return model_family(flags.model).build_from_flags(flags, vocabulary_size=vocabulary_size)


def run_config(model):
    """What a run's `config.json` holds: the model serialized by Keras."""
    return keras.saving.serialize_keras_object(model)


def make_decoder(beam_size, length_penalty="gnmt", length_penalty_alpha=0.6):
    """The decoder of the decoding flags: greedy search for a beam of 1."""
    if beam_size == 1:
        return decoding.GreedySearch()
    return decoding.BeamSearch(beam_size=beam_size, length_penalty=length_penalty,
                               alpha=length_penalty_alpha)


def serving_record(flags, vocab_file):
    """What export and translation need besides the checkpoints."""
    record = {"model": "translation", "vocab_file": os.path.abspath(vocab_file),
              "max_length": flags.max_length}
    record.update({name: getattr(flags, name) for name in DECODING_SETTINGS})
    return record


def translation_signatures(model, record):
    """The `TranslationSignatures` of a model and a serving record."""
    return TranslationSignatures(
        model,
        SentencePieceTokenizer(model_file=record["vocab_file"]),
        make_decoder(record["beam_size"], record["length_penalty"],
                     record["length_penalty_alpha"]),
        max_length=record["max_length"],
        max_length_a=record["max_length_a"],
        max_length_b=record["max_length_b"],
    )


def export_translation_model(model, export_dir, record, text_signatures=True):
    """Exports `model` as the next version of `export_dir`; returns its path.

    Args:
        model: the trained seq2seq model.
        export_dir: the base directory of the versioned exports.
        record: the run's serving record (vocabulary, decoding settings).
        text_signatures: include `serving_default` on text (it needs the
            tensorflow-text ops to load); otherwise `serving_default` is
            `translate_ids`.
    """
    translation = translation_signatures(model, record)
    signatures = translation.signatures(text_signatures)
    assets = {"tokenizer": translation.tokenizer.resource} if text_signatures else {}
    return write_next_version(export_dir, signatures, assets)


def load_translation_model(model_dir, checkpoint=""):
    """The model of a run (`TransformerSeq2Seq` or `RNNSeq2Seq`) with its
    trained weights.

    Args:
        model_dir: a `trainer.translate` run.
        checkpoint: a checkpoint prefix; by default the best one by
            validation BLEU (`best/`), else the latest.
    """
    config = read_run_config(model_dir, "trainer.translate")
    if "class_name" in config:
        model = keras.saving.deserialize_keras_object(config)
    else:  # A run from before config.json named the class: a Transformer.
        model = TransformerSeq2Seq.from_config(config)
    return restore_run_model(model, model_dir, checkpoint)

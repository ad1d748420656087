"""The model families the trainers build, by the name a `--model` flag gives.

One table, `MODEL_FAMILIES`, maps a name to the model class, its presets
and the constructor arguments that the trainer's flags set, so the
trainers, their flag checks and the export share it instead of each
dispatching on the name. A new family adds a row.
"""

import dataclasses
import typing

from tfnlp.models.bilstm import BILSTM_PRESETS, BiLSTMClassifier
from tfnlp.models.gpt import GPT_PRESETS, GPTCausalLM
from tfnlp.models.seq2seq import PRESETS, RNN_PRESETS, RNNSeq2Seq, TransformerSeq2Seq
from trainer import run_files


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """A model family a trainer can build.

    Attributes:
        name: the value of the trainer's `--model` flag.
        kind: what the family's models do ("translation",
            "language_model", "classification"), which says the trainer
            that builds them.
        model_class: the Keras model class; it has
            `from_preset(name, **arguments)` and takes the same arguments
            as constructor keywords.
        presets: the family's named presets (`name -> arguments`).
        flag_arguments: `flags -> dict`, the constructor arguments that the
            trainer's flags set (dropout, attention, ...).
    """

    name: str
    kind: str
    model_class: type
    presets: typing.Mapping
    flag_arguments: typing.Callable

    def build(self, config, **arguments):
        """The model of `config`, a preset name or a JSON file of
        constructor arguments, with `arguments` on top."""
        if config in self.presets:
            return self.model_class.from_preset(config, **arguments)
        sizes = run_files.read_json(config)
        if not isinstance(sizes, dict):
            raise FileNotFoundError(
                f"--config={config!r} is neither a {self.name} preset "
                f"({', '.join(sorted(self.presets))}) nor a JSON file of "
                f'{self.model_class.__name__} arguments such as {{"hidden_dim": 64, ...}}.'
            )
        return self.model_class(**{**sizes, **arguments})

    def build_from_flags(self, flags, **arguments):
        """The model of `--config` with the family's flag arguments and
        `arguments` (those the data decides, such as the vocabulary size)."""
        return self.build(flags.config, **self.flag_arguments(flags), **arguments)


def _transformer_arguments(flags):
    return dict(dropout=flags.dropout, norm_first=flags.norm_first,
                position_encoding=flags.position_encoding,
                max_sequence_length=max(flags.max_length, 256))


def _rnn_arguments(flags):
    return dict(dropout=flags.dropout, attention=flags.attention)


def _gpt_arguments(flags):
    return dict(dropout=flags.dropout)


def _bilstm_arguments(flags):
    arguments = {name: getattr(flags, name)
                 for name in ("embedding_dim", "lstm_units", "hidden_dim", "pooling", "dropout")
                 if getattr(flags, name) is not None}
    arguments["freeze_embeddings"] = flags.freeze_word_vectors
    arguments["multichannel"] = flags.multichannel_word_vectors
    return arguments


MODEL_FAMILIES = {
    family.name: family for family in (
        ModelFamily("transformer", "translation", TransformerSeq2Seq, PRESETS,
                    _transformer_arguments),
        ModelFamily("rnn", "translation", RNNSeq2Seq, RNN_PRESETS, _rnn_arguments),
        ModelFamily("gpt", "language_model", GPTCausalLM, GPT_PRESETS, _gpt_arguments),
        ModelFamily("bilstm", "classification", BiLSTMClassifier, BILSTM_PRESETS,
                    _bilstm_arguments),
    )
}


def model_family(name):
    """The `ModelFamily` of `name`; ValueError listing the names otherwise."""
    if name not in MODEL_FAMILIES:
        raise ValueError(
            f"Unknown model family {name!r}; expected one of {', '.join(MODEL_FAMILIES)}."
        )
    return MODEL_FAMILIES[name]


def families_of(kind):
    """The names of the families whose models do `kind`, in table order."""
    return tuple(name for name, family in MODEL_FAMILIES.items() if family.kind == kind)

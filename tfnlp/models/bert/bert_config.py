"""The hyperparameters of a BERT encoder, with presets and JSON files."""

import dataclasses
import json

from tfnlp.layers.activations import get_activation
from tfnlp.models.preset_model import preset_arguments

# Preset name -> BertConfig fields: the sizes of the released Google BERT
# models, smallest first; tiny, mini and small are the "BERT miniatures" of
# Turc et al. (2019).
BERT_PRESETS = {
    "tiny": dict(num_layers=2, hidden_size=128, num_heads=2, intermediate_size=512),
    "mini": dict(num_layers=4, hidden_size=256, num_heads=4, intermediate_size=1024),
    "small": dict(num_layers=4, hidden_size=512, num_heads=8, intermediate_size=2048),
    "base": dict(num_layers=12, hidden_size=768, num_heads=12, intermediate_size=3072),
    "large": dict(num_layers=24, hidden_size=1024, num_heads=16, intermediate_size=4096),
}

# Hugging Face `hidden_act` values and the tfnlp activation that computes them.
_HUGGINGFACE_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
}

# Hugging Face `config.json` key -> BertConfig field.
_HUGGINGFACE_KEYS = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "hidden_act": "hidden_activation",
    "hidden_dropout_prob": "hidden_dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range",
}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """The hyperparameters of a BERT encoder (`tfnlp.models.BertEncoder`).

    The defaults are BERT-base. `BertConfig.preset(name)` gives the sizes of
    the released Google models, and `from_huggingface_dict` reads a Hugging
    Face `config.json`. The config is checked when it is made, so a bad
    value fails here rather than deep inside the model. It is frozen: use
    `dataclasses.replace(config, field=value)` for a changed copy.

    Args:
        vocab_size: number of WordPiece tokens (rows of the token embedding).
        hidden_size: width of every hidden state; a multiple of `num_heads`.
        num_layers: number of Transformer encoder blocks.
        num_heads: attention heads per block.
        intermediate_size: width of the feed-forward network's hidden layer.
        max_position_embeddings: the longest sequence the model can take
            (rows of the learned position embedding).
        type_vocab_size: number of segment ids (2: sentence A and B).
        hidden_activation: feed-forward activation: "gelu" (exact, erf, as
            the original BERT) or "gelu_approximate" (tanh form); any other
            name `tfnlp.layers.get_activation` knows is also accepted.
        hidden_dropout: dropout rate of the embeddings and of each
            sublayer's output.
        attention_dropout: dropout rate of the attention weights.
        layer_norm_epsilon: epsilon of every LayerNorm.
        initializer_range: standard deviation of the truncated normal
            initializer of every weight matrix.

    Example:

    >>> config = BertConfig.preset("tiny", vocab_size=1000)
    >>> config.num_layers, config.hidden_size, config.vocab_size
    (2, 128, 1000)
    >>> BertConfig.from_dict(config.to_dict()) == config
    True

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
        - [Turc et al., 2019. Well-Read Students Learn Better: On the
          Importance of Pre-training Compact Models](
          https://arxiv.org/abs/1908.08962) (the tiny, mini and small sizes)
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_activation: str = "gelu"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02

    def __post_init__(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"BertConfig.{name} must be a positive integer. "
                    f"Received: {value!r}."
                )
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible "
                f"by num_heads ({self.num_heads}): each head gets hidden_size "
                "// num_heads features. Change one of the two."
            )
        for name in ("hidden_dropout", "attention_dropout"):
            value = getattr(self, name)
            if not _is_number(value) or not 0.0 <= value < 1.0:
                raise ValueError(
                    f"BertConfig.{name} must be a rate in [0, 1). "
                    f"Received: {value!r}."
                )
        for name in ("layer_norm_epsilon", "initializer_range"):
            value = getattr(self, name)
            if not _is_number(value) or value <= 0:
                raise ValueError(
                    f"BertConfig.{name} must be a positive number. "
                    f"Received: {value!r}."
                )
        # Raises, with the known names, if the activation is unknown.
        get_activation(self.hidden_activation)

    @property
    def head_size(self):
        """Features per attention head: `hidden_size // num_heads`."""
        return self.hidden_size // self.num_heads

    @classmethod
    def preset_names(cls):
        """The names `preset` accepts, smallest first."""
        return list(BERT_PRESETS)

    @classmethod
    def preset(cls, name, **overrides):
        """The config of a released BERT size, with `overrides` applied.

        Args:
            name: a key of `BERT_PRESETS`: "tiny", "mini", "small", "base"
                or "large".
            **overrides: fields to change, such as `vocab_size=8000`.
        """
        return cls.from_dict(preset_arguments(BERT_PRESETS, name, "BERT", overrides))

    def to_dict(self):
        """The fields as a plain (JSON-ready) dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, fields):
        """The config with the given fields; absent ones keep their defaults.

        Raises:
            ValueError: on a key that is not a field (listing the fields).
        """
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(fields) - set(known))
        if unknown:
            raise ValueError(
                f"Unknown BertConfig keys: {', '.join(unknown)}. The known "
                f"keys are: {', '.join(known)}. (For a Hugging Face "
                "config.json use BertConfig.from_huggingface_dict.)"
            )
        return cls(**fields)

    def to_json(self, path):
        """Writes the fields to the JSON file `path`."""
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.to_dict(), file, indent=2, sort_keys=True)
            file.write("\n")

    @classmethod
    def from_json(cls, path):
        """Reads a config written by `to_json`."""
        with open(path, encoding="utf-8") as file:
            fields = json.load(file)
        if not isinstance(fields, dict):
            raise ValueError(
                f"{path} must hold a JSON object of BertConfig fields. "
                f"It holds a {type(fields).__name__}."
            )
        return cls.from_dict(fields)

    @classmethod
    def from_huggingface_dict(cls, huggingface_config):
        """The config of a Hugging Face BERT `config.json` (as a dict).

        Reads `vocab_size`, `hidden_size`, `num_hidden_layers`,
        `num_attention_heads`, `intermediate_size`, `max_position_embeddings`,
        `type_vocab_size`, `hidden_act`, `hidden_dropout_prob`,
        `attention_probs_dropout_prob`, `layer_norm_eps` and
        `initializer_range`; an absent key takes the default (Hugging Face's
        defaults are the same). Other keys (`architectures`, `pad_token_id`,
        ...) are ignored.

        Raises:
            ValueError: if `hidden_act` is not "gelu" (exact), "gelu_new" or
                "gelu_pytorch_tanh" (both the tanh form), if
                `position_embedding_type` is not "absolute", or if
                `model_type` is not "bert".
        """
        model_type = huggingface_config.get("model_type", "bert")
        if model_type != "bert":
            raise ValueError(
                f"The Hugging Face config has model_type={model_type!r}; "
                "BertConfig.from_huggingface_dict reads BERT configs "
                "(model_type 'bert') only."
            )
        position_type = huggingface_config.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ValueError(
                f"The Hugging Face config has position_embedding_type="
                f"{position_type!r}; BertEncoder has learned absolute "
                "position embeddings only ('absolute')."
            )
        fields = {
            field: huggingface_config[key]
            for key, field in _HUGGINGFACE_KEYS.items()
            if key in huggingface_config
        }
        if "hidden_activation" in fields:
            activation = fields["hidden_activation"]
            if activation not in _HUGGINGFACE_ACTIVATIONS:
                raise ValueError(
                    f"Unsupported Hugging Face hidden_act {activation!r}. "
                    "Supported: 'gelu' (exact, erf), 'gelu_new' and "
                    "'gelu_pytorch_tanh' (tanh approximation)."
                )
            fields["hidden_activation"] = _HUGGINGFACE_ACTIVATIONS[activation]
        return cls.from_dict(fields)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)

import dataclasses
import json

import pytest

from tfnlp.models import BertConfig

PRESET_SIZES = {
    "tiny": (2, 128, 2, 512),
    "mini": (4, 256, 4, 1024),
    "small": (4, 512, 8, 2048),
    "base": (12, 768, 12, 3072),
    "large": (24, 1024, 16, 4096),
}


@pytest.mark.parametrize("name", sorted(PRESET_SIZES))
def test_presets_have_the_google_bert_sizes(name):
    config = BertConfig.preset(name)
    sizes = (config.num_layers, config.hidden_size, config.num_heads,
             config.intermediate_size)
    assert sizes == PRESET_SIZES[name]
    assert config.vocab_size == 30522
    assert config.max_position_embeddings == 512
    assert config.type_vocab_size == 2
    assert config.hidden_activation == "gelu"
    assert config.hidden_dropout == config.attention_dropout == 0.1
    assert config.layer_norm_epsilon == 1e-12
    assert config.initializer_range == 0.02


def test_default_config_is_base_and_presets_are_listed_smallest_first():
    assert BertConfig() == BertConfig.preset("base")
    assert BertConfig.preset_names() == ["tiny", "mini", "small", "base", "large"]


def test_preset_overrides_apply_and_are_validated():
    config = BertConfig.preset("mini", vocab_size=8000, hidden_dropout=0.0)
    assert (config.vocab_size, config.hidden_dropout, config.num_layers) == (8000, 0.0, 4)
    with pytest.raises(ValueError, match="Unknown BertConfig keys: hidden_dim"):
        BertConfig.preset("mini", hidden_dim=64)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="tiny, mini, small, base, large"):
        BertConfig.preset("medium")


def test_dict_and_json_round_trip(tmp_path):
    config = BertConfig.preset("tiny", vocab_size=99, hidden_activation="gelu_approximate")
    assert BertConfig.from_dict(config.to_dict()) == config
    path = tmp_path / "bert_config.json"
    config.to_json(path)
    assert json.loads(path.read_text())["vocab_size"] == 99
    assert BertConfig.from_json(path) == config


def test_unknown_json_keys_are_rejected_with_the_known_keys(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"hidden_size": 128, "num_heads": 2, "hidden_layers": 3}))
    with pytest.raises(ValueError, match="hidden_layers.*known keys are: vocab_size"):
        BertConfig.from_json(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        BertConfig.from_json(path)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"hidden_size": 100, "num_heads": 3}, "divisible by num_heads"),
        ({"num_layers": 0}, "num_layers must be a positive integer"),
        ({"vocab_size": 12.5}, "vocab_size must be a positive integer"),
        ({"num_heads": True}, "num_heads must be a positive integer"),
        ({"hidden_dropout": 1.0}, r"hidden_dropout must be a rate in \[0, 1\)"),
        ({"attention_dropout": -0.1}, "attention_dropout must be a rate"),
        ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon must be a positive"),
        ({"initializer_range": "0.02"}, "initializer_range must be a positive"),
        ({"hidden_activation": "swishy"}, "Unknown activation 'swishy'"),
    ],
)
def test_invalid_values_are_rejected(fields, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**fields)


def test_config_is_frozen_and_replace_validates():
    config = BertConfig.preset("tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_layers = 3
    assert dataclasses.replace(config, num_layers=3).num_layers == 3
    with pytest.raises(ValueError, match="divisible"):
        dataclasses.replace(config, num_heads=3)
    assert config.head_size == 64


MINILM_CONFIG = {
    "_name_or_path": "nreimers/MiniLM-L6-H384-uncased",
    "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1,
    "gradient_checkpointing": False,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 384,
    "initializer_range": 0.02,
    "intermediate_size": 1536,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_hidden_layers": 6,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "transformers_version": "4.8.2",
    "type_vocab_size": 2,
    "use_cache": True,
    "vocab_size": 30522,
}


def test_from_huggingface_dict_maps_the_names():
    config = BertConfig.from_huggingface_dict(MINILM_CONFIG)
    assert config == BertConfig(
        vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
        intermediate_size=1536, hidden_activation="gelu",
    )
    changed = dict(
        MINILM_CONFIG, hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.3,
        layer_norm_eps=1e-6, initializer_range=0.05, type_vocab_size=3,
        max_position_embeddings=128,
    )
    config = BertConfig.from_huggingface_dict(changed)
    assert (config.hidden_dropout, config.attention_dropout) == (0.2, 0.3)
    assert (config.layer_norm_epsilon, config.initializer_range) == (1e-6, 0.05)
    assert (config.type_vocab_size, config.max_position_embeddings) == (3, 128)


@pytest.mark.parametrize(
    "hidden_act, expected",
    [("gelu", "gelu"), ("gelu_new", "gelu_approximate"),
     ("gelu_pytorch_tanh", "gelu_approximate")],
)
def test_huggingface_activations(hidden_act, expected):
    config = BertConfig.from_huggingface_dict(dict(MINILM_CONFIG, hidden_act=hidden_act))
    assert config.hidden_activation == expected


@pytest.mark.parametrize(
    "change, message",
    [
        ({"hidden_act": "relu"}, "Unsupported Hugging Face hidden_act 'relu'"),
        ({"hidden_act": "silu"}, "'gelu_new' and 'gelu_pytorch_tanh'"),
        ({"position_embedding_type": "relative_key"}, "absolute"),
        ({"model_type": "roberta"}, "model_type='roberta'"),
        ({"num_attention_heads": 5}, "divisible by num_heads"),
    ],
)
def test_from_huggingface_dict_rejects_what_it_cannot_build(change, message):
    with pytest.raises(ValueError, match=message):
        BertConfig.from_huggingface_dict(dict(MINILM_CONFIG, **change))

"""Every model family's presets: `Model.presets` and `Model.from_preset`."""

import pytest

from tfnlp.models import (
    BertEncoder,
    BiLSTMClassifier,
    GPTBackbone,
    GPTCausalLM,
    RNNSeq2Seq,
    TransformerSeq2Seq,
)

# Each family's smallest preset, shrunk further where it has a vocabulary.
FAMILIES = [
    (BertEncoder, "tiny", dict(vocab_size=50, num_layers=1)),
    (TransformerSeq2Seq, "tiny", dict(vocabulary_size=50, num_encoder_layers=1)),
    (RNNSeq2Seq, "tiny", dict(vocabulary_size=50)),
    (GPTBackbone, "tiny", dict(vocabulary_size=50, num_layers=1)),
    (GPTCausalLM, "tiny", dict(vocabulary_size=50, num_layers=1)),
    (BiLSTMClassifier, "tiny", dict(vocabulary_size=50, num_classes=2)),
]


@pytest.mark.parametrize("model_class, name, overrides", FAMILIES,
                         ids=[family[0].__name__ for family in FAMILIES])
def test_from_preset_builds_the_preset_with_its_overrides(model_class, name, overrides):
    assert name in model_class.presets
    model = model_class.from_preset(name, **overrides)
    assert type(model) is model_class
    config = model.get_config()
    fields = config.get("config", config)  # BertEncoder keeps its BertConfig's fields.
    for key, value in {**model_class.presets[name], **overrides}.items():
        assert fields[key] == value, key


@pytest.mark.parametrize("model_class, name, overrides", FAMILIES,
                         ids=[family[0].__name__ for family in FAMILIES])
def test_an_unknown_preset_is_refused_with_the_preset_names(model_class, name, overrides):
    with pytest.raises(ValueError, match=f"no-such-preset.*{name}"):
        model_class.from_preset("no-such-preset", **overrides)

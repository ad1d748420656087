"""GPTSequenceClassifier: the last real token's state, whatever the padding,
and the shared model checks."""

import keras
import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tests.model_test_helpers import check_model
from tfnlp.models.gpt import GPTBackbone, GPTCausalLM, GPTSequenceClassifier

VOCABULARY = 30


def classifier(**overrides):
    keras.utils.set_random_seed(2)
    backbone = GPTBackbone.from_preset("tiny", vocabulary_size=VOCABULARY, num_heads=4,
                                       max_sequence_length=16, initializer_range=0.3)
    return GPTSequenceClassifier(backbone, **{"num_classes": 3, **overrides})


# Three sentences of 5, 3 and 7 tokens.
SENTENCES = [[4, 9, 2, 17, 5], [11, 3, 8], [6, 6, 21, 14, 2, 9, 13]]


def padded(length, pad_id=0):
    ids = np.full((len(SENTENCES), length), pad_id, "int32")
    mask = np.zeros((len(SENTENCES), length), bool)
    for row, sentence in enumerate(SENTENCES):
        ids[row, :len(sentence)] = sentence
        mask[row, :len(sentence)] = True
    return {"token_ids": ids, "padding_mask": mask}


def test_model_checks_config_keras_archive_and_checkpoint(tmp_path):
    check_model(classifier(dropout=0.1), padded(8), tmp_path, atol=1e-4)


def test_logits_come_from_the_last_real_token_alone():
    model = classifier()
    logits = to_numpy(model(padded(8)))
    kernel = to_numpy(model.score.kernel)
    for row, sentence in enumerate(SENTENCES):
        hidden_states = to_numpy(model.backbone(np.array([sentence])))
        np.testing.assert_allclose(logits[row], hidden_states[0, -1] @ kernel, atol=1e-5)
        # Any other position's state would give other logits.
        others = hidden_states[0, :-1] @ kernel
        assert np.abs(others - logits[row]).max(axis=-1).min() > 1e-2


def test_padding_changes_nothing():
    model = classifier()
    expected = to_numpy(model(padded(7)))
    for length, pad_id in ((8, 0), (12, 0), (12, 25)):
        np.testing.assert_allclose(to_numpy(model(padded(length, pad_id))), expected,
                                   atol=1e-5, rtol=0)
    # While the last real token does change them.
    inputs = padded(8)
    inputs["token_ids"][1, 2] = 19
    changed = to_numpy(model(inputs))
    assert np.abs(changed[1] - expected[1]).max() > 1e-2
    np.testing.assert_allclose(changed[[0, 2]], expected[[0, 2]], atol=1e-5, rtol=0)


def test_without_a_padding_mask_the_last_position_is_read():
    model = classifier()
    ids = np.array([SENTENCES[2]], "int32")
    mask = np.ones(ids.shape, bool)
    np.testing.assert_array_equal(to_numpy(model(ids)),
                                  to_numpy(model({"token_ids": ids, "padding_mask": mask})))


def test_a_language_model_s_backbone_is_fine_tuned_in_place():
    lm = GPTCausalLM.from_preset("tiny", vocabulary_size=VOCABULARY, num_layers=1)
    model = GPTSequenceClassifier(lm.backbone, num_classes=2)
    assert model.backbone is lm.backbone
    assert model.backbone.token_embedding.embeddings is lm.backbone.token_embedding.embeddings


@pytest.mark.parametrize("arguments, message", [
    (dict(backbone="gpt2", num_classes=2), "must be a tfnlp.models.GPTBackbone"),
    (dict(num_classes=0), "`num_classes` must be a positive integer"),
    (dict(num_classes=2, dropout=1.0), r"`dropout` must be a rate in \[0, 1\)"),
])
def test_invalid_arguments_are_explained(arguments, message):
    backbone = GPTBackbone.from_preset("tiny", num_layers=1)
    with pytest.raises(ValueError, match=message):
        GPTSequenceClassifier(**{"backbone": backbone, **arguments})
    with pytest.raises(ValueError, match="GPTSequenceClassifier has no presets"):
        GPTSequenceClassifier.from_preset("tiny")

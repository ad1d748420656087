"""Keras artefacts of every tfnlp model reload with safe mode on: their
`.keras` archives hold a JSON config and HDF5 weights, nothing pickled."""

import zipfile

import keras
import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tfnlp.models import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)

INPUTS = {
    "input_ids": np.array([[2, 7, 9, 4, 3, 0]], "int32"),
    "input_mask": np.array([[1, 1, 1, 1, 1, 0]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 1, 1, 0]], "int32"),
    "masked_lm_positions": np.array([[3, 0]], "int32"),
}
BUILDERS = {
    "encoder": lambda encoder: encoder,
    "pretraining": BertPretrainingModel,
    "classifier": lambda encoder: BertClassifier(encoder, num_classes=3),
    "token_classifier": lambda encoder: BertTokenClassifier(encoder, num_classes=2),
    "span": BertSpanExtractor,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_model_reloads_in_safe_mode_with_the_same_outputs(tmp_path, name):
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=20, num_layers=1))
    model = BUILDERS[name](encoder)
    inputs = INPUTS if name == "pretraining" else {
        key: value for key, value in INPUTS.items() if key != "masked_lm_positions"}
    path = tmp_path / f"{name}.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        assert "lambda" not in archive.read("config.json").decode().lower()
    reloaded = keras.saving.load_model(path, safe_mode=True)
    assert type(reloaded) is type(model)
    keras.tree.map_structure(
        lambda ours, theirs: np.testing.assert_allclose(to_numpy(theirs), to_numpy(ours),
                                                        atol=1e-6),
        model(inputs), reloaded(inputs),
    )

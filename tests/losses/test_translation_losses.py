import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tfnlp.losses import label_smoothed_cross_entropy


def reference(targets, logits, smoothing):
    """The smoothed target distribution written out: 1-ε+ε/V on the true
    token, ε/V elsewhere; its cross-entropy with softmax(logits)."""
    vocabulary = logits.shape[-1]
    log_probabilities = logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))
    smoothed = np.full(logits.shape, smoothing / vocabulary)
    np.put_along_axis(smoothed, targets[..., None],
                      1.0 - smoothing + smoothing / vocabulary, axis=-1)
    loss = -np.sum(smoothed * log_probabilities, -1)
    nll = -np.take_along_axis(log_probabilities, targets[..., None], -1)[..., 0]
    real = targets != 0
    return loss * real, nll * real


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_matches_the_smoothed_distribution_written_out(smoothing):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 11)).astype("float32") * 3
    targets = rng.integers(1, 11, size=(3, 5))
    targets[1, 3:] = 0
    targets[2, 1:] = 0
    loss, nll = label_smoothed_cross_entropy(targets, logits, smoothing)
    expected_loss, expected_nll = reference(targets, logits.astype("float64"), smoothing)
    np.testing.assert_allclose(to_numpy(loss), expected_loss, atol=2e-5)
    np.testing.assert_allclose(to_numpy(nll), expected_nll, atol=2e-5)
    assert (to_numpy(loss)[targets == 0] == 0).all()


@pytest.mark.parametrize("smoothing", [-1e-6, 1.0, 1.5])
def test_rejects_a_smoothing_outside_zero_to_one(smoothing):
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        label_smoothed_cross_entropy(np.ones((1, 1), "int32"), np.zeros((1, 1, 3)), smoothing)


def test_a_smoothing_just_below_one_is_accepted():
    """The upper edge of [0, 1): nearly all the mass spread, the loss near
    the mean of -log p over the vocabulary (log 3 for uniform logits)."""
    loss, _ = label_smoothed_cross_entropy(np.ones((1, 1), "int32"),
                                           np.zeros((1, 1, 3), "float32"), 0.999)
    np.testing.assert_allclose(to_numpy(loss), [[np.log(3)]], rtol=1e-6)

"""The learning-rate schedules of `trainer.optimization.create_optimizer`."""

import math

import keras
import pytest

from trainer.optimization import (
    COSINE_FINAL_FRACTION, OPTIMIZERS, WarmupPolynomialDecay, create_optimizer,
    learning_rate_schedule)


def rates(schedule, steps, learning_rate=1e-3, train_steps=1000, warmup_steps=100):
    optimizer = create_optimizer("adamw", learning_rate, train_steps, warmup_steps=warmup_steps,
                                 schedule=schedule)
    return [float(learning_rate_schedule(optimizer)(step)) for step in steps]


def test_cosine_warms_up_linearly_then_follows_the_cosine_to_a_tenth():
    warmup, train_steps, peak = 100, 1000, 1e-3
    steps = [0, 50, 100, 325, 550, 775, 1000]
    expected = []
    for step in steps:
        if step < warmup:
            expected.append(peak * step / warmup)
        else:
            progress = (step - warmup) / (train_steps - warmup)
            cosine = 0.5 * (1 + math.cos(math.pi * progress))
            expected.append(peak * (COSINE_FINAL_FRACTION + (1 - COSINE_FINAL_FRACTION) * cosine))
    assert rates("cosine", steps) == pytest.approx(expected, rel=1e-5, abs=1e-12)


def test_cosine_stays_at_its_floor_after_the_last_step():
    assert rates("cosine", [1000, 1500]) == pytest.approx([1e-4, 1e-4], rel=1e-5)


def test_linear_reaches_zero_and_inverse_sqrt_keeps_decaying():
    assert rates("linear", [100, 1000]) == pytest.approx([1e-3, 0.0], abs=1e-9)
    inverse = rates("inverse_sqrt", [100, 400])
    assert inverse[1] == pytest.approx(inverse[0] / 2, rel=1e-5)



def test_no_warmup_starts_every_schedule_at_its_peak():
    # "0 for none": step 0 already trains at the full rate.
    assert rates("linear", [0, 500], warmup_steps=0) == pytest.approx([1e-3, 5e-4], rel=1e-5)
    assert rates("cosine", [0], warmup_steps=0) == pytest.approx([1e-3], rel=1e-5)
    # inverse_sqrt needs a warmup of at least 1 step: 0 is taken as 1.
    assert rates("inverse_sqrt", [0, 1, 4], warmup_steps=0) == pytest.approx(
        [0.0, 1e-3, 5e-4], rel=1e-5, abs=1e-12)


def test_a_warmup_as_long_as_training_peaks_at_the_last_step():
    assert rates("linear", [500, 1000], warmup_steps=1000) == pytest.approx(
        [5e-4, 1e-3], rel=1e-5)
    with pytest.raises(ValueError, match="warmup_steps <= decay_steps"):
        rates("linear", [0], warmup_steps=1001)


def test_the_polynomial_decay_combines_its_power_and_end_rate():
    schedule = WarmupPolynomialDecay(1e-3, decay_steps=110, warmup_steps=10,
                                     end_learning_rate=1e-4, power=2.0)
    # Halfway through the decay: (peak - end) * (1/2) ** 2 + end.
    expected = [0.5e-3, 1e-3, 0.9e-3 * 0.25 + 1e-4, 1e-4, 1e-4]
    assert [float(schedule(step)) for step in (5, 10, 60, 110, 200)] == pytest.approx(
        expected, rel=1e-5)

def test_an_unknown_schedule_names_the_choices():
    with pytest.raises(ValueError, match="linear, inverse_sqrt, cosine"):
        rates("constant", [0])


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_no_weight_decay_is_accepted_by_every_optimizer(name):
    optimizer = create_optimizer(name, 1e-3, train_steps=10, weight_decay=0.0)
    variable = keras.Variable([1.0, 2.0])
    optimizer.apply([keras.ops.convert_to_tensor([0.5, 0.5])], [variable])
    assert optimizer.iterations.numpy() == 1


def test_muon_orthogonalizes_the_update_of_a_matrix_and_moves_every_weight():
    """Muon turns a 2-D kernel's momentum into about an orthogonal matrix
    (Newton-Schulz): its singular values come out near one another, closer
    than AdamW's. Other weights take AdamW."""
    import numpy as np

    rng = np.random.default_rng(0)
    # A gradient of singular values 1 ... 100.
    left, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    right, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    gradient = (left[:, :8] * np.geomspace(1, 100, 8)) @ right.T
    spreads = {}
    for name in ("muon", "adamw"):
        optimizer = create_optimizer(name, 0.01, train_steps=10, weight_decay=0.0)
        kernel, bias = keras.Variable(np.zeros((16, 8), "float32")), keras.Variable([1.0, 2.0])
        optimizer.apply([keras.ops.convert_to_tensor(gradient, "float32"),
                         keras.ops.convert_to_tensor([0.5, 0.5])], [kernel, bias])
        singular_values = np.linalg.svd(np.asarray(kernel), compute_uv=False)
        spreads[name] = singular_values.max() / singular_values.min()
        assert np.all(np.asarray(bias) < [1.0, 2.0])
    # Measured: Muon 1.6, AdamW 4.2 (its first step is about the sign of
    # the gradient), the gradient 100.
    assert spreads["muon"] < 2.0 and spreads["adamw"] > 2 * spreads["muon"]


@pytest.mark.parametrize("shape, matrix", [((16, 2, 4), (16, 8)), ((2, 4, 16), (8, 16))])
def test_muon_orthogonalizes_attention_kernels_as_the_matrices_they_stand_for(shape, matrix):
    """A query kernel `(hidden, heads, head_size)` is the matrix
    `(hidden, heads * head_size)` and an output kernel `(heads, head_size,
    hidden)` the matrix `(heads * head_size, hidden)`: Muon orthogonalizes
    that matrix, not AdamW's elementwise step (Keras' Muon alone gives
    non-2-D variables AdamW) nor a batch of per-head matrices."""
    import numpy as np

    from trainer.optimization import matrix_shape

    assert matrix_shape(shape) == matrix
    rng = np.random.default_rng(0)
    small, large = sorted(matrix)
    left, _ = np.linalg.qr(rng.normal(size=(large, large)))
    right, _ = np.linalg.qr(rng.normal(size=(small, small)))
    gradient = (left[:, :small] * np.geomspace(1, 100, small)) @ right.T
    if matrix[0] < matrix[1]:
        gradient = gradient.T
    optimizer = create_optimizer("muon", 0.01, train_steps=10, weight_decay=0.0)
    kernel = keras.Variable(np.zeros(shape, "float32"), name="kernel")
    # The attention's per-head bias is 2-D too, and takes AdamW: its first
    # step is the rate times the gradient's sign.
    bias = keras.Variable(np.zeros(shape[1:], "float32"), name="bias")
    optimizer.apply([keras.ops.convert_to_tensor(gradient.reshape(shape), "float32"),
                     keras.ops.convert_to_tensor(gradient.reshape(shape)[0], "float32")],
                    [kernel, bias])
    singular_values = np.linalg.svd(np.asarray(kernel).reshape(matrix), compute_uv=False)
    # Measured: 1.6 (AdamW's elementwise step gives 4.2, as above).
    assert singular_values.max() / singular_values.min() < 2.0
    np.testing.assert_allclose(np.abs(np.asarray(bias)), 0.01, rtol=1e-3)

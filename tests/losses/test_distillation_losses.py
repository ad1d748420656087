"""The distillation losses against NumPy written out: temperature on both
sides, the direction of the KL divergence, the T² factor, the label mixing
and the gradient identity; the Keras losses' targets and config."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.layer_test_helpers import to_numpy
from tfnlp.losses import (
    LABEL,
    TEACHER_LOGITS,
    DistillationLoss,
    LogitMeanSquaredError,
    distillation_loss,
    logit_mean_squared_error,
    soft_target_loss,
)

NUM_CLASSES = 5


def logits(seed, scale=3.0):
    return (np.random.default_rng(seed).normal(size=(4, NUM_CLASSES)) * scale).astype("float32")


TEACHER, STUDENT = logits(0), logits(1)
LABELS = np.array([0, 3, 1, 4])


def log_softmax(values):
    values = values.astype("float64")
    shifted = values - values.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def kl_divergence(p_logits, q_logits):
    """KL(softmax(p_logits) || softmax(q_logits)) of each row."""
    log_p, log_q = log_softmax(p_logits), log_softmax(q_logits)
    return (np.exp(log_p) * (log_p - log_q)).sum(-1)


def reference_soft(teacher, student, temperature):
    """Hinton et al.: T² · KL(softmax(t / T) || softmax(s / T))."""
    return temperature ** 2 * kl_divergence(teacher / temperature, student / temperature)


def cross_entropy(labels, student):
    return -np.take_along_axis(log_softmax(student), labels[:, None], -1)[:, 0]


@pytest.mark.parametrize("temperature", [2.0, 4.0])
def test_soft_target_loss_matches_numpy_at_a_temperature(temperature):
    expected = reference_soft(TEACHER, STUDENT, temperature)
    for loss in (soft_target_loss(TEACHER, STUDENT, temperature),
                 distillation_loss(TEACHER, STUDENT, temperature=temperature)):
        np.testing.assert_allclose(to_numpy(loss), expected, rtol=1e-5)
    # Each broken version gives a value these inputs tell apart.
    broken = {
        "no temperature": kl_divergence(TEACHER, STUDENT) * temperature ** 2,
        "temperature on the teacher only": temperature ** 2 * kl_divergence(
            TEACHER / temperature, STUDENT),
        "temperature on the student only": temperature ** 2 * kl_divergence(
            TEACHER, STUDENT / temperature),
        "KL(student || teacher)": temperature ** 2 * kl_divergence(
            STUDENT / temperature, TEACHER / temperature),
        "no T² factor": kl_divergence(TEACHER / temperature, STUDENT / temperature),
        "divided by T instead of T²": temperature * kl_divergence(
            TEACHER / temperature, STUDENT / temperature),
    }
    for name, value in broken.items():
        assert np.abs(value - expected).max() > 0.05 * np.abs(expected).max(), name


def test_the_kl_divergence_runs_from_the_teacher_to_the_student():
    """Pinned on one hand-checked row: teacher (0.5, 0.5), student
    softmax((0, log 3)) = (0.25, 0.75); at T = 1 the loss is
    KL(teacher || student) = 0.5 log 2 + 0.5 log(2 / 3), not the reverse
    0.25 log 0.5 + 0.75 log 1.5."""
    teacher = np.zeros((1, 2), "float32")
    student = np.array([[0.0, np.log(3.0)]], "float32")
    forward = 0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75)
    reverse = 0.25 * np.log(0.25 / 0.5) + 0.75 * np.log(0.75 / 0.5)
    assert abs(forward - reverse) > 0.01
    np.testing.assert_allclose(to_numpy(soft_target_loss(teacher, student)), [forward],
                               rtol=1e-5)


def test_a_student_that_matches_the_teacher_has_zero_loss():
    for temperature in (1.0, 3.0):
        np.testing.assert_allclose(to_numpy(soft_target_loss(TEACHER, TEACHER, temperature)),
                                   0.0, atol=1e-6)
    # Logits shifted by a constant give the same distributions.
    np.testing.assert_allclose(to_numpy(soft_target_loss(TEACHER, TEACHER + 7.0, 2.0)), 0.0,
                               atol=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_alpha_weighs_the_soft_term_against_the_label_cross_entropy(alpha):
    soft = reference_soft(TEACHER, STUDENT, 2.0)
    hard = cross_entropy(LABELS, STUDENT)
    expected = alpha * soft + (1 - alpha) * hard
    loss = distillation_loss(TEACHER, STUDENT, LABELS, temperature=2.0, alpha=alpha)
    np.testing.assert_allclose(to_numpy(loss), expected, rtol=1e-5)
    # Labels as a column are read the same.
    np.testing.assert_allclose(to_numpy(distillation_loss(
        TEACHER, STUDENT, LABELS[:, None], temperature=2.0, alpha=alpha)), expected, rtol=1e-5)
    if alpha == 0.3:
        # alpha on the wrong term, or the label term at the temperature,
        # would give other values.
        assert np.abs((1 - alpha) * soft + alpha * hard - expected).max() > 0.05
        hot = cross_entropy(LABELS, STUDENT / 2.0)
        assert np.abs(alpha * soft + (1 - alpha) * hot - expected).max() > 0.05
    mse = logit_mean_squared_error(TEACHER, STUDENT, LABELS, alpha=alpha)
    expected_mse = alpha * ((STUDENT - TEACHER) ** 2).mean(-1) + (1 - alpha) * hard
    np.testing.assert_allclose(to_numpy(mse), expected_mse, rtol=1e-5)


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_gradient_is_temperature_times_the_difference_of_softened_probabilities(temperature):
    """d/ds T² KL(p_T || q_T) = T (q_T - p_T), checked by autodiff and by
    central differences of the NumPy reference."""

    def softmax(values):
        return np.exp(log_softmax(values))

    identity = temperature * (softmax(STUDENT / temperature) - softmax(TEACHER / temperature))
    student = tf.Variable(STUDENT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(soft_target_loss(TEACHER, student, temperature))
    np.testing.assert_allclose(tape.gradient(loss, student).numpy(), identity, atol=1e-5)

    step = 1e-5
    numerical = np.zeros_like(identity)
    student64 = STUDENT.astype("float64")
    for index in np.ndindex(*student64.shape):
        plus, minus = student64.copy(), student64.copy()
        plus[index] += step
        minus[index] -= step
        numerical[index] = (reference_soft(TEACHER, plus, temperature)[index[0]]
                            - reference_soft(TEACHER, minus, temperature)[index[0]]) / (2 * step)
    np.testing.assert_allclose(numerical, identity, atol=1e-6)
    if temperature != 1.0:
        # Without the T² factor the gradient would be T times smaller.
        assert np.abs(identity / temperature ** 2 - identity).max() > 1e-3


def test_logit_mean_squared_error_and_its_gradient():
    expected = ((STUDENT.astype("float64") - TEACHER) ** 2).mean(-1)
    np.testing.assert_allclose(to_numpy(logit_mean_squared_error(TEACHER, STUDENT)), expected,
                               rtol=1e-5)
    student = tf.Variable(STUDENT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(logit_mean_squared_error(TEACHER, student))
    np.testing.assert_allclose(tape.gradient(loss, student).numpy(),
                               2 * (STUDENT - TEACHER) / NUM_CLASSES, rtol=1e-5)


@pytest.mark.parametrize("loss, function", [
    (DistillationLoss(temperature=3.0, alpha=0.4),
     lambda labels: distillation_loss(TEACHER, STUDENT, labels, 3.0, 0.4)),
    (LogitMeanSquaredError(alpha=0.4),
     lambda labels: logit_mean_squared_error(TEACHER, STUDENT, labels, 0.4)),
])
def test_keras_losses_take_a_dict_of_targets_and_reduce_the_functions(loss, function):
    per_example = to_numpy(function(LABELS))
    targets = {TEACHER_LOGITS: TEACHER, LABEL: LABELS}
    np.testing.assert_allclose(float(loss(targets, STUDENT)), per_example.mean(), rtol=1e-5)
    weights = np.array([1.0, 0.0, 2.0, 0.5], "float32")
    np.testing.assert_allclose(float(loss(targets, STUDENT, sample_weight=weights)),
                               (per_example * weights).mean(), rtol=1e-5)
    # The config round trip, and the registry revives the class.
    config = loss.get_config()
    assert type(loss).from_config(config).get_config() == config
    revived = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(revived) is type(loss) and revived.get_config() == config
    np.testing.assert_allclose(float(revived(targets, STUDENT)), per_example.mean(), rtol=1e-5)
    # Below alpha = 1 the labels are needed.
    with pytest.raises(ValueError, match=r"alpha=0.4 mixes in the cross-entropy with the "
                                         r"gold labels, but no labels were given"):
        loss({TEACHER_LOGITS: TEACHER}, STUDENT)
    with pytest.raises(ValueError, match=r"the targets dict has no \"teacher_logits\"; it "
                                         r"has \['label', 'logits'\]"):
        loss({"logits": TEACHER, LABEL: LABELS}, STUDENT)


def test_keras_losses_take_the_teacher_logits_alone():
    for loss, function in ((DistillationLoss(temperature=2.0), soft_target_loss),
                           (LogitMeanSquaredError(), logit_mean_squared_error)):
        expected = to_numpy(function(TEACHER, STUDENT, **(
            {"temperature": 2.0} if function is soft_target_loss else {}))).mean()
        np.testing.assert_allclose(float(loss(TEACHER, STUDENT)), expected, rtol=1e-5)
        np.testing.assert_allclose(float(loss({TEACHER_LOGITS: TEACHER}, STUDENT)), expected,
                                   rtol=1e-5)


def test_a_dense_student_learns_the_teacher_with_fit():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(64, 4)).astype("float32")
    teacher_logits = features @ rng.normal(size=(4, 3)).astype("float32")
    keras.utils.set_random_seed(0)
    student = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    student.compile(optimizer=keras.optimizers.Adam(0.1), loss=DistillationLoss(temperature=2.0))
    history = student.fit(features, teacher_logits, batch_size=16, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.05 * history.history["loss"][0]


@pytest.mark.parametrize("arguments, message", [
    (dict(temperature=0.0), "`temperature` must be a positive number"),
    (dict(temperature=-2.0), "`temperature` must be a positive number"),
    (dict(alpha=1.5), r"`alpha`, the weight of the teacher's term .* must be in \[0, 1\]"),
    (dict(alpha=-0.1), r"must be in \[0, 1\]"),
])
def test_invalid_arguments_are_explained(arguments, message):
    with pytest.raises(ValueError, match=message):
        DistillationLoss(**arguments)
    with pytest.raises(ValueError, match=message):
        distillation_loss(TEACHER, STUDENT, LABELS, **arguments)

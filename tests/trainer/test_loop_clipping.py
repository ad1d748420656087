"""`--clip_norm` on the shared loop, with gradient accumulation and loss
scaling: the summed, unscaled gradient of the global batch is what is
clipped (`trainer.training_loop.TrainingLoop`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.trainer.helpers import LineTask, kernel
from trainer.training_loop import TrainingLoop

# LineTask's gradient at its initial weight 0 over x = linspace(-1, 1, 8):
# d/dw mean((w x - 3 x)^2) = -6 mean(x^2) = -18/7, and each half of the
# batch (a micro-batch of 2 accumulation steps) gives -9/7.
GRADIENT = -18 / 7


def one_step(clip_norm, accumulation_steps=1, loss_scaling=False):
    """The weight and the reported gradient norm after one step of SGD at a
    learning rate of 1."""
    keras.utils.set_random_seed(0)
    task = LineTask()
    optimizer = keras.optimizers.SGD(learning_rate=1.0)
    if loss_scaling:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=2.0**15)
    optimizer.build(task.model.trainable_variables)
    strategy = tf.distribute.get_strategy()
    loop = TrainingLoop(strategy, task, optimizer, gradient_accumulation_steps=accumulation_steps,
                        clip_norm=clip_norm)
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(-1, 1)
    dataset = tf.data.Dataset.from_tensors({"x": x, "y": 3 * x}).repeat()
    sums = loop.train_step(iter(strategy.experimental_distribute_dataset(dataset)))
    return kernel(task.model), sums["gradient_norm"]


@pytest.mark.parametrize("accumulation_steps", [1, 2])
@pytest.mark.parametrize("loss_scaling", [False, True], ids=["float32", "loss_scaling"])
def test_the_summed_unscaled_gradient_is_clipped(accumulation_steps, loss_scaling):
    # Clipped to a norm of 1: each micro-batch's gradient (9/7) is over it
    # too, so clipping those would step 2; clipping the scaled gradient
    # without the scale would step about 3e-5.
    weight, norm = one_step(1.0, accumulation_steps, loss_scaling)
    assert weight == pytest.approx(1.0, rel=1e-4)
    assert norm == pytest.approx(-GRADIENT, rel=1e-4)


def test_a_clip_norm_of_zero_or_none_does_not_clip():
    for clip_norm in (0, 0.0, None):
        weight, norm = one_step(clip_norm, accumulation_steps=2, loss_scaling=True)
        assert weight == pytest.approx(-GRADIENT, rel=1e-4)
        assert norm == pytest.approx(-GRADIENT, rel=1e-4)
    # Just above the gradient's norm, clipping leaves it as it is.
    assert one_step(-GRADIENT + 0.01)[0] == pytest.approx(-GRADIENT, rel=1e-4)

"""`trainer.finetune.AveragedWeights`: the weights' moving average is what
evaluations see and what the model keeps when training ends."""

import keras
import numpy as np
import pytest

from trainer import optimization
from trainer.finetune import AveragedWeights, StopAtStep


def fit_a_line(callbacks, epochs, steps_per_epoch, ema_momentum=0.99):
    """Fits y = 3x with a one-weight model from 0, at a high learning rate:
    the raw weight races towards 3, its average at momentum 0.99 lags far
    behind. Returns the model and the raw weight after the last step."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((1,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    model.compile(optimizer=optimization.create_optimizer(
        "adamw", learning_rate=0.1, train_steps=1000, weight_decay=0.0,
        ema_momentum=ema_momentum), loss="mse")
    raw = []

    class RecordRawWeight(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            raw.append(float(self.model.layers[0].kernel.numpy()[0, 0]))

    x = np.linspace(-1, 1, 64).reshape(-1, 1).astype("float32")
    model.fit(x, 3 * x, batch_size=8, epochs=epochs, steps_per_epoch=steps_per_epoch,
              validation_data=(x, 3 * x), callbacks=[RecordRawWeight(), *callbacks], verbose=0)
    return model, raw[-1]


def kernel(model):
    return float(model.layers[0].kernel.numpy()[0, 0])


@pytest.mark.parametrize("stop", ["after_the_last_epoch", "before_the_last_epoch"])
def test_training_ends_with_the_averaged_weights(stop):
    if stop == "after_the_last_epoch":
        model, raw = fit_a_line([AveragedWeights()], epochs=3, steps_per_epoch=8)
    else:  # --train_steps / --stop_time_hours end fit during its second epoch
        model, raw = fit_a_line([AveragedWeights(), StopAtStep(12)], epochs=3, steps_per_epoch=8)
    average = kernel(model)
    assert raw > 0.5 and 0.0 < average < raw / 2


def test_evaluations_during_training_see_the_averaged_weights():
    losses = []

    class RecordValidation(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            losses.append(logs["val_loss"])

    model, raw = fit_a_line([AveragedWeights(), RecordValidation()], epochs=1, steps_per_epoch=8)
    # The validation loss of the averaged weight w on y = 3x, x uniform in
    # [-1, 1], is about (3 - w)^2 / 3; the raw weight's would be far lower.
    x = np.linspace(-1, 1, 64)
    assert losses[0] == pytest.approx(np.mean(((3 - kernel(model)) * x) ** 2), rel=1e-4)


def test_without_a_momentum_the_optimizer_keeps_no_average():
    model, raw = fit_a_line([], epochs=1, steps_per_epoch=8, ema_momentum=0.0)
    assert not model.optimizer.use_ema
    assert kernel(model) == raw

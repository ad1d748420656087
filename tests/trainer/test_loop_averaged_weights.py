"""`--ema_momentum` on the shared loop: the evaluations see the moving
average of the weights, training goes on from the trained weights, and the
model ends training with the average (`trainer.optimization`)."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.trainer.helpers import LineTask, kernel
from trainer import optimization
from trainer.summaries import RunLogs
from trainer.training_loop import LoopSchedule, TrainingLoop, train

MOMENTUM = 0.8


def train_a_line(tmp_path, ema_momentum):
    """Trains 6 steps, evaluating every 2; returns the weight after each
    step, the weight each evaluation saw, the model and the optimizer."""
    keras.utils.set_random_seed(0)
    task = LineTask()
    optimizer = optimization.create_optimizer(
        "adamw", learning_rate=0.1, train_steps=1000, weight_decay=0.0,
        ema_momentum=ema_momentum)
    optimizer.build(task.model.trainable_variables)
    loop = TrainingLoop(tf.distribute.get_strategy(), task, optimizer)
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(-1, 1)
    dataset = tf.data.Dataset.from_tensors({"x": x, "y": 3 * x}).repeat()
    iterator = iter(tf.distribute.get_strategy().experimental_distribute_dataset(dataset))
    trained, seen = [], []
    checkpoints = types.SimpleNamespace(
        step=types.SimpleNamespace(assign=lambda step: trained.append(kernel(task.model))),
        save=lambda step: None)

    def evaluator():
        seen.append(kernel(task.model))
        return {"weight": seen[-1]}

    logs = RunLogs(str(tmp_path))
    try:
        train(loop, iterator, checkpoints, logs,
              LoopSchedule(train_steps=6, log_every_steps=2, eval_every_steps=2),
              learning_rate=lambda step: 0.1, evaluator=evaluator)
    finally:
        logs.close()
    return trained, seen, task.model, optimizer


def moving_averages(weights, momentum):
    """Keras' `use_ema`: the first step's weight, then
    `momentum * average + (1 - momentum) * weight` after each step."""
    averages = [weights[0]]
    for weight in weights[1:]:
        averages.append(momentum * averages[-1] + (1 - momentum) * weight)
    return averages


def test_evaluations_see_the_moving_average_and_training_goes_on(tmp_path):
    trained, seen, model, optimizer = train_a_line(tmp_path, MOMENTUM)
    averages = moving_averages(trained, MOMENTUM)
    assert seen == pytest.approx([averages[1], averages[3], averages[5]], rel=1e-5)
    # The average lags behind the weight racing towards 3.
    assert all(average < weight - 0.01 for average, weight in zip(seen, trained[1::2]))
    # Each step after an evaluation went on from the trained weight.
    assert kernel(model) == pytest.approx(trained[-1])
    optimization.keep_averaged_weights(optimizer)
    assert kernel(model) == pytest.approx(averages[-1], rel=1e-5)


def test_without_a_momentum_the_evaluations_see_the_trained_weights(tmp_path):
    trained, seen, model, optimizer = train_a_line(tmp_path, 0.0)
    assert seen == pytest.approx(trained[1::2])
    optimization.keep_averaged_weights(optimizer)
    assert kernel(model) == pytest.approx(trained[-1])

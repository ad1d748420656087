"""The optimizers (AdamW, LAMB or Muon) and their learning-rate schedules.

The optimizers are Keras' own (`keras.optimizers.AdamW`, `keras.optimizers.Lamb`,
and `keras.optimizers.Muon` taught the attention's 3-D kernels), with weight
decay left off the LayerNorm and bias variables as in BERT. The
schedule is BERT's: a linear warmup to the peak rate, then a linear decay to
zero at the last step (`WarmupPolynomialDecay`; Keras has the decay,
`keras.optimizers.schedules.PolynomialDecay`, but no linear warmup in front
of it). Translation uses the Transformer's schedule instead: a linear
warmup, then a decay with the inverse square root of the step
(`InverseSquareRootDecay`, "Noam").

Gradient clipping and gradient accumulation are done by the training loop
(`trainer.training_loop`), not by the optimizer's `global_clipnorm` and
`gradient_accumulation_steps`: under a `tf.distribute` strategy Keras clips
each replica's share of the gradient before summing the shares, which is not
clipping the gradient, and its accumulation keeps per-replica state that
`strategy.run` does not combine.
"""

import contextlib
import math
import re

import keras

OPTIMIZERS = ("adamw", "lamb", "muon")
# The --learning_rate_schedule choices.
SCHEDULES = ("linear", "inverse_sqrt", "cosine")
# The cosine schedule ends at this fraction of the peak rate (nanoGPT's
# min_lr = learning_rate / 10).
COSINE_FINAL_FRACTION = 0.1

# Substrings of variable paths that get no weight decay: LayerNorm scales and
# offsets (named layer_norm/LayerNorm, or Keras' gamma/beta) and biases.
NO_DECAY_NAMES = ("layer_norm", "LayerNorm", "gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="tfnlp")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warmup to `peak_learning_rate`, then a polynomial decay.

    For `step < warmup_steps` the rate is `peak * step / warmup_steps`; after
    it, `peak * (1 - (step - warmup_steps) / (decay_steps - warmup_steps)) **
    power` down to `end_learning_rate`, reached at `decay_steps` and kept
    after. With `power=1` and `end_learning_rate=0` this is BERT's linear
    warmup and linear decay to zero at the last step.

    Args:
        peak_learning_rate: the rate at the end of the warmup.
        decay_steps: the step at which `end_learning_rate` is reached (the
            number of training steps).
        warmup_steps: the length of the warmup; 0 for none.
        end_learning_rate: the final rate.
        power: the power of the polynomial decay (1: linear).

    Example:

    >>> schedule = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    >>> [round(float(schedule(step)), 6) for step in (0, 5, 10, 55, 100, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    """

    def __init__(
        self,
        peak_learning_rate,
        decay_steps,
        warmup_steps=0,
        end_learning_rate=0.0,
        power=1.0,
    ):
        if decay_steps < 1 or not 0 <= warmup_steps <= decay_steps:
            raise ValueError(
                "WarmupPolynomialDecay needs decay_steps >= 1 and 0 <= "
                f"warmup_steps <= decay_steps. Received: decay_steps="
                f"{decay_steps}, warmup_steps={warmup_steps}."
            )
        self.peak_learning_rate = peak_learning_rate
        self.decay_steps = decay_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate
        self.power = power

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        peak = keras.ops.cast(self.peak_learning_rate, "float32")
        warmup = float(self.warmup_steps)
        warmup_rate = peak * step / max(warmup, 1.0)
        decay_length = max(float(self.decay_steps) - warmup, 1.0)
        remaining = 1.0 - keras.ops.clip((step - warmup) / decay_length, 0.0, 1.0)
        decay_rate = (peak - self.end_learning_rate) * remaining**self.power + (
            self.end_learning_rate
        )
        return keras.ops.where(step < warmup, warmup_rate, decay_rate)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }


@keras.saving.register_keras_serializable(package="tfnlp")
class InverseSquareRootDecay(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warmup to `peak_learning_rate`, then `1/sqrt(step)` decay.

    The rate is `peak * min(step / warmup_steps, sqrt(warmup_steps / step))`:
    the Transformer's schedule ("Noam", Vaswani et al., 2017, section 5.3),
    whose `d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)` is this with
    `peak = (d_model * warmup_steps)^-0.5`, and fairseq's
    `inverse_sqrt`. The peak is given directly, as fairseq does, because it
    is the number users tune.

    Args:
        peak_learning_rate: the rate at the end of the warmup.
        warmup_steps: the length of the warmup (at least 1).

    Example:

    >>> schedule = InverseSquareRootDecay(1e-3, warmup_steps=100)
    >>> [round(float(schedule(step)), 6) for step in (0, 50, 100, 400)]
    [0.0, 0.0005, 0.001, 0.0005]

    References:
        - [Vaswani et al., 2017. Attention Is All You Need, section 5.3](
          https://arxiv.org/abs/1706.03762)
    """

    def __init__(self, peak_learning_rate, warmup_steps):
        if warmup_steps < 1:
            raise ValueError(
                "InverseSquareRootDecay needs warmup_steps >= 1 (the decay "
                f"divides by it). Received: warmup_steps={warmup_steps}."
            )
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warmup = float(self.warmup_steps)
        factor = keras.ops.minimum(
            step / warmup, keras.ops.sqrt(warmup / keras.ops.maximum(step, 1.0)))
        return keras.ops.cast(self.peak_learning_rate, "float32") * factor

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
        }


def matrix_shape(shape):
    """The `(rows, columns)` of the matrix a kernel of `shape` stands for: its
    leading axes are the rows and the rest the columns, split where the two
    sides are nearest in size (`(hidden, heads, head_size)` gives
    `(hidden, heads * head_size)`, `(heads, head_size, hidden)` gives
    `(heads * head_size, hidden)`)."""
    sizes = [int(size) for size in shape]
    split = min(range(1, len(sizes)),
                key=lambda k: abs(math.log(math.prod(sizes[:k]) / math.prod(sizes[k:]))))
    return math.prod(sizes[:split]), math.prod(sizes[split:])


@keras.saving.register_keras_serializable(package="tfnlp")
class MatrixMuon(keras.optimizers.Muon):
    """Keras' Muon, orthogonalizing every kernel of two or more axes as the
    matrix it stands for (`matrix_shape`).

    Keras' `Muon` gives AdamW to every variable that is not 2-D, which would
    leave the attention's `EinsumDense` kernels (`(hidden, heads,
    head_size)` for queries, keys and values, `(heads, head_size, hidden)` for
    the output) to AdamW: this one reshapes their momentum to the matrix,
    orthogonalizes it and scales it by that matrix's shape. Embeddings,
    vectors, biases (the attention's are `(heads, head_size)`) and
    `exclude_layers` take AdamW.

    Args:
        **kwargs: `keras.optimizers.Muon`'s arguments.

    Example:

    >>> optimizer = MatrixMuon(learning_rate=0.01)
    >>> kernel = keras.Variable(keras.ops.zeros((8, 2, 4)))
    >>> optimizer.apply([keras.random.normal((8, 2, 4), seed=1)], [kernel])
    >>> optimizer.adam_velocities[0] is None  # the Muon step, not AdamW's
    True

    References:
        - [Jordan et al., Muon](https://kellerjordan.github.io/posts/muon/)
        - [Liu et al., 2025](https://arxiv.org/abs/2502.16982)
    """

    def _should_use_adamw(self, variable):
        if len(variable.shape) < 2 or variable.name.endswith("bias"):
            return True
        if self.exclude_embeddings and "embedding" in variable.path.lower():
            return True
        return any(re.search(keyword, variable.path) for keyword in self.exclude_layers)

    def zeropower_via_newtonschulz5(self, x, steps):
        matrix = keras.ops.reshape(x, matrix_shape(x.shape))
        return keras.ops.reshape(super().zeropower_via_newtonschulz5(matrix, steps), x.shape)

    def lr_adjust(self, x):
        matrix = keras.ops.reshape(x, matrix_shape(x.shape))
        return keras.ops.reshape(super().lr_adjust(matrix), x.shape)


def no_decay_variables(model):
    """The variables of `model` that get no weight decay (LayerNorm, biases).

    Matched by path (`layer/.../variable`), so that it does not depend on
    Keras' short variable names alone.
    """
    return [
        variable
        for variable in model.trainable_variables
        if any(name in variable.path for name in NO_DECAY_NAMES)
    ]


def create_optimizer(
    name,
    learning_rate,
    train_steps,
    warmup_steps=0,
    weight_decay=0.01,
    model=None,
    mixed_precision=None,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    schedule="linear",
    ema_momentum=0.0,
):
    """An optimizer with its learning-rate schedule.

    Args:
        name: "adamw" (`keras.optimizers.AdamW`), "lamb"
            (`keras.optimizers.Lamb`; its weight decay is Keras' decoupled
            decay, applied outside the trust ratio) or "muon"
            (`MatrixMuon`: momentum orthogonalized by Newton-Schulz for
            every kernel, AdamW with the same rate for embeddings and
            vectors).
        learning_rate: the peak learning rate.
        train_steps: the step at which the rate reaches zero.
        warmup_steps: steps of linear warmup.
        weight_decay: decoupled weight-decay rate; 0 for none.
        model: the model whose LayerNorm and bias variables are excluded
            from weight decay (`no_decay_variables`).
        mixed_precision: "float16" wraps the optimizer in
            `keras.optimizers.LossScaleOptimizer` (dynamic loss scaling);
            "bfloat16" and None need none.
        beta_1, beta_2, epsilon: the Adam moments' parameters (BERT's
            defaults).
        schedule: "linear" (`WarmupPolynomialDecay`: warmup, then linear
            decay to zero at `train_steps`; BERT's), "inverse_sqrt"
            (`InverseSquareRootDecay`; the Transformer's) or "cosine"
            (Keras' `CosineDecay`: linear warmup from zero, then a cosine
            decay to a tenth of the peak at `train_steps`; GPT-2's and
            nanoGPT's).
        ema_momentum: 0 for none, or keep an exponential moving average of
            the weights with this momentum (Keras' `use_ema`; Polyak
            averaging), which `averaged_weights` swaps in.

    Returns:
        A `keras.optimizers.Optimizer`.
    """
    if schedule == "linear":
        rates = WarmupPolynomialDecay(
            learning_rate, decay_steps=train_steps, warmup_steps=warmup_steps
        )
    elif schedule == "inverse_sqrt":
        rates = InverseSquareRootDecay(learning_rate, warmup_steps=max(warmup_steps, 1))
    elif schedule == "cosine":
        rates = keras.optimizers.schedules.CosineDecay(
            0.0, decay_steps=max(train_steps - warmup_steps, 1), alpha=COSINE_FINAL_FRACTION,
            warmup_target=learning_rate, warmup_steps=warmup_steps)
    else:
        raise ValueError(
            f"Unknown learning-rate schedule {schedule!r}. Choose one of: "
            f"{', '.join(SCHEDULES)}."
        )
    arguments = dict(
        learning_rate=rates,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        weight_decay=float(weight_decay or 0.0),
    )
    if ema_momentum:
        arguments.update(use_ema=True, ema_momentum=ema_momentum)
    if name == "adamw":
        optimizer = keras.optimizers.AdamW(**arguments)
    elif name == "lamb":
        optimizer = keras.optimizers.Lamb(**arguments)
    elif name == "muon":
        optimizer = MatrixMuon(
            learning_rate=rates, adam_beta_1=beta_1, adam_beta_2=beta_2, epsilon=epsilon,
            weight_decay=arguments["weight_decay"], adam_weight_decay=arguments["weight_decay"],
            **({"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}))
    else:
        raise ValueError(
            f"Unknown optimizer {name!r}. Choose one of: {', '.join(OPTIMIZERS)}."
        )
    if weight_decay and model is not None:
        optimizer.exclude_from_weight_decay(var_list=no_decay_variables(model))
    if mixed_precision == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def _weights_and_averages(optimizer):
    """The `(weight, moving average)` pairs of an optimizer built with
    `ema_momentum` (looking through a LossScaleOptimizer); none without."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if not getattr(inner, "use_ema", False):
        return []
    return list(zip(inner._trainable_variables, inner._model_variables_moving_average))


@contextlib.contextmanager
def averaged_weights(optimizer):
    """Puts the optimizer's moving average of the weights (`ema_momentum`)
    in the model inside the `with` block and the trained weights back after
    it; does nothing for an optimizer without an average.

    Example:

    >>> optimizer = create_optimizer("adamw", 0.5, train_steps=10, ema_momentum=0.9)
    >>> weight = keras.Variable([0.0])
    >>> optimizer.build([weight])
    >>> optimizer.apply([keras.ops.ones([1])], [weight])
    >>> optimizer.apply([keras.ops.ones([1])], [weight])
    >>> trained = float(weight.numpy()[0])
    >>> with averaged_weights(optimizer):
    ...     averaged = float(weight.numpy()[0])
    >>> averaged > trained == float(weight.numpy()[0])
    True
    """
    pairs = _weights_and_averages(optimizer)
    for weight, average in pairs:
        trained = keras.ops.copy(weight)
        weight.assign(average)
        average.assign(trained)
    try:
        yield
    finally:
        for weight, average in pairs:
            averaged = keras.ops.copy(weight)
            weight.assign(average)
            average.assign(averaged)


def keep_averaged_weights(optimizer):
    """Leaves the optimizer's moving average of the weights in the model
    (for the export at the end of training); nothing without an average."""
    for weight, average in _weights_and_averages(optimizer):
        weight.assign(average)


def learning_rate_schedule(optimizer):
    """The schedule of `optimizer` (looking through a LossScaleOptimizer)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return inner._learning_rate


def leave_gradient_summing_to_caller(optimizer):
    """Stops a Keras optimizer from summing gradients across replicas.

    Keras' TensorFlow optimizers all-reduce (sum) the gradients given to
    `apply` in a replica context. The training loop already sums them (it
    needs the global gradient to clip it and to log its norm), so summing
    again would multiply them by the number of replicas. Keras has no public
    switch for this; this replaces the (private) summing method of the
    optimizer, and of the inner optimizer of a `LossScaleOptimizer`, by the
    identity.

    Returns:
        True if the optimizer no longer sums; False if this Keras version
        lacks the method (the caller then divides the summed gradients by
        the number of replicas instead).
    """
    done = False
    for each in (optimizer, getattr(optimizer, "inner_optimizer", None)):
        if each is not None and hasattr(each, "_all_reduce_sum_gradients"):
            each._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)
            done = True
    return done

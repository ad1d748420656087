"""Stateful Keras metrics of BERT pretraining: masked-LM accuracy and
perplexity, and next-sentence accuracy.

Each metric keeps two running sums in float32 Keras metric variables
(`aggregation="sum"`, `synchronization="on_read"`), so under `tf.distribute`
every replica adds its own batch and `result()` reads the sums over all
replicas: a weighted mean over everything seen since the last
`reset_state()`, not a mean of per-batch means. Written with `keras.ops`
only, so they run on every Keras backend.

The arguments follow the batch of `tfnlp.data.pretraining_dataset` and the
outputs of `tfnlp.models.BertPretrainingModel`:

    masked_lm_ids        int32   [batch, predictions]
    masked_lm_weights    float32 [batch, predictions]   1.0 real, 0.0 padding
    mlm_logits           float   [batch, predictions, vocab_size]
    next_sentence_labels int32   [batch, 1] or [batch]
    nsp_logits           float   [batch, 2]
"""

import keras
from keras import ops


def _flat_float(values):
    return ops.reshape(ops.cast(values, "float32"), (-1,))


def _ones_like_data(values):
    """Ones shaped like `values`, computed from them.

    Not `ops.ones_like`: with a static shape, TensorFlow makes that a
    constant, and an update of a counter that depends on no input runs even
    in the graph call that fails because the input iterator is exhausted
    (Keras' last `fit`/`evaluate` step on a dataset of unknown cardinality),
    counting a batch that does not exist.
    """
    return _flat_float(values) * 0.0 + 1.0


def _masked_lm_weights(masked_lm_ids, masked_lm_weights):
    if masked_lm_weights is None:
        return _ones_like_data(masked_lm_ids)
    return _flat_float(masked_lm_weights)


def _check_logits_rank(logits, rank, argument, metric):
    if len(logits.shape) != rank:
        raise ValueError(
            f"{metric}: `{argument}` must have rank {rank}. Received shape "
            f"{tuple(logits.shape)}. Pass the model output unchanged "
            "(mlm_logits [batch, predictions, vocab_size] or nsp_logits "
            "[batch, 2])."
        )


class _WeightedRatio(keras.metrics.Metric):
    """A metric whose result is a function of `total / count`, two
    sum-aggregated float32 variables."""

    def __init__(self, name, dtype=None):
        super().__init__(name=name, dtype=dtype or "float32")
        self.total = self.add_variable(
            shape=(), initializer="zeros", dtype="float32", name="total"
        )
        self.count = self.add_variable(
            shape=(), initializer="zeros", dtype="float32", name="count"
        )

    def _accumulate(self, values, weights):
        self.total.assign_add(ops.sum(values * weights))
        self.count.assign_add(ops.sum(weights))

    def _mean(self):
        return ops.divide_no_nan(self.total, self.count)


@keras.saving.register_keras_serializable(package="tfnlp")
class MaskedLMAccuracy(_WeightedRatio):
    """The share of masked-LM predictions whose top logit is the true token.

    Each prediction counts with its `masked_lm_weights` value, so the
    padded predictions (weight 0) do not count:
    `result = Σ w·[argmax(logits) == id] / Σ w` over every batch since the
    last reset (0 before any weight was seen).

    Args:
        name: the metric's name (the key in Keras' logs).
        dtype: the dtype of `result()`; the sums are kept in float32.

    Call arguments (`update_state`):
        masked_lm_ids: int `[batch, predictions]` true token ids.
        mlm_logits: `[batch, predictions, vocab_size]` logits.
        masked_lm_weights: float `[batch, predictions]`, 1.0 for a real
            prediction and 0.0 for padding; `None` counts every prediction.

    Example:

    >>> import numpy as np
    >>> metric = MaskedLMAccuracy()
    >>> logits = np.array([[[0.1, 2.0, 0.3], [3.0, 0.0, 0.0]]], "float32")
    >>> metric.update_state(np.array([[1, 2]]), logits, np.array([[1.0, 1.0]]))
    >>> float(metric.result())
    0.5
    >>> metric.update_state(np.array([[1, 2]]), logits, np.array([[1.0, 0.0]]))
    >>> round(float(metric.result()), 4)  # 2 right out of 3 weighted
    0.6667

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (`masked_lm_accuracy` of
          google-research/bert's `run_pretraining.py`)
    """

    def __init__(self, name="masked_lm_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, masked_lm_ids, mlm_logits, masked_lm_weights=None):
        _check_logits_rank(mlm_logits, 3, "mlm_logits", type(self).__name__)
        predicted = ops.argmax(ops.reshape(mlm_logits, (-1, mlm_logits.shape[-1])), -1)
        labels = ops.reshape(masked_lm_ids, (-1,))
        correct = ops.cast(
            ops.equal(ops.cast(predicted, "int32"), ops.cast(labels, "int32")),
            "float32",
        )
        self._accumulate(correct, _masked_lm_weights(masked_lm_ids, masked_lm_weights))

    def result(self):
        return ops.cast(self._mean(), self.dtype)


@keras.saving.register_keras_serializable(package="tfnlp")
class MaskedLMPerplexity(_WeightedRatio):
    """Perplexity of the masked-LM predictions: exp of the weighted mean
    cross-entropy.

    `result = exp(Σ w·CE / Σ w)`, the cross-entropy `CE` of each
    prediction (natural log, from the logits, in float32) weighted by its
    `masked_lm_weights` value, over every batch since the last reset. The
    exponent is the mean of `tfnlp.models.masked_lm_loss` over all the
    predictions seen (without its 1e-5 guard), not a mean of per-batch
    losses. 1.0 before any weight was seen.

    Args:
        name: the metric's name (the key in Keras' logs).
        dtype: the dtype of `result()`; the sums are kept in float32.

    Call arguments (`update_state`):
        masked_lm_ids: int `[batch, predictions]` true token ids.
        mlm_logits: `[batch, predictions, vocab_size]` logits.
        masked_lm_weights: float `[batch, predictions]`, 1.0 for a real
            prediction and 0.0 for padding; `None` counts every prediction.

    Example (uniform logits over 4 tokens give perplexity 4):

    >>> import numpy as np
    >>> metric = MaskedLMPerplexity()
    >>> metric.update_state(np.array([[3, 0]]), np.zeros((1, 2, 4), "float32"),
    ...                     np.array([[1.0, 0.0]]))
    >>> round(float(metric.result()), 4)
    4.0

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    def __init__(self, name="masked_lm_perplexity", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, masked_lm_ids, mlm_logits, masked_lm_weights=None):
        _check_logits_rank(mlm_logits, 3, "mlm_logits", type(self).__name__)
        logits = ops.reshape(ops.cast(mlm_logits, "float32"), (-1, mlm_logits.shape[-1]))
        labels = ops.cast(ops.reshape(masked_lm_ids, (-1,)), "int32")
        cross_entropy = ops.sparse_categorical_crossentropy(
            labels, logits, from_logits=True
        )
        self._accumulate(
            cross_entropy, _masked_lm_weights(masked_lm_ids, masked_lm_weights)
        )

    def result(self):
        return ops.cast(ops.exp(self._mean()), self.dtype)


@keras.saving.register_keras_serializable(package="tfnlp")
class NextSentenceAccuracy(_WeightedRatio):
    """The share of next-sentence predictions whose top logit is the label.

    `result = Σ w·[argmax(logits) == label] / Σ w` over every example since
    the last reset, `w` the optional per-example `sample_weight` (1 when not
    given); 0 before any example was seen.

    Args:
        name: the metric's name (the key in Keras' logs).
        dtype: the dtype of `result()`; the sums are kept in float32.

    Call arguments (`update_state`):
        next_sentence_labels: int `[batch, 1]` or `[batch]`: 0 when sentence
            B follows A, 1 when it is random.
        nsp_logits: `[batch, 2]` logits.
        sample_weight: optional float `[batch]` (or `[batch, 1]`) weights.

    Example:

    >>> import numpy as np
    >>> metric = NextSentenceAccuracy()
    >>> logits = np.array([[2.0, -1.0], [0.5, 0.1], [0.0, 1.0]], "float32")
    >>> metric.update_state(np.array([[0], [1], [1]]), logits)
    >>> round(float(metric.result()), 4)
    0.6667

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (`next_sentence_accuracy` of
          google-research/bert's `run_pretraining.py`)
    """

    def __init__(self, name="next_sentence_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, next_sentence_labels, nsp_logits, sample_weight=None):
        _check_logits_rank(nsp_logits, 2, "nsp_logits", type(self).__name__)
        labels = ops.cast(ops.reshape(next_sentence_labels, (-1,)), "int32")
        predicted = ops.cast(ops.argmax(nsp_logits, -1), "int32")
        correct = ops.cast(ops.equal(predicted, labels), "float32")
        if sample_weight is None:
            weights = _ones_like_data(labels)
        else:
            weights = _flat_float(sample_weight)
        self._accumulate(correct, weights)

    def result(self):
        return ops.cast(self._mean(), self.dtype)

"""The BERT pretraining losses: masked LM and next sentence.

Plain functions of the batch and the model's outputs, written with
`keras.ops`, so a custom `tf.distribute` training loop can call them in
`strategy.run` and scale them itself (`pretraining_loss` explains the
scaling), and `BertPretrainingModel.compute_loss` uses them for
`compile()` + `fit()`.
"""

from keras import ops

# The features of a pretraining batch besides the encoder's inputs
# (tfnlp.data.pretraining_schema).
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"
LABEL_KEYS = (MASKED_LM_IDS, MASKED_LM_WEIGHTS, NEXT_SENTENCE_LABELS)

# google-research/bert adds this to the sum of the masked-LM weights, so a
# batch without predictions gives a loss of 0 instead of 0 / 0.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5


def masked_lm_loss(masked_lm_ids, mlm_logits, masked_lm_weights, denominator=None):
    """The weighted masked-LM cross-entropy (a float32 scalar).

    `Σ w·CE / denominator`, with `CE` the cross-entropy (natural log) of
    each prediction computed in float32 from the logits, and `w` its
    `masked_lm_weights` value (0 for padded predictions). The default
    denominator is the local `Σ w + 1e-5`, which is google-research/bert's
    loss: the weighted mean over this batch's real predictions.

    Args:
        masked_lm_ids: int `[batch, P]` true token ids.
        mlm_logits: `[batch, P, vocab_size]` logits.
        masked_lm_weights: float `[batch, P]` weights.
        denominator: what the weighted sum is divided by. Leave it out for
            the batch's weighted mean. Under `tf.distribute`, pass the
            weight sum of the GLOBAL batch (all-reduced, see
            `pretraining_loss`); pass 1.0 for the plain weighted sum.
            Values below 1e-5 are raised to 1e-5.

    Example (uniform logits over 4 tokens: the loss is log 4):

    >>> import numpy as np
    >>> loss = masked_lm_loss(np.array([[3, 0]]), np.zeros((1, 2, 4), "float32"),
    ...                       np.array([[1.0, 0.0]], "float32"))
    >>> round(float(loss), 4), round(float(np.log(4)), 4)
    (1.3863, 1.3863)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """
    weights = ops.cast(masked_lm_weights, "float32")
    cross_entropy = ops.sparse_categorical_crossentropy(
        ops.cast(masked_lm_ids, "int32"),
        ops.cast(mlm_logits, "float32"),
        from_logits=True,
    )
    numerator = ops.sum(cross_entropy * weights)
    if denominator is None:
        denominator = ops.sum(weights) + MASKED_LM_DENOMINATOR_EPSILON
    else:
        denominator = ops.maximum(
            ops.cast(denominator, "float32"), MASKED_LM_DENOMINATOR_EPSILON
        )
    return numerator / denominator


def next_sentence_loss(next_sentence_labels, nsp_logits, global_batch_size=None):
    """The next-sentence cross-entropy (a float32 scalar).

    `Σ CE / global_batch_size` over the examples of the batch, `CE` the
    cross-entropy of each computed in float32 from the logits. The default
    `global_batch_size` is this batch's size: the mean.

    Args:
        next_sentence_labels: int `[batch, 1]` or `[batch]` (1: B is a
            random sentence).
        nsp_logits: `[batch, 2]` logits.
        global_batch_size: the divisor. Under `tf.distribute` pass the
            global batch size (the sum over replicas); pass 1 for the sum.

    Example:

    >>> import numpy as np
    >>> loss = next_sentence_loss(np.array([[0], [1]]), np.zeros((2, 2), "float32"))
    >>> round(float(loss), 4), round(float(np.log(2)), 4)
    (0.6931, 0.6931)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """
    labels = ops.cast(ops.reshape(next_sentence_labels, (-1,)), "int32")
    cross_entropy = ops.sparse_categorical_crossentropy(
        labels, ops.cast(nsp_logits, "float32"), from_logits=True
    )
    if global_batch_size is None:
        return ops.mean(cross_entropy)
    return ops.sum(cross_entropy) / ops.cast(global_batch_size, "float32")


def pretraining_loss(batch, outputs, global_batch_size=None, masked_lm_denominator=None):
    """The BERT pretraining loss: masked LM + next sentence.

    Args:
        batch: a dict with `masked_lm_ids`, `masked_lm_weights` and
            `next_sentence_labels` (a `tfnlp.data.pretraining_dataset`
            batch; other keys are ignored).
        outputs: the `BertPretrainingModel` outputs (`mlm_logits`,
            `nsp_logits`).
        global_batch_size: passed to `next_sentence_loss`.
        masked_lm_denominator: passed to `masked_lm_loss` as `denominator`.

    Returns:
        A dict of float32 scalars: `masked_lm_loss`, `next_sentence_loss`,
        and `loss`, their sum.

    Scaling under `tf.distribute` (in `strategy.run`, each replica sees
    its own part of the global batch; Keras optimizers then SUM the
    replicas' gradients), either:

    - Exact global mean (recommended): on each replica call
      `pretraining_loss(batch, outputs, global_batch_size=GLOBAL_BATCH,
      masked_lm_denominator=W)` with `W = replica_context.all_reduce("sum",
      ops.sum(batch["masked_lm_weights"]))`, the global weight sum. The
      replicas' losses then add up to the loss of the whole global batch
      (weighted mean of every masked prediction + mean next-sentence loss),
      and the summed gradients are its gradients. Log the
      `strategy.reduce("SUM", ...)` of the per-replica values.
    - google-research/bert's behaviour: call with the defaults (each
      replica's own means) and divide `loss` by
      `strategy.num_replicas_in_sync` before taking gradients; log the
      `strategy.reduce("MEAN", ...)` of the undivided values. The masked-LM
      part is then the mean of per-replica weighted means, which differs
      from the global weighted mean when replicas hold different numbers
      of predictions. `BertPretrainingModel.compute_loss` (`fit`) does this.

    Without a strategy (or with one replica) the defaults are the loss.

    Example:

    >>> import numpy as np
    >>> batch = {"masked_lm_ids": np.array([[3]]),
    ...          "masked_lm_weights": np.array([[1.0]], "float32"),
    ...          "next_sentence_labels": np.array([[1]])}
    >>> outputs = {"mlm_logits": np.zeros((1, 1, 4), "float32"),
    ...            "nsp_logits": np.zeros((1, 2), "float32")}
    >>> round(float(pretraining_loss(batch, outputs)["loss"]), 4)  # log 4 + log 2
    2.0794

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """
    for key in LABEL_KEYS:
        required_feature(batch, key, "pretraining_loss")
    for key in ("mlm_logits", "nsp_logits"):
        if key not in outputs:
            raise ValueError(
                f"pretraining_loss: `outputs` has no {key!r}; it has "
                f"{sorted(outputs)}. Pass the dict a BertPretrainingModel returns."
            )
    mlm = masked_lm_loss(
        batch[MASKED_LM_IDS],
        outputs["mlm_logits"],
        batch[MASKED_LM_WEIGHTS],
        denominator=masked_lm_denominator,
    )
    nsp = next_sentence_loss(
        batch[NEXT_SENTENCE_LABELS], outputs["nsp_logits"], global_batch_size
    )
    return {"loss": mlm + nsp, "masked_lm_loss": mlm, "next_sentence_loss": nsp}


def required_feature(inputs, key, caller):
    """`inputs[key]`, or a ValueError naming what a pretraining batch holds."""
    if not isinstance(inputs, dict):
        raise ValueError(
            f"{caller} takes a dict of tensors (a tfnlp.data.pretraining_dataset "
            f"batch). Received a {type(inputs).__name__}."
        )
    if key not in inputs:
        raise ValueError(
            f"{caller}: the batch has no {key!r}; it has {sorted(inputs)}. A "
            "pretraining batch (tfnlp.data.pretraining_dataset) has input_ids, "
            "input_mask, segment_ids, masked_lm_positions, masked_lm_ids, "
            "masked_lm_weights and next_sentence_labels."
        )
    return inputs[key]

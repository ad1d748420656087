"""Exported LSTMs on TensorFlow's fused LSTM kernel.

Keras' `LSTM` layer steps through time in a `tf.while_loop` of a dozen
small ops per step and direction; on a CPU, serving short sentences one
at a time, that loop and not the matrix products is most of a request's
time. `tf.raw_ops.BlockLSTMV2` runs a whole sequence in one kernel, with
Keras' gate layout (input, forget, cell, output; the input and recurrent
kernels stacked) and no peepholes or clipping, so it reads a trained
layer's weights as they are. The layers stay `keras.ops` code (they run on
JAX too); only the TensorFlow export calls this module.

The kernel runs every step up to the longest sequence, so the padding must
be at the end of each row (as `tfnlp.text.WordTokenizer` pads): the backward
direction reverses each row within its length, and each row's final states
are read at its last token.
"""

import tensorflow as tf

from tfnlp.models.bilstm.bilstm_classifier import BiLSTMClassifier


def can_fuse(lstm):
    """Whether the cell of `lstm` (a `keras.layers.LSTM`) computes what the
    fused kernel does: tanh and sigmoid activations and a bias (its
    dropouts are off at inference)."""
    cell = lstm.cell
    return (getattr(cell.activation, "__name__", "") == "tanh"
            and getattr(cell.recurrent_activation, "__name__", "") == "sigmoid"
            and cell.use_bias)


def lstm_states(lstm, inputs):
    """The hidden states `(length, batch, units)` of every step of
    time-major `inputs` `(length, batch, features)`, from zero states."""
    cell = lstm.cell
    weights = tf.concat([tf.cast(cell.kernel, tf.float32),
                         tf.cast(cell.recurrent_kernel, tf.float32)], axis=0)
    zeros = tf.zeros([tf.shape(inputs)[1], cell.units], tf.float32)
    no_peepholes = tf.zeros([cell.units], tf.float32)
    outputs = tf.raw_ops.BlockLSTMV2(
        seq_len_max=tf.cast(tf.shape(inputs)[0], tf.int64), x=inputs, cs_prev=zeros,
        h_prev=zeros, w=weights, wci=no_peepholes, wcf=no_peepholes, wco=no_peepholes,
        b=tf.cast(cell.bias, tf.float32), cell_clip=0.0, use_peephole=False)
    return outputs.h


def recurrent_layer(layer, sequences, lengths):
    """One LSTM or bidirectional LSTM layer over batch-major `sequences`
    whose rows hold `lengths` tokens: `(sequence_output, final_hidden)`,
    the outputs zero after each row's length and the final hidden states
    of both directions concatenated, as `tfnlp.layers.LSTMEncoder` gives
    them."""
    time_major = tf.transpose(sequences, [1, 0, 2])
    rows = tf.range(tf.shape(lengths)[0])
    last = tf.stack([tf.maximum(lengths - 1, 0), rows], axis=1)
    forward_layer = getattr(layer, "forward_layer", layer)
    hidden = lstm_states(forward_layer, time_major)
    outputs, finals = [hidden], [tf.gather_nd(hidden, last)]
    if forward_layer is not layer:
        reversed_inputs = tf.reverse_sequence(time_major, lengths, seq_axis=0, batch_axis=1)
        hidden = lstm_states(layer.backward_layer, reversed_inputs)
        finals.append(tf.gather_nd(hidden, last))
        outputs.append(tf.reverse_sequence(hidden, lengths, seq_axis=0, batch_axis=1))
    steps = tf.range(tf.shape(time_major)[0])
    within = tf.cast(steps[:, None] < lengths[None, :], tf.float32)[:, :, None]
    # A row of no tokens has zero final states, as in Keras.
    has_tokens = tf.cast(lengths > 0, tf.float32)[:, None]
    sequence_output = tf.transpose(tf.concat(outputs, axis=-1) * within, [1, 0, 2])
    return sequence_output, tf.concat(finals, axis=-1) * has_tokens


def fusable(model):
    """Whether `fused_logits` can run `model`: a `BiLSTMClassifier` whose
    LSTMs all compute what the fused kernel does."""
    if not isinstance(model, BiLSTMClassifier):
        return False
    for layer in model.encoder.recurrent_layers:
        if hasattr(layer, "forward_layer"):
            lstms = [layer.forward_layer, layer.backward_layer]
        elif layer.go_backwards:
            return False
        else:
            lstms = [layer]
        if not all(can_fuse(lstm) for lstm in lstms):
            return False
    return True


def fused_logits(model, token_ids):
    """The logits of a `BiLSTMClassifier` (see `fusable`) for right-padded
    int32 `token_ids` `[batch, length]`, with every LSTM on the fused
    kernel: `model(token_ids, training=False)` to within float rounding.

    Example:

    >>> import numpy as np
    >>> model = BiLSTMClassifier.from_preset("tiny", vocabulary_size=20, num_classes=2)
    >>> ids = tf.constant([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> fusable(model)
    True
    >>> bool(np.allclose(fused_logits(model, ids), model(ids), atol=1e-5))
    True
    """
    padding_mask = tf.not_equal(token_ids, model.padding_id)
    lengths = tf.reduce_sum(tf.cast(padding_mask, tf.int32), axis=1)
    sequences = tf.cast(model.token_embedding(token_ids), tf.float32)
    for layer in model.encoder.recurrent_layers:
        sequences, final_hidden = recurrent_layer(layer, sequences, lengths)
    return model.classify(model.pool(sequences, final_hidden, padding_mask), training=False)

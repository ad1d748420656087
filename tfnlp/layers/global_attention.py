"""What Luong and Bahdanau attention share: the call contract.

Both score a decoder query against encoder memory, normalise the scores over
the unmasked memory positions and return the weighted sum of the memory. A
subclass defines `memory_keys(values)` (what the query is compared with,
computed once per source) and `scores_from_keys(query, keys)`.
"""

import keras
from keras import ops

from tfnlp.layers.masking import masked_softmax


class GlobalAttention(keras.layers.Layer):
    """Base of `LuongAttention` and `BahdanauAttention`: global attention of
    a decoder query over the whole encoder memory.

    Not a layer to use by itself: a subclass defines `memory_keys(values)`
    and `scores_from_keys(query, keys)` (and its own constructor arguments,
    such as Luong's score function); this class normalises the scores over
    the unmasked memory positions and returns the weighted sum.

    A recurrent decoder attends to the same memory at every step: it calls
    `memory_keys` once per source and `attend(query, keys, values, mask)` at
    each step, so the memory's projection is not recomputed per step.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, query_length, query_dim)`, or `(batch, query_dim)`
            for one decoder step.
        values: the memory, `(batch, source_length, value_dim)`.
        mask: boolean `(batch, source_length)`, `True` = real position.

    Returns:
        `(context, attention_weights)`: `(batch, [query_length,]
        value_dim)` and `(batch, [query_length,] source_length)`.

    Example:

    >>> import numpy as np
    >>> class DotAttention(GlobalAttention):
    ...     def scores_from_keys(self, query, keys):
    ...         return ops.matmul(query, ops.transpose(keys, (0, 2, 1)))
    >>> values = np.ones((1, 3, 4), "float32")
    >>> context, weights = DotAttention()(np.ones((1, 4), "float32"), values,
    ...                                   mask=np.array([[True, True, False]]))
    >>> ops.convert_to_numpy(weights).tolist()
    [[0.5, 0.5, 0.0]]

    References:
        - [Luong et al., 2015. Effective Approaches to Attention-based
          Neural Machine Translation](https://arxiv.org/abs/1508.04025)
        - [Bahdanau et al., 2015. Neural Machine Translation by Jointly
          Learning to Align and Translate](https://arxiv.org/abs/1409.0473)
    """

    def memory_keys(self, values):
        """What the query is compared with, `(batch, source_length, units)`,
        computed once per memory: the values themselves unless a subclass
        projects them."""
        return values

    def scores_from_keys(self, query, keys):
        """Scores `(batch, query_length, source_length)` of a 3-D query
        against `memory_keys(values)`."""
        raise NotImplementedError

    def project_query(self, query, kernel):
        """`query @ kernel` for a `(batch, query_length, depth)` query, as one
        2-D matmul between reshapes. Keras' rank-3 matmul is a tensordot whose
        gradient transposes by a runtime permutation, which XLA refuses inside
        the decoder's loop; an `einsum` compiles but made the training step of
        Bahdanau attention 0.77x the speed of Keras' `AdditiveAttention`
        model, and this about 1.03x (`benchmarks.rnn_translation_training`)."""
        query_shape = ops.shape(query)
        projected = ops.matmul(ops.reshape(query, (-1, query_shape[-1])), kernel)
        return ops.reshape(projected, (query_shape[0], query_shape[1], kernel.shape[-1]))

    def attention_scores(self, query, values):
        """Scores of shape `(batch, query_length, source_length)`."""
        return self.scores_from_keys(query, self.memory_keys(values))

    def attend(self, query, keys, values, mask=None):
        """`call` with the memory's keys computed already (`memory_keys`)."""
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        scores = self.scores_from_keys(query, keys)
        if mask is not None:
            mask = ops.expand_dims(ops.cast(mask, "bool"), 1)
        attention_weights = masked_softmax(scores, mask, axis=-1)
        context = ops.matmul(attention_weights, values)
        if single_step:
            context = ops.squeeze(context, 1)
            attention_weights = ops.squeeze(attention_weights, 1)
        return context, attention_weights

    def call(self, query, values, mask=None):
        return self.attend(query, self.memory_keys(values), values, mask)

    def compute_output_shape(self, query_shape, values_shape):
        leading = tuple(query_shape[:-1])
        context_shape = leading + (values_shape[-1],)
        attention_weights_shape = leading + (values_shape[-2],)
        return context_shape, attention_weights_shape

    def compute_mask(self, inputs, previous_mask=None):
        # The memory mask is used up here: the outputs are indexed by query
        # position, so no mask is passed on. Defining this method also marks
        # the layer as supporting masks, so Keras does not warn on every call
        # that the mask was dropped.
        return None

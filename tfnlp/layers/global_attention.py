"""What Luong and Bahdanau attention share: the call contract.

Both score a decoder query against encoder memory, normalise the scores over
the unmasked memory positions and return the weighted sum of the memory. A
subclass defines only `attention_scores(query, values)`.
"""

import keras
from keras import ops

from tfnlp.layers.masking import masked_softmax


class GlobalAttention(keras.layers.Layer):
    """Base of `LuongAttention` and `BahdanauAttention`: global attention of
    a decoder query over the whole encoder memory.

    Not a layer to use by itself: a subclass defines
    `attention_scores(query, values)` (and its own constructor arguments,
    such as Luong's score function); this class normalises the scores over
    the unmasked memory positions and returns the weighted sum.

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
    ...     def attention_scores(self, query, values):
    ...         return ops.matmul(query, ops.transpose(values, (0, 2, 1)))
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

    def attention_scores(self, query, values):
        """Scores of shape `(batch, query_length, source_length)`."""
        raise NotImplementedError

    def call(self, query, values, mask=None):
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        scores = self.attention_scores(query, values)
        if mask is not None:
            mask = ops.expand_dims(ops.cast(mask, "bool"), 1)
        attention_weights = masked_softmax(scores, mask, axis=-1)
        context = ops.matmul(attention_weights, values)
        if single_step:
            context = ops.squeeze(context, 1)
            attention_weights = ops.squeeze(attention_weights, 1)
        return context, attention_weights

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

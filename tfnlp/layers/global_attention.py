"""What Luong and Bahdanau attention share: the call contract.

Both score a decoder query against encoder memory, normalise the scores over
the unmasked memory positions and return the weighted sum of the memory. A
subclass defines only `attention_scores(query, values)`.
"""

import keras
from keras import ops

from tfnlp.layers.masking import masked_softmax


class GlobalAttention(keras.layers.Layer):
    """Base of `LuongAttention` and `BahdanauAttention`; see them for the
    arguments. Not a layer to use by itself."""

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

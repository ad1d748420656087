"""The LSTM encoder-decoder with Luong or Bahdanau attention, or none."""

import keras
from keras import ops

from tfnlp.data.translation_schema import PAD_ID
from tfnlp.layers.bahdanau_attention import BahdanauAttention
from tfnlp.layers.dropout import Dropout
from tfnlp.layers.lstm_encoder import LSTMEncoder
from tfnlp.layers.luong_attention import LuongAttention
from tfnlp.models.seq2seq.generation import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS, Seq2SeqModel

# The `attention` choices; None (or "none") is the model without attention.
ATTENTIONS = ("luong_dot", "luong_general", "luong_concat", "bahdanau", "bahdanau_normalized")

# Preset name -> constructor arguments; the encoder is bidirectional.
# small: OpenNMT-py's default RNN sizes at half the width; base: Luong et
# al.'s width with two layers instead of four.
RNN_PRESETS = {
    "tiny": dict(embedding_dim=64, hidden_dim=64, num_layers=1),
    "small": dict(embedding_dim=256, hidden_dim=256, num_layers=2),
    "base": dict(embedding_dim=512, hidden_dim=512, num_layers=2),
}


def scan_steps(step, initial, outputs_like, length):
    """Runs `carry, outputs = step(carry, index)` for `index` in
    `range(length)` and returns every step's `outputs`, stacked on a new
    leading axis (the final carry is dropped).

    `outputs_like` is a structure of tensors of the per-step outputs' dtypes
    and shapes. On TensorFlow this is a `tf.while_loop` that states its
    iteration count and writes the outputs alone to `TensorArray`s: the
    gradient of `keras.ops.scan`'s TensorFlow loop keeps lists of unknown
    size, which XLA refuses to compile ("XLA compilation requires a fixed
    tensor list size"), that scan fails to trace several sequences of
    unknown length, and it stacks the whole carry at every step. Elsewhere
    it is `keras.ops.scan`.
    """
    if keras.backend.backend() != "tensorflow":
        return ops.scan(step, initial, ops.arange(length))[1]
    import tensorflow as tf

    arrays = tf.nest.map_structure(
        lambda like: tf.TensorArray(like.dtype, size=length, element_shape=like.shape), outputs_like)

    def body(index, carry, arrays):
        carry, outputs = step(carry, index)
        arrays = tf.nest.map_structure(
            lambda array, output: array.write(index, output), arrays, outputs)
        return index + 1, carry, arrays

    _, _, arrays = tf.while_loop(lambda index, carry, arrays: index < length, body,
                                 (tf.constant(0), initial, arrays), maximum_iterations=length)
    return tf.nest.map_structure(lambda array: array.stack(), arrays)


@keras.saving.register_keras_serializable(package="tfnlp")
class RNNSeq2Seq(Seq2SeqModel):
    """The LSTM encoder-decoder, with global attention or without.

    The encoder is an `LSTMEncoder` (stacked, bidirectional by default) over
    the token embeddings; source and target share one embedding (a joint
    subword vocabulary). Decoder layer `k` starts from the final state of
    encoder layer `k` (a bidirectional encoder's two directions
    concatenated, hence `hidden_dim` features either way). Each decoder
    step then depends on the attention variant:

    - `"luong_dot"`, `"luong_general"`, `"luong_concat"` (Luong et al.,
      2015): the stacked LSTM reads the previous token's embedding and the
      previous attentional state ("input feeding"); its top state `h_t`
      attends over the encoder outputs, giving the context `c_t`, and the
      attentional state `h̃_t = tanh(W_c [c_t; h_t])` gives the logits and is
      fed to the next step.
    - `"bahdanau"`, `"bahdanau_normalized"` (Bahdanau et al., 2015): the
      previous top state `s_{t-1}` attends first; the LSTM reads the previous
      token's embedding and that context; the logits come from
      `tanh(W_c [c_t; s_t])`.
    - `None` (Sutskever et al., 2014): the LSTM reads the previous token's
      embedding only and its top state gives the logits; the encoder is seen
      only through the initial states.

    Training runs the decoder steps in one scan over the target positions
    (a `tf.while_loop` on TensorFlow, `keras.ops.scan` elsewhere: `scan_steps`);
    decoding runs the same step through `tfnlp.decoding` (the states are the
    cache), so a teacher-forced pass and step-by-step decoding
    give the same logits. Dropout applies to the embeddings, between stacked
    decoder layers and to the attentional state (the fed-back one included,
    as in OpenNMT), with one mask per step drawn before the scan.

    Args:
        vocabulary_size: the size of the joint vocabulary.
        attention: one of `ATTENTIONS`, or None for no attention.
        embedding_dim: the size of the token embeddings.
        hidden_dim: the decoder's LSTM units; the encoder's states have as
            many features (`hidden_dim // 2` units per direction when
            bidirectional).
        num_layers: the number of LSTM layers of the encoder and of the
            decoder.
        bidirectional: whether the encoder's layers are bidirectional.
        dropout: the dropout rate.
        dtype: the dtype policy.
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        inputs: a dict with `"encoder_token_ids"` and `"decoder_token_ids"`,
            int `(batch, length)`, 0-padded (the decoder's inputs begin with
            `BOS_ID`: `decoder_inputs(targets)`).
        training: whether dropout is active.

    Returns:
        float32 logits `(batch, target_length, vocabulary_size)`.

    Example:

    >>> import numpy as np
    >>> model = RNNSeq2Seq(vocabulary_size=50, attention="luong_general",
    ...                    embedding_dim=8, hidden_dim=8, num_layers=1)
    >>> inputs = {"encoder_token_ids": np.array([[5, 6, 7, 3]]),
    ...           "decoder_token_ids": np.array([[2, 8, 9]])}
    >>> tuple(model(inputs).shape)
    (1, 3, 50)
    >>> tuple(model.alignments(inputs).shape)
    (1, 3, 4)

    References:
        - [Sutskever et al., 2014. Sequence to Sequence Learning with Neural
          Networks](https://arxiv.org/abs/1409.3215)
        - [Bahdanau et al., 2015. Neural Machine Translation by Jointly
          Learning to Align and Translate](https://arxiv.org/abs/1409.0473)
        - [Luong et al., 2015. Effective Approaches to Attention-based Neural
          Machine Translation](https://arxiv.org/abs/1508.04025)
    """

    def __init__(
        self,
        vocabulary_size,
        attention="luong_general",
        embedding_dim=256,
        hidden_dim=256,
        num_layers=2,
        bidirectional=True,
        dropout=0.2,
        dtype=None,
        **kwargs,
    ):
        if attention == "none":
            attention = None
        if attention is not None and attention not in ATTENTIONS:
            raise ValueError(
                f"attention must be None or one of {', '.join(ATTENTIONS)}; received "
                f"{attention!r}."
            )
        if bidirectional and hidden_dim % 2:
            raise ValueError(
                f"hidden_dim ({hidden_dim}) must be even with bidirectional=True: each "
                "direction of the encoder gets hidden_dim // 2 units."
            )
        super().__init__(dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.attention = attention
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.dropout = dropout

        policy = self.dtype_policy
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=policy, name="token_embedding")
        self.embeddings_dropout = Dropout(dropout, dtype=policy, name="embeddings_dropout")
        self.encoder = LSTMEncoder(
            hidden_dim // 2 if bidirectional else hidden_dim,
            num_layers=num_layers,
            bidirectional=bidirectional,
            dropout=dropout,
            dtype=policy,
            name="encoder",
        )
        # One attribute per cell (`set_layer_stack`), which the trainer's
        # checkpoints see.
        self.set_layer_stack("decoder_cell", [
            keras.layers.LSTMCell(hidden_dim, dtype=policy, name=f"decoder_cell_{index}")
            for index in range(num_layers)])
        self.step_dropout = Dropout(dropout, dtype=policy, name="step_dropout")
        self.attention_layer = self.attention_projection = None
        if attention is not None:
            family, _, variant = attention.partition("_")
            if family == "luong":
                self.attention_layer = LuongAttention(variant, dtype=policy, name="attention")
            else:
                self.attention_layer = BahdanauAttention(
                    hidden_dim, normalize=variant == "normalized", dtype=policy,
                    name="attention")
            self.attention_projection = keras.layers.Dense(
                hidden_dim, activation="tanh", use_bias=False, dtype=policy,
                name="attention_projection")
        self.output_projection = keras.layers.Dense(
            vocabulary_size, dtype=policy, name="output_projection")
        self.build()

    presets = RNN_PRESETS

    @classmethod
    def from_preset(cls, name, vocabulary_size, **overrides):
        """A model of the sizes of preset `name` (a key of `RNN_PRESETS`:
        "tiny", "small", "base"); `overrides` change any constructor
        argument."""
        return super().from_preset(name, vocabulary_size=vocabulary_size, **overrides)

    @property
    def decoder_cells(self):
        """The decoder's `keras.layers.LSTMCell`s, bottom first."""
        return self.layer_stack("decoder_cell")

    @property
    def input_feeding(self):
        """Whether each step reads the previous attentional state (Luong)."""
        return self.attention is not None and self.attention.startswith("luong")

    # === Building ===

    def build(self, inputs_shape=None):
        """Creates every variable (the shapes do not depend on the inputs)."""
        self.token_embedding.build((None, None))
        self.encoder.build((None, None, self.embedding_dim))
        extra = self.hidden_dim if self.attention is not None else 0
        input_dim = self.embedding_dim + extra
        for cell in self.decoder_cells:
            cell.build((None, input_dim))
            input_dim = self.hidden_dim
        if self.attention_layer is not None:
            self.attention_layer.build((None, None, self.hidden_dim),
                                       (None, None, self.hidden_dim))
            self.attention_projection.build((None, 2 * self.hidden_dim))
        self.output_projection.build((None, None, self.hidden_dim))
        self.built = True

    # === Encoder ===

    def encode(self, encoder_token_ids, training=None):
        """The memory the decoder reads: a dict of `"values"` (the encoder
        outputs, `(batch, source_length, hidden_dim)`), `"keys"` (the
        attention's projection of them, computed once), `"mask"` (boolean,
        `True` = real token) and `"states"` (the decoder's initial `[h, c]`
        per layer)."""
        encoder_token_ids = ops.cast(encoder_token_ids, "int32")
        mask = ops.not_equal(encoder_token_ids, PAD_ID)
        embedded = self.embeddings_dropout(self.token_embedding(encoder_token_ids),
                                           training=training)
        outputs = self.encoder(embedded, mask=mask, training=training)
        values = outputs["sequence_output"]
        keys = values
        if self.attention_layer is not None:
            keys = self.attention_layer.memory_keys(values)
        return {"values": values, "keys": keys, "mask": mask,
                "states": [list(state) for state in outputs["final_states"]]}

    # === One decoder step, shared by training and decoding ===

    def initial_state(self, memory):
        """The decoder's state before the first step: the LSTM states, and
        for input feeding a zero attentional state."""
        state = {"lstm": memory["states"]}
        if self.input_feeding:
            state["feed"] = ops.zeros_like(memory["states"][-1][0])
        return state

    def step(self, embedded, state, memory, dropout_masks=None):
        """One decoder step.

        Args:
            embedded: the previous token's embedding `(batch, embedding_dim)`.
            state: the decoder state (`initial_state`, or the last step's).
            memory: `encode`'s dict.
            dropout_masks: None, or a list of `num_layers` masks
                `(batch, hidden_dim)` (scaled keep masks): one before each
                decoder layer above the first and one on the output.

        Returns:
            `(output, alignment, state)`: the `(batch, hidden_dim)` vector the
            logits are projected from, the attention weights
            `(batch, source_length)` (zeros without attention) and the new
            state.
        """
        lstm_states = state["lstm"]
        x = embedded
        context = alignment = None
        if self.input_feeding:
            x = ops.concatenate([x, state["feed"]], axis=-1)
        elif self.attention is not None:
            context, alignment = self.attention_layer.attend(
                lstm_states[-1][0], memory["keys"], memory["values"], memory["mask"])
            x = ops.concatenate([x, context], axis=-1)
        new_states = []
        for index, (cell, cell_state) in enumerate(zip(self.decoder_cells, lstm_states)):
            if index > 0 and dropout_masks is not None:
                x = x * dropout_masks[index - 1]
            x, new_state = cell(x, cell_state)
            new_states.append(list(new_state))
        if self.input_feeding:
            context, alignment = self.attention_layer.attend(
                x, memory["keys"], memory["values"], memory["mask"])
        if self.attention is not None:
            x = self.attention_projection(ops.concatenate([context, x], axis=-1))
        else:
            alignment = ops.zeros(ops.shape(memory["mask"]), dtype=x.dtype)
        if dropout_masks is not None:
            x = x * dropout_masks[-1]
        new_state = {"lstm": new_states}
        if self.input_feeding:
            new_state["feed"] = x
        return x, ops.cast(alignment, x.dtype), new_state

    def logits(self, outputs):
        """The output projection, in float32."""
        return ops.cast(self.output_projection(outputs), "float32")

    # === Teacher forcing ===

    def decode(self, decoder_token_ids, memory, training=None, return_alignments=True):
        """The logits `(batch, target_length, vocabulary_size)` and the
        alignments `(batch, target_length, source_length)` (None when not
        `return_alignments`) of a whole target prefix, the steps run in one
        scan (`scan_steps`)."""
        embedded = self.embeddings_dropout(
            self.token_embedding(ops.cast(decoder_token_ids, "int32")), training=training)
        time_major_embedded = ops.transpose(embedded, (1, 0, 2))
        batch_size = ops.shape(embedded)[0]
        target_length = ops.shape(embedded)[1]
        dropout_masks = None
        if training and self.dropout > 0:
            ones = ops.ones((target_length, self.num_layers, batch_size, self.hidden_dim),
                            dtype=embedded.dtype)
            dropout_masks = self.step_dropout(ones, training=True)
        outputs_like = {"output": ops.zeros((batch_size, self.hidden_dim), dtype=embedded.dtype)}
        if return_alignments:
            outputs_like["alignment"] = ops.zeros(ops.shape(memory["mask"]), dtype=embedded.dtype)

        def scan_step(state, index):
            masks = None
            if dropout_masks is not None:
                step_masks = ops.take(dropout_masks, index, axis=0)
                masks = [step_masks[layer] for layer in range(self.num_layers)]
            output, alignment, state = self.step(
                ops.take(time_major_embedded, index, axis=0), state, memory, masks)
            outputs = {"output": output}
            if return_alignments:
                outputs["alignment"] = alignment
            return state, outputs

        per_step = scan_steps(scan_step, self.initial_state(memory), outputs_like, target_length)
        logits = self.logits(ops.transpose(per_step["output"], (1, 0, 2)))
        if not return_alignments:
            return logits, None
        return logits, ops.transpose(per_step["alignment"], (1, 0, 2))

    def call(self, inputs, training=None):
        memory = self.encode(inputs[ENCODER_TOKEN_IDS], training)
        return self.decode(inputs[DECODER_TOKEN_IDS], memory, training,
                           return_alignments=False)[0]

    def alignments(self, inputs):
        """The attention weights `(batch, target_length, source_length)` of a
        teacher-forced pass over `inputs` (no dropout); zeros without
        attention."""
        memory = self.encode(inputs[ENCODER_TOKEN_IDS])
        return self.decode(inputs[DECODER_TOKEN_IDS], memory)[1]

    # === Generation (the step contract of tfnlp.decoding) ===

    def initial_cache(self, encoder_token_ids, max_length):
        """The decoding cache: the memory (`encode`'s values, keys and mask),
        the decoder state, and the alignment of every generated position
        `(batch, max_length, source_length)`; every leaf batch-major."""
        memory = self.encode(encoder_token_ids)
        values = memory["values"]
        alignments = ops.zeros(
            (ops.shape(values)[0], max_length, ops.shape(values)[1]), dtype=values.dtype)
        return {"values": values, "keys": memory["keys"], "mask": memory["mask"],
                "state": self.initial_state(memory), "alignments": alignments}

    def decode_step(self, token_ids, cache, index):
        """The logits `(batch, vocabulary_size)` of the token after
        `token_ids` (int `(batch,)`, at position `index`), and the cache with
        the new state and this step's alignment written at row `index`."""
        embedded = self.token_embedding(ops.cast(token_ids, "int32"))
        output, alignment, state = self.step(embedded, cache["state"], cache)
        positions = ops.arange(ops.shape(cache["alignments"])[1], dtype="int32")
        alignments = ops.where((positions == index)[None, :, None], alignment[:, None, :],
                               cache["alignments"])
        return self.logits(output), dict(cache, state=state, alignments=alignments)

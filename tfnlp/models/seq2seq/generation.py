"""What every seq2seq model shares: the input names, the teacher-forcing
inputs, and generation through a `tfnlp.decoding` decoder."""

from keras import ops

from tfnlp.data.translation_schema import BOS_ID, EOS_ID, PAD_ID

# The models' inputs: int (batch, length) token ids, 0 = padding.
ENCODER_TOKEN_IDS = "encoder_token_ids"
DECODER_TOKEN_IDS = "decoder_token_ids"


def decoder_inputs(targets):
    """The decoder's inputs for teacher forcing: `BOS_ID`, then the
    targets without their last position (int `(batch, target_length)`,
    0-padded, each row ending with `EOS_ID`). Padding stays padding."""
    targets = ops.cast(targets, "int32")
    shifted = ops.concatenate(
        [ops.full_like(targets[:, :1], BOS_ID), targets[:, :-1]], axis=1)
    # A padded position stays 0 (it follows the EOS of a shorter row).
    return ops.where(ops.equal(targets, PAD_ID), PAD_ID, shifted)


def generate(model, encoder_token_ids, decoder, max_length, max_length_a=None, max_length_b=0):
    """Translates a batch of source ids with a `tfnlp.decoding` decoder.

    Args:
        model: a seq2seq model with `initial_cache(ids, max_length)` and
            `decode_step` (the step contract of `tfnlp.decoding`).
        encoder_token_ids: int `(batch, source_length)`, 0-padded, each
            ending with `EOS_ID`.
        decoder: a `tfnlp.decoding` decoder (greedy, beam search, sampling).
        max_length: the static bound of generated tokens.
        max_length_a, max_length_b: with `max_length_a`, each sentence
            generates at most `a * source_length + b` tokens (the source
            length without EOS; fairseq's `--max-len-a/b`), capped at
            `max_length`.

    Returns:
        The decoder's result dict: `ids` `(batch, num_sequences, max_length)`
        (ending with `EOS_ID`, 0-padded), `lengths` and `scores`.
    """
    encoder_token_ids = ops.cast(encoder_token_ids, "int32")
    max_lengths = None
    if max_length_a is not None:
        source_lengths = ops.sum(
            ops.cast(ops.not_equal(encoder_token_ids, PAD_ID), "float32"), axis=1)
        bounds = ops.ceil(max_length_a * (source_lengths - 1.0)) + max_length_b
        max_lengths = ops.cast(ops.clip(bounds, 1.0, float(max_length)), "int32")
    cache = model.initial_cache(encoder_token_ids, max_length)
    start_ids = ops.full((ops.shape(encoder_token_ids)[0],), BOS_ID, dtype="int32")
    return decoder(model.decode_step, cache, start_ids, EOS_ID, max_length,
                   max_lengths=max_lengths)

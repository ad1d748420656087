"""What every seq2seq model shares: the input names, the teacher-forcing
inputs, and generation through a `tfnlp.decoding` decoder
(`Seq2SeqModel`, the base of the family's models)."""

from keras import ops

from tfnlp.data.translation_schema import BOS_ID, EOS_ID, PAD_ID
from tfnlp.models.generative_model import GenerativeModel

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


class Seq2SeqModel(GenerativeModel):
    """Base of the encoder-decoder models: generation from source ids.

    A subclass implements `initial_cache(encoder_token_ids, max_length)`
    and `decode_step` (the step contract of `tfnlp.decoding`); decoding
    starts from `BOS_ID` and ends at `EOS_ID`. Not a model to use by
    itself: see `TransformerSeq2Seq` and `RNNSeq2Seq`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.decoding import GreedySearch
    >>> from tfnlp.models.seq2seq import RNNSeq2Seq
    >>> model = RNNSeq2Seq.from_preset("tiny", vocabulary_size=20)
    >>> result = model.generate(np.array([[5, 6, 3]]), GreedySearch(), max_length=4)
    >>> tuple(result["ids"].shape)
    (1, 1, 4)

    References:
        - [Sutskever et al., 2014. Sequence to Sequence Learning with Neural
          Networks](https://arxiv.org/abs/1409.3215)
    """

    def initial_cache(self, encoder_token_ids, max_length):
        """The decoding cache of a batch of sources, for `decode_step`."""
        raise NotImplementedError(f"{type(self).__name__} must implement `initial_cache()`.")

    def generate(self, encoder_token_ids, decoder, max_length, max_length_a=None,
                 max_length_b=0):
        """Translates a batch of source ids with a `tfnlp.decoding` decoder.

        Args:
            encoder_token_ids: int `(batch, source_length)`, 0-padded, each
                ending with `EOS_ID`.
            decoder: a `tfnlp.decoding` decoder (greedy, beam search,
                sampling).
            max_length: the static bound of generated tokens; at most the
                model's `max_positions` where it has one.
            max_length_a, max_length_b: with `max_length_a`, each sentence
                generates at most `a * source_length + b` tokens (the source
                length without EOS; fairseq's `--max-len-a/b`), capped at
                `max_length`.

        Returns:
            The decoder's result dict: `ids` `(batch, num_sequences,
            max_length)` (ending with `EOS_ID`, 0-padded), `lengths` and
            `scores`.
        """
        self.check_positions(max_length, "max_length")
        encoder_token_ids = ops.cast(encoder_token_ids, "int32")
        max_lengths = None
        if max_length_a is not None:
            source_lengths = ops.sum(
                ops.cast(ops.not_equal(encoder_token_ids, PAD_ID), "float32"), axis=1)
            bounds = ops.ceil(max_length_a * (source_lengths - 1.0)) + max_length_b
            max_lengths = ops.cast(ops.clip(bounds, 1.0, float(max_length)), "int32")
        cache = self.initial_cache(encoder_token_ids, max_length)
        start_ids = ops.full((ops.shape(encoder_token_ids)[0],), BOS_ID, dtype="int32")
        return self.run_decoder(decoder, cache, start_ids, EOS_ID, max_length,
                                max_lengths=max_lengths)

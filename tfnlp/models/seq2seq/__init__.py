"""The sequence-to-sequence family: encoder-decoder translation models.

- `TransformerSeq2Seq`: the Transformer encoder-decoder with shared, tied
  embeddings, presets `tiny`, `small` and `base`;
- `decoder_inputs`: the targets shifted right behind `BOS_ID`.

Models of this family follow the step contract of `tfnlp.decoding`
(`initial_cache`, `decode_step`) so one set of decoders serves them all; the
loss is in `tfnlp.losses.translation_losses`.
"""

from tfnlp.models.seq2seq.transformer_seq2seq import (
    DECODER_TOKEN_IDS,
    ENCODER_TOKEN_IDS,
    PRESETS,
    TransformerSeq2Seq,
    decoder_inputs,
)

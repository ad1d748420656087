"""The sequence-to-sequence family: encoder-decoder translation models.

- `TransformerSeq2Seq`: the Transformer encoder-decoder with shared, tied
  embeddings, presets `tiny`, `small` and `base`;
- `RNNSeq2Seq`: the LSTM encoder-decoder with Luong or Bahdanau attention,
  or none, presets `tiny`, `small` and `base` (`RNN_PRESETS`);
- `decoder_inputs`: the targets shifted right behind `BOS_ID`;
  `Seq2SeqModel`: the family's base (a `tfnlp.models.GenerativeModel`),
  whose `generate` decodes source ids through a `tfnlp.decoding` decoder
  (`generation.py`).

Models of this family follow the step contract of `tfnlp.decoding`
(`initial_cache`, `decode_step`) so one set of decoders serves them all;
their presets are named dicts of constructor arguments (`TRANSFORMER_PRESETS`,
`RNN_PRESETS`); the loss is in `tfnlp.losses.translation_losses`.
"""

from tfnlp.models.seq2seq.generation import (
    DECODER_TOKEN_IDS,
    ENCODER_TOKEN_IDS,
    Seq2SeqModel,
    decoder_inputs,
)
from tfnlp.models.seq2seq.rnn_seq2seq import ATTENTIONS, RNN_PRESETS, RNNSeq2Seq
from tfnlp.models.seq2seq.transformer_seq2seq import TRANSFORMER_PRESETS, TransformerSeq2Seq

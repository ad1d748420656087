"""Keras metrics of tfnlp models, written with `keras.ops`.

- `MaskedLMAccuracy`, `MaskedLMPerplexity`, `NextSentenceAccuracy`: BERT
  pretraining (`tfnlp.models.BertPretrainingModel`).
"""

from tfnlp.metrics.pretraining_metrics import (
    MaskedLMAccuracy,
    MaskedLMPerplexity,
    NextSentenceAccuracy,
)

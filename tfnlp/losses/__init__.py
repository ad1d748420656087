"""Losses, by model family, written with `keras.ops`."""

from tfnlp.losses.pretraining_losses import (
    masked_lm_loss,
    next_sentence_loss,
    pretraining_loss,
)

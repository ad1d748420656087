"""Losses, by model family, written with `keras.ops`: BERT pretraining
(`pretraining_losses`) and translation (`translation_losses`)."""

from tfnlp.losses.pretraining_losses import (
    masked_lm_loss,
    next_sentence_loss,
    pretraining_loss,
)
from tfnlp.losses.translation_losses import label_smoothed_cross_entropy
from tfnlp.losses.distillation_losses import (
    LABEL,
    TEACHER_LOGITS,
    DistillationLoss,
    LogitMeanSquaredError,
    distillation_loss,
    logit_mean_squared_error,
    soft_target_loss,
)

"""Training tasks: what the custom loop of `trainer.training_loop` needs to
know about one model family (its loss, its per-batch sums, its metrics).

`BertPretrainingTask` (masked LM and next sentence, `trainer.pretrain`) and
`TranslationTask` (label-smoothed cross-entropy of an encoder-decoder,
`trainer.translate`); a new family adds a module here and a trainer entry
point that runs it.
"""

from trainer.tasks.bert_pretraining import BertPretrainingTask
from trainer.tasks.translation import TranslationTask

__all__ = ["BertPretrainingTask", "TranslationTask"]

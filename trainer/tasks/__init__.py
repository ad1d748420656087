"""Training tasks: what the custom loop of `trainer.training_loop` needs to
know about one model family (its loss, its per-batch sums, its metrics).

`BertPretrainingTask` (masked LM and next sentence) is the first; a new
family adds a module here and a trainer entry point that runs it.
"""

from trainer.tasks.bert_pretraining import BertPretrainingTask

__all__ = ["BertPretrainingTask"]

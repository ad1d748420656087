"""Training tasks: what the custom loop of `trainer.training_loop` needs to
know about one model family (its loss, its per-batch sums, its metrics).

`TrainingTask` (`task.py`) declares every member the loop calls.
`BertPretrainingTask` (masked LM and next sentence, `trainer.pretrain`),
`TranslationTask` (label-smoothed cross-entropy of an encoder-decoder,
`trainer.translate`), `DistillationTask` (a student classifier on a
teacher's logits or on gold labels, `trainer.distill`) and
`FineTuningTask` (BERT classification, token classification and spans,
`trainer.finetune`) follow it; a new
family adds a module here and a trainer entry point that runs it
(`trainer.runtime.train_run`).
"""

from trainer.tasks.bert_pretraining import BertPretrainingTask
from trainer.tasks.distillation import DistillationTask
from trainer.tasks.finetuning import FineTuningTask
from trainer.tasks.task import TrainingTask, check_task
from trainer.tasks.translation import TranslationTask

__all__ = ["BertPretrainingTask", "DistillationTask", "FineTuningTask", "TrainingTask",
           "TranslationTask", "check_task"]

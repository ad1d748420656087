"""Training entry points: `python -m trainer.pretrain` (BERT pretraining).

The modules are the pieces of the pretraining job: `flags` (the command
line), `distribution` (the `tf.distribute` strategy), `optimization` (the
optimizer and learning-rate schedule), `training_loop` (the custom loop),
`summaries` (TensorBoard), `checkpoints` (resumable checkpoints) and
`export` (the encoder SavedModel).
"""

from tfnlp.quiet_start import import_quietly

import_quietly(("tensorflow",))

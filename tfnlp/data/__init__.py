"""Data: the TFRecord schemas shared by the Beam writers and the tf.data readers.

- `pretraining_schema`: the BERT pretraining record (google-research/bert's
  features): `feature_spec`, `serialize_instance`, `parse_examples`.
- `pretraining_dataset`: reads those shards into a batched `tf.data.Dataset`,
  optionally masking them anew each epoch (`mask_dynamically`).
"""

from tfnlp.data import pretraining_schema
from tfnlp.data.pretraining_dataset import mask_dynamically, pretraining_dataset
from tfnlp.data.pretraining_schema import (
    FEATURE_NAMES,
    feature_spec,
    parse_examples,
    serialize_instance,
)

"""Data: the TFRecord schemas shared by the Beam writers and the tf.data readers.

- `pretraining_schema`: the BERT pretraining record (google-research/bert's
  features): `feature_spec`, `serialize_instance`, `parse_examples`.
- `pretraining_reader`: `pretraining_dataset` reads those shards into a
  batched `tf.data.Dataset`, optionally masking them anew each epoch
  (`mask_dynamically`).
- `translation_reader`: `translation_dataset` reads translation-pair shards
  (`translation_schema`) into batches of about `max_tokens_per_batch`
  tokens, bucketed by length (`bucket_lengths`, `bucket_batch_sizes`), with
  an evaluation mode that yields every pair once in a fixed order;
  `count_long_pairs` counts the pairs training would skip.
- `language_model_schema`: the causal language-model record (`token_ids`,
  `character_count`): `serialize_record`, `feature_spec`, `parse_examples`;
  `language_model_reader`: `language_model_dataset` reads those shards.
- `distillation_schema`: the distillation record (`text`,
  `teacher_logits`, `label`, `origin`); `distillation_reader`:
  `distillation_dataset` reads those shards (optionally only the records
  of some origins), `distillation_num_classes` their number of classes.
- `labelled_files`: reading the CSV, TSV and JSON Lines files of texts and
  labels that fine-tuning and the distillation data job take, with a
  `ReadReport` of the rows kept and skipped.
- `tfrecord_files`: what the readers do before parsing: matching the
  shard globs, detecting each file's compression (plain, gzip, zlib),
  reading the first record for a check, opening the files for `interleave`.
- `example_proto`: `tf.train.Example` as a plain protobuf message, for
  writers that do not load TensorFlow.
"""

from tfnlp.lazy_imports import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, {
    "example_proto": "example_proto",
    "pretraining_schema": "pretraining_schema",
    "pretraining_reader": "pretraining_reader",
    "pretraining_dataset": "pretraining_reader",
    "FEATURE_NAMES": "pretraining_schema",
    "feature_spec": "pretraining_schema",
    "parse_examples": "pretraining_schema",
    "serialize_instance": "pretraining_schema",
    "mask_dynamically": "pretraining_reader",
    "translation_reader": "translation_reader",
    "tfrecord_files": "tfrecord_files",
    "labelled_files": "labelled_files",
    "translation_dataset": "translation_reader",
    "bucket_lengths": "translation_reader",
    "bucket_batch_sizes": "translation_reader",
    "count_long_pairs": "translation_reader",
    "language_model_schema": "language_model_schema",
    "language_model_reader": "language_model_reader",
    "language_model_dataset": "language_model_reader",
    "distillation_schema": "distillation_schema",
    "distillation_reader": "distillation_reader",
    "distillation_dataset": "distillation_reader",
    "distillation_num_classes": "distillation_reader",
})

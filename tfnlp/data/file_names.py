"""The names of the files that join the stages: what a Beam job writes into
its output directory and a trainer reads back.

This module imports neither TensorFlow nor Beam, so the jobs, their
workers, the trainers and the demo all take the names from here.
"""

# Every job's accounting of its input and output (pipelines.job.WriteStats).
STATS_FILE = "stats.json"
# The WordPiece job writes its stats beside the vocabulary, as
# `<output_file>` + this suffix.
STATS_SUFFIX = ".stats.json"
# The SentencePiece model that translation_data learns with --shared_vocab.
SENTENCEPIECE_MODEL = "sentencepiece.model"
# The shard prefixes: DIR/<prefix>-SSSSS-of-NNNNN.tfrecord.
PRETRAINING_SHARD_PREFIX = "pretraining"
TRANSLATION_SHARD_PREFIX = "translation"
# The language-model job (pipelines.lm_data): its shards, by split, and its
# tokenizer: the descriptor that tfnlp.text.load_language_model_tokenizer
# reads, and the vocabulary or model file it names.
LANGUAGE_MODEL_TRAIN_PREFIX = "train"
LANGUAGE_MODEL_VALIDATION_PREFIX = "validation"
TOKENIZER_DESCRIPTOR = "tokenizer.json"
CHARACTER_VOCABULARY = "characters.txt"
WORDPIECE_VOCABULARY = "vocab.txt"
# The distillation job (pipelines.distillation_data): its shards,
# DIR/train-SSSSS-of-NNNNN.tfrecord, and the teacher's label list beside
# them (a class id is its label's index). A classifier's export holds the
# same list as EXPORT_DIR/<version>/assets.extra/labels.json.
DISTILLATION_SHARD_PREFIX = "train"
LABELS_FILE = "labels.json"

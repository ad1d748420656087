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

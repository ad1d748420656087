"""The main job, `python -m demo` (run by `make demo`).

Today it runs what exists of the path on a real task, Multi30k
German→English: the Beam job `pipelines.wordpiece_vocab` learns a WordPiece
vocabulary per language, `tfnlp.text.BertTokenizer` tokenizes in `tf.data`,
and a small Transformer built from `tfnlp.layers` is trained on the CPU for
a few minutes, decoded greedily with the key/value cache, and scored with
sacreBLEU. Later issues grow it into the full path: Beam
preprocessing, BERT pretraining on tf.distribute, export and serving.
"""

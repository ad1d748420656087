"""The main job, `python -m demo` (run by `make demo`).

Today it shows the `tfnlp.layers` library on a real task: a small
Transformer translation model for Multi30k German→English, trained on the
CPU for a couple of minutes, decoded greedily with the key/value cache, and
scored with sacreBLEU. Later issues grow it into the full path: Beam
preprocessing, BERT pretraining on tf.distribute, export and serving.
"""

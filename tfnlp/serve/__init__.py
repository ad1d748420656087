"""`python -m tfnlp.serve`: a TensorFlow-Serving-compatible REST server for
the SavedModels of an export directory (`EXPORT_DIR/<version>/`).

It needs only TensorFlow (and tensorflow_text for the text signatures): the
models are loaded with `tf.saved_model.load`, not rebuilt from tfnlp code.
"""

"""tfnlp: Keras/TensorFlow NLP from raw text to a served model."""

from tfnlp import layers

__version__ = "0.1.0"

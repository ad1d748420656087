"""tfnlp: Keras/TensorFlow NLP from raw text to a served model.

Subpackages load on first use (`tfnlp.lazy_imports`), so that importing a
TensorFlow-free module such as `tfnlp.data.pretraining_schema` does not load
TensorFlow.
"""

from tfnlp.lazy_imports import lazy_attributes

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(
    __name__, {name: name for name in ("data", "decoding", "export", "layers", "losses", "metrics", "models", "serve", "text", "visualization")}
)

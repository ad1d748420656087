"""SavedModel export of tfnlp models, for TensorFlow Serving and any other
SavedModel loader.

- `export_saved_model`: a trained model (encoder, pretraining model with
  its masked-LM head, classifier, token classifier) to
  `EXPORT_DIR/<version>/`, with signatures on raw text (tokenized in the
  graph) and on token ids;
- `BertTextPreprocessor`: text to BERT's packed inputs, in the graph;
- `WordClassifierSignatures`: a word-level classifier (a distilled BiLSTM
  student) on raw text or word ids, with its word vocabulary as an asset;
- `version_paths`, `list_versions`, `latest_version`, `next_version`,
  `version_dir`: the
  versioned layout TensorFlow Serving watches.

Modules that need TensorFlow load on first use (`tfnlp.lazy_imports`).
"""

from tfnlp.lazy_imports import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, {
    "export_saved_model": "saved_model",
    "BertTextPreprocessor": "text_preprocessor",
    "WordClassifierSignatures": "word_classifier_signatures",
    "version_paths": "versions",
    "list_versions": "versions",
    "latest_version": "versions",
    "next_version": "versions",
    "version_dir": "versions",
})

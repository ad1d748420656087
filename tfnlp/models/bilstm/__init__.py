"""The BiLSTM family: small recurrent classifiers, students for distillation.

- `BiLSTMClassifier`: word embeddings, one bidirectional LSTM, the final
  states (or a max-pooling) and a ReLU classifier (Tang et al., 2019);
- `BILSTM_PRESETS`: `tiny` and `tang2019`, named dicts of constructor
  arguments.
"""

from tfnlp.models.bilstm.bilstm_classifier import BILSTM_PRESETS, BiLSTMClassifier

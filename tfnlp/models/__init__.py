"""Models by family. The BERT family (`tfnlp.models.bert`: the config, the
encoder, the pretraining model, fine-tuning heads, feature extraction, the
Hugging Face converter) is exported here as well; its losses live in
`tfnlp.losses`. The seq2seq and decoder-LM families join as sibling
packages."""

from tfnlp.losses import masked_lm_loss, next_sentence_loss, pretraining_loss
from tfnlp.models.bert import (
    FEATURE_STRATEGIES,
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertFeatureExtractor,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
    bert_features,
    gather_positions,
)

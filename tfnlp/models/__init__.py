"""BERT models: the config, the encoder, Hugging Face checkpoint loading,
the pretraining model and its losses, fine-tuning heads and feature
extraction."""

from tfnlp.models.bert_classifier import BertClassifier
from tfnlp.models.bert_config import BertConfig
from tfnlp.models.bert_encoder import BertEncoder
from tfnlp.layers.gather import gather_positions
from tfnlp.models.bert_pretraining import (
    BertPretrainingModel,
    masked_lm_loss,
    next_sentence_loss,
    pretraining_loss,
)
from tfnlp.models.bert_span_extractor import BertSpanExtractor
from tfnlp.models.bert_token_classifier import BertTokenClassifier
from tfnlp.models.feature_extraction import (
    FEATURE_STRATEGIES,
    BertFeatureExtractor,
    bert_features,
)

"""The BERT family: the config, the encoder, the pretraining model, the
fine-tuning heads, feature extraction and the Hugging Face converter."""

from tfnlp.layers.gather import gather_positions
from tfnlp.models.bert.bert_classifier import BertClassifier
from tfnlp.models.bert.bert_config import BERT_PRESETS, BertConfig
from tfnlp.models.bert.bert_encoder import BertEncoder
from tfnlp.models.bert.bert_pretraining import BertPretrainingModel
from tfnlp.models.bert.bert_span_extractor import BertSpanExtractor
from tfnlp.models.bert.bert_token_classifier import BertTokenClassifier
from tfnlp.models.bert.feature_extraction import (
    FEATURE_STRATEGIES,
    BertFeatureExtractor,
    bert_features,
)

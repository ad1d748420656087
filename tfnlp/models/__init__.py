"""BERT models: the config, the encoder and Hugging Face checkpoint loading."""

from tfnlp.models.bert_config import BertConfig
from tfnlp.models.bert_encoder import BertEncoder

"""Text: the in-graph BERT tokenizer, vocabularies and input packing."""

from tfnlp.text.bert_tokenizer import BertTokenizer
from tfnlp.text.packing import pack_inputs
from tfnlp.text.vocabulary import SPECIAL_TOKENS, load_vocabulary, write_vocabulary

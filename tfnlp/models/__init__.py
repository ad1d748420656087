"""Models by family, each a sibling package, all exported here:

- BERT (`tfnlp.models.bert`): the config, the encoder, the pretraining
  model, fine-tuning heads, feature extraction, the Hugging Face converter;
  its losses live in `tfnlp.losses`;
- seq2seq (`tfnlp.models.seq2seq`): the Transformer and the LSTM
  encoder-decoders;
- GPT (`tfnlp.models.gpt`): the decoder-only backbone, the causal language
  model with its key/value cache, the sequence classifier, the Hugging Face
  GPT-2 converter.

What the families share sits beside them: `PresetModel` (named presets,
the config round trip, stacks of blocks) and `GenerativeModel` (its
subclass for the models that decode through `tfnlp.decoding`), the model
config helpers and the Hugging Face checkpoint reading.
"""

from tfnlp.losses import masked_lm_loss, next_sentence_loss, pretraining_loss
from tfnlp.models.bert import (
    BERT_PRESETS,
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
from tfnlp.models.generative_model import GenerativeModel
from tfnlp.models.gpt import GPT_PRESETS, GPTBackbone, GPTCausalLM, GPTSequenceClassifier
from tfnlp.models.preset_model import PresetModel
from tfnlp.models.seq2seq import RNNSeq2Seq, TransformerSeq2Seq, decoder_inputs
from tfnlp.models.bilstm import BILSTM_PRESETS, BiLSTMClassifier

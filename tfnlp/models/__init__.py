"""Models by family. The BERT family (`tfnlp.models.bert`: the config, the
encoder, the pretraining model, fine-tuning heads, feature extraction, the
Hugging Face converter) is exported here as well; its losses live in
`tfnlp.losses`. The seq2seq family
(`tfnlp.models.seq2seq`: the Transformer and the LSTM encoder-decoders) is a sibling
package, also exported here; the decoder-LM family will join the same way."""

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
from tfnlp.models.seq2seq import RNNSeq2Seq, TransformerSeq2Seq, decoder_inputs

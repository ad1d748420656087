"""The serving signatures of a word-level classifier (a distilled BiLSTM
student): raw text in, or word ids in.

| signature         | inputs                                  | outputs |
|-------------------|-----------------------------------------|---------|
| `serving_default` | `text`: string `[batch]`                | `label` string `[batch]`, `class_id` int32 `[batch]`, `probabilities` float32 `[batch, classes]`, `logits` float32 `[batch, classes]` |
| `classify_ids`    | `token_ids`: int32 `[batch, length]`, 0-padded | the same |

The outputs are those of a BERT classifier's export
(`tfnlp.export.bert_signatures.BertClassifierSignatures`), plus the
logits, so a client and `python -m tfnlp.serve` treat both alike. The text
signature tokenizes with the `tfnlp.text.WordTokenizer` the model trained
with; its vocabulary is a SavedModel asset. Every op is core TensorFlow:
the export loads without tensorflow-text.

A `BiLSTMClassifier` runs a single text (a batch of one, as a lone request
to `tfnlp.serve` runs) with its LSTMs on TensorFlow's fused kernel
(`tfnlp.export.fused_lstm`), which for one row is faster than Keras' step
loop; a larger batch runs through Keras' layers, whose matrix products
over the rows are the faster there (`python -m benchmarks bilstm_export`).
The ids must be padded at the end of each row, as the tokenizer pads them.
"""

import tensorflow as tf

from tfnlp.export.fused_lstm import fusable, fused_logits
from tfnlp.export.id_checks import check_ids

_TEXT_SIGNATURE = [tf.TensorSpec([None], tf.string, name="text")]
_IDS_SIGNATURE = [tf.TensorSpec([None, None], tf.int32, name="token_ids")]


class WordClassifierSignatures(tf.Module):
    """`serving_default` (text) and `classify_ids` (word ids) of a
    classifier of word ids.

    Args:
        model: a Keras model from int32 word ids `[batch, length]` (0 =
            padding) to logits `[batch, classes]`, such as
            `tfnlp.models.BiLSTMClassifier`.
        tokenizer: the `tfnlp.text.WordTokenizer` of the model's
            vocabulary.
        labels: the label of each class id (default "0", "1", ...).

    Example:

    >>> import os, tempfile
    >>> from tfnlp.models import BiLSTMClassifier
    >>> from tfnlp.text import WordTokenizer, write_word_vocabulary
    >>> path = os.path.join(tempfile.mkdtemp(), "words.txt")
    >>> write_word_vocabulary(["fine", "dull", "film"], path)
    >>> tokenizer = WordTokenizer(path)
    >>> model = BiLSTMClassifier.from_preset(
    ...     "tiny", vocabulary_size=tokenizer.vocabulary_size, num_classes=2)
    >>> signatures = WordClassifierSignatures(model, tokenizer, labels=["bad", "good"])
    >>> outputs = signatures.classify_text(tf.constant(["A fine film", "Dull."]))
    >>> sorted(outputs), outputs["probabilities"].shape.as_list()
    (['class_id', 'label', 'logits', 'probabilities'], [2, 2])
    >>> sorted(signatures.signatures())
    ['classify_ids', 'serving_default']

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [TensorFlow Serving's SignatureDefs](
          https://www.tensorflow.org/tfx/serving/signature_defs)
    """

    def __init__(self, model, tokenizer, labels=None):
        super().__init__()
        num_classes = int(model.num_classes)
        labels = ([str(label) for label in labels] if labels
                  else [str(index) for index in range(num_classes)])
        if len(labels) != num_classes:
            raise ValueError(
                f"{len(labels)} labels were given for a model of {num_classes} classes; "
                "pass one label per class (the labels.json of the run)."
            )
        if tokenizer.vocabulary_size > model.vocabulary_size:
            raise ValueError(
                f"The tokenizer's vocabulary ({tokenizer.vocabulary_file}) has "
                f"{tokenizer.vocabulary_size} ids but the model embeds only "
                f"{model.vocabulary_size}. Export with the vocabulary the model trained "
                "with."
            )
        self.model = model
        self.tokenizer = tokenizer
        self.labels = labels
        self.label_names = tf.constant(labels)
        self.fused = fusable(model)

    def classify_ids(self, token_ids):
        """The outputs of int32 word ids `[batch, length]` (0-padded at the
        end of each row)."""
        def keras_layers():
            return tf.cast(self.model(token_ids, training=False), tf.float32)

        if self.fused:
            logits = tf.cond(tf.equal(tf.shape(token_ids)[0], 1),
                             lambda: fused_logits(self.model, token_ids), keras_layers)
        else:
            logits = keras_layers()
        probabilities = tf.nn.softmax(logits)
        class_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"label": tf.gather(self.label_names, class_ids), "class_id": class_ids,
                "probabilities": probabilities, "logits": logits}

    def classify_text(self, text):
        """The outputs of raw texts `[batch]`."""
        return self.classify_ids(self.tokenizer(text))

    def signatures(self):
        """`{name: concrete function}`: `serving_default` and `classify_ids`."""
        size = self.model.vocabulary_size

        def on_ids(token_ids):
            return self.classify_ids(check_ids(token_ids, size, "token_ids"))

        return {
            "serving_default": tf.function(
                self.classify_text, input_signature=_TEXT_SIGNATURE).get_concrete_function(),
            "classify_ids": tf.function(
                on_ids, input_signature=_IDS_SIGNATURE).get_concrete_function(),
        }

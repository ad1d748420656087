"""The serving signatures of BERT models: raw text in, or token ids in.

Each class below wraps a trained model (and, for the text signatures, a
`BertTextPreprocessor`) in a `tf.Module` whose `signatures()` are the
concrete functions `tfnlp.export.export_saved_model` writes. Every model
gets a text signature (`text`: `[batch]` strings, or `[batch, 2]` for
pairs; tokenized in the graph with tensorflow-text ops) and an ids
signature (int32 `input_ids`, `input_mask`, `segment_ids` `[batch,
length]`; core TensorFlow ops only). Outputs are float32 (also for
mixed-precision models), int32 and strings.

| model | text signature | ids signature |
|---|---|---|
| `BertEncoder` | `serving_default` | `encode_ids` |
| `BertPretrainingModel` | the encoder's, plus `fill_mask` | plus `fill_mask_ids` |
| `BertClassifier` | `serving_default` | `classify_ids` |
| `BertTokenClassifier` | `serving_default` | `classify_ids` |
| `BertSpanExtractor` | `serving_default` | `extract_span_ids` |

Written with TensorFlow ops (not `keras.ops`): a SavedModel is
TensorFlow's format.
"""

import tensorflow as tf

from tfnlp.export.id_checks import check_ids
from tfnlp.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.models.bert.bert_encoder import ENCODER_INPUTS

POOLINGS = ("pooler", "cls", "mean")

_IDS_SIGNATURE = [tf.TensorSpec([None, None], tf.int32, name=name) for name in ENCODER_INPUTS]
# Unknown rank: `[batch]` strings for single segments, `[batch, 2]` for pairs.
_TEXT_SIGNATURE = [tf.TensorSpec(None, tf.string, name="text")]


class BertSignatures(tf.Module):
    """Base class: a model, its optional text preprocessor, and signatures.

    A subclass defines `outputs(inputs)` (packed int32 inputs to a dict of
    output tensors), `text_signature_name` and `ids_signature_name`.

    Args:
        model: the trained Keras model.
        preprocessor: a `tfnlp.export.BertTextPreprocessor`, or None for an
            export with ids signatures only.
    """

    text_signature_name = "serving_default"
    ids_signature_name = None

    def __init__(self, model, preprocessor=None):
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor

    def outputs(self, inputs):
        raise NotImplementedError

    def text_outputs(self, text):
        return self.outputs(self.preprocessor(text))

    def signatures(self, text_signatures=True):
        """`{name: concrete function}`. Without text signatures (or without a
        preprocessor), `serving_default` is the ids signature."""

        config = getattr(self.model, "encoder", self.model).config

        def on_ids(input_ids, input_mask, segment_ids):
            input_ids = check_ids(input_ids, config.vocab_size, "input_ids")
            segment_ids = check_ids(segment_ids, config.type_vocab_size, "segment_ids")
            return self.outputs(dict(zip(ENCODER_INPUTS, (input_ids, input_mask, segment_ids))))

        functions = {
            self.ids_signature_name: tf.function(on_ids, input_signature=_IDS_SIGNATURE)
        }
        if text_signatures and self.preprocessor is not None:
            functions[self.text_signature_name] = tf.function(
                self.text_outputs, input_signature=_TEXT_SIGNATURE
            )
        elif self.text_signature_name == "serving_default":
            functions["serving_default"] = functions[self.ids_signature_name]
        return {name: function.get_concrete_function() for name, function in functions.items()}


class BertEncoderSignatures(BertSignatures):
    """`serving_default` (text) and `encode_ids`: BERT's pooled and sequence
    outputs.

    Outputs: `pooled_output` float32 `[batch, hidden]`, `sequence_output`
    float32 `[batch, length, hidden]` (`length` is the preprocessor's
    `sequence_length` for text) and, for text, the `input_mask` int32
    `[batch, length]` that tells real tokens from padding.

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        preprocessor: a `BertTextPreprocessor`, or None (ids only).
        pooling: what `pooled_output` is: "pooler" (BERT's tanh layer on
            [CLS]), "cls" (the [CLS] state itself) or "mean" (the mean of
            the real tokens' states: sentence-transformers' mean pooling).
        normalize: divide `pooled_output` by its L2 norm (sentence-embedding
            models such as all-MiniLM-L6-v2 do).

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> sorted(BertEncoderSignatures(encoder).signatures())
    ['encode_ids', 'serving_default']

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
        - [Reimers and Gurevych, 2019. Sentence-BERT](
          https://arxiv.org/abs/1908.10084) (mean pooling)
    """

    ids_signature_name = "encode_ids"

    def __init__(self, encoder, preprocessor=None, pooling="pooler", normalize=False):
        if pooling not in POOLINGS:
            raise ValueError(
                f"pooling={pooling!r} is not one of {', '.join(POOLINGS)}."
            )
        super().__init__(encoder, preprocessor)
        self.pooling = pooling
        self.normalize = bool(normalize)

    def outputs(self, inputs):
        encoder_outputs = self.model(inputs, training=False)
        sequence_output = tf.cast(encoder_outputs["sequence_output"], tf.float32)
        if self.pooling == "pooler":
            pooled_output = tf.cast(encoder_outputs["pooled_output"], tf.float32)
        elif self.pooling == "cls":
            pooled_output = sequence_output[:, 0, :]
        else:
            mask = tf.cast(inputs["input_mask"], tf.float32)[:, :, None]
            total = tf.reduce_sum(sequence_output * mask, axis=1)
            pooled_output = total / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)
        if self.normalize:
            norm = tf.norm(pooled_output, axis=-1, keepdims=True)
            pooled_output = pooled_output / tf.maximum(norm, 1e-12)
        return {"pooled_output": pooled_output, "sequence_output": sequence_output}

    def text_outputs(self, text):
        inputs = self.preprocessor(text)
        return {**self.outputs(inputs), "input_mask": inputs["input_mask"]}


class BertFillMaskSignatures(BertSignatures):
    """`fill_mask` (text with "[MASK]") and `fill_mask_ids`: the most likely
    tokens at each [MASK], from the masked-LM head; plus the encoder's
    signatures (`serving_default`, `encode_ids`).

    Outputs, for the first `max_masks` masks of each example (in text
    order; rows with fewer masks are padded with position -1, token "" and
    score 0):

    - `mask_positions` int32 `[batch, max_masks]`: the position of each
      mask in the packed sequence;
    - `token_ids` int32, `tokens` string and `scores` float32 (softmax
      probabilities) `[batch, max_masks, top_k]`, best first.

    A literal "[MASK]" in the text is the mask token (not text); a mask
    truncated away with the text after `sequence_length` is not predicted.

    Args:
        model: a `tfnlp.models.BertPretrainingModel`.
        preprocessor: a `BertTextPreprocessor` (its vocabulary names the
            tokens and gives the [MASK] id).
        top_k: how many tokens per mask.
        max_masks: how many masks per example are predicted.

    Example:

    >>> import os, tempfile
    >>> from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel
    >>> from tfnlp.text import BertTokenizer, write_vocabulary
    >>> from tfnlp.export import BertTextPreprocessor
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
    ...                  vocab_file)
    >>> model = BertPretrainingModel(
    ...     BertEncoder(BertConfig.preset("tiny", vocab_size=6, num_layers=1)))
    >>> preprocessor = BertTextPreprocessor(BertTokenizer(vocab_file), 8)
    >>> fill_mask = BertFillMaskSignatures(model, preprocessor, top_k=2)
    >>> outputs = fill_mask.text_outputs(tf.constant(["a [MASK] a"]))
    >>> outputs["tokens"].shape.as_list(), int(outputs["mask_positions"][0, 0])
    ([1, 8, 2], 2)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    text_signature_name = "fill_mask"
    ids_signature_name = "fill_mask_ids"

    def __init__(self, model, preprocessor, top_k=5, max_masks=8, **encoder_options):
        if preprocessor is None:
            raise ValueError(
                "Fill-mask signatures need the vocabulary (to find [MASK] and name "
                "the tokens): pass a BertTextPreprocessor."
            )
        for name, value in (("top_k", top_k), ("max_masks", max_masks)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}.")
        if top_k > len(preprocessor.vocabulary):
            raise ValueError(
                f"top_k={top_k} is more than the {len(preprocessor.vocabulary)} "
                "tokens of the vocabulary."
            )
        super().__init__(model, preprocessor)
        self.top_k = int(top_k)
        self.max_masks = int(max_masks)
        self.mask_id = preprocessor.tokenizer.mask_id
        self.vocabulary = tf.constant(preprocessor.vocabulary)
        self.encoder_signatures = BertEncoderSignatures(
            model.encoder, preprocessor, **encoder_options
        )

    def outputs(self, inputs):
        input_ids = inputs["input_ids"]
        is_mask = tf.logical_and(
            tf.equal(input_ids, self.mask_id), tf.not_equal(inputs["input_mask"], 0)
        )
        length = tf.shape(input_ids)[1]
        all_positions = tf.broadcast_to(tf.range(length), tf.shape(input_ids))
        positions = tf.ragged.boolean_mask(all_positions, is_mask)[:, : self.max_masks]
        positions = positions.to_tensor(default_value=-1, shape=[None, self.max_masks])
        is_prediction = positions >= 0
        logits = self.model(
            {**inputs, "masked_lm_positions": tf.maximum(positions, 0)}, training=False
        )["mlm_logits"]
        scores, token_ids = tf.math.top_k(tf.nn.softmax(tf.cast(logits, tf.float32)), self.top_k)
        token_ids = tf.cast(token_ids, tf.int32)
        keep = tf.broadcast_to(is_prediction[:, :, None], tf.shape(token_ids))
        return {
            "mask_positions": positions,
            "token_ids": tf.where(keep, token_ids, -1),
            "tokens": tf.where(keep, tf.gather(self.vocabulary, tf.maximum(token_ids, 0)), ""),
            "scores": tf.where(keep, scores, 0.0),
        }

    def text_outputs(self, text):
        return self.outputs(self.preprocessor(text, mask_tokens=True))

    def signatures(self, text_signatures=True):
        return {
            **self.encoder_signatures.signatures(text_signatures),
            **super().signatures(text_signatures),
        }


class BertClassifierSignatures(BertSignatures):
    """`serving_default` (text) and `classify_ids`: the label of each
    example (`BertClassifier`) or of each token (`BertTokenClassifier`).

    The text signature of a `BertClassifier` runs the model on its batch
    cut to the longest text (`trim_to_longest`), not padded to the
    preprocessor's `sequence_length`. In the text, a literal "[MASK]" is
    BERT's mask token, as in fill-mask and in Hugging Face's tokenizers:
    the synthetic texts of distillation mask words with it, and Tang et
    al. (2019) have the teacher read them as masked words. Its outputs:
    `label` string `[batch]`, `class_id` int32 `[batch]`, `probabilities`
    float32 `[batch, classes]` and `logits` float32 `[batch, classes]`
    (the scores before the softmax,
    which a distillation teacher hands its student: see
    `pipelines.distillation_data`).

    Outputs of a `BertTokenClassifier`, one per WordPiece (`length` is the
    preprocessor's `sequence_length` for text): `tokens` (the pieces, text
    signature only), `labels`, `class_ids`, `probabilities` `[batch,
    length, classes]` and `input_mask`; padding gets label "" and class -1.
    Fine-tuning labels a word's first piece, so read the labels of the
    pieces that do not start with "##" (and skip [CLS] and [SEP]).

    Args:
        model: a `tfnlp.models.BertClassifier` or `BertTokenClassifier`.
        preprocessor: a `BertTextPreprocessor`, or None (ids only).
        labels: the label of each class id (default "0", "1", ...).

    Example:

    >>> from tfnlp.models import BertClassifier, BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> classifier = BertClassifier(encoder, num_classes=2)
    >>> signatures = BertClassifierSignatures(classifier, labels=["no", "yes"])
    >>> outputs = signatures.signatures()["classify_ids"](
    ...     input_ids=tf.constant([[2, 7, 3]]), input_mask=tf.constant([[1, 1, 1]]),
    ...     segment_ids=tf.constant([[0, 0, 0]]))
    >>> outputs["label"].numpy()[0] in (b"no", b"yes")
    True

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 4)
    """

    ids_signature_name = "classify_ids"

    def __init__(self, model, preprocessor=None, labels=None):
        super().__init__(model, preprocessor)
        labels = [str(label) for label in labels] if labels else [
            str(index) for index in range(model.num_classes)
        ]
        if len(labels) != model.num_classes:
            raise ValueError(
                f"{len(labels)} labels were given for a model of {model.num_classes} "
                "classes; pass one label per class (the labels.json of fine-tuning)."
            )
        self.labels = list(labels)
        self.label_names = tf.constant(self.labels)
        self.per_token = isinstance(model, BertTokenClassifier)

    def outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        probabilities = tf.nn.softmax(logits)
        class_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        labels = tf.gather(self.label_names, class_ids)
        if not self.per_token:
            return {"label": labels, "class_id": class_ids, "probabilities": probabilities,
                    "logits": logits}
        is_token = tf.not_equal(inputs["input_mask"], 0)
        return {
            "labels": tf.where(is_token, labels, ""),
            "class_ids": tf.where(is_token, class_ids, -1),
            "probabilities": probabilities,
            "input_mask": inputs["input_mask"],
        }

    def text_outputs(self, text):
        inputs = self.preprocessor(text, mask_tokens=True)
        if not self.per_token:
            inputs = trim_to_longest(inputs)
        outputs = self.outputs(inputs)
        if self.per_token:
            tokens = self.preprocessor.tokenizer.id_to_token(inputs["input_ids"])
            outputs["tokens"] = tf.where(tf.not_equal(inputs["input_mask"], 0), tokens, "")
        return outputs


class BertSpanSignatures(BertSignatures):
    """`serving_default` (question and context) and `extract_span_ids`: the
    answer span of a `BertSpanExtractor` (SQuAD-style extractive QA).

    The text signature takes `[batch, 2]` strings, (question, context), as
    fine-tuning packed them: `[CLS] question [SEP] context [SEP]`.
    Outputs: `start_logits` and `end_logits` float32 `[batch, length]`;
    `answer_start` and `answer_end` int32 `[batch]`, the token positions of
    the best span (the largest sum of start and end logits with start <=
    end < start + `max_answer_length`, both in the second segment; -1 if
    there is none); for text, `answer`, the span's word pieces joined
    (normalized text: lower-cased for uncased models).

    Args:
        model: a `tfnlp.models.BertSpanExtractor`.
        preprocessor: a `BertTextPreprocessor`, or None (ids only).
        max_answer_length: the longest answer, in tokens.

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder, BertSpanExtractor
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> signatures = BertSpanSignatures(BertSpanExtractor(encoder)).signatures()
    >>> outputs = signatures["extract_span_ids"](
    ...     input_ids=tf.constant([[2, 7, 3, 8, 9, 3]]),
    ...     input_mask=tf.constant([[1, 1, 1, 1, 1, 1]]),
    ...     segment_ids=tf.constant([[0, 0, 0, 1, 1, 1]]))
    >>> 3 <= int(outputs["answer_start"][0]) <= int(outputs["answer_end"][0]) <= 5
    True

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805) (section 4.2)
    """

    ids_signature_name = "extract_span_ids"

    def __init__(self, model, preprocessor=None, max_answer_length=30):
        if max_answer_length < 1:
            raise ValueError(f"max_answer_length must be at least 1, got {max_answer_length}.")
        super().__init__(model, preprocessor)
        self.max_answer_length = int(max_answer_length)

    def outputs(self, inputs):
        logits = self.model(inputs, training=False)
        start_logits = tf.cast(logits["start_logits"], tf.float32)
        end_logits = tf.cast(logits["end_logits"], tf.float32)
        in_context = tf.logical_and(
            tf.equal(inputs["segment_ids"], 1), tf.not_equal(inputs["input_mask"], 0)
        )
        # The last [SEP] is in the second segment too; it is never an answer.
        length = tf.shape(start_logits)[1]
        positions = tf.range(length)
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs["input_mask"], 0), tf.int32), 1)
        in_context = tf.logical_and(in_context, positions[None, :] < lengths[:, None] - 1)
        offsets = positions[None, :] - positions[:, None]  # end - start
        allowed = tf.logical_and(offsets >= 0, offsets < self.max_answer_length)
        allowed = tf.logical_and(
            allowed[None], tf.logical_and(in_context[:, :, None], in_context[:, None, :])
        )
        scores = start_logits[:, :, None] + end_logits[:, None, :]
        scores = tf.where(allowed, scores, float("-inf"))
        best = tf.argmax(tf.reshape(scores, [tf.shape(scores)[0], -1]), axis=-1,
                         output_type=tf.int32)
        found = tf.reduce_any(tf.reshape(allowed, [tf.shape(scores)[0], -1]), axis=-1)
        return {
            "start_logits": start_logits,
            "end_logits": end_logits,
            "answer_start": tf.where(found, best // length, -1),
            "answer_end": tf.where(found, best % length, -1),
        }

    def text_outputs(self, text):
        inputs = self.preprocessor(text)
        outputs = self.outputs(inputs)
        positions = tf.range(tf.shape(inputs["input_ids"])[1])[None, :]
        in_answer = tf.logical_and(positions >= outputs["answer_start"][:, None],
                                   positions <= outputs["answer_end"][:, None])
        answer_ids = tf.ragged.boolean_mask(inputs["input_ids"], in_answer)
        outputs["answer"] = self.preprocessor.tokenizer.detokenize(answer_ids)
        return outputs


def signatures_for(model, preprocessor=None, labels=None, **options):
    """The `BertSignatures` of `model`, by its type.

    Args:
        model: a `BertEncoder`, `BertPretrainingModel`, `BertClassifier`,
            `BertTokenClassifier` or `BertSpanExtractor`.
        preprocessor: a `BertTextPreprocessor`, or None (ids signatures).
        labels: classifiers: the label of each class.
        **options: encoders: `pooling`, `normalize`; pretraining models:
            `top_k`, `max_masks` (and the encoder's); span extractors:
            `max_answer_length`.
    """
    if isinstance(model, BertPretrainingModel):
        return BertFillMaskSignatures(model, preprocessor, **options)
    if isinstance(model, BertEncoder):
        return BertEncoderSignatures(model, preprocessor, **options)
    if isinstance(model, (BertClassifier, BertTokenClassifier)):
        return BertClassifierSignatures(model, preprocessor, labels=labels, **options)
    if isinstance(model, BertSpanExtractor):
        return BertSpanSignatures(model, preprocessor, **options)
    raise TypeError(
        f"No serving signatures for a {type(model).__name__}; export a BertEncoder, "
        "BertPretrainingModel, BertClassifier, BertTokenClassifier or BertSpanExtractor."
    )


def trim_to_longest(inputs):
    """Packed inputs cut to the longest row's length (at least 1).

    A text's padding changes nothing a sequence classifier outputs (the
    encoder masks it out), but costs as much as text: cut, a batch of short
    sentences runs on their length, not on the preprocessor's
    `sequence_length`.

    Example:

    >>> inputs = {"input_ids": tf.constant([[2, 7, 3, 0], [2, 3, 0, 0]]),
    ...           "input_mask": tf.constant([[1, 1, 1, 0], [1, 1, 0, 0]]),
    ...           "segment_ids": tf.zeros([2, 4], tf.int32)}
    >>> trim_to_longest(inputs)["input_ids"].numpy().tolist()
    [[2, 7, 3], [2, 3, 0]]
    """
    width = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 1)
    return {name: values[:, :width] for name, values in inputs.items()}

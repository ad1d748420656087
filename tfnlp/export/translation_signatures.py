"""The signatures of a translation SavedModel: text in, text out, and ids.

| signature          | inputs                                   | outputs |
|--------------------|------------------------------------------|---------|
| `serving_default`  | `inputs`: string `[batch]` source sentences | `translations`: string `[batch]`; `scores`: float32 `[batch]` |
| `translate_ids`    | `source_ids`: int32 `[batch, length]`, 0-padded, each ending with EOS (3) | `ids`: int32 `[batch, max_length]` (ending with EOS, 0-padded); `lengths`: int32 `[batch]`; `scores`: float32 `[batch]` |
| `translate_with_alignments` | `inputs`: string `[batch]` | `translations`, `scores` as above; `alignments`: float32 `[batch, max_length, source_length]` (row t: where the model looked in the source when it wrote output token t); `source_pieces`: string `[batch, source_length]`, `target_pieces`: string `[batch, max_length]` (the SentencePiece pieces, "" for padding) |

The text signature tokenizes with the SentencePiece model held in the graph
(tensorflow-text's `SentencepieceOp`; no file is read at serving time),
appends EOS, cuts sources to `max_length` ids, decodes with the decoder
fixed at export (beam width, length penalty) and detokenizes. The score is
the decoder's ranking score of the translation: its log-probability,
length-normalised by the beam search's penalty. The alignments are the
model's `alignments` on its own translation (a teacher-forced pass, equal
to the attention the decoding used: the LSTM's attention, the
Transformer's last cross-attention averaged over heads), zero outside the
real tokens. The ids signature uses
stock TensorFlow ops only, so it runs where tensorflow-text is not
installed (TensorFlow Serving).
"""

import tensorflow as tf

from tfnlp.data.translation_schema import EOS_ID, PAD_ID
from tfnlp.export.id_checks import check_ids
from tfnlp.models.seq2seq.generation import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS, decoder_inputs

TEXT_INPUT = "inputs"


class TranslationSignatures(tf.Module):
    """Text-in/text-out and ids-in/ids-out translation with one decoder.

    Args:
        model: a `tfnlp.models.TransformerSeq2Seq` or `RNNSeq2Seq`
            (anything with their `generate` and `alignments`).
        tokenizer: the `tfnlp.text.SentencePieceTokenizer` of the model's
            vocabulary.
        decoder: the `tfnlp.decoding` decoder fixed in the export.
        max_length: the most tokens generated (and source ids read).
        max_length_a, max_length_b: at most `a * source_length + b` tokens
            are generated per sentence.

    Example (a SentencePiece model learned from two sentences, an untrained
    model; `tfnlp.export.saved_model.write_next_version` saves the
    signatures):

    >>> import io, sentencepiece
    >>> from tfnlp import decoding
    >>> from tfnlp.models import TransformerSeq2Seq
    >>> from tfnlp.text import SentencePieceTokenizer
    >>> proto = io.BytesIO()
    >>> sentencepiece.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(["A dog runs.", "Ein Hund rennt."]),
    ...     model_writer=proto, vocab_size=30, hard_vocab_limit=False,
    ...     pad_id=0, unk_id=1, bos_id=2, eos_id=3, minloglevel=2)
    >>> tokenizer = SentencePieceTokenizer(proto=proto.getvalue())
    >>> model = TransformerSeq2Seq(tokenizer.vocabulary_size, num_encoder_layers=1,
    ...     num_decoder_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)
    >>> signatures = TranslationSignatures(
    ...     model, tokenizer, decoding.BeamSearch(beam_size=2), max_length=8)
    >>> outputs = signatures.translate_text(tf.constant(["A dog runs."]))
    >>> outputs["translations"].shape, outputs["scores"].dtype.name
    (TensorShape([1]), 'float32')
    >>> sorted(signatures.signatures())
    ['serving_default', 'translate_ids', 'translate_with_alignments']

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
        - [TensorFlow Serving's SignatureDefs](
          https://www.tensorflow.org/tfx/serving/signature_defs)
    """

    def __init__(self, model, tokenizer, decoder, max_length, max_length_a=1.5,
                 max_length_b=10):
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.decoder = decoder
        self.max_length = max_length
        self.max_length_a = max_length_a
        self.max_length_b = max_length_b

    def translate_ids(self, source_ids):
        """`{"ids", "lengths", "scores"}` of the best translation per row."""
        result = self.model.generate(source_ids, self.decoder, self.max_length,
                                     self.max_length_a, self.max_length_b)
        return {
            "ids": tf.cast(result["ids"][:, 0, :], tf.int32),
            "lengths": tf.cast(result["lengths"][:, 0], tf.int32),
            "scores": tf.cast(result["scores"][:, 0], tf.float32),
        }

    def source_ids(self, text):
        """Tokenized sources with EOS, cut to `max_length`, 0-padded."""
        pieces = self.tokenizer.tokenize(text)[:, : self.max_length - 1]
        eos = tf.fill([pieces.nrows(), 1], tf.constant(EOS_ID, pieces.dtype))
        ids = tf.concat([pieces, eos], axis=1)
        return tf.cast(ids.to_tensor(default_value=PAD_ID), tf.int32)

    def translate_text(self, text):
        """`{"translations", "scores"}` of a batch of source sentences."""
        outputs = self.translate_ids(self.source_ids(text))
        return {
            "translations": self.tokenizer.detokenize(outputs["ids"]),
            "scores": outputs["scores"],
        }

    def translate_text_with_alignments(self, text):
        """`translate_text`, plus each output token's alignment over the
        source and the pieces of both sides (see the module docstring)."""
        source_ids = self.source_ids(text)
        outputs = self.translate_ids(source_ids)
        target_ids = outputs["ids"]
        alignments = tf.cast(self.model.alignments({
            ENCODER_TOKEN_IDS: source_ids,
            DECODER_TOKEN_IDS: decoder_inputs(target_ids),
        }), tf.float32)
        real_source = tf.not_equal(source_ids, PAD_ID)
        real_target = tf.not_equal(target_ids, PAD_ID)
        real = tf.logical_and(real_target[:, :, None], real_source[:, None, :])
        return {
            "translations": self.tokenizer.detokenize(target_ids),
            "scores": outputs["scores"],
            "alignments": tf.where(real, alignments, tf.zeros_like(alignments)),
            "source_pieces": self._pieces(source_ids),
            "target_pieces": self._pieces(target_ids),
        }

    def _pieces(self, ids):
        """The pieces of `ids` (`[batch, length]`), "" at padding."""
        pieces = self.tokenizer.id_to_piece(ids)
        return tf.where(tf.not_equal(ids, PAD_ID), pieces, tf.zeros_like(pieces))

    def signatures(self, text_signatures=True):
        """The concrete functions to save, by signature name."""
        on_ids = tf.function(
            lambda source_ids: self.translate_ids(
                check_ids(source_ids, self.model.vocabulary_size, "source_ids")),
            input_signature=[tf.TensorSpec([None, None], tf.int32, name="source_ids")],
        ).get_concrete_function()
        functions = {"translate_ids": on_ids}
        if text_signatures:
            functions["serving_default"] = tf.function(
                lambda inputs: self.translate_text(inputs),
                input_signature=[tf.TensorSpec([None], tf.string, name=TEXT_INPUT)],
            ).get_concrete_function()
            functions["translate_with_alignments"] = tf.function(
                lambda inputs: self.translate_text_with_alignments(inputs),
                input_signature=[tf.TensorSpec([None], tf.string, name=TEXT_INPUT)],
            ).get_concrete_function()
        else:
            functions["serving_default"] = on_ids
        return functions

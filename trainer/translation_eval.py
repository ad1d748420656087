"""Evaluation of a translation model while it trains: decode the validation
set, score it with sacreBLEU, log sample translations (a Markdown table of
source, reference and translation for the Text tab) and their alignments
(heatmaps with the source pieces and the translation's pieces on the axes,
for the Images tab; both in the `eval` run), and keep the best checkpoint.

BLEU and chrF are sacreBLEU's corpus scores with its standard signatures
(13a tokenization, cased; the lower-cased BLEU too) on detokenized text: the
hypotheses are the decoded ids detokenized by the run's SentencePiece model,
the references the validation records' target ids detokenized the same way,
which gives back each reference sentence in its normalized form (the
tokenizer is reversible; `pipelines.translation_data` documents the
normalization). To score against raw reference files instead, translate the
source file with `python -m trainer.translate_text` and run sacrebleu.
"""

import logging

import numpy as np
import sacrebleu
import tensorflow as tf

from tfnlp.data import translation_dataset
from tfnlp.data.translation_schema import INPUTS, TARGETS
from tfnlp.models.seq2seq import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS, decoder_inputs
from tfnlp.visualization import alignment_image, markdown_table
from trainer.checkpoints import BestCheckpoint

LOGGER = logging.getLogger(__name__)

# Validation pairs decoded per batch, at most (the tokens per batch are
# bounded by the reader).
EVAL_TOKENS_PER_BATCH = 4096
# The columns of the sample table in the Text tab.
SAMPLE_COLUMNS = ("#", "source", "reference", "translation")


class Translator:
    """Translates batches of source ids (numpy in, numpy out) with the
    `translate_ids` of a `tfnlp.export.TranslationSignatures`, compiled once
    per input shape.

    Args:
        signatures: the `TranslationSignatures` (model, decoder, lengths).
    """

    def __init__(self, signatures):
        self.signatures = signatures
        self.model = signatures.model
        self.max_length = signatures.max_length
        self._translate = tf.function(signatures.translate_ids, reduce_retracing=True)

    def __call__(self, source_ids):
        """The best translation of each row: `(ids, scores)` numpy arrays."""
        outputs = self._translate(tf.convert_to_tensor(source_ids, tf.int32))
        return outputs["ids"].numpy(), outputs["scores"].numpy()


def corpus_scores(hypotheses, references):
    """sacreBLEU's corpus BLEU (cased and lower-cased) and chrF."""
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "bleu_lowercase": sacrebleu.corpus_bleu(hypotheses, [references],
                                                lowercase=True).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
    }


def detokenize(tokenizer, ids):
    """Text of 0-padded id rows (`tokenizer.detokenize` drops the special ids)."""
    return [text.decode("utf-8") for text in tokenizer.detokenize(
        tf.constant(np.asarray(ids), tf.int32)).numpy()]


class TranslationEvaluator:
    """Decodes the validation shards and scores them; keeps the best checkpoint.

    Args:
        translator: a `Translator`.
        tokenizer: the run's `tfnlp.text.SentencePieceTokenizer`.
        eval_files: the validation shards.
        model_dir: the run's directory (`best/` goes there).
        sample_sentences: how many validation sentences (the first ones)
            are logged with their translations and cross-attention.
        chief: whether this process writes.
        alignment_heads: `"mean"`: one heatmap a sentence, the model's
            `alignments`; `"each"`: one a head of the Transformer's last
            cross-attention (`pictures/alignment_sentence_i/head_h`).
    """

    def __init__(self, translator, tokenizer, eval_files, model_dir, sample_sentences=3,
                 chief=True, alignment_heads="mean"):
        self.translator = translator
        self.alignment_heads = alignment_heads
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.chief = chief
        self.batches = [
            {name: batch[name].numpy() for name in (INPUTS, TARGETS)}
            for batch in translation_dataset(
                eval_files, EVAL_TOKENS_PER_BATCH, max_length=translator.max_length,
                evaluation=True)
        ]
        self.references = [
            sentence for batch in self.batches
            for sentence in detokenize(tokenizer, batch[TARGETS])
        ]
        self.samples = _first_rows(self.batches, sample_sentences)
        self.best = BestCheckpoint(model_dir, "bleu", higher_is_better=True, chief=chief)

    def translate_all(self):
        """The detokenized translation of every validation sentence."""
        hypotheses = []
        for batch in self.batches:
            ids, _ = self.translator(batch[INPUTS])
            hypotheses.extend(detokenize(self.tokenizer, ids))
        return hypotheses

    def __call__(self, step, writers, checkpoint):
        """Scores the model at `step`; logs samples and heatmaps; saves
        `checkpoint` to `model_dir/best/` when BLEU is the best so far.
        Returns the scores."""
        hypotheses = self.translate_all()
        scores = corpus_scores(hypotheses, self.references)
        if self.chief and len(self.samples[INPUTS]):  # --sample_sentences=0: none
            self._log_samples(step, writers)
        self.best.update(step, scores, checkpoint)
        return scores

    def _pieces(self, ids):
        return [piece.decode("utf-8", "replace")
                for piece in self.tokenizer.id_to_piece(tf.constant(ids, tf.int32)).numpy()]

    def _log_samples(self, step, writers):
        """Writes the sample table (`sample_translations`) and the
        alignments (`pictures/alignment_sentence_i[/head_h]`) to the eval writer."""
        source_ids = self.samples[INPUTS]
        ids, _ = self.translator(source_ids)
        sources = detokenize(self.tokenizer, source_ids)
        references = detokenize(self.tokenizer, self.samples[TARGETS])
        outputs = detokenize(self.tokenizer, ids)
        table = markdown_table(
            SAMPLE_COLUMNS, [[index, *texts] for index, texts in
                             enumerate(zip(sources, references, outputs))])
        writers.text(writers.eval, {"sample_translations": table}, step)
        writers.images(writers.eval, self._alignment_images(source_ids, ids), step)

    def _alignment_images(self, source_ids, ids):
        """`{tag: image}`: each sample's alignment, source pieces against
        the translation's."""
        images = {}
        heads = self._alignment_heads(source_ids, ids)
        for index in range(len(ids)):
            target_length = max(int(np.sum(ids[index] != 0)), 1)
            source_length = max(int(np.sum(source_ids[index] != 0)), 1)
            source_pieces = self._pieces(source_ids[index, :source_length])
            target_pieces = self._pieces(ids[index, :target_length])
            for head, weights in enumerate(heads[index]):
                name, title = f"pictures/alignment_sentence_{index}", f"Sentence {index}"
                if self.alignment_heads == "each":
                    name, title = f"{name}/head_{head}", f"{title}, head {head}"
                images[name] = alignment_image(
                    weights[:target_length, :source_length], source_pieces, target_pieces,
                    title=title, source_label="source", target_label="translation")
        return images

    def _alignment_heads(self, source_ids, ids):
        """`(batch, heads, target_length, source_length)` weights: one
        "head" (the model's alignments), or each of the last cross-attention's."""
        model = self.translator.model
        inputs = {ENCODER_TOKEN_IDS: source_ids, DECODER_TOKEN_IDS: decoder_inputs(ids)}
        if self.alignment_heads == "each":
            return np.asarray(model.cross_attention(inputs)[-1], np.float32)
        return np.asarray(model.alignments(inputs), np.float32)[:, None]


def _first_rows(batches, count):
    """The first `count` rows of the batches, 0-padded to their longest."""
    rows = {INPUTS: [], TARGETS: []}
    for batch in batches:
        for name in rows:
            rows[name].extend(list(batch[name][: count - len(rows[name])]))
    samples = {}
    for name, values in rows.items():
        values = [row[row != 0] for row in values]
        width = max([len(row) for row in values] + [1])
        samples[name] = np.array([np.pad(row, (0, width - len(row))) for row in values],
                                 np.int32).reshape(len(values), width)
    return samples

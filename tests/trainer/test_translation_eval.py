"""`trainer.translation_eval` on fixed sentences: the sacreBLEU figures of
the detokenized translations against the references, the samples, and the
best checkpoint kept across evaluations and runs.

The translations come from `ScriptedTranslator`, which answers each
validation source with a sentence the test chose, through the ids of a
real SentencePiece model, so the figures are known here without a trained
model and each test runs in about a second or less. The scripted translations
are shorter than the references and get some words' case wrong, so that
BLEU with hypotheses and references swapped, cased or not, and chrF, all
come out different (each test checks that its sentences can tell).
"""

import json
import os

import numpy as np
import pytest
import sacrebleu
import sentencepiece
import tensorflow as tf

from tests.trainer import helpers
from tests.translation_helpers import corpus_figures, dictionary_pairs, dictionary_word_model
from tests.visualization.rendered_markdown import rendered_table
from tfnlp.data.translation_schema import EOS_ID, serialize_pair
from tfnlp.models.seq2seq import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS
from tfnlp.text import SentencePieceTokenizer
from trainer import summaries
from trainer.translation_eval import TranslationEvaluator, corpus_scores
from trainer.checkpoints import BEST_DIRECTORY, BEST_FILE

PAIRS = dictionary_pairs(6, seed=2)
SOURCES = [source for source, _ in PAIRS]
REFERENCE_OF = dict(PAIRS)
assert len(REFERENCE_OF) == len(PAIRS), "the sources must differ"


def translations(quality):
    """`{source: translation}` of a scripted model: quality 0 translates as
    the references do (the figures are 100); 1 and 2 lower-case every other
    sentence's noun, stop every third sentence after its adjective (an
    untrained model stops early) and leave out the `quality` words before
    the others' full stop."""
    translated = {}
    for index, (source, reference) in enumerate(PAIRS):
        words = reference.split()
        if quality:
            if index % 2 == 0:
                words[2] = words[2].lower()
            kept = words[:2] if index % 3 == 0 else words[:-1 - quality]
            words = kept + words[-1:]
        translated[source] = " ".join(words)
    return translated


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    """A word-level SentencePiece model of the dictionary's words."""
    path = dictionary_word_model(tmp_path_factory.mktemp("vocabulary") / "words.model")
    return sentencepiece.SentencePieceProcessor(model_file=path)


@pytest.fixture(scope="module")
def tokenizer(processor):
    return SentencePieceTokenizer(proto=processor.serialized_model_proto())


def encode(processor, text):
    return processor.encode(text) + [EOS_ID]


def write_validation_shard(directory, processor, pairs=PAIRS):
    """The pairs as the one shard of `pipelines.translation_data`'s output."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "translation-00000-of-00001.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for source, target in pairs:
            writer.write(serialize_pair(encode(processor, source), encode(processor, target)))
    return path


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory, processor):
    return write_validation_shard(str(tmp_path_factory.mktemp("validation")), processor)


class UniformAttention:
    """The model's `alignments`: each output token looks at every source
    token alike."""

    def alignments(self, inputs):
        source, target = inputs[ENCODER_TOKEN_IDS], inputs[DECODER_TOKEN_IDS]
        shape = (source.shape[0], target.shape[1], source.shape[1])
        return np.full(shape, 1.0 / source.shape[1], np.float32)


class ScriptedTranslator:
    """A `Translator` stand-in: the translation of each source row is
    `self.translations[source text]`, as 0-padded ids ending with EOS."""

    def __init__(self, processor, script, max_length=64):
        self.processor = processor
        self.translations = script
        self.max_length = max_length
        self.model = UniformAttention()

    def __call__(self, source_ids):
        rows = [encode(self.processor, self.translations[self.processor.decode(
            [int(i) for i in row if i > EOS_ID])]) for row in source_ids]
        width = max([len(row) for row in rows] + [1])
        ids = np.array([row + [0] * (width - len(row)) for row in rows], np.int32)
        return ids.reshape(len(rows), width), np.zeros(len(rows), np.float32)


def expected_scores(script):
    """sacreBLEU's figures of the scripted translations, computed here."""
    return corpus_figures([script[source] for source in SOURCES],
                          [REFERENCE_OF[source] for source in SOURCES])


def assert_scores_equal(actual, expected):
    # Identical strings through the same sacreBLEU calls: the figures agree
    # to the last bit; 1e-9 allows for summing the statistics in another order.
    assert set(actual) == set(expected)
    for name in expected:
        assert abs(actual[name] - expected[name]) < 1e-9, (name, actual, expected)


def test_the_scripted_translations_tell_the_likely_mistakes_apart():
    """Swapping hypotheses and references, scoring case-blind, or scoring
    a worse script changes every figure by more than 1 point."""
    script = translations(1)
    hypotheses = [script[source] for source in SOURCES]
    references = [REFERENCE_OF[source] for source in SOURCES]
    right = expected_scores(script)
    assert 10 < right["bleu"] < 80, right
    swapped = {"bleu": sacrebleu.corpus_bleu(references, [hypotheses]).score,
               "chrf": sacrebleu.corpus_chrf(references, [hypotheses]).score}
    for name, figure in swapped.items():
        assert abs(figure - right[name]) > 1, (name, figure, right)
    assert right["bleu_lowercase"] - right["bleu"] > 1
    assert right["bleu"] - expected_scores(translations(2))["bleu"] > 1


def test_corpus_bleu_is_the_brevity_penalised_precision_of_the_hypotheses():
    # One hypothesis of 6 tokens, each n-gram found in the 7-token
    # reference: the precisions are all 1, so BLEU is the brevity penalty
    # exp(1 - 7/6) alone (worked out by hand, not by sacreBLEU). Swapped,
    # there is no penalty but the precisions fall to 6/7, 5/6, 4/5, 3/4.
    scores = corpus_scores(["the cat sat on the mat"], ["the cat sat on the mat today"])
    assert scores["bleu"] == pytest.approx(100 * np.exp(1 - 7 / 6), abs=1e-9)
    assert scores["bleu_lowercase"] == pytest.approx(100 * np.exp(1 - 7 / 6), abs=1e-9)
    swapped = corpus_scores(["the cat sat on the mat today"], ["the cat sat on the mat"])
    assert swapped["bleu"] == pytest.approx(100 * (6 / 7 * 5 / 6 * 4 / 5 * 3 / 4) ** 0.25,
                                            abs=1e-9)
    cased = corpus_scores(["The Cat sat on the mat"], ["the cat sat on the mat today"])
    # Cased, "The Cat" matches neither "the" nor "cat": 4/6, 3/5, 2/4, 1/3.
    precisions = np.array([4 / 6, 3 / 5, 2 / 4, 1 / 3])
    assert cased["bleu"] == pytest.approx(
        100 * np.exp(1 - 7 / 6) * np.exp(np.mean(np.log(precisions))), abs=1e-9)
    assert cased["bleu_lowercase"] == pytest.approx(scores["bleu"], abs=1e-9)


def test_corpus_scores_are_sacrebleus_of_the_hypotheses_against_the_references():
    script = translations(1)
    hypotheses = [script[source] for source in SOURCES]
    references = [REFERENCE_OF[source] for source in SOURCES]
    assert_scores_equal(corpus_scores(hypotheses, references), expected_scores(script))


def test_scores_the_detokenized_translations_against_the_validation_references(
        processor, tokenizer, eval_file, tmp_path):
    script = translations(1)
    evaluator = TranslationEvaluator(ScriptedTranslator(processor, script), tokenizer,
                                     [eval_file], str(tmp_path), chief=False)
    assert sorted(evaluator.references) == sorted(REFERENCE_OF.values())
    assert_scores_equal(evaluator(1, None, None), expected_scores(script))
    assert not os.path.exists(tmp_path / BEST_DIRECTORY)  # only the chief writes


@pytest.mark.parametrize("longest", [0, 1, 2])
def test_pairs_longer_than_max_length_are_scored_too(processor, tokenizer, tmp_path, longest):
    """Evaluation drops nothing: a pair of exactly `max_length` ids, and
    pairs one and two past it, are decoded and scored with the others."""
    long_source = "a big dog runs on the grass . a small man sleeps near the beach ."
    long_pair = (long_source, "ein großer Hund läuft auf dem Rasen . "
                              "ein kleiner Mann schläft neben dem Strand .")
    max_length = len(encode(processor, long_pair[1])) - longest
    path = write_validation_shard(str(tmp_path / "validation"), processor, PAIRS + [long_pair])
    script = {**translations(1), long_source: long_pair[1]}
    evaluator = TranslationEvaluator(
        ScriptedTranslator(processor, script, max_length=max_length), tokenizer, [path],
        str(tmp_path / "run"), chief=False)
    assert len(evaluator.references) == len(PAIRS) + 1
    references = {**REFERENCE_OF, long_source: long_pair[1]}
    assert_scores_equal(evaluator(1, None, None), corpus_figures(
        [script[source] for source in references], list(references.values())))


class Run:
    """The evaluator of a run's directory, with its writers and a one-variable
    checkpoint whose value is the step it was written at."""

    def __init__(self, directory, processor, tokenizer, eval_file, sample_sentences=1):
        self.directory = str(directory)
        self.translator = ScriptedTranslator(processor, translations(1))
        self.writers = summaries.SummaryWriters(self.directory)
        self.value = tf.Variable(0.0)
        self.checkpoint = tf.train.Checkpoint(value=self.value)
        self.evaluator = TranslationEvaluator(self.translator, tokenizer, [eval_file],
                                              self.directory, sample_sentences)

    def evaluate(self, step, quality):
        self.translator.translations = translations(quality)
        self.value.assign(step)
        return self.evaluator(step, self.writers, self.checkpoint)

    def best(self):
        """best.json, and the value its checkpoint holds (read here)."""
        with open(os.path.join(self.directory, BEST_DIRECTORY, BEST_FILE),
                  encoding="utf-8") as file:
            best = json.load(file)
        value = tf.Variable(-1.0)
        tf.train.Checkpoint(value=value).read(
            os.path.join(self.directory, BEST_DIRECTORY, best["checkpoint"])).assert_consumed()
        return best, float(value.numpy())


def test_keeps_the_checkpoint_of_the_best_bleu_not_a_tie_or_a_worse_one(
        processor, tokenizer, eval_file, tmp_path):
    run = Run(tmp_path, processor, tokenizer, eval_file)
    scores = {step: run.evaluate(step, quality)
              for step, quality in ((10, 2), (20, 1), (30, 1), (40, 2))}
    assert scores[20]["bleu"] > scores[10]["bleu"] > 0
    assert scores[30] == scores[20]
    best, value = run.best()
    assert best == {"step": 20, "checkpoint": best["checkpoint"], **scores[20]}
    assert value == 20
    assert run.evaluator.best.best == best


def test_the_first_evaluation_is_kept_even_at_bleu_zero(processor, tokenizer, eval_file,
                                                        tmp_path):
    run = Run(tmp_path, processor, tokenizer, eval_file)
    nothing_right = {source: "Hengst Hengst" for source in SOURCES}
    run.translator.translations = nothing_right
    run.value.assign(5)
    assert run.evaluator(5, run.writers, run.checkpoint)["bleu"] == 0.0
    best, value = run.best()
    assert (best["step"], best["bleu"], value) == (5, 0.0, 5)


def test_the_best_checkpoint_is_kept_without_sample_sentences(processor, tokenizer,
                                                               eval_file, tmp_path):
    run = Run(tmp_path, processor, tokenizer, eval_file, sample_sentences=0)
    run.evaluate(10, 1)
    best, value = run.best()
    assert (best["step"], value) == (10, 10)


def test_a_resumed_run_keeps_the_best_of_its_earlier_evaluations(
        processor, tokenizer, eval_file, tmp_path):
    first = Run(tmp_path, processor, tokenizer, eval_file)
    first.evaluate(10, 1)
    kept, _ = first.best()
    resumed = Run(tmp_path, processor, tokenizer, eval_file)
    assert resumed.evaluator.best.best == kept
    resumed.evaluate(20, 2)  # worse than step 10's
    assert resumed.best() == (kept, 10)
    better = resumed.evaluate(30, 0)
    best, value = resumed.best()
    assert (best["step"], best["bleu"], value) == (30, better["bleu"], 30)


@pytest.mark.parametrize("sample_sentences", [1, len(PAIRS), len(PAIRS) + 1])
def test_logs_each_sample_with_its_own_reference_and_translation(
        processor, tokenizer, eval_file, tmp_path, sample_sentences):
    run = Run(tmp_path, processor, tokenizer, eval_file, sample_sentences)
    run.evaluate(7, 1)
    run.writers.close()
    evaluation = helpers.tensorboard_values(str(tmp_path), "eval")
    [(step, table)] = evaluation["sample_translations"]
    assert step == 7
    header, *rows = rendered_table(table.item().decode("utf-8"))
    assert header == ["#", "source", "reference", "translation"]
    assert len(rows) == min(sample_sentences, len(PAIRS))
    script = translations(1)
    for index, (number, source, reference, output) in enumerate(rows):
        assert number == str(index)
        assert (reference, output) == (REFERENCE_OF[source], script[source])
    alignments = sorted(tag for tag in evaluation if tag.startswith("pictures/alignment_"))
    assert alignments == [f"pictures/alignment_sentence_{index}" for index in range(len(rows))]


def test_no_samples_are_logged_for_sample_sentences_0(processor, tokenizer, eval_file, tmp_path):
    run = Run(tmp_path, processor, tokenizer, eval_file, sample_sentences=0)
    assert run.evaluate(7, 1)["bleu"] > 0
    run.writers.close()
    assert not helpers.tensorboard_values(str(tmp_path), "eval")
    assert not helpers.tensorboard_values(str(tmp_path), "train")

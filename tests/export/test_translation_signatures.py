"""`TranslationSignatures` in-process: no SavedModel, no server, no Beam job.

A SentencePiece model learned in memory from six sentences and a tiny
random-weight `RNNSeq2Seq` keep these tests at a few seconds, so that
mutation testing of tfnlp/export/translation_signatures.py is cheap. The
references are built independently of the code under test: source ids and
pieces with the Python `sentencepiece` package (the signatures use
tensorflow-text's op), the length bound from its rule written out here, the
detokenized text with `sentencepiece` again, and the alignments' teacher
forcing with decoder inputs shifted in numpy.

The model's weights are drawn from a normal of standard deviation 1 (Keras'
small initial weights give next-token distributions so flat that every
translation is the same few tokens), and its output bias rules out PAD,
UNK and BOS, as training would: `translator` also gets EOS's bias 0, so
that some translations end with EOS before their length bound and others
reach it; `never_ending` rules EOS out as well, so that every translation
is exactly as long as its bound.
"""

import argparse
import math

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from tests.text.sentencepiece_models import train_model
from tfnlp import decoding
from tfnlp.data.translation_schema import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from tfnlp.export.translation_signatures import TranslationSignatures
from tfnlp.models import RNNSeq2Seq
from tfnlp.models.seq2seq.generation import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS
from tfnlp.text import SentencePieceTokenizer
from trainer.tasks.translation import add_decoding_flags

TRAINING_SENTENCES = [
    "A dog runs in the park.", "Ein Hund rennt im Park.",
    "Two men play football on a green field.",
    "Zwei Männer spielen Fußball auf einem grünen Feld.",
    "A woman reads a book.", "Eine Frau liest ein Buch.",
]
MAX_LENGTH = 10
# At most ceil(1.25 * n) + 1 tokens for a source of n pieces: 9, 10 and 11
# (max_length - 1, max_length and one more) for 6, 7 and 8 pieces.
MAX_LENGTH_A, MAX_LENGTH_B = 1.25, 1
NEVER = -1e9  # The output bias of a token the model must not write.
# "Ein" is one piece: texts of 0, 9 (max_length - 1: the longest kept
# whole), 10 (one piece cut) and 29 pieces (19 cut), and one of 11.
TEXTS = ["", "A dog runs.", " ".join(["Ein"] * (MAX_LENGTH - 1)), " ".join(["Ein"] * MAX_LENGTH),
         TRAINING_SENTENCES[2]]


@pytest.fixture(scope="module")
def proto():
    return train_model(TRAINING_SENTENCES, vocab_size=60, hard_vocab_limit=False,
                       pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID)


@pytest.fixture(scope="module")
def processor(proto):
    """The Python `sentencepiece` processor: the references' tokenizer."""
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


@pytest.fixture(scope="module")
def tokenizer(proto):
    return SentencePieceTokenizer(proto=proto)


def tiny_translation_model(vocabulary_size, end_bias):
    """A random-weight 1-layer `RNNSeq2Seq` with Luong attention that never
    writes PAD, UNK or BOS, and whose EOS logit has the bias `end_bias`."""
    model = RNNSeq2Seq(vocabulary_size, attention="luong_general", embedding_dim=8,
                       hidden_dim=8, num_layers=1)
    rng = np.random.default_rng(1)
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    bias = model.output_projection.bias.numpy()
    bias[[PAD_ID, UNK_ID, BOS_ID]] = NEVER
    bias[EOS_ID] = end_bias
    model.output_projection.bias.assign(bias)
    return model


def signatures_of(model, tokenizer, decoder=None):
    return TranslationSignatures(
        model, tokenizer, decoder or decoding.BeamSearch(beam_size=2, alpha=0.6),
        max_length=MAX_LENGTH, max_length_a=MAX_LENGTH_A, max_length_b=MAX_LENGTH_B)


@pytest.fixture(scope="module")
def translator(tokenizer):
    return signatures_of(tiny_translation_model(tokenizer.vocabulary_size, end_bias=0.0),
                         tokenizer)


@pytest.fixture(scope="module")
def never_ending(tokenizer):
    return signatures_of(tiny_translation_model(tokenizer.vocabulary_size, end_bias=NEVER),
                         tokenizer)


@pytest.fixture(scope="module")
def ids_functions(translator):
    """The concrete functions of an export without text signatures."""
    return translator.signatures(text_signatures=False)


def padded(rows):
    width = max(map(len, rows))
    return np.array([row + [PAD_ID] * (width - len(row)) for row in rows], np.int32)


def reference_source_ids(processor, texts):
    """The pieces of each text cut to MAX_LENGTH - 1, then EOS, 0-padded."""
    return padded([processor.encode(text)[: MAX_LENGTH - 1] + [EOS_ID] for text in texts])


def until_end(row):
    """The ids of an output row before its EOS and padding."""
    row = list(row)
    return row[: row.index(EOS_ID)] if EOS_ID in row else [token for token in row if token]


def length_bound(source_pieces):
    """The most tokens generated for a source of `source_pieces` pieces
    (EOS not counted): min(max_length, ceil(a * n) + b)."""
    return min(MAX_LENGTH, math.ceil(MAX_LENGTH_A * source_pieces) + MAX_LENGTH_B)


def test_source_ids_are_the_pieces_cut_to_max_length_minus_one_then_eos_then_padding(
        translator, processor):
    assert [len(processor.encode(text)) for text in TEXTS] == [0, 11, MAX_LENGTH - 1,
                                                               MAX_LENGTH, 29]
    ids = translator.source_ids(tf.constant(TEXTS))
    assert ids.dtype == tf.int32
    np.testing.assert_array_equal(ids.numpy(), reference_source_ids(processor, TEXTS))
    assert ids.shape == (len(TEXTS), MAX_LENGTH)
    # Short texts are padded to the longest of their batch, not to max_length.
    short = TEXTS[:1] + ["Ein Ein"]
    np.testing.assert_array_equal(translator.source_ids(tf.constant(short)).numpy(),
                                  reference_source_ids(processor, short))
    assert translator.source_ids(tf.constant(short)).shape == (2, 3)


def test_translate_ids_is_the_decoders_best_hypothesis_with_the_signatures_settings(
        tokenizer, processor):
    # An n-best decoder: the signature returns the first (best) hypothesis.
    decoder = decoding.BeamSearch(beam_size=3, alpha=0.6, num_return_sequences=2)
    model = tiny_translation_model(tokenizer.vocabulary_size, end_bias=0.0)
    source_ids = reference_source_ids(processor, TEXTS)
    outputs = signatures_of(model, tokenizer, decoder).translate_ids(tf.constant(source_ids))
    assert {name: tensor.dtype for name, tensor in outputs.items()} == {
        "ids": tf.int32, "lengths": tf.int32, "scores": tf.float32}
    expected = model.generate(source_ids, decoder, MAX_LENGTH, MAX_LENGTH_A, MAX_LENGTH_B)
    np.testing.assert_array_equal(outputs["ids"].numpy(), expected["ids"][:, 0].numpy())
    np.testing.assert_array_equal(outputs["lengths"].numpy(), expected["lengths"][:, 0].numpy())
    np.testing.assert_array_equal(outputs["scores"].numpy(), expected["scores"][:, 0].numpy())
    # The second hypotheses differ, so taking another would show.
    assert (expected["scores"][:, 1].numpy() < expected["scores"][:, 0].numpy()).all()


def test_every_translation_of_a_model_that_never_ends_is_as_long_as_its_bound(never_ending,
                                                                            processor):
    pieces = processor.encode(TRAINING_SENTENCES[2])
    counts = list(range(MAX_LENGTH))  # 0 to max_length - 1 pieces, as sources are cut.
    bounds = [length_bound(count) for count in counts]
    # Uncapped, the bounds pass max_length - 1, max_length and one more;
    # ceil and floor differ for 1 piece (2 + 1 tokens, not 1 + 1).
    uncapped = [math.ceil(MAX_LENGTH_A * count) + MAX_LENGTH_B for count in counts]
    assert {MAX_LENGTH - 1, MAX_LENGTH, MAX_LENGTH + 1} <= set(uncapped)
    assert bounds[:2] == [1, 3]
    outputs = never_ending.translate_ids(
        tf.constant(padded([pieces[:count] + [EOS_ID] for count in counts])))
    assert outputs["lengths"].numpy().tolist() == bounds
    ids = outputs["ids"].numpy()
    assert ids.shape == (len(counts), MAX_LENGTH)
    assert (ids != PAD_ID).sum(axis=1).tolist() == bounds
    for row, bound in zip(ids, bounds):
        assert EOS_ID not in row[:bound] and not row[bound:].any()


def test_translate_text_detokenizes_the_translation_of_the_cut_source_ids(translator,
                                                                         processor):
    text_outputs = translator.translate_text(tf.constant(TEXTS))
    ids_outputs = translator.translate_ids(tf.constant(reference_source_ids(processor, TEXTS)))
    rows = ids_outputs["ids"].numpy().tolist()
    # Some translations end with EOS before their bound, others reach it.
    lengths = ids_outputs["lengths"].numpy()
    ended = [EOS_ID in row for row in rows]
    assert any(ended) and not all(ended)
    assert [processor.decode(until_end(row)).encode("utf-8") for row in rows] == (
        text_outputs["translations"].numpy().tolist())
    np.testing.assert_array_equal(text_outputs["scores"].numpy(), ids_outputs["scores"].numpy())
    assert len(set(lengths.tolist())) > 1


def pieces_of(processor, ids):
    """The pieces of `ids` (a matrix), b"" for padding."""
    return [[processor.id_to_piece(int(token)).encode("utf-8") if token != PAD_ID else b""
             for token in row] for row in ids]


def test_alignments_are_the_models_on_its_translation_and_zero_outside_real_tokens(
        translator, processor):
    outputs = translator.translate_text_with_alignments(tf.constant(TEXTS))
    source_ids = reference_source_ids(processor, TEXTS)
    translated = translator.translate_ids(tf.constant(source_ids))
    target_ids = translated["ids"].numpy()
    assert outputs["translations"].numpy().tolist() == [
        processor.decode(until_end(row)).encode("utf-8") for row in target_ids]
    np.testing.assert_array_equal(outputs["scores"].numpy(), translated["scores"].numpy())
    assert outputs["source_pieces"].numpy().tolist() == pieces_of(processor, source_ids)
    assert outputs["target_pieces"].numpy().tolist() == pieces_of(processor, target_ids)
    assert b"</s>" in outputs["target_pieces"].numpy()  # EOS is a real target token.

    alignments = outputs["alignments"].numpy()
    assert alignments.shape == (len(TEXTS), MAX_LENGTH, MAX_LENGTH)
    real = (target_ids != PAD_ID)[:, :, None] & (source_ids != PAD_ID)[:, None, :]
    assert not real.all() and (target_ids == PAD_ID).any()  # Both sides have padding.
    assert not alignments[~real].any()
    # Teacher forcing on the translation: BOS, then all but its last token.
    decoder_inputs = np.concatenate(
        [np.full((len(TEXTS), 1), BOS_ID), target_ids[:, :-1]], axis=1)
    decoder_inputs[target_ids == PAD_ID] = PAD_ID
    expected = translator.model.alignments({ENCODER_TOKEN_IDS: source_ids,
                                            DECODER_TOKEN_IDS: decoder_inputs}).numpy()
    # Measured: equal to the last bit (the same graph on the same inputs).
    np.testing.assert_allclose(alignments[real], expected[real], rtol=0, atol=1e-6)
    # Each real output token's attention is a distribution over the real
    # source. Measured: the sums are 1 within 1.2e-7.
    real_targets = target_ids != PAD_ID
    np.testing.assert_allclose(alignments.sum(axis=2)[real_targets], 1.0, atol=1e-6)


def test_without_text_signatures_serving_default_is_translate_ids(ids_functions, translator,
                                                                 processor):
    assert sorted(ids_functions) == ["serving_default", "translate_ids"]
    source_ids = tf.constant(reference_source_ids(processor, TEXTS))
    expected = translator.translate_ids(source_ids)
    for name in ("serving_default", "translate_ids"):
        function = ids_functions[name]
        assert tf.nest.flatten(function.structured_input_signature) == [
            tf.TensorSpec([None, None], tf.int32, name="source_ids")]
        outputs = function(source_ids=source_ids)
        for key in ("ids", "lengths"):
            np.testing.assert_array_equal(outputs[key].numpy(), expected[key].numpy())
        # Measured: the graph's scores are the eager ones within 1.2e-7.
        np.testing.assert_allclose(outputs["scores"].numpy(), expected["scores"].numpy(),
                                   rtol=1e-6)


def test_the_ids_signature_takes_ids_from_0_to_the_vocabulary_size_minus_1(ids_functions,
                                                                           tokenizer):
    size = tokenizer.vocabulary_size
    translate_ids = ids_functions["translate_ids"]
    outputs = translate_ids(source_ids=tf.constant([[size - 1, EOS_ID], [EOS_ID, PAD_ID]]))
    assert outputs["ids"].shape == (2, MAX_LENGTH)
    expected = f"source_ids must hold ids from 0 to {size - 1}; it has "
    for bad_id, problem in ((size, f"one of {size} or more"), (-1, "a negative one")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=expected + problem):
            translate_ids(source_ids=tf.constant([[5, bad_id, EOS_ID]]))


def test_the_default_length_bound_is_the_trainers():
    """A `TranslationSignatures` built without a bound decodes as a run
    with the trainer's default --max_length_a and --max_length_b."""
    parser = argparse.ArgumentParser()
    add_decoding_flags(parser)
    flags = parser.parse_args([])
    signatures = TranslationSignatures(None, None, decoding.GreedySearch(), max_length=8)
    assert (signatures.max_length_a, signatures.max_length_b) == (
        flags.max_length_a, flags.max_length_b)

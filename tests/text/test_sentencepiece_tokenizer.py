"""Tests of `tfnlp.text.SentencePieceTokenizer` with the model that the
translation-data job learned from Multi30k train (shared, 8,000 pieces, unigram,
byte fallback; the job runs once per test process,
`tests.text.sentencepiece_models`).

Measured on every line of Multi30k train and val, both languages (60,028
lines): detokenize(tokenize(x)) is SentencePiece's normalization of x for
all of them; the normalization changes 131 lines, each only by collapsing
double spaces or trimming; the ids hold no [UNK] and no byte piece (every
character of val is in train).
"""

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from tests.text.sentencepiece_models import (
    LANGUAGES, multi30k_lines, multi30k_shared_model, train_model)
from tfnlp.data import translation_schema
from tfnlp.text import SentencePieceTokenizer


@pytest.fixture(scope="module")
def proto(shared_data_dir):
    return multi30k_shared_model(shared_data_dir)


@pytest.fixture(scope="module")
def tokenizer(proto):
    return SentencePieceTokenizer(proto=proto)


@pytest.fixture(scope="module")
def processor(proto):
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


@pytest.fixture(scope="module")
def multi30k(shared_data_dir):
    """Every line of train and val, both languages."""
    return [line for split in ("train", "val") for language in LANGUAGES
            for line in multi30k_lines(shared_data_dir, split, language)]


def normalized(processor, text):
    """SentencePiece's normalization of `text` as detokenized text: its
    normalizer marks spaces with U+2581 and adds one in front."""
    text = processor.normalize(text).replace("\u2581", " ")
    return text[1:] if text.startswith(" ") else text


def decoded(strings):
    return [value.decode("utf-8") for value in strings.numpy().tolist()]


def test_every_multi30k_line_round_trips_to_its_normalized_text(
        tokenizer, processor, multi30k):
    ids = tokenizer.tokenize(tf.constant(multi30k))
    back = decoded(tokenizer.detokenize(ids))
    expected = [normalized(processor, line) for line in multi30k]
    assert len(multi30k) == 60_028
    assert back == expected
    changed = [(line, text) for line, text in zip(multi30k, expected) if line != text]
    assert len(changed) == 131
    assert all(" ".join(line.split()) == text for line, text in changed)
    flat = ids.flat_values.numpy()
    is_byte = np.array([processor.is_byte(i) for i in range(processor.get_piece_size())])
    assert len(flat) == 900_073
    assert int((flat == tokenizer.UNK_ID).sum()) == 0
    assert int(is_byte[flat].sum()) == 0


def test_ids_are_those_of_python_sentencepiece_on_every_line(
        tokenizer, processor, multi30k):
    assert tokenizer.tokenize(tf.constant(multi30k)).to_list() == processor.encode(multi30k)


def test_characters_outside_the_pieces_survive_as_bytes(tokenizer, processor):
    texts = ["Ein Schneemann ☃ und ein 🐕 im 雪.", "مرحبا بالعالم",
             "Ｆｕｌｌ　width ﬁ", "tab\tand\x01control", "  spaces   around  ", ""]
    ids = tokenizer.tokenize(tf.constant(texts))
    assert ids.to_list() == processor.encode(texts)
    assert decoded(tokenizer.detokenize(ids)) == [normalized(processor, t) for t in texts]
    assert decoded(tokenizer.detokenize(ids))[2:5] == [
        "Full width fi", "tab andcontrol", "spaces around"]
    pieces = [p.decode() for p in tokenizer.id_to_piece(ids[0]).numpy().tolist()]
    assert "<0xE2>" in pieces and "<0xF0>" in pieces
    assert tokenizer.UNK_ID not in ids.flat_values.numpy().tolist()


def test_eos_is_appended_on_request_and_any_shape_works(tokenizer, processor):
    eos = translation_schema.EOS_ID
    ids = tokenizer.tokenize(tf.constant(["A dog.", "Ein Hund."]), add_eos=True)
    assert ids.to_list() == [processor.encode("A dog.") + [eos],
                             processor.encode("Ein Hund.") + [eos]]
    assert ids.dtype == tf.int32
    scalar = tokenizer.tokenize("A dog.", add_eos=True)
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == ids.to_list()[0]
    grid = tokenizer.tokenize(tf.constant([["A dog.", ""], ["Ein Hund.", "x"]]), add_eos=True)
    assert grid.shape.rank == 3
    assert grid.to_list()[0] == [processor.encode("A dog.") + [eos], [eos]]
    adding = SentencePieceTokenizer(proto=tokenizer.proto, add_eos=True)
    assert adding(tf.constant(["A dog."])).to_list() == ids.to_list()[:1]
    assert tokenizer(tf.constant(["A dog."])).to_list() == [processor.encode("A dog.")]


def test_detokenize_stops_at_eos_and_skips_pad_and_bos(tokenizer, processor):
    dog, house = processor.encode("A dog runs."), processor.encode("Ein Haus.")
    pad, bos, eos = 0, 2, 3
    # Decoder outputs: BOS first, EOS, then anything, padded.
    width = max(len(dog), len(house)) + 5
    rows = [[bos] + dog + [eos] + house, [bos] + house + [eos, eos]]
    dense = tf.constant([row + [pad] * (width - len(row)) for row in rows], tf.int64)
    expected = ["A dog runs.", "Ein Haus."]
    assert decoded(tokenizer.detokenize(dense)) == expected
    assert decoded(tokenizer.detokenize(tf.ragged.constant(rows))) == expected
    # Without EOS the whole row is text; PAD inside a row is skipped.
    assert decoded(tokenizer.detokenize(tf.ragged.constant(
        [dog[:2] + [pad] + dog[2:], []]))) == ["A dog runs.", ""]
    assert tokenizer.detokenize(tf.constant(rows[0])).numpy().decode() == "A dog runs."
    beams = tf.stack([dense, dense])  # [beams, batch, length]
    assert tokenizer.detokenize(beams).shape == (2, 2)
    assert decoded(tokenizer.detokenize(beams)[1]) == expected
    nested = tokenizer.tokenize(tf.constant([["A dog runs.", "Ein Haus."], ["x", ""]]))
    assert tokenizer.detokenize(nested).to_list() == [
        [b"A dog runs.", b"Ein Haus."], [b"x", b""]]


def test_special_ids_vocabulary_and_pieces(tokenizer):
    assert (tokenizer.PAD_ID, tokenizer.UNK_ID, tokenizer.BOS_ID, tokenizer.EOS_ID) == (
        0, 1, 2, 3)
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (
        0, 1, 2, 3)
    assert tokenizer.vocabulary_size == 8000
    pieces = tokenizer.id_to_piece(tf.constant([0, 1, 2, 3, 4, 259])).numpy().tolist()
    assert pieces == [b"<pad>", b"<unk>", b"<s>", b"</s>", b"<0x00>", b"<0xFF>"]


def test_a_model_with_other_special_ids_is_rejected_with_the_fix(shared_data_dir):
    lines = multi30k_lines(shared_data_dir, "val", "en")
    default_ids = train_model(lines, vocab_size=500)  # SentencePiece's: unk 0, bos 1, eos 2
    with pytest.raises(ValueError, match=r"pad=-1, unk=0, bos=1, eos=2.*pad_id=0, "
                       r"unk_id=1, bos_id=2, eos_id=3"):
        SentencePieceTokenizer(proto=default_ids)
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SentencePieceTokenizer(proto=b"not a model")
    with pytest.raises(ValueError, match="exactly one of proto"):
        SentencePieceTokenizer()


def test_model_file_and_keras_config_round_trip(tokenizer, tmp_path):
    path = tmp_path / "sentencepiece.model"
    path.write_bytes(tokenizer.proto)
    from_file = SentencePieceTokenizer(model_file=str(path))
    text = tf.constant(["Zwei Männer stehen am Herd."])
    assert from_file.tokenize(text).to_list() == tokenizer.tokenize(text).to_list()
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(from_file))
    assert isinstance(revived, SentencePieceTokenizer)
    assert revived.proto == tokenizer.proto
    assert revived(text).to_list() == tokenizer.tokenize(text).to_list()


def test_keras_file_holds_the_model(tokenizer, tmp_path):
    model_path = tmp_path / "copy.model"
    model_path.write_bytes(tokenizer.proto)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, SentencePieceTokenizer(model_file=str(model_path),
                                                       add_eos=True)(inputs))
    model.save(tmp_path / "tokenizer.keras")
    model_path.unlink()
    loaded = keras.saving.load_model(tmp_path / "tokenizer.keras")
    text = tf.constant(["Ein Hund rennt."])
    assert loaded(text).to_list() == tokenizer.tokenize(text, add_eos=True).to_list()


def test_saved_model_embeds_the_model_and_runs_both_ways(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(strings):
        return {"ids": tokenizer.tokenize(strings, add_eos=True).to_tensor()}

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def detokenize(ids):
        return {"text": tokenizer.detokenize(ids)}

    module.tokenize, module.detokenize = tokenize, detokenize
    tf.saved_model.save(module, str(tmp_path), signatures={
        "tokenize": tokenize, "detokenize": detokenize})
    assert not (tmp_path / "assets").exists() or not list((tmp_path / "assets").iterdir())
    loaded = tf.saved_model.load(str(tmp_path))
    text = tf.constant(["Ein Hund rennt.", "Un chien ☃."])
    ids = loaded.signatures["tokenize"](text)["ids"]
    assert ids.numpy().tolist() == tokenizer.tokenize(text, add_eos=True).to_tensor(
        ).numpy().tolist()
    assert decoded(loaded.signatures["detokenize"](ids)["text"]) == [
        "Ein Hund rennt.", "Un chien ☃."]


def test_works_in_tf_data(tokenizer, processor):
    lines = ["A dog.", "Zwei Männer."]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(2).map(
        lambda text: tokenizer.tokenize(text, add_eos=True))
    [batch] = list(dataset)
    assert batch.to_list() == [ids + [3] for ids in processor.encode(lines)]


def test_seeding_after_building_keeps_each_model(proto, processor, shared_data_dir):
    # Seeding clears TensorFlow's kernel cache, which used to delete the
    # model resource of a tokenizer built before it.
    lines = multi30k_lines(shared_data_dir, "val", "en")[:50]
    other_proto = train_model(lines, vocab_size=300, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                              byte_fallback=True)
    tokenizer = SentencePieceTokenizer(proto=proto)
    other = SentencePieceTokenizer(proto=other_proto)
    keras.utils.set_random_seed(7)
    text = ["A dog runs on the beach.", "Zwei Männer."]
    assert tokenizer.tokenize(tf.constant(text)).to_list() == processor.encode(text)
    other_processor = sentencepiece.SentencePieceProcessor(model_proto=other_proto)
    assert other.tokenize(tf.constant(text)).to_list() == other_processor.encode(text)
    assert other_processor.encode(text) != processor.encode(text)

"""`LanguageModelSignatures`: generation and scoring exported as signatures
that load with TensorFlow and tensorflow-text alone."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import REPOSITORY
from tests.export.helpers import constant_language_model, run_in_new_process
from tfnlp.export.input_rules import INPUT_RULES_FILE
from tfnlp.export.language_model_signatures import LanguageModelSignatures, cut_at_stop
from tfnlp.export.saved_model import write_next_version
from tfnlp.models import GPTCausalLM
from tfnlp.text import load_language_model_tokenizer

CONTEXT = 32
MAX_NEW_TOKENS = 12
TEXT = (REPOSITORY / "demo" / "data" / "tinyshakespeare.txt").read_text()[:4000]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A character-level data directory of `pipelines.lm_data`."""
    from pipelines import lm_data

    folder = tmp_path_factory.mktemp("lm_data")
    (folder / "text.txt").write_text(TEXT)
    lm_data.main([f"--input_file={folder / 'text.txt'}", f"--output_dir={folder / 'data'}",
                  "--document_boundary=file", "--sequence_length=16", "--num_shards=1"])
    return folder / "data"


@pytest.fixture(scope="module")
def tokenizer(data_dir):
    return load_language_model_tokenizer(str(data_dir))


@pytest.fixture(scope="module")
def model(tokenizer):
    # Large initial weights make the next-token distributions far from
    # uniform, so prompts and seeds visibly change what is sampled; the
    # seed makes them the same whatever ran before in this process.
    keras.utils.set_random_seed(0)
    model = GPTCausalLM.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size,
                                    max_sequence_length=CONTEXT, initializer_range=0.5)
    model(np.zeros((1, 4), "int32"))
    return model


@pytest.fixture(scope="module")
def signatures(model, tokenizer):
    return LanguageModelSignatures(model, tokenizer, max_new_tokens=MAX_NEW_TOKENS,
                                   defaults={"temperature": 0.9, "top_p": 0.95})


@pytest.fixture(scope="module")
def export_dir(signatures, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm_export")
    write_next_version(str(folder), signatures.signatures(), {"tokenizer": tokenizer},
                       signatures.extra_files())
    return folder / "1"


def options(rows, **values):
    """Per-example option tensors for `generate_with_options`."""
    defaults = dict(temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS,
                    seed=7, stop="")
    defaults.update(values)
    dtypes = dict(temperature=tf.float32, top_k=tf.int32, top_p=tf.float32,
                  max_new_tokens=tf.int32, seed=tf.int64, stop=tf.string)
    return {name: tf.constant(value if isinstance(value, list) else [value] * rows,
                              dtypes[name]) for name, value in defaults.items()}


def test_a_prompt_starts_after_the_end_of_document_id_and_keeps_its_last_ids(
        signatures, tokenizer):
    long_prompt = "x" * 40
    ids, lengths = signatures.prompt_ids(tf.constant(["ab", long_prompt, ""]))
    eod = tokenizer.end_of_document_id
    width = CONTEXT - MAX_NEW_TOKENS + 1
    assert ids.shape == (3, width)
    assert lengths.numpy().tolist() == [3, width, 1]
    x = tokenizer.tokenize(tf.constant(["x"])).numpy()[0][0]
    a, b = tokenizer.tokenize(tf.constant(["ab"])).numpy()[0]
    assert ids.numpy()[0, :3].tolist() == [eod, a, b]
    assert ids.numpy()[1].tolist() == [x] * width  # the end of the long prompt
    assert ids.numpy()[2, 0] == eod and not ids.numpy()[2, 1:].any()



def test_a_prompt_that_exactly_fills_the_width_keeps_its_end_of_document_id(
        signatures, tokenizer):
    # With the end-of-document id first, prompts of width - 1 and width ids
    # are whole; one of width + 1 ids loses that id, and only that id.
    width = CONTEXT - MAX_NEW_TOKENS + 1
    texts = [TEXT[:width - 2], TEXT[:width - 1], TEXT[:width]]
    ids, lengths = signatures.prompt_ids(tf.constant(texts))
    assert lengths.numpy().tolist() == [width - 1, width, width]
    eod = tokenizer.end_of_document_id
    for row, text in enumerate(texts):
        text_ids = tokenizer.tokenize(tf.constant([text])).numpy()[0].tolist()
        expected = ([eod] + text_ids)[-width:]
        assert ids.numpy()[row].tolist() == expected + [0] * (width - len(expected))

def test_a_seed_reproduces_a_sample_alone_or_in_a_batch(signatures):
    alone = signatures.generate_with_options(tf.constant(["ROMEO:"]), **options(1, seed=11))
    batch = signatures.generate_with_options(
        tf.constant(["To be, or", "ROMEO:"]), **options(2, seed=[3, 11]))
    assert batch["completions"].numpy()[1] == alone["completions"].numpy()[0]
    other = signatures.generate_with_options(tf.constant(["ROMEO:"]), **options(1, seed=12))
    assert other["completions"].numpy()[0] != alone["completions"].numpy()[0]


def test_each_example_gets_at_most_its_max_new_tokens(signatures, tokenizer):
    outputs = signatures.generate_with_options(
        tf.constant(["A", "A", "A"]), **options(3, max_new_tokens=[1, 5, 500]))
    counts = outputs["new_tokens"].numpy().tolist()
    assert counts[0] == 1 and counts[1] <= 5 and counts[2] <= MAX_NEW_TOKENS
    texts = [text.decode() for text in outputs["completions"].numpy()]
    assert len(tokenizer.tokenize(tf.constant(texts[:1])).numpy()[0]) <= 1


def test_a_completion_is_cut_before_its_stop_string():
    cut = cut_at_stop(tf.constant(["one\ntwo\nthree", "no stop here", "stop"]),
                      tf.constant(["\n", "", "stop"]))
    assert cut.numpy().tolist() == [b"one", b"no stop here", b""]


@pytest.fixture(scope="module")
def repeats_a(tokenizer):
    """A model for which <unk> and <pad> are the likeliest next tokens,
    then "a", by far: a generator that suppresses the first two writes
    "aaa..." whatever the sampling options."""
    favoured = {tokenizer.unknown_id: 50.0, tokenizer.pad_id: 45.0, "a": 40.0}
    return constant_language_model(tokenizer, favoured, CONTEXT)


def test_the_tokenizer_s_non_text_ids_are_never_generated(repeats_a, tokenizer):
    signatures = LanguageModelSignatures(repeats_a, tokenizer, max_new_tokens=MAX_NEW_TOKENS)
    assert signatures.decoder.suppressed_token_ids == tokenizer.non_text_ids == (0, 1)
    # Traced: an eager decoding loop takes seconds a step.
    outputs = tf.function(signatures.generate_with_options)(
        tf.constant(["ROMEO:", ""]), **options(2))
    assert [text.decode() for text in outputs["completions"].numpy()] == [
        "a" * MAX_NEW_TOKENS] * 2
    assert outputs["new_tokens"].numpy().tolist() == [MAX_NEW_TOKENS] * 2
    # Without suppression: <unk> every time, a U+FFFD each.
    unsuppressed = LanguageModelSignatures(repeats_a, tokenizer, max_new_tokens=MAX_NEW_TOKENS,
                                           suppressed_token_ids=())
    outputs = tf.function(unsuppressed.generate_with_options)(
        tf.constant(["ROMEO:"]), **options(1, top_k=1))
    assert [text.decode() for text in outputs["completions"].numpy()] == [
        "\ufffd" * MAX_NEW_TOKENS]


def test_a_stop_string_ends_generation_right_after_it_and_cuts_the_completion(
        repeats_a, tokenizer):
    signatures = LanguageModelSignatures(repeats_a, tokenizer, max_new_tokens=MAX_NEW_TOKENS,
                                         max_stop_tokens=3)
    # "a" then "a" ends with "aa" after one new token, but the first "a"
    # is the prompt's: the completion is "aa", cut to "". "aaaa" has more
    # than 3 ids and "a€" an unknown character: they only cut the
    # completion. "b" is never generated.
    prompts = ["a", "b", "b", "b", "b", "b", "b"]
    stops = ["aa", "aa", "aaa", "aaaa", "a\u20ac", "b", ""]
    outputs = signatures.generate_with_options(tf.constant(prompts),
                                               **options(7, stop=stops))
    assert outputs["new_tokens"].numpy().tolist() == [2, 2, 3] + [MAX_NEW_TOKENS] * 4
    completions = [text.decode() for text in outputs["completions"].numpy()]
    assert completions == ["", "", "", ""] + ["a" * MAX_NEW_TOKENS] * 3


def test_stop_strings_become_the_ids_that_end_generation(signatures, tokenizer):
    newline = tokenizer.tokenize(tf.constant(["\n"])).numpy()[0][0]
    stops = ["\n\n", "", "\u20ac", "a" * 17, "a" * 16]
    ids, lengths = signatures.stop_sequences(tf.constant(stops))
    assert ids.shape == (5, 16)
    assert lengths.numpy().tolist() == [2, 0, 0, 0, 16]
    assert ids.numpy()[0, :2].tolist() == [newline, newline]


@pytest.mark.parametrize("kind", ["sentencepiece", "wordpiece"])
def test_subword_stop_strings_end_generation_only_with_ids_that_give_them_back(
        kind, tmp_path):
    from tests.text.language_model_tokenizers import SPECS, data_directory

    tokenizer = load_language_model_tokenizer(str(data_directory(tmp_path, SPECS[kind]())))
    model = GPTCausalLM.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size,
                                    max_sequence_length=CONTEXT)
    signatures = LanguageModelSignatures(model, tokenizer, max_new_tokens=MAX_NEW_TOKENS)
    stops = ["speak", "\n\n", "Speak", " speak"]
    ids, lengths = signatures.stop_sequences(tf.constant(stops))
    stop_ids = [row[:length] for row, length in zip(ids.numpy().tolist(),
                                                     lengths.numpy().tolist())]
    if kind == "sentencepiece":
        pieces = [tokenizer.tokenizer.id_to_piece(row).numpy().tolist() if row else []
                  for row in stop_ids]
        # "\n\n" without the "▁" that SentencePiece puts before a text's
        # first word; " speak" would come back as "speak".
        assert pieces == [["\u2581speak".encode()], [b"<0x0A>", b"<0x0A>"],
                          [b"\xe2\x96\x81S", b"peak"], []]
    else:
        # Without line breaks, lower-cased, stripped: only "speak" comes back.
        vocabulary = tokenizer.tokenizer.vocabulary
        assert [[vocabulary[index] for index in row] for row in stop_ids] == [
            ["speak"], [], [], []]


def test_score_is_the_log_likelihood_of_each_token_after_those_before_it(
        signatures, model, tokenizer):
    texts = ["To be, or not", "ay"]
    scores = signatures.score(tf.constant(texts))
    for row, text in enumerate(texts):
        ids = [tokenizer.end_of_document_id] + tokenizer.tokenize(tf.constant([text])
                                                                  ).numpy()[0].tolist()
        logits = model(np.array([ids[:-1]], "int32")).numpy()[0].astype("float64")
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        expected = sum(log_probs[position, ids[position + 1]]
                       for position in range(len(ids) - 1))
        assert scores["token_count"].numpy()[row] == len(ids) - 1
        assert scores["log_likelihood"].numpy()[row] == pytest.approx(expected, rel=1e-4)


def test_the_export_records_its_optional_inputs_and_their_ranges(export_dir):
    record = json.loads((export_dir / "assets.extra" / INPUT_RULES_FILE).read_text())
    rules = record["generate_with_options"]
    assert rules["defaults"]["temperature"] == pytest.approx(0.9)
    assert rules["defaults"]["top_p"] == pytest.approx(0.95)
    assert rules["defaults"]["seed"] == -1
    assert rules["ranges"]["max_new_tokens"] == {"at_least": 1, "at_most": MAX_NEW_TOKENS}
    assert rules["ranges"]["temperature"] == {"above": 0}


def test_the_export_loads_with_tensorflow_alone_and_samples_as_in_process(
        signatures, export_dir, tmp_path):
    expected = signatures.generate_with_options(
        tf.constant(["ROMEO:", "A"]), **options(2, seed=[5, 6], stop=["e", ""]))
    with_options = {name: [tensor.dtype.name, tensor.numpy().tolist()]
                    for name, tensor in options(2, seed=[5, 6]).items()}
    with_options["stop"][1] = ["e", ""]
    calls = [
        {"export_dir": str(export_dir), "signature": "generate_with_options",
         "inputs": {"prompts": ["string", ["ROMEO:", "A"]], **with_options}},
        {"export_dir": str(export_dir), "signature": "generate",
         "inputs": {"prompts": ["string", ["A"]]}},
        {"export_dir": str(export_dir), "signature": "score",
         "inputs": {"texts": ["string", ["A"]]}},
    ]
    results, packages = run_in_new_process(tmp_path, calls)
    assert "tfnlp" not in packages
    assert results[0]["completions"] == [text.decode() for text in
                                         expected["completions"].numpy()]
    assert 1 <= results[1]["new_tokens"][0] <= MAX_NEW_TOKENS
    assert results[2]["token_count"] == [1]


def test_max_new_tokens_must_leave_room_for_the_prompt(model, tokenizer):
    with pytest.raises(ValueError, match="below the model's max_sequence_length=32"):
        LanguageModelSignatures(model, tokenizer, max_new_tokens=CONTEXT)


def test_a_stop_string_needs_room_for_an_id(model, tokenizer):
    with pytest.raises(ValueError, match="max_stop_tokens=0 must be at least 1"):
        LanguageModelSignatures(model, tokenizer, max_new_tokens=MAX_NEW_TOKENS,
                                max_stop_tokens=0)


def test_the_model_and_the_tokenizer_must_share_the_vocabulary(tokenizer):
    model = GPTCausalLM.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size + 1,
                                    max_sequence_length=CONTEXT)
    with pytest.raises(ValueError, match="not the model and tokenizer of one run"):
        LanguageModelSignatures(model, tokenizer, max_new_tokens=MAX_NEW_TOKENS)


def test_a_seed_of_zero_reproduces_a_sample_alone_or_in_a_batch(signatures):
    # The documented promise is "a seed of 0 or more": 0 is a seed, not
    # "no seed" (negative seeds draw a random one).
    alone = signatures.generate_with_options(tf.constant(["ROMEO:"]), **options(1, seed=0))
    batch = signatures.generate_with_options(
        tf.constant(["To be, or", "ROMEO:"]), **options(2, seed=[1, 0]))
    assert batch["completions"].numpy()[1] == alone["completions"].numpy()[0]
    randoms = signatures.generate_with_options(
        tf.constant(["ROMEO:"] * 4), **options(4, seed=-1))["completions"].numpy()
    assert len(set(randoms.tolist())) > 1


def test_max_new_tokens_at_the_export_s_limit_and_past_it(repeats_a, tokenizer):
    # A model that never ends on its own: each row generates exactly its
    # max_new_tokens, clipped to 1..the export's max_new_tokens.
    signatures = LanguageModelSignatures(repeats_a, tokenizer, max_new_tokens=MAX_NEW_TOKENS)
    asked = [MAX_NEW_TOKENS - 1, MAX_NEW_TOKENS, MAX_NEW_TOKENS + 1, 1, 0]
    outputs = signatures.generate_with_options(
        tf.constant(["A"] * len(asked)), **options(len(asked), max_new_tokens=asked))
    assert outputs["new_tokens"].numpy().tolist() == [
        MAX_NEW_TOKENS - 1, MAX_NEW_TOKENS, MAX_NEW_TOKENS, 1, 1]
    texts = [text.decode() for text in outputs["completions"].numpy()]
    assert texts[1] == "a" * MAX_NEW_TOKENS

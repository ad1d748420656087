"""Exported SavedModels, loaded where serving happens: a new process with
only TensorFlow (and tensorflow-text), and TensorFlow's `saved_model_cli`.

Every export's outputs are compared with the in-memory Keras model on the
same text, packed here by tfnlp's tokenizer (the masks of fill-mask and
of the classifier by splitting the text in Python), within 1e-5.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.export.helpers import run_in_new_process, saved_model_cli
from tests.layer_test_helpers import to_numpy
from tfnlp.export import BertTextPreprocessor, export_saved_model, list_versions
from tfnlp.models import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertPretrainingModel,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.text import BertTokenizer, pack_inputs

SEQUENCE_LENGTH = 32
TOLERANCE = 1e-5
LABELS = ["negative", "neutral", "positive"]
TAGS = ["O", "NAME"]


@pytest.fixture(scope="module")
def tokenizer(shared_data_dir):
    return BertTokenizer(shared_data_dir / "vocab" / "bert-base-uncased-vocab.txt")


@pytest.fixture(scope="module")
def texts(shared_data_dir):
    """Real sentences: short ones (padded) and a long paragraph (truncated)."""
    lines = (shared_data_dir / "mono" / "gutenberg-16-books.txt").read_text("utf-8").splitlines()
    sentences = [line.strip() for line in lines if len(line.split()) >= 5][:3]
    paragraph = " ".join(line.strip() for line in lines if line.strip())[:2000]
    return sentences + [paragraph, "Ünïcode façade — naïve café!"]


@pytest.fixture(scope="module")
def models(tokenizer):
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size,
                                            num_layers=1))
    return {
        "pretraining": BertPretrainingModel(encoder),
        "classifier": BertClassifier(encoder, num_classes=len(LABELS)),
        "token_classifier": BertTokenClassifier(encoder, num_classes=len(TAGS)),
        "span": BertSpanExtractor(encoder),
    }


@pytest.fixture(scope="module")
def exports(tmp_path_factory, tokenizer, models):
    root = tmp_path_factory.mktemp("exports")
    preprocessor = BertTextPreprocessor(tokenizer, SEQUENCE_LENGTH)
    options = {"classifier": {"labels": LABELS}, "token_classifier": {"labels": TAGS},
               "pretraining": {"top_k": 3, "max_masks": 2}}
    paths = {name: export_saved_model(model, str(root / name), preprocessor,
                                      **options.get(name, {}))
             for name, model in models.items()}
    paths["ids_only"] = export_saved_model(
        models["pretraining"], str(root / "pretraining"), preprocessor,
        text_signatures=False, top_k=3, max_masks=2,
    )
    return paths


def _packed(tokenizer, segments):
    ids = [tokenizer.tokenize(tf.convert_to_tensor(segment)) for segment in segments]
    packed = pack_inputs(ids, SEQUENCE_LENGTH, tokenizer.cls_id, tokenizer.sep_id)
    return {name: value.numpy() for name, value in packed.items()}


def _ids_call(export_dir, signature, packed):
    return {"export_dir": export_dir, "signature": signature,
            "inputs": {name: ["int32", value.tolist()] for name, value in packed.items()}}


def _text_call(export_dir, signature, text):
    return {"export_dir": export_dir, "signature": signature,
            "inputs": {"text": ["string", text]}}


def _softmax(logits):
    logits = np.asarray(logits, np.float64)
    exponentials = np.exp(logits - logits.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


def _masked_ids(tokenizer, text):
    """The ids of `text` with each literal [MASK] as the mask id, built in
    Python from the tokens of the pieces between the masks."""
    pieces = [tokenizer.tokenize(tf.constant(piece)).numpy().tolist()
              for piece in text.split("[MASK]")]
    ids = [tokenizer.cls_id]
    for index, piece in enumerate(pieces):
        ids += piece + ([tokenizer.mask_id] if index < len(pieces) - 1 else [])
    ids = ids[: SEQUENCE_LENGTH - 1] + [tokenizer.sep_id]
    padding = SEQUENCE_LENGTH - len(ids)
    return ids + [0] * padding, [1] * len(ids) + [0] * padding


def test_versions_are_numbered_in_export_order(exports):
    assert os.path.basename(exports["pretraining"]) == "1"
    assert os.path.basename(exports["ids_only"]) == "2"
    assert list_versions(os.path.dirname(exports["ids_only"])) == [1, 2]
    for path in exports.values():
        assert {"assets", "saved_model.pb", "variables"} <= set(os.listdir(path))
        assert os.listdir(os.path.join(path, "assets")) == ["bert-base-uncased-vocab.txt"]


def test_text_exports_match_the_keras_models_in_a_new_process(
        tmp_path, exports, models, tokenizer, texts):
    pairs = [[texts[0], texts[1]], [texts[3], texts[2]]]
    masked = ["The [MASK] sat on the [MASK] . " + texts[0], "[MASK]", "no mask here"]
    calls = [
        _text_call(exports["pretraining"], "serving_default", texts),
        _text_call(exports["pretraining"], "serving_default", pairs),
        _text_call(exports["pretraining"], "fill_mask", masked),
        _text_call(exports["classifier"], "serving_default", texts),
        _text_call(exports["token_classifier"], "serving_default", texts[:2]),
        _text_call(exports["span"], "serving_default", pairs),
        _ids_call(exports["classifier"], "classify_ids", _packed(tokenizer, [texts])),
        _text_call(exports["classifier"], "serving_default", masked),
    ]
    results, packages = run_in_new_process(tmp_path, calls)
    assert "tfnlp" not in packages and "tensorflow_text" in packages
    (encoded, encoded_pairs, filled, classified, tagged, spans, classified_ids,
     classified_masked) = results

    encoder = models["pretraining"].encoder
    for outputs, segments in ((encoded, [texts]), (encoded_pairs, list(zip(*pairs)))):
        packed = _packed(tokenizer, segments)
        expected = encoder(packed)
        np.testing.assert_allclose(outputs["pooled_output"],
                                   to_numpy(expected["pooled_output"]), atol=TOLERANCE)
        np.testing.assert_allclose(outputs["sequence_output"],
                                   to_numpy(expected["sequence_output"]), atol=TOLERANCE)
        np.testing.assert_array_equal(outputs["input_mask"], packed["input_mask"])

    masked_inputs = [_masked_ids(tokenizer, text) for text in masked]
    input_ids = np.array([ids for ids, _ in masked_inputs], "int32")
    positions = [[int(p) for p in np.flatnonzero(row == tokenizer.mask_id)][:2] for row in input_ids]
    assert positions == [[2, 6], [1], []]
    padded_positions = np.array([p + [-1] * (2 - len(p)) for p in positions], "int32")
    np.testing.assert_array_equal(filled["mask_positions"], padded_positions)
    logits = models["pretraining"]({
        "input_ids": input_ids,
        "input_mask": np.array([mask for _, mask in masked_inputs], "int32"),
        "segment_ids": np.zeros_like(input_ids),
        "masked_lm_positions": np.maximum(padded_positions, 0),
    })["mlm_logits"]
    probabilities = _softmax(to_numpy(logits))
    for row, row_positions in enumerate(positions):
        for slot in range(2):
            if slot < len(row_positions):
                best = np.argsort(-probabilities[row, slot])[:3]
                assert filled["token_ids"][row][slot] == best.tolist()
                assert filled["tokens"][row][slot] == [tokenizer.vocabulary[i] for i in best]
                np.testing.assert_allclose(filled["scores"][row][slot],
                                           probabilities[row, slot, best], atol=TOLERANCE)
            else:
                assert filled["tokens"][row][slot] == [""] * 3
                assert filled["scores"][row][slot] == [0.0] * 3

    probabilities = _softmax(to_numpy(models["classifier"](_packed(tokenizer, [texts]))))
    for outputs in (classified, classified_ids):
        np.testing.assert_allclose(outputs["probabilities"], probabilities, atol=TOLERANCE)
        assert outputs["label"] == [LABELS[i] for i in probabilities.argmax(-1)]
    logits = models["classifier"]({  # A literal [MASK] is the mask token.
        "input_ids": input_ids,
        "input_mask": np.array([mask for _, mask in masked_inputs], "int32"),
        "segment_ids": np.zeros_like(input_ids),
    })
    np.testing.assert_allclose(classified_masked["logits"], to_numpy(logits), atol=TOLERANCE)

    packed = _packed(tokenizer, [texts[:2]])
    probabilities = _softmax(to_numpy(models["token_classifier"](packed)))
    np.testing.assert_allclose(tagged["probabilities"], probabilities, atol=TOLERANCE)
    real = packed["input_mask"].astype(bool)
    expected_labels = np.where(real, np.array(TAGS)[probabilities.argmax(-1)], "")
    assert tagged["labels"] == expected_labels.tolist()
    expected_tokens = np.where(real, np.array(tokenizer.vocabulary)[packed["input_ids"]], "")
    assert tagged["tokens"] == expected_tokens.tolist()
    assert tagged["tokens"][0][0] == "[CLS]"

    packed = _packed(tokenizer, list(zip(*pairs)))
    logits = models["span"](packed)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(spans[name], to_numpy(logits[name]), atol=TOLERANCE)
    for row in range(len(pairs)):
        start, end = spans["answer_start"][row], spans["answer_end"][row]
        context = np.flatnonzero(packed["segment_ids"][row] == 1)[:-1]  # not the last [SEP]
        assert start in context and end in context and 0 <= end - start < 30
        scores = [(spans["start_logits"][row][i] + spans["end_logits"][row][j], i, j)
                  for i in context for j in context if 0 <= j - i < 30]
        assert max(scores)[1:] == (start, end)
        pieces = [tokenizer.vocabulary[i] for i in packed["input_ids"][row][start:end + 1]]
        assert spans["answer"][row] == " ".join(pieces).replace(" ##", "")


def test_ids_only_export_loads_without_tensorflow_text(tmp_path, exports, models, tokenizer,
                                                       texts):
    packed = _packed(tokenizer, [texts])
    calls = [_ids_call(exports["ids_only"], name, packed)
             for name in ("serving_default", "encode_ids", "fill_mask_ids")]
    results, packages = run_in_new_process(tmp_path, calls, text_ops=False)
    assert "tensorflow_text" not in packages and "tfnlp" not in packages
    expected = to_numpy(models["pretraining"].encoder(packed)["pooled_output"])
    for outputs in results[:2]:
        np.testing.assert_allclose(outputs["pooled_output"], expected, atol=TOLERANCE)
    assert results[2]["mask_positions"] == [[-1, -1]] * len(texts)  # no [MASK] in the text


def test_saved_model_cli_shows_and_runs_the_exports(exports):
    shown = saved_model_cli("show", "--all", "--dir", exports["pretraining"])
    for signature in ("serving_default", "encode_ids", "fill_mask", "fill_mask_ids"):
        assert f"signature_def['{signature}']" in shown
    assert "inputs['text'] tensor_info:\n        dtype: DT_STRING\n        shape: unknown_rank" in shown
    output = saved_model_cli(
        "run", "--dir", exports["classifier"], "--tag_set", "serve",
        "--signature_def", "serving_default", "--input_exprs", "text=['a fine day', 'rain']",
    )
    assert "Result for output key label:" in output and "Result for output key probabilities:" in output
    # A session-based loader (TensorFlow Serving, saved_model_cli) only
    # instantiates the functions it runs: without the tensorflow-text ops,
    # the ids signatures of a text export still run.
    output = saved_model_cli(
        "run", "--dir", exports["pretraining"], "--tag_set", "serve", "--signature_def",
        "encode_ids", "--input_exprs",
        "input_ids=[[101, 7592, 102]];input_mask=[[1, 1, 1]];segment_ids=[[0, 0, 0]]",
        text_ops=False,
    )
    assert "Result for output key pooled_output:" in output


def test_text_of_the_wrong_shape_is_rejected(exports):
    import tensorflow_text  # noqa: F401

    serving = tf.saved_model.load(exports["classifier"]).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="one segment .* or two"):
        serving(text=tf.constant([["a", "b", "c"]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch of strings"):
        serving(text=tf.constant("a"))


def test_export_errors_say_what_to_pass(tmp_path, models, tokenizer):
    with pytest.raises(ValueError, match="pass a BertTextPreprocessor"):
        export_saved_model(models["pretraining"], str(tmp_path))
    with pytest.raises(ValueError, match="2 labels were given for a model of 3 classes"):
        export_saved_model(models["classifier"], str(tmp_path), labels=["a", "b"])
    with pytest.raises(TypeError, match="No serving signatures for a Dense"):
        export_saved_model(keras.layers.Dense(1), str(tmp_path))
    assert list_versions(str(tmp_path)) == []



def test_preprocessor_packs_text_of_known_and_unknown_shape(tokenizer, texts):
    preprocessor = BertTextPreprocessor(tokenizer, SEQUENCE_LENGTH)
    pairs = tf.constant([[texts[0], texts[1]], [texts[2], texts[3]]])
    expected = _packed(tokenizer, [pairs[:, 0], pairs[:, 1]])
    for function in (
        preprocessor,  # eager: shapes known
        tf.function(preprocessor),  # traced with the static shape [2, 2]
        tf.function(preprocessor, input_signature=[tf.TensorSpec(None, tf.string)]),
    ):
        packed = function(pairs)
        for name, value in expected.items():
            np.testing.assert_array_equal(packed[name].numpy(), value)
    with pytest.raises(ValueError, match=r"\[batch\] for single segments or \[batch, 2\]"):
        preprocessor(tf.constant([["a", "b", "c"]]))

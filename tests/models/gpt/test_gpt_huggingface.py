"""Loading Hugging Face GPT-2 checkpoints, checked against keras-hub's own
loader of the same directory (`GPT2Backbone.from_preset(path)`).

The checkpoints are random, written here with numpy in Hugging Face's
names and layouts (`benchmarks/huggingface_gpt2.py`); their weights
are large enough that attention is sharp, so a projection loaded from the
wrong columns or transposed changes the logits by far more than the
tolerance (`test_the_comparison_tells_wrong_layouts_apart`).
"""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.layer_test_helpers import to_numpy
from benchmarks.huggingface_gpt2 import (
    CONFIG,
    causal_mask_buffer,
    keras_hub_logits,
    random_gpt2_tensors,
    write_checkpoint,
)
from tfnlp.models.gpt import GPTBackbone, GPTCausalLM

# tfnlp and keras-hub give the same logits (up to 7.1 in size) to 0.0 on
# these checkpoints; 1e-4 is the tolerance asked of the converter.
TOLERANCE = 1e-4


def inputs(batch_size=3, length=CONFIG["n_positions"], seed=1):
    ids = np.random.default_rng(seed).integers(0, CONFIG["vocab_size"], (batch_size, length))
    return {"token_ids": ids.astype("int32"), "padding_mask": np.ones(ids.shape, bool)}


def our_logits(directory, batch):
    return to_numpy(GPTCausalLM.from_huggingface(directory)(batch))


@pytest.fixture(scope="module")
def tensors():
    return random_gpt2_tensors()


@pytest.fixture(scope="module")
def reference(tensors, tmp_path_factory):
    """keras-hub's logits of the plain checkpoint."""
    directory = write_checkpoint(tmp_path_factory.mktemp("reference"), tensors)
    return keras_hub_logits(directory, **inputs())


def test_logits_equal_keras_hub_s_gpt2_on_the_same_directory(tensors, reference, tmp_path):
    directory = write_checkpoint(tmp_path, tensors)
    assert np.abs(reference).max() > 1.0
    np.testing.assert_allclose(our_logits(directory, inputs()), reference, atol=TOLERANCE,
                               rtol=0)


def test_a_gpt2_lm_head_model_checkpoint_loads_the_same(tensors, reference, tmp_path):
    # GPT2LMHeadModel's names: the `transformer.` prefix, the tied
    # lm_head.weight, and the causal-mask buffers of older checkpoints.
    stored = {f"transformer.{name}": tensor for name, tensor in tensors.items()}
    stored["lm_head.weight"] = tensors["wte.weight"]
    for index in range(CONFIG["n_layer"]):
        stored[f"transformer.h.{index}.attn.bias"] = causal_mask_buffer()
    directory = write_checkpoint(tmp_path, stored)
    np.testing.assert_allclose(keras_hub_logits(directory, **inputs()), reference,
                               atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(our_logits(directory, inputs()), reference, atol=TOLERANCE,
                               rtol=0)


def test_a_sharded_checkpoint_loads_the_same(tensors, reference, tmp_path):
    names = sorted(tensors)
    weight_map = {}
    for shard, shard_names in (("model-00001-of-00002.safetensors", names[::2]),
                               ("model-00002-of-00002.safetensors", names[1::2])):
        save_file({name: tensors[name] for name in shard_names}, str(tmp_path / shard))
        weight_map.update(dict.fromkeys(shard_names, shard))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    np.testing.assert_allclose(our_logits(tmp_path, inputs()), reference, atol=TOLERANCE,
                               rtol=0)


def swap_query_and_key(tensor):
    width = CONFIG["n_embd"]
    query, key, value = np.split(tensor, 3, axis=-1)
    assert query.shape[-1] == width
    return np.concatenate([key, query, value], axis=-1)


@pytest.mark.parametrize("name, wrong", [
    ("h.0.attn.c_attn.weight", swap_query_and_key),
    ("h.1.attn.c_attn.bias", swap_query_and_key),
    ("h.0.attn.c_proj.weight", np.transpose),
    ("h.1.attn.c_proj.weight", np.transpose),
], ids=["query_key_order", "query_key_bias_order", "transposed_c_proj_0",
        "transposed_c_proj_1"])
def test_the_comparison_tells_wrong_layouts_apart(tensors, reference, tmp_path, name, wrong):
    # A converter that read the fused projection in another order, or kept
    # a square Conv1D weight as (out, in), would be far outside TOLERANCE.
    wrong_tensor = np.ascontiguousarray(wrong(tensors[name]))
    directory = write_checkpoint(tmp_path, {**tensors, name: wrong_tensor})
    assert np.abs(our_logits(directory, inputs()) - reference).max() > 100 * TOLERANCE


def test_the_config_becomes_the_model_s_arguments(tensors, tmp_path):
    directory = write_checkpoint(tmp_path, tensors, {**CONFIG, "attn_pdrop": 0.0})
    model = GPTCausalLM.from_huggingface(directory, dropout=0.0)
    assert (model.vocabulary_size, model.num_layers, model.num_heads, model.hidden_dim,
            model.intermediate_dim, model.max_sequence_length) == (97, 2, 4, 32, 128, 24)
    assert (model.activation, model.layer_norm_epsilon, model.end_token_id) == (
        "gelu_approximate", 1e-5, 96)
    assert (model.dropout, model.attention_dropout) == (0.0, 0.0)
    backbone = GPTBackbone.from_huggingface(directory)
    np.testing.assert_array_equal(to_numpy(backbone(inputs()["token_ids"])),
                                  to_numpy(model.backbone(inputs()["token_ids"])))


def test_a_feed_forward_width_from_n_inner(tmp_path):
    config = {**CONFIG, "n_inner": 48}
    directory = write_checkpoint(tmp_path, random_gpt2_tensors(config), config)
    assert GPTCausalLM.from_huggingface(directory).intermediate_dim == 48


def test_an_untied_lm_head_is_refused(tensors, tmp_path):
    stored = {**tensors, "lm_head.weight": tensors["wte.weight"] + 0.01}
    with pytest.raises(ValueError, match="'lm_head.weight' differs from the token embedding"):
        GPTCausalLM.from_huggingface(write_checkpoint(tmp_path, stored))


def test_unknown_and_missing_tensors_are_listed(tensors, tmp_path):
    stored = {**tensors, "h.0.attn.rotary.weight": np.zeros(3, "float32")}
    del stored["ln_f.bias"], stored["h.1.mlp.c_fc.weight"]
    with pytest.raises(ValueError) as error:
        GPTCausalLM.from_huggingface(write_checkpoint(tmp_path, stored))
    assert "tensors a GPTBackbone does not have: h.0.attn.rotary.weight" in str(error.value)
    assert "missing tensors: h.1.mlp.c_fc.weight, ln_f.bias" in str(error.value)


def test_weights_that_do_not_match_the_config_are_rejected(tensors, tmp_path):
    directory = write_checkpoint(tmp_path, tensors, {**CONFIG, "n_embd": 64})
    with pytest.raises(ValueError, match=r"'wte.weight' has shape \(97, 32\).*needs "
                                         r"\(97, 64\)"):
        GPTCausalLM.from_huggingface(directory)


@pytest.mark.parametrize("key, value, message", [
    ("model_type", "gpt_neo", "reads GPT-2 configs"),
    ("scale_attn_by_inverse_layer_idx", True, "scale_attn_by_inverse_layer_idx=False only"),
    ("add_cross_attention", True, "add_cross_attention=False only"),
    ("activation_function", "swish", "Unsupported Hugging Face activation_function"),
])
def test_configs_the_backbone_does_not_compute_are_refused(tensors, tmp_path, key, value,
                                                           message):
    directory = write_checkpoint(tmp_path, tensors, {**CONFIG, key: value})
    with pytest.raises(ValueError, match=message):
        GPTCausalLM.from_huggingface(directory)


def test_sizes_cannot_be_overridden_and_files_must_exist(tensors, tmp_path):
    directory = write_checkpoint(tmp_path / "checkpoint", tensors)
    with pytest.raises(ValueError, match="hidden_dim, num_layers cannot be overridden"):
        GPTCausalLM.from_huggingface(directory, num_layers=1, hidden_dim=16)
    with pytest.raises(FileNotFoundError, match="No config.json"):
        GPTBackbone.from_huggingface(tmp_path)

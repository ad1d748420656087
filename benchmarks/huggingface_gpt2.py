"""Random Hugging Face GPT-2 checkpoints written with numpy, in Hugging
Face's names and layouts (not through tfnlp's converter), and keras-hub's
loader of such checkpoints: the independent reference of the GPT tests
(tests/models/gpt) and of the generation benchmarks.

Hugging Face's `GPT2Model` stores its linear layers as `Conv1D`s, weights
`(in, out)`; `h.N.attn.c_attn` fuses the query, key and value projections
along its output axis, in that order; `h.N.attn.bias` is the causal-mask
buffer older checkpoints store.
"""

import json

import numpy as np
from safetensors.numpy import save_file

# A GPT-2 config.json of test sizes: several heads (so the head split
# shows) and a vocabulary of a size no other axis has. n_inner is null
# (4 * n_embd) since keras-hub's converter reads no other width.
CONFIG = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "vocab_size": 97,
    "n_positions": 24,
    "n_embd": 32,
    "n_layer": 2,
    "n_head": 4,
    "n_inner": None,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.1,
    "embd_pdrop": 0.1,
    "attn_pdrop": 0.1,
    "layer_norm_epsilon": 1e-5,
    "initializer_range": 0.02,
    "bos_token_id": 96,
    "eos_token_id": 96,
}


def random_gpt2_tensors(config=CONFIG, seed=0, scale=0.3):
    """A `GPT2Model`'s tensors (names without the `transformer.` prefix),
    drawn from a normal distribution of standard deviation `scale` (large
    enough that attention is far from uniform), LayerNorm gains around 1."""
    generator = np.random.default_rng(seed)
    width, inner = config["n_embd"], config["n_inner"] or 4 * config["n_embd"]

    def normal(*shape, mean=0.0):
        return (mean + scale * generator.standard_normal(shape)).astype("float32")

    tensors = {
        "wte.weight": normal(config["vocab_size"], width),
        "wpe.weight": normal(config["n_positions"], width),
        "ln_f.weight": normal(width, mean=1.0),
        "ln_f.bias": normal(width),
    }
    for index in range(config["n_layer"]):
        prefix = f"h.{index}"
        tensors.update({
            f"{prefix}.ln_1.weight": normal(width, mean=1.0),
            f"{prefix}.ln_1.bias": normal(width),
            f"{prefix}.attn.c_attn.weight": normal(width, 3 * width),
            f"{prefix}.attn.c_attn.bias": normal(3 * width),
            f"{prefix}.attn.c_proj.weight": normal(width, width),
            f"{prefix}.attn.c_proj.bias": normal(width),
            f"{prefix}.ln_2.weight": normal(width, mean=1.0),
            f"{prefix}.ln_2.bias": normal(width),
            f"{prefix}.mlp.c_fc.weight": normal(width, inner),
            f"{prefix}.mlp.c_fc.bias": normal(inner),
            f"{prefix}.mlp.c_proj.weight": normal(inner, width),
            f"{prefix}.mlp.c_proj.bias": normal(width),
        })
    return tensors


def causal_mask_buffer(config=CONFIG):
    """The `h.N.attn.bias` buffer of older checkpoints: the lower triangle."""
    positions = config["n_positions"]
    return np.tril(np.ones((positions, positions), "float32"))[None, None]


def write_checkpoint(directory, tensors, config=CONFIG):
    """Writes `config.json` and `model.safetensors` into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


def keras_hub_logits(directory, token_ids, padding_mask):
    """The logits of keras-hub's `GPT2Backbone` loaded from the Hugging
    Face directory by keras-hub's own converter, projected through its
    (tied) token embedding."""
    import keras_hub

    backbone = keras_hub.models.GPT2Backbone.from_preset(str(directory))
    hidden_states = backbone({"token_ids": token_ids, "padding_mask": padding_mask})
    return np.asarray(backbone.token_embedding(hidden_states, reverse=True), "float32")

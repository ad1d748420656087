"""Reading Hugging Face GPT-2 checkpoints (`config.json` + safetensors).

The files are read by `tfnlp.models.huggingface_checkpoint` (numpy, no
PyTorch; sharded or not). Names are first made canonical: the
`transformer.` prefix of `GPT2LMHeadModel`-style checkpoints is dropped,
and the attention buffers `h.N.attn.bias` and `h.N.attn.masked_bias` (the
causal mask, stored by older checkpoints) are dropped. `lm_head.weight`,
when stored, must equal the token embedding `wte.weight`: GPT-2 ties the
two, and so does `GPTCausalLM`.

Layouts: GPT-2's linear layers are `Conv1D`s, whose weights are stored as
`(in, out)`, the layout of a Keras kernel, so nothing is transposed; they
are reshaped to the `(hidden, heads, head_size)` and `(heads, head_size,
hidden)` kernels of `tfnlp.layers.MultiHeadAttention`. The query, key and
value projections are fused in `h.N.attn.c_attn`, whose output axis holds
the query, then the key, then the value (`hidden_dim` columns each).
Embedding tables have the same layout in both.
"""

import math
import os
import typing

import numpy as np

from tfnlp.models.huggingface_checkpoint import (
    canonical_tensors,
    check_tensor_names,
    check_tensor_shape,
    read_config,
    read_safetensors,
)

_PREFIX = "transformer."
_BUFFER_SUFFIXES = (".attn.bias", ".attn.masked_bias")
_TOKEN_EMBEDDING = "wte.weight"
_OUTPUT_EMBEDDING = "lm_head.weight"
# How far a stored lm_head.weight may be from wte.weight and still count as
# tied (bfloat16 checkpoints round both the same way).
_TIED_TOLERANCE = 1e-6

# Hugging Face `activation_function` -> the tfnlp activation that computes it.
_ACTIVATIONS = {
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu": "gelu",
    "relu": "relu",
}
# Config keys whose non-default values change the computation in ways the
# backbone does not: key -> the value it must have.
_REQUIRED_SETTINGS = {
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "add_cross_attention": False,
}
# The arguments that the weights' shapes fix.
SIZE_ARGUMENTS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                  "intermediate_dim", "max_sequence_length")


class GPT2Checkpoint(typing.NamedTuple):
    """What `read_checkpoint` returns.

    Attributes:
        arguments: the `GPTBackbone` constructor arguments of `config.json`.
        end_token_id: the config's `eos_token_id` (GPT-2: 50256).
        tensors: canonical name (`h.0.attn.c_attn.weight`, ...) -> numpy
            array, in Hugging Face's layout, without `lm_head.weight`.
    """

    arguments: dict
    end_token_id: typing.Optional[int]
    tensors: dict


def canonical_tensor_name(name):
    """The name without the `transformer.` prefix."""
    return name[len(_PREFIX):] if name.startswith(_PREFIX) else name


def _is_buffer(name):
    return name.endswith(_BUFFER_SUFFIXES)


def arguments_from_huggingface_config(config):
    """The `GPTBackbone` arguments of a Hugging Face GPT-2 `config.json`
    (a dict); an absent key takes Hugging Face's default.

    Raises:
        ValueError: for another `model_type`, an activation other than
            "gelu_new", "gelu_pytorch_tanh", "gelu" or "relu", or settings
            the backbone does not compute (`scale_attn_weights` false,
            `scale_attn_by_inverse_layer_idx` or `add_cross_attention`
            true).
    """
    model_type = config.get("model_type", "gpt2")
    if model_type != "gpt2":
        raise ValueError(
            f"The Hugging Face config has model_type={model_type!r}; the GPT "
            "converter reads GPT-2 configs (model_type 'gpt2') only."
        )
    for key, required in _REQUIRED_SETTINGS.items():
        if config.get(key, required) != required:
            raise ValueError(
                f"The Hugging Face config has {key}={config[key]!r}; GPTBackbone "
                f"computes GPT-2 with {key}={required!r} only."
            )
    activation = config.get("activation_function", "gelu_new")
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"Unsupported Hugging Face activation_function {activation!r}. "
            f"Supported: {', '.join(_ACTIVATIONS)}."
        )
    hidden_dim = config.get("n_embd", 768)
    dropout = config.get("resid_pdrop", 0.1)
    attention_dropout = config.get("attn_pdrop", 0.1)
    return dict(
        vocabulary_size=config.get("vocab_size", 50257),
        num_layers=config.get("n_layer", 12),
        num_heads=config.get("n_head", 12),
        hidden_dim=hidden_dim,
        intermediate_dim=config.get("n_inner") or 4 * hidden_dim,
        max_sequence_length=config.get("n_positions", 1024),
        dropout=dropout,
        attention_dropout=None if attention_dropout == dropout else attention_dropout,
        layer_norm_epsilon=config.get("layer_norm_epsilon", 1e-5),
        activation=_ACTIVATIONS[activation],
        initializer_range=config.get("initializer_range", 0.02),
    )


def read_checkpoint(path):
    """Reads a Hugging Face GPT-2 checkpoint directory into numpy arrays.

    Args:
        path: a directory with `config.json` and `model.safetensors` (or
            `model.safetensors.index.json` and its shards).

    Returns:
        A `GPT2Checkpoint(arguments, end_token_id, tensors)`.

    Raises:
        FileNotFoundError: if the config or the safetensors weights are
            missing.
        ValueError: if the config is not one the backbone computes, two
            tensors have the same canonical name, or `lm_head.weight` is
            not the token embedding.
    """
    path = os.fspath(path)
    config = read_config(path, "GPT-2")
    tensors = canonical_tensors(read_safetensors(path), canonical_tensor_name, path,
                                is_ignored=_is_buffer)
    output_embedding = tensors.pop(_OUTPUT_EMBEDDING, None)
    if output_embedding is not None:
        _check_tied(output_embedding, tensors.get(_TOKEN_EMBEDDING), path)
    return GPT2Checkpoint(arguments_from_huggingface_config(config),
                          config.get("eos_token_id", 50256), tensors)


def _check_tied(output_embedding, token_embedding, source):
    output_embedding = np.asarray(output_embedding, "float32")
    if token_embedding is None or output_embedding.shape != token_embedding.shape or not (
        np.allclose(output_embedding, np.asarray(token_embedding, "float32"),
                    rtol=0, atol=_TIED_TOLERANCE)):
        raise ValueError(
            f"{source}: {_OUTPUT_EMBEDDING!r} differs from the token embedding "
            f"{_TOKEN_EMBEDDING!r}. GPTCausalLM ties its output projection to the "
            "token embedding, as GPT-2 does, so it cannot hold an untied head. "
            "Drop the tensor to use the embedding."
        )


def checked_overrides(overrides, source):
    """`overrides` of a model built from a checkpoint, refusing the sizes
    (the weights fix them)."""
    sizes = sorted(set(overrides) & set(SIZE_ARGUMENTS))
    if sizes:
        raise ValueError(
            f"{', '.join(sizes)} cannot be overridden when loading {source}: the "
            "checkpoint's weights fix the sizes. Override only dropout, dtype and "
            "other arguments that keep the weights' shapes."
        )
    return overrides


def backbone_variables(backbone):
    """Pairs each canonical Hugging Face name with `GPTBackbone` variables.

    Returns:
        A list of `(name, variables, input_axes)`. The stored tensor is
        split along its last axis into one part per variable (three for
        the fused `c_attn`), and each part reshaped to its variable.
        `input_axes` is None for an embedding table (the same shape in
        both), 0 for a bias or LayerNorm parameter (stored flat), and for a
        Conv1D weight the number of leading kernel axes that are its inputs
        (stored `(inputs, outputs)`).
    """
    pairs = [
        (_TOKEN_EMBEDDING, [backbone.token_embedding.embeddings], None),
        ("wpe.weight", [backbone.position_embedding.embeddings], None),
    ]
    for index, block in enumerate(backbone.transformer_layers):
        prefix = f"h.{index}"
        attention = block.self_attention
        projections = [attention.query_dense, attention.key_dense, attention.value_dense]
        pairs += [
            *_layer_norm(f"{prefix}.ln_1", block.self_attention_layer_norm),
            (f"{prefix}.attn.c_attn.weight", [dense.kernel for dense in projections], 1),
            (f"{prefix}.attn.c_attn.bias", [dense.bias for dense in projections], 0),
            *_conv1d(f"{prefix}.attn.c_proj", attention.output_dense, input_axes=2),
            *_layer_norm(f"{prefix}.ln_2", block.feedforward_layer_norm),
            *_conv1d(f"{prefix}.mlp.c_fc", block.feedforward_intermediate_dense),
            *_conv1d(f"{prefix}.mlp.c_proj", block.feedforward_output_dense),
        ]
    return pairs + _layer_norm("ln_f", backbone.layer_norm)


def _conv1d(prefix, dense, input_axes=1):
    return [(f"{prefix}.weight", [dense.kernel], input_axes),
            (f"{prefix}.bias", [dense.bias], 0)]


def _layer_norm(prefix, layer_norm):
    return [(f"{prefix}.weight", [layer_norm.gamma], 0),
            (f"{prefix}.bias", [layer_norm.beta], 0)]


def huggingface_shape(variables, input_axes):
    """The shape Hugging Face stores `variables` (one tensor) in."""
    shape = tuple(variables[0].shape)
    if input_axes is None:
        return shape
    outputs = len(variables) * math.prod(shape[input_axes:])
    return (outputs,) if input_axes == 0 else (math.prod(shape[:input_axes]), outputs)


def load_backbone_weights(backbone, tensors, source="the checkpoint"):
    """Assigns Hugging Face GPT-2 tensors to a `GPTBackbone`'s variables.

    Args:
        backbone: a `GPTBackbone` whose sizes match the checkpoint's.
        tensors: canonical name -> numpy array, as
            `read_checkpoint(path).tensors`.
        source: where the tensors come from, for error messages.

    Raises:
        ValueError: if tensors are unknown or missing (both listed), or of
            a shape the backbone's sizes do not give.
    """
    pairs = backbone_variables(backbone)
    check_tensor_names(
        tensors, [name for name, _, _ in pairs], source, "a GPTBackbone",
        "the tensors of a Hugging Face GPT2Model or GPT2LMHeadModel (names with "
        "or without the 'transformer.' prefix)")
    for name, variables, input_axes in pairs:
        tensor = np.asarray(tensors[name])
        check_tensor_shape(name, tensor, huggingface_shape(variables, input_axes), source,
                           "the backbone's config")
        for variable, part in zip(variables, np.split(tensor, len(variables), axis=-1)):
            variable.assign(part.reshape(tuple(variable.shape)).astype(variable.dtype))

"""Reading Hugging Face BERT checkpoints (`config.json` + safetensors).

The files are read by `tfnlp.models.huggingface_checkpoint` (numpy, no
PyTorch; sharded or not), which every family's converter shares. A
checkpoint's names are first made canonical: the `bert.` prefix
of `BertForPreTraining`-style checkpoints is dropped, LayerNorm parameters
named `gamma`/`beta` (checkpoints converted from TensorFlow) become
`weight`/`bias`, and the `embeddings.position_ids` buffer is dropped. The
canonical names then split into the encoder's tensors (`embeddings.*`,
`encoder.layer.N.*`, `pooler.*`) and the pretraining heads' (`cls.*`),
which `read_huggingface_checkpoint` returns for the pretraining model to
load.

Layouts: a PyTorch linear weight is `(out, in)` and a Keras kernel
`(in, out)`, so kernels are transposed; the attention projections are then
reshaped to the `(hidden, heads, head_size)` and `(heads, head_size,
hidden)` kernels of `tfnlp.layers.MultiHeadAttention`. Embedding tables
have the same layout in both.
"""

import math
import os
import typing

import keras
import numpy as np

from tfnlp.models.bert.bert_config import BertConfig
from tfnlp.models.huggingface_checkpoint import (  # noqa: F401 (is_huggingface_directory)
    canonical_tensors,
    check_tensor_names,
    check_tensor_shape,
    is_huggingface_directory,
    read_config,
    read_safetensors,
)

# Buffers that some checkpoints store but that are not weights.
_IGNORED_TENSORS = ("embeddings.position_ids",)
_HEAD_PREFIX = "cls."

# Layouts of `encoder_variables` other than a linear weight's input axes.
TABLE = "table"
VECTOR = "vector"


class HuggingFaceCheckpoint(typing.NamedTuple):
    """What `read_huggingface_checkpoint` returns.

    Attributes:
        config: the `BertConfig` of the checkpoint's `config.json`.
        encoder_tensors: canonical name (for example
            `encoder.layer.0.attention.self.query.weight`) -> numpy array,
            for every encoder tensor, in Hugging Face's layout.
        head_tensors: canonical name (`cls.predictions.bias`, ...) -> numpy
            array, for the pretraining heads; empty when the checkpoint has
            none (a plain `BertModel`).
    """

    config: BertConfig
    encoder_tensors: dict
    head_tensors: dict


def canonical_tensor_name(name):
    """The canonical form of a checkpoint tensor name (see the module doc)."""
    if name.startswith("bert."):
        name = name[len("bert.") :]
    if name.endswith("LayerNorm.gamma"):
        name = name[: -len("gamma")] + "weight"
    elif name.endswith("LayerNorm.beta"):
        name = name[: -len("beta")] + "bias"
    return name


def read_huggingface_checkpoint(path):
    """Reads a Hugging Face BERT checkpoint directory into numpy arrays.

    Args:
        path: a directory with `config.json` and `model.safetensors` (or
            `model.safetensors.index.json` and its shards).

    Returns:
        A `HuggingFaceCheckpoint(config, encoder_tensors, head_tensors)`,
        the tensors keyed by canonical name (see `canonical_tensor_name`).

    Raises:
        FileNotFoundError: if the config or the safetensors weights are
            missing (a PyTorch-only `pytorch_model.bin` is not read).
        ValueError: if the config is not a BERT config we can build, or two
            tensors have the same canonical name.

    Example (writes a tiny checkpoint, then reads it back):

    >>> import json, os, tempfile
    >>> from safetensors.numpy import save_file
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> config = BertConfig(vocab_size=20, hidden_size=8, num_layers=1,
    ...                     num_heads=2, intermediate_size=16)
    >>> directory = tempfile.mkdtemp()
    >>> with open(os.path.join(directory, "config.json"), "w") as file:
    ...     json.dump(huggingface_config_dict(config), file)
    >>> save_file(encoder_tensors_from_encoder(BertEncoder(config)),
    ...           os.path.join(directory, "model.safetensors"))
    >>> checkpoint = read_huggingface_checkpoint(directory)
    >>> checkpoint.config == config, checkpoint.head_tensors
    (True, {})
    >>> checkpoint.encoder_tensors["encoder.layer.0.attention.self.query.weight"].shape
    (8, 8)
    """
    path = os.fspath(path)
    config = BertConfig.from_huggingface_dict(read_config(path, "BERT"))
    tensors = canonical_tensors(read_safetensors(path), canonical_tensor_name, path,
                                is_ignored=_IGNORED_TENSORS.__contains__)
    encoder_tensors, head_tensors = {}, {}
    for name, tensor in tensors.items():
        if name.startswith(_HEAD_PREFIX):
            head_tensors[name] = tensor
        else:
            encoder_tensors[name] = tensor
    return HuggingFaceCheckpoint(config, encoder_tensors, head_tensors)


def _linear(prefix, dense, input_axes=1):
    """The weight and bias of a PyTorch linear layer stored in `dense`.

    `input_axes` is how many leading axes of the Keras kernel are the
    layer's input features.
    """
    return [
        (f"{prefix}.weight", dense.kernel, input_axes),
        (f"{prefix}.bias", dense.bias, VECTOR),
    ]


def _layer_norm(prefix, layer_norm):
    return [
        (f"{prefix}.weight", layer_norm.gamma, VECTOR),
        (f"{prefix}.bias", layer_norm.beta, VECTOR),
    ]


def encoder_variables(encoder):
    """Pairs each canonical Hugging Face name with a `BertEncoder` variable.

    Returns:
        A list of `(name, variable, layout)`: `layout` is `TABLE` for an
        embedding table (the same layout in both), `VECTOR` for a bias or
        LayerNorm parameter (stored flat, reshaped to the variable), and for
        a linear weight the number of leading kernel axes that are its
        inputs (the weight is transposed, then reshaped).
    """
    pairs = [
        ("embeddings.word_embeddings.weight", encoder.token_embedding.embeddings, TABLE),
        (
            "embeddings.position_embeddings.weight",
            encoder.position_embedding.embeddings,
            TABLE,
        ),
        (
            "embeddings.token_type_embeddings.weight",
            encoder.segment_embedding.embeddings,
            TABLE,
        ),
        *_layer_norm("embeddings.LayerNorm", encoder.embeddings_layer_norm),
    ]
    for index, block in enumerate(encoder.transformer_layers):
        prefix = f"encoder.layer.{index}"
        attention = block.self_attention
        pairs += [
            *_linear(f"{prefix}.attention.self.query", attention.query_dense),
            *_linear(f"{prefix}.attention.self.key", attention.key_dense),
            *_linear(f"{prefix}.attention.self.value", attention.value_dense),
            *_linear(
                f"{prefix}.attention.output.dense", attention.output_dense, input_axes=2
            ),
            *_layer_norm(
                f"{prefix}.attention.output.LayerNorm", block.self_attention_layer_norm
            ),
            *_linear(
                f"{prefix}.intermediate.dense", block.feedforward_intermediate_dense
            ),
            *_linear(f"{prefix}.output.dense", block.feedforward_output_dense),
            *_layer_norm(f"{prefix}.output.LayerNorm", block.feedforward_layer_norm),
        ]
    pairs += _linear("pooler.dense", encoder.pooled_dense)
    return pairs


def _huggingface_shape(variable_shape, layout):
    """The shape Hugging Face stores a variable's tensor in."""
    if layout == TABLE:
        return tuple(variable_shape)
    if layout == VECTOR:
        return (math.prod(variable_shape),)
    inputs = math.prod(variable_shape[:layout])
    outputs = math.prod(variable_shape[layout:])
    return (outputs, inputs)


def load_encoder_weights(encoder, encoder_tensors, source="the checkpoint"):
    """Assigns Hugging Face encoder tensors to a `BertEncoder`'s variables.

    Args:
        encoder: a `tfnlp.models.BertEncoder` whose config matches.
        encoder_tensors: canonical name -> numpy array, as in
            `read_huggingface_checkpoint(...).encoder_tensors`.
        source: where the tensors come from, for error messages.

    Raises:
        ValueError: if some tensors are unknown, missing (both listed), or
            of a shape the encoder's config does not give.
    """
    pairs = encoder_variables(encoder)
    check_tensor_names(
        encoder_tensors, [name for name, _, _ in pairs], source, "a BertEncoder",
        "the tensors of a Hugging Face BertModel (names with or without the "
        "'bert.' prefix; pretraining heads under 'cls.')")
    for name, variable, layout in pairs:
        tensor = np.asarray(encoder_tensors[name])
        variable_shape = tuple(variable.shape)
        expected_shape = _huggingface_shape(variable_shape, layout)
        check_tensor_shape(name, tensor, expected_shape, source, "the encoder's config")
        if isinstance(layout, int):
            tensor = tensor.T
        variable.assign(tensor.reshape(variable_shape).astype(variable.dtype))


def encoder_tensors_from_encoder(encoder):
    """A `BertEncoder`'s weights as Hugging Face tensors (canonical names).

    The inverse of `load_encoder_weights`: the result, saved with
    `safetensors.numpy.save_file` beside a matching `config.json`, is a
    checkpoint `BertEncoder.from_huggingface` reads back.
    """
    tensors = {}
    for name, variable, layout in encoder_variables(encoder):
        array = keras.ops.convert_to_numpy(variable)
        shape = _huggingface_shape(tuple(variable.shape), layout)
        if isinstance(layout, int):
            array = array.reshape(shape[::-1]).T
        tensors[name] = np.ascontiguousarray(array.reshape(shape))
    return tensors


def huggingface_config_dict(config):
    """The Hugging Face `config.json` dict of a `BertConfig`."""
    activations = {"gelu": "gelu", "gelu_approximate": "gelu_pytorch_tanh"}
    if config.hidden_activation not in activations:
        raise ValueError(
            f"Hugging Face BERT has no activation for {config.hidden_activation!r}; "
            "only 'gelu' and 'gelu_approximate' can be written."
        )
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "hidden_act": activations[config.hidden_activation],
        "hidden_dropout_prob": config.hidden_dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "layer_norm_eps": config.layer_norm_epsilon,
        "initializer_range": config.initializer_range,
        "position_embedding_type": "absolute",
    }


# --- The pretraining heads ----------------------------------------------------

_MASKED_LM_TENSORS = (
    "cls.predictions.transform.dense.weight",
    "cls.predictions.transform.dense.bias",
    "cls.predictions.transform.LayerNorm.weight",
    "cls.predictions.transform.LayerNorm.bias",
    "cls.predictions.bias",
)
_NEXT_SENTENCE_TENSORS = ("cls.seq_relationship.weight", "cls.seq_relationship.bias")
_MASKED_LM_BIAS_NAME = "cls.predictions.bias"
_DECODER_WEIGHT = "cls.predictions.decoder.weight"
_DECODER_BIAS = "cls.predictions.decoder.bias"
# How far a stored decoder weight may be from the word embeddings and still
# count as tied (bfloat16 checkpoints round both the same way).
_TIED_TOLERANCE = 1e-6


def _head_variables(model):
    """`(name, variable, transposed)` for every Hugging Face head tensor."""
    return [
        ("cls.predictions.transform.dense.weight", model.masked_lm_dense.kernel, True),
        ("cls.predictions.transform.dense.bias", model.masked_lm_dense.bias, False),
        (
            "cls.predictions.transform.LayerNorm.weight",
            model.masked_lm_layer_norm.gamma,
            False,
        ),
        (
            "cls.predictions.transform.LayerNorm.bias",
            model.masked_lm_layer_norm.beta,
            False,
        ),
        ("cls.predictions.bias", model.masked_lm_bias, False),
        ("cls.seq_relationship.weight", model.next_sentence_dense.kernel, True),
        ("cls.seq_relationship.bias", model.next_sentence_dense.bias, False),
    ]


def load_huggingface_head_weights(model, head_tensors, source="the checkpoint"):
    """Assigns Hugging Face `cls.*` tensors to a `BertPretrainingModel`.

    The masked-LM tensors (`cls.predictions.transform.dense.*`,
    `cls.predictions.transform.LayerNorm.*`, `cls.predictions.bias`) and the
    next-sentence tensors (`cls.seq_relationship.*`) are loaded group by
    group: a group that is absent altogether is left as it is, a group
    that is incomplete is an error. The decoder is tied to the word
    embeddings: `cls.predictions.decoder.weight`, when stored, must equal
    the encoder's token embeddings (already loaded), and
    `cls.predictions.decoder.bias`, when stored, stands for
    `cls.predictions.bias` (they are the same parameter in Hugging Face).

    Args:
        model: a `BertPretrainingModel` whose encoder holds the checkpoint's
            encoder weights.
        head_tensors: canonical name -> numpy array, as
            `read_huggingface_checkpoint(path).head_tensors`.
        source: where the tensors come from, for error messages.

    Returns:
        The names of the groups loaded: a subset of
        `["masked_lm", "next_sentence"]`.

    Raises:
        ValueError: for unknown `cls.*` tensors, an incomplete group, a
            tensor whose shape does not fit the config, or a decoder weight
            that differs from the word embeddings (an untied head, which
            this model cannot hold).
    """
    tensors = dict(head_tensors)
    if _DECODER_BIAS in tensors:
        decoder_bias = tensors.pop(_DECODER_BIAS)
        if _MASKED_LM_BIAS_NAME in tensors and not np.array_equal(
            tensors[_MASKED_LM_BIAS_NAME], decoder_bias
        ):
            raise ValueError(
                f"{source} holds both {_MASKED_LM_BIAS_NAME!r} and "
                f"{_DECODER_BIAS!r} with different values; in Hugging Face BERT "
                "they are one tied parameter. Keep one of them."
            )
        tensors.setdefault(_MASKED_LM_BIAS_NAME, decoder_bias)
    decoder_weight = tensors.pop(_DECODER_WEIGHT, None)
    known = set(_MASKED_LM_TENSORS) | set(_NEXT_SENTENCE_TENSORS)
    unknown = sorted(set(tensors) - known)
    if unknown:
        raise ValueError(
            f"{source} has pretraining-head tensors BertPretrainingModel does "
            f"not have: {', '.join(unknown)}. Known: {', '.join(sorted(known))}, "
            f"{_DECODER_WEIGHT} and {_DECODER_BIAS} (tied)."
        )
    loaded = []
    for group, names in (
        ("masked_lm", _MASKED_LM_TENSORS),
        ("next_sentence", _NEXT_SENTENCE_TENSORS),
    ):
        present = [name for name in names if name in tensors]
        if present and len(present) < len(names):
            missing = sorted(set(names) - set(present))
            raise ValueError(
                f"{source} has an incomplete {group} head: it lacks "
                f"{', '.join(missing)} (it has {', '.join(present)}). Store "
                "all of the head's tensors, or none to keep a fresh head."
            )
        if present:
            loaded.append(group)
    for name, variable, transposed in _head_variables(model):
        if name not in tensors:
            continue
        tensor = np.asarray(tensors[name])
        if transposed:
            tensor = tensor.T
        if tensor.shape != tuple(variable.shape):
            stored = tensor.T.shape if transposed else tensor.shape
            expected = tuple(variable.shape)[::-1] if transposed else tuple(variable.shape)
            raise ValueError(
                f"{source}: tensor {name!r} has shape {stored}, but the "
                f"model's config needs {expected}. The config.json does not "
                "match the weights."
            )
        variable.assign(tensor.astype(variable.dtype))
    if decoder_weight is not None:
        embeddings = keras.ops.convert_to_numpy(model.encoder.token_embedding.embeddings)
        decoder_weight = np.asarray(decoder_weight, dtype=embeddings.dtype)
        if decoder_weight.shape != embeddings.shape or not np.allclose(
            decoder_weight, embeddings, rtol=0, atol=_TIED_TOLERANCE
        ):
            raise ValueError(
                f"{source}: {_DECODER_WEIGHT!r} differs from the word embeddings "
                "(embeddings.word_embeddings.weight). BertPretrainingModel ties "
                "the masked-LM output projection to the token embeddings, so it "
                "cannot hold an untied decoder. Drop the tensor to use the "
                "embeddings, or fine-tune from the encoder alone."
            )
    return loaded


def huggingface_head_tensors_from_model(model):
    """A `BertPretrainingModel`'s heads as Hugging Face `cls.*` tensors.

    The inverse of `load_huggingface_head_weights` (without the decoder
    weight, which is tied to the word embeddings): together with
    `huggingface.encoder_tensors_from_encoder(model.encoder)`, saved with
    `safetensors.numpy.save_file`, it makes a checkpoint
    `BertPretrainingModel.from_huggingface` reads back.
    """
    tensors = {}
    for name, variable, transposed in _head_variables(model):
        array = keras.ops.convert_to_numpy(variable)
        tensors[name] = np.ascontiguousarray(array.T if transposed else array)
    return tensors

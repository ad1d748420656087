"""A plain-numpy BERT forward pass over Hugging Face tensors, for tests.

Independent of tfnlp's layers: it reads the checkpoint's tensors by their
Hugging Face names (PyTorch layout: linear weights are `(out, in)`) and
computes in float64, with the exact (erf) GELU from `scipy.special.erf`
(scipy comes with jax), or `math.erf` elementwise without scipy. Dropout is
off (inference).
"""

import math

import numpy as np

try:
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover - scipy is installed with jax
    _erf_object = np.frompyfunc(math.erf, 1, 1)

    def _erf(x):
        return _erf_object(x).astype(np.float64)


def exact_gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def approximate_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS = {
    "gelu": exact_gelu,
    "gelu_new": approximate_gelu,
    "gelu_pytorch_tanh": approximate_gelu,
}


def layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def softmax(x):
    exponentials = np.exp(x - x.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


def bert_forward(tensors, hf_config, input_ids, input_mask, segment_ids):
    """Runs BERT on numpy inputs.

    Args:
        tensors: Hugging Face tensor name (without the `bert.` prefix,
            LayerNorm as weight/bias) -> numpy array.
        hf_config: the Hugging Face config.json as a dict.
        input_ids, input_mask, segment_ids: int arrays `(batch, length)`.

    Returns:
        A dict of float64 arrays: `sequence_output`, `pooled_output` and
        `encoder_outputs` (a list, one per layer).
    """
    weights = {name: np.asarray(t, dtype=np.float64) for name, t in tensors.items()}
    epsilon = hf_config["layer_norm_eps"]
    num_heads = hf_config["num_attention_heads"]
    activation = ACTIVATIONS[hf_config["hidden_act"]]

    def linear(x, name):  # a PyTorch linear layer: x W^T + b
        weight = weights[f"{name}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T + weights[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[0])

    def norm(x, name):
        return layer_norm(x, weights[f"{name}.weight"], weights[f"{name}.bias"], epsilon)

    batch, length = input_ids.shape
    x = (
        weights["embeddings.word_embeddings.weight"][input_ids]
        + weights["embeddings.token_type_embeddings.weight"][segment_ids]
        + weights["embeddings.position_embeddings.weight"][np.arange(length)][None]
    )
    x = norm(x, "embeddings.LayerNorm")
    hidden = x.shape[-1]
    head_size = hidden // num_heads
    key_is_real = np.asarray(input_mask, bool)[:, None, None, :]

    def split_heads(t):  # (batch, length, hidden) -> (batch, heads, length, head)
        return t.reshape(batch, length, num_heads, head_size).transpose(0, 2, 1, 3)

    encoder_outputs = []
    for index in range(hf_config["num_hidden_layers"]):
        prefix = f"encoder.layer.{index}"
        query = split_heads(linear(x, f"{prefix}.attention.self.query"))
        key = split_heads(linear(x, f"{prefix}.attention.self.key"))
        value = split_heads(linear(x, f"{prefix}.attention.self.value"))
        scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(head_size)
        scores = np.where(key_is_real, scores, -np.inf)
        context = softmax(scores) @ value
        context = context.transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attention = linear(context, f"{prefix}.attention.output.dense")
        x = norm(attention + x, f"{prefix}.attention.output.LayerNorm")
        intermediate = activation(linear(x, f"{prefix}.intermediate.dense"))
        output = linear(intermediate, f"{prefix}.output.dense")
        x = norm(output + x, f"{prefix}.output.LayerNorm")
        encoder_outputs.append(x)
    pooled = np.tanh(linear(x[:, 0], "pooler.dense"))
    return {
        "sequence_output": x,
        "pooled_output": pooled,
        "encoder_outputs": encoder_outputs,
    }


def mean_pooled_sentence_embedding(sequence_output, input_mask):
    """Mean of the hidden states over the mask, L2-normalised (as
    sentence-transformers' all-MiniLM-L6-v2 computes its embedding)."""
    mask = np.asarray(input_mask, np.float64)[..., None]
    summed = (np.asarray(sequence_output, np.float64) * mask).sum(1)
    mean = summed / np.maximum(mask.sum(1), 1e-9)
    return mean / np.linalg.norm(mean, axis=-1, keepdims=True)

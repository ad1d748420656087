"""Computes every tfnlp layer's outputs on the Keras backend it is run with.

    KERAS_BACKEND=jax python -m tests.backend_outputs OUTPUT.npz

The weights and inputs come from a fixed numpy seed, so the outputs on two
backends must agree (tests/test_backends.py computes TensorFlow's in its own
process and runs this module for JAX's).
"""

import sys

import keras
import numpy as np

from tfnlp import layers


def seeded_weights(layer, seed):
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [rng.normal(scale=0.3, size=w.shape).astype("float32") for w in layer.weights]
    )


def compute_outputs():
    rng = np.random.default_rng(0)
    target = rng.normal(size=(2, 5, 16)).astype("float32")
    source = rng.normal(size=(2, 7, 16)).astype("float32")
    source_mask = np.array([[True] * 7, [True] * 4 + [False] * 3])
    outputs = {}

    def run(name, layer, *args, **kwargs):
        layer(*args, **kwargs)
        seeded_weights(layer, seed=len(outputs))
        result = layer(*args, **kwargs)
        for index, leaf in enumerate(keras.tree.flatten(result)):
            outputs[f"{name}/{index}"] = keras.ops.convert_to_numpy(leaf)

    outputs["scaled_dot_product_attention"] = keras.ops.convert_to_numpy(
        layers.scaled_dot_product_attention(target, source, source, source_mask[:, None])[0]
    )
    for score in ("dot", "general", "concat"):
        run(f"luong_{score}", layers.LuongAttention(score, scale=True),
            target, source, mask=source_mask)
    run("bahdanau", layers.BahdanauAttention(8, normalize=True),
        target[:, 0], source, mask=source_mask)
    run("multi_head_attention", layers.MultiHeadAttention(2, 8),
        target, source, attention_mask=source_mask[:, None], return_attention_scores=True)
    run("sinusoidal", layers.SinusoidalPositionEncoding(), target, start_index=3)
    run("position_embedding", layers.PositionEmbedding(10), target, start_index=2)
    run("encoder_block", layers.TransformerEncoderBlock(2, 32, activation="gelu"),
        target, padding_mask=source_mask[:, :5])
    run("decoder_block", layers.TransformerDecoderBlock(2, 32, norm_first=True),
        target, source, encoder_padding_mask=source_mask)
    run("lstm_encoder", layers.LSTMEncoder(8, num_layers=2, bidirectional=True),
        target, mask=source_mask[:, :5])
    run("scalar_mix", layers.ScalarMix(), [target, target * 2.0, target - 1.0])
    # The hash mask is integer arithmetic: the same seed drops the same
    # elements on every backend, call after call.
    run("dropout", layers.Dropout(0.5, seed=3), target, training=True)
    return outputs


if __name__ == "__main__":
    np.savez(sys.argv[1], backend=keras.backend.backend(), **compute_outputs())

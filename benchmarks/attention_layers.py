"""Speed of tfnlp's attention layers against their Keras references.

    python -m benchmarks.attention_layers [--batch_size=16 --length=128 --repeats=20]
    python -m benchmarks.attention_layers --quick   # a smoke run: batch 4 x 32, 3 repeats

Times a jit-compiled forward and backward pass of each tfnlp layer and of its
reference (`keras.layers.MultiHeadAttention`,
`keras_hub.layers.TransformerEncoder` / `TransformerDecoder`), with the same
weights and inputs, in the same run, interleaved so that machine noise hits
both alike. Prints a table and writes JSON (`--output`, default
benchmarks/results/attention_layers.json) whose "figures" are each layer's
time against its reference's. Ratio = tfnlp time / reference time (below 1
means tfnlp is faster).
"""

import argparse
import time

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from benchmarks.reporting import FIGURES_KEY, machine_description, time_figures, write_report
from tfnlp import layers


def make_step(layer, call):
    @tf.function(jit_compile=True)
    def step(inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(call(layer, inputs))
        return loss, tape.gradient(loss, layer.trainable_variables)

    return step


def median_seconds(step, inputs, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        loss, _ = step(inputs)
        loss.numpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cases(hidden, heads):
    key_dim = hidden // heads
    self_attention = lambda layer, x: layer(x["target"], x["target"], attention_mask=x["mask"])
    encoder = lambda layer, x: layer(x["target"], padding_mask=x["padding"])
    decoder = lambda layer, x: layer(x["target"], x["source"])
    return [
        ("MultiHeadAttention (self, masked)",
         layers.MultiHeadAttention(heads, key_dim),
         "keras.layers.MultiHeadAttention",
         keras.layers.MultiHeadAttention(heads, key_dim), self_attention),
        ("TransformerEncoderBlock",
         layers.TransformerEncoderBlock(heads, 4 * hidden, dropout=0.0),
         "keras-hub TransformerEncoder",
         keras_hub.layers.TransformerEncoder(4 * hidden, heads, dropout=0.0), encoder),
        ("TransformerDecoderBlock (cross)",
         layers.TransformerDecoderBlock(heads, 4 * hidden, dropout=0.0),
         "keras-hub TransformerDecoder",
         keras_hub.layers.TransformerDecoder(4 * hidden, heads, dropout=0.0), decoder),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: batch 4 x length 32, 3 repeats.")
    parser.add_argument("--output", default="benchmarks/results/attention_layers.json")
    args = parser.parse_args()
    if args.quick:
        args.batch_size, args.length, args.repeats = 4, 32, 3

    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.length, args.hidden)
    lengths = rng.integers(args.length // 2, args.length + 1, args.batch_size)
    padding = np.arange(args.length)[None, :] < lengths[:, None]
    inputs = {
        "target": tf.constant(rng.normal(size=shape).astype("float32")),
        "source": tf.constant(rng.normal(size=shape).astype("float32")),
        "padding": tf.constant(padding),
        # Key padding, as an encoder uses it: every query row sees a key.
        "mask": tf.constant(np.broadcast_to(padding[:, None, :], (args.batch_size, args.length, args.length))),
    }
    rows = []
    for name, ours, reference_name, reference, call in cases(args.hidden, args.heads):
        call(reference, inputs)
        call(ours, inputs)
        ours.set_weights(reference.get_weights())
        difference = float(np.max(np.abs(call(ours, inputs) - call(reference, inputs))))
        steps = [make_step(ours, call), make_step(reference, call)]
        for step in steps:
            step(inputs)  # compile
        ours_times, reference_times = [], []
        for _ in range(3):  # interleave, so drift affects both
            ours_times.append(median_seconds(steps[0], inputs, args.repeats))
            reference_times.append(median_seconds(steps[1], inputs, args.repeats))
        ours_ms, reference_ms = 1e3 * min(ours_times), 1e3 * min(reference_times)
        rows.append({
            "layer": name, "reference": reference_name, "tfnlp_ms": ours_ms,
            "reference_ms": reference_ms,
            "ratio": round(ours_ms / reference_ms, 3),
            "max_output_difference": difference,
        })

    print(f"forward+backward, XLA, batch {args.batch_size} × length {args.length} × "
          f"hidden {args.hidden}, {args.heads} heads, on {machine_description()}, "
          f"backend {keras.backend.backend()}")
    print(f"{'layer':36} {'tfnlp ms':>9} {'reference ms':>13} {'ratio':>7} {'max |diff|':>11}")
    for row in rows:
        print(f"{row['layer']:36} {row['tfnlp_ms']:9.2f} {row['reference_ms']:13.2f} "
              f"{row['ratio']:7.3f} {row['max_output_difference']:11.2e}")
    figures = time_figures(rows, lambda row: f"{row['layer']} forward+backward")
    write_report({"settings": vars(args), "results": rows, FIGURES_KEY: figures},
                 args.output)


if __name__ == "__main__":
    main()

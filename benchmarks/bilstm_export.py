"""Speed of an exported BiLSTM classifier: the fused LSTM kernel against
Keras' step loop.

    python -m benchmarks.bilstm_export [--repeats=300]
    python -m benchmarks.bilstm_export --quick   # a smoke run: 20 repeats

Builds a `BiLSTMClassifier` of Tang et al.'s sizes (the "tang2019" preset,
random weights, a 20,000-word vocabulary) and times, in the same run and
interleaved, the two ways an export can compute its logits from word ids:
`model(token_ids)` (Keras' LSTM layers, a `tf.while_loop` per direction)
and `tfnlp.export.fused_lstm.fused_logits` (TensorFlow's fused
`BlockLSTMV2` kernel), each a `tf.function`, at batch 1 for several
sentence lengths and at batches of 4 to 32 (the export runs batches of
one on the fused kernel and larger ones through Keras' layers). Prints a table and writes JSON
(`--output`, default benchmarks/results/bilstm_export.json) whose
"figures" are the fused times against Keras'. Ratio = fused time / Keras
time (below 1 means the fused kernel is faster).
"""

import argparse
import time

import numpy as np
import tensorflow as tf

from benchmarks.reporting import FIGURES_KEY, machine_description, time_figures, write_report
from tfnlp.export.fused_lstm import fused_logits
from tfnlp.models import BiLSTMClassifier

VOCABULARY_SIZE = 20_000
# (batch, words): SST-2's dev sentences have 19.5 words on average.
SHAPES = ((1, 5), (1, 10), (1, 20), (1, 40), (4, 20), (8, 20), (16, 20), (32, 20))


def median_ms(function, token_ids, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(token_ids).numpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1000


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="A smoke run: --repeats=20.")
    parser.add_argument("--output", default="benchmarks/results/bilstm_export.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.repeats = 20
    model = BiLSTMClassifier.from_preset("tang2019", vocabulary_size=VOCABULARY_SIZE,
                                         num_classes=2)
    keras_loop = tf.function(lambda token_ids: model(token_ids, training=False))
    fused = tf.function(lambda token_ids: fused_logits(model, token_ids))
    rng = np.random.default_rng(0)
    rows = []
    for batch, words in SHAPES:
        token_ids = tf.constant(rng.integers(1, VOCABULARY_SIZE, (batch, words)), tf.int32)
        np.testing.assert_allclose(fused(token_ids), keras_loop(token_ids), atol=1e-4)
        keras_times, fused_times = [], []
        for _ in range(3):  # interleaved rounds: noise hits both alike
            keras_times.append(median_ms(keras_loop, token_ids, flags.repeats // 3 + 1))
            fused_times.append(median_ms(fused, token_ids, flags.repeats // 3 + 1))
        rows.append({"batch": batch, "words": words, "tfnlp_ms": float(np.median(fused_times)),
                     "reference": "Keras LSTM layers (tf.while_loop)",
                     "reference_ms": float(np.median(keras_times))})
    print(f"BiLSTMClassifier tang2019, {machine_description()}")
    print(f"{'batch':>5} {'words':>5} {'Keras ms':>9} {'fused ms':>9} {'ratio':>6}")
    for row in rows:
        print(f"{row['batch']:>5} {row['words']:>5} {row['reference_ms']:>9.3f} "
              f"{row['tfnlp_ms']:>9.3f} {row['tfnlp_ms'] / row['reference_ms']:>6.2f}")
    write_report({"benchmark": "bilstm_export", "repeats": flags.repeats, "rows": rows,
                  FIGURES_KEY: time_figures(rows, lambda row: (
                      f"logits of batch {row['batch']} x {row['words']} words"))},
                 flags.output)


if __name__ == "__main__":
    main()

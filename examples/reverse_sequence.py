"""The reverse-sequence exercise: attention against none, on one budget.

    python -m examples.reverse_sequence --output_dir=DIR [--train_steps=2000]

Each source is 20 random symbols out of 16; its target is the same symbols
reversed, so the first target symbol depends on the last source symbol,
the furthest away from it in the encoder-decoder without attention, which
must carry the whole sequence in its final state. With attention each
target step can look at the one source position it copies (an
anti-diagonal alignment), as Bahdanau et al. (2015) and Luong et al.
(2015) motivate it.

The example trains `tfnlp.models.RNNSeq2Seq` with `attention=None` and with
every attention variant, on the same training batches (fresh random
sequences, the same seed for every variant), the same sizes and the same
number of steps; then decodes a fixed test set greedily through
`tfnlp.decoding` and scores the per-element accuracy (the share of the 20
target positions with the right symbol). It prints a table and writes

- `DIR/results.json`: `{variant: accuracy}`, the variants named as the
  `attention` argument and `"none"` for the model without attention;
- `DIR/alignment_<variant>.png`: the alignment of one test sequence, for
  the `--plot_variant` model (the anti-diagonal when it has learned the
  task).
"""

import argparse
import json
import logging
import os
import sys
import time

import keras
import numpy as np

from tfnlp.data.translation_schema import BOS_ID, EOS_ID
from tfnlp.decoding import GreedySearch
from tfnlp.models import RNNSeq2Seq
from tfnlp.models.seq2seq import ATTENTIONS
from tfnlp.visualization import alignment_figure

VARIANTS = ("none", *ATTENTIONS)
SEQUENCE_LENGTH = 20
NUM_SYMBOLS = 16
# Symbol s is token id FIRST_SYMBOL_ID + s (ids below are PAD, UNK, BOS, EOS).
FIRST_SYMBOL_ID = 4

LOGGER = logging.getLogger("examples.reverse_sequence")


def random_sequences(count, seed):
    """`count` sequences of `SEQUENCE_LENGTH` symbol ids, uniformly drawn."""
    rng = np.random.default_rng(seed)
    return rng.integers(FIRST_SYMBOL_ID, FIRST_SYMBOL_ID + NUM_SYMBOLS,
                        size=(count, SEQUENCE_LENGTH)).astype("int32")


def model_inputs(sequences):
    """The model inputs and targets of the reversal task: the source with
    EOS, the reversed sequence behind BOS, and the reversed one with EOS."""
    count = len(sequences)
    eos = np.full((count, 1), EOS_ID, "int32")
    reversed_sequences = sequences[:, ::-1]
    inputs = {
        "encoder_token_ids": np.concatenate([sequences, eos], axis=1),
        "decoder_token_ids": np.concatenate(
            [np.full((count, 1), BOS_ID, "int32"), reversed_sequences], axis=1),
    }
    return inputs, np.concatenate([reversed_sequences, eos], axis=1)


def build_model(variant, hidden_dim, seed):
    keras.utils.set_random_seed(seed)
    return RNNSeq2Seq(
        vocabulary_size=FIRST_SYMBOL_ID + NUM_SYMBOLS,
        attention=None if variant == "none" else variant,
        embedding_dim=hidden_dim // 2,
        hidden_dim=hidden_dim,
        num_layers=1,
        bidirectional=True,
        dropout=0.0,
    )


def train(model, train_steps, batch_size, learning_rate, seed):
    """Trains on `train_steps` batches of fresh random sequences (the same
    for every model with the same seed); returns the seconds it took."""
    inputs, targets = model_inputs(random_sequences(train_steps * batch_size, seed))
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    started = time.perf_counter()
    model.fit(inputs, targets, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    return time.perf_counter() - started


def accuracy(model, sequences, batch_size=500):
    """The per-element accuracy of greedy decoding: the share of target
    positions (the `SEQUENCE_LENGTH` symbols, EOS not counted) decoded
    right."""
    inputs, targets = model_inputs(sequences)
    correct = 0
    for start in range(0, len(sequences), batch_size):
        sources = inputs["encoder_token_ids"][start:start + batch_size]
        result = model.generate(sources, GreedySearch(), max_length=SEQUENCE_LENGTH + 1)
        ids = keras.ops.convert_to_numpy(result["ids"])[:, 0, :SEQUENCE_LENGTH]
        correct += int(np.sum(ids == targets[start:start + batch_size, :SEQUENCE_LENGTH]))
    return correct / (len(sequences) * SEQUENCE_LENGTH)


def plot_alignment(model, sequence, path, title):
    """Writes the alignment of one (source, reversed target) pair as a PNG."""
    inputs, _ = model_inputs(sequence[None])
    weights = keras.ops.convert_to_numpy(model.alignments(inputs))[0]
    labels = [str(int(token) - FIRST_SYMBOL_ID) for token in sequence]
    figure = alignment_figure(weights, labels + ["</s>"], labels[::-1] + ["</s>"], title=title)
    figure.savefig(path)


def parse_flags(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m examples.reverse_sequence",
        description="Trains the LSTM encoder-decoder with each attention variant and "
                    "without attention on sequence reversal, and compares them.",
        allow_abbrev=False,
    )
    parser.add_argument("--output_dir", required=True,
                        help="Where results.json and the alignment PNG go.")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"Comma-separated, of: {', '.join(VARIANTS)}.")
    parser.add_argument("--train_steps", type=int, default=2000)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--hidden_dim", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    parser.add_argument("--test_sequences", type=int, default=1000)
    parser.add_argument("--plot_variant", default="luong_general",
                        help="The variant whose alignment is drawn (if it is run).")
    parser.add_argument("--seed", type=int, default=0)
    flags = parser.parse_args(argv)
    variants = [name.strip() for name in flags.variants.split(",") if name.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not variants:
        parser.error(f"--variants: unknown {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(VARIANTS)}.")
    for name in ("train_steps", "batch_size", "hidden_dim", "test_sequences"):
        if getattr(flags, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(flags, name)}.")
    if flags.hidden_dim % 2:
        parser.error(f"--hidden_dim must be even (the encoder is bidirectional), got "
                     f"{flags.hidden_dim}.")
    flags.variants = variants
    return flags


def main(argv=None):
    """Runs the comparison; returns `{variant: accuracy}`."""
    flags = parse_flags(argv)
    os.makedirs(flags.output_dir, exist_ok=True)
    test_sequences = random_sequences(flags.test_sequences, seed=flags.seed + 1_000_003)
    results, rows = {}, []
    for variant in flags.variants:
        model = build_model(variant, flags.hidden_dim, flags.seed)
        seconds = train(model, flags.train_steps, flags.batch_size, flags.learning_rate,
                        flags.seed)
        results[variant] = accuracy(model, test_sequences)
        rows.append((variant, results[variant], seconds))
        LOGGER.info("%s: per-element accuracy %.4f after %d steps (%.0f s).", variant,
                    results[variant], flags.train_steps, seconds)
        if variant == flags.plot_variant:
            plot_alignment(model, test_sequences[0],
                           os.path.join(flags.output_dir, f"alignment_{variant}.png"),
                           f"{variant}: alignment of a test sequence")
    with open(os.path.join(flags.output_dir, "results.json"), "w", encoding="utf-8") as file:
        json.dump(results, file, indent=2)
    print(f"{'variant':<22}{'accuracy':>10}{'train s':>10}")
    for variant, value, seconds in rows:
        print(f"{variant:<22}{value:>10.4f}{seconds:>10.0f}")
    return results


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    main()

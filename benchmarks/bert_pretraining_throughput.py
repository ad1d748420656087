"""Training throughput of tfnlp's BERT pretraining model against keras-hub's.

    python -m benchmarks.bert_pretraining_throughput [--config=mini --batch_size=16
        --sequence_length=128 --predictions=20 --steps=10 --dtype=float32]
    python -m benchmarks.bert_pretraining_throughput --quick   # a smoke run: tiny, 3 steps
    KERAS_BACKEND=jax python -m benchmarks.bert_pretraining_throughput --config=base --dtype=bfloat16

Builds `tfnlp.models.BertPretrainingModel` and `keras_hub.models.BertMaskedLM`
with the same dimensions (a `tfnlp.models.BertConfig` preset), trains both
with `compile(jit_compile=True)` + `train_on_batch` (AdamW, the same random
batch: `batch_size` sequences of `sequence_length` tokens with
`predictions` masked positions each), alternating one step of each so that
machine noise hits both alike, and reports the median step time as tokens/s
(ratio tfnlp / keras-hub; goal at least 1.25x). keras-hub's model has no
next-sentence head; tfnlp's computes one more (2-way) output. Each reports
its usual metrics: keras-hub a weighted masked-LM accuracy, tfnlp
masked-LM accuracy and perplexity and next-sentence accuracy.

Model FLOPs utilisation (MFU): the training FLOPs each model performs in a
step (3x the forward FLOPs: the encoder's matmuls and attention, the
masked-LM head on the gathered positions; tfnlp's last layer computes only
the masked positions and [CLS]; embedding lookups count 0) divided by the
step time,
over a matmul rate measured in the same run (the best of square float
matmuls of the benchmark's dtype, jit-compiled).

Backend-agnostic (Keras 3 + `keras.ops`), so on a GPU machine that has JAX
but no TensorFlow it runs with `KERAS_BACKEND=jax`. Prints a table and
writes JSON (`--output`, default
benchmarks/results/bert_pretraining_throughput.json) whose "figures" are
the tokens/s and the MFU of tfnlp against keras-hub's.
"""

import argparse
import time

import keras
import keras_hub
import numpy as np

from benchmarks.matmul_rate import matmul_flops_per_second
from benchmarks.reporting import FIGURES_KEY, figure, write_report
from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel

SPEED_GOAL = 1.25
KERAS_HUB_MODEL = "keras-hub BertMaskedLM"


def random_batch(config, batch_size, sequence_length, predictions, seed=0):
    rng = np.random.default_rng(seed)
    positions = np.sort(
        np.stack([rng.choice(np.arange(1, sequence_length), predictions, replace=False)
                  for _ in range(batch_size)]), axis=1
    ).astype("int32")
    return {
        "input_ids": rng.integers(0, config.vocab_size, (batch_size, sequence_length)).astype("int32"),
        "input_mask": np.ones((batch_size, sequence_length), "int32"),
        "segment_ids": (np.arange(sequence_length) >= sequence_length // 2)[None, :]
        .repeat(batch_size, 0).astype("int32"),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(0, config.vocab_size, positions.shape).astype("int32"),
        "masked_lm_weights": np.ones(positions.shape, "float32"),
        "next_sentence_labels": rng.integers(0, 2, (batch_size, 1)).astype("int32"),
    }


def tfnlp_model(config):
    model = BertPretrainingModel(BertEncoder(config))
    model.compile(optimizer=keras.optimizers.AdamW(1e-4), jit_compile=True)
    return model, lambda batch: model.train_on_batch(batch)


def keras_hub_model(config):
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        # A masked-LM accuracy, as keras-hub's examples compile it; tfnlp's
        # model reports masked-LM accuracy, perplexity and NSP accuracy.
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=True,
    )

    def step(batch):
        inputs = {
            "token_ids": batch["input_ids"],
            "padding_mask": batch["input_mask"].astype(bool),
            "segment_ids": batch["segment_ids"],
            "mask_positions": batch["masked_lm_positions"],
        }
        return model.train_on_batch(
            inputs, batch["masked_lm_ids"], sample_weight=batch["masked_lm_weights"]
        )

    return model, step


def layer_flops(config, length, query_rows):
    """Forward FLOPs of one encoder layer whose outputs are needed at
    `query_rows` of `length` positions (keys and values at all of them)."""
    hidden = config.hidden_size
    return (
        2 * query_rows * hidden * 2 * hidden        # Q and output projections
        + 2 * length * hidden * 2 * hidden          # K and V projections
        + 2 * 2 * query_rows * length * hidden      # scores and weighted values
        + 2 * 2 * query_rows * hidden * config.intermediate_size  # feed-forward
    )


def training_flops(config, batch_size, sequence_length, predictions, last_layer_rows=None):
    """3x the forward matmul FLOPs of one step (multiply-adds count 2).

    `last_layer_rows`: the rows the model computes in its last layer
    (tfnlp: the masked positions and [CLS]; keras-hub: all of them). Each
    model's MFU counts the FLOPs it performs, not those of the other.
    """
    hidden, length = config.hidden_size, sequence_length
    last_layer_rows = length if last_layer_rows is None else last_layer_rows
    encoder = ((config.num_layers - 1) * layer_flops(config, length, length)
               + layer_flops(config, length, last_layer_rows))
    head = 2 * predictions * hidden * (hidden + config.vocab_size)
    pooler = 2 * hidden * hidden + 2 * hidden * 2
    return 3 * batch_size * (encoder + head + pooler)


def figures(config, results):
    """The headline figures: tfnlp's training tokens/s and MFU against
    keras-hub's."""
    ours, reference = results["tfnlp"], results["keras_hub"]
    return [
        figure(f"BERT {config} training tokens per second", ours["tokens_per_second"],
               "tokens/s", reference=KERAS_HUB_MODEL,
               reference_value=reference["tokens_per_second"], goal=SPEED_GOAL),
        figure(f"BERT {config} model FLOPs utilisation",
               100 * ours["model_flops_utilisation"], "%", reference=KERAS_HUB_MODEL,
               reference_value=100 * reference["model_flops_utilisation"]),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="mini", help="A BertConfig preset.")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per model.")
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                        help="bfloat16: the mixed_bfloat16 policy.")
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: the tiny preset, 1 warm-up and 3 timed steps.")
    parser.add_argument("--output", default="benchmarks/results/bert_pretraining_throughput.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.config, flags.warmup_steps, flags.steps = "tiny", 1, 3
    if flags.dtype == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)

    config = BertConfig.preset(flags.config)
    batch = random_batch(config, flags.batch_size, flags.sequence_length, flags.predictions)
    steps = {}
    for name, build in (("tfnlp", tfnlp_model), ("keras_hub", keras_hub_model)):
        model, step = build(config)
        steps[name] = (model, step)
    times = {name: [] for name in steps}
    for index in range(flags.warmup_steps + flags.steps):
        for name, (_, step) in steps.items():
            start = time.perf_counter()
            step(batch)
            if index >= flags.warmup_steps:
                times[name].append(time.perf_counter() - start)

    matmul_rate = matmul_flops_per_second(flags.dtype)
    flops = {
        "tfnlp": training_flops(config, flags.batch_size, flags.sequence_length,
                                flags.predictions, last_layer_rows=flags.predictions + 1),
        "keras_hub": training_flops(config, flags.batch_size, flags.sequence_length,
                                    flags.predictions),
    }
    tokens = flags.batch_size * flags.sequence_length
    results = {}
    print(f"BERT {flags.config} ({config.num_layers} layers, hidden {config.hidden_size}), "
          f"batch {flags.batch_size} x {flags.sequence_length}, {flags.predictions} predictions, "
          f"{flags.dtype}, backend {keras.backend.backend()}; matmul rate "
          f"{matmul_rate / 1e9:.1f} GFLOP/s")
    header = f"{'model':<12} {'parameters':>11} {'median step s':>14} {'tokens/s':>10} {'MFU':>7}"
    print(header)
    print("-" * len(header))
    for name, (model, _) in steps.items():
        seconds = float(np.median(times[name]))
        results[name] = {
            "parameters": int(model.count_params()),
            "median_step_seconds": seconds,
            "step_seconds": times[name],
            "tokens_per_second": tokens / seconds,
            "training_flops_per_step": flops[name],
            "model_flops_utilisation": flops[name] / seconds / matmul_rate,
        }
        print(f"{name:<12} {results[name]['parameters']:>11,d} {seconds:>14.4f} "
              f"{results[name]['tokens_per_second']:>10.0f} "
              f"{results[name]['model_flops_utilisation']:>7.1%}")
    ratio = results["tfnlp"]["tokens_per_second"] / results["keras_hub"]["tokens_per_second"]
    print(f"\ntfnlp tokens/s / keras-hub: {ratio:.2f}x (goal >= {SPEED_GOAL}x: "
          f"{'met' if ratio >= SPEED_GOAL else 'NOT met'})")

    report = {
        "parameters": vars(flags),
        "backend": keras.backend.backend(),
        "matmul_flops_per_second": matmul_rate,
        "results": results,
        "ratio": {"value": ratio, "goal": SPEED_GOAL, "met": ratio >= SPEED_GOAL},
        FIGURES_KEY: figures(flags.config, results),
    }
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

"""Training throughput of tfnlp's GPTCausalLM against keras-hub's GPT2CausalLM.

    python -m benchmarks.lm_training [--num_layers=4 --hidden_dim=256 --num_heads=4
        --sequence_length=128 --batch_size=32 --vocabulary_size=68 --steps=20]
    python -m benchmarks.lm_training --quick      # a smoke run: 2 layers, 3 steps

Builds `tfnlp.models.GPTCausalLM` and keras-hub's `GPT2CausalLM` (on a
`GPT2Backbone`) with the same dimensions (no dropout), and trains both on
the same random batch of token windows with `compile(...)` +
`train_on_batch` (AdamW, the next-token cross-entropy over every
position), alternating one step of each so that machine noise hits both
alike. It reports the median step time as tokens/s in two settings:

- "XLA": float32, `jit_compile=True` (goal: at least 1.25x keras-hub's
  tokens/s), with each model's FLOPs utilisation (MFU: the training
  FLOPs of a step, which are the same for both, over the step time and
  over a float32 XLA matmul rate measured in the same run). MFU shows
  the room there is: both models perform the same matmuls, so a ratio
  of r needs r times keras-hub's MFU;
- "bfloat16 graph": the `mixed_bfloat16` policy without XLA, the setting
  `trainer.lm` trains fastest with on a CPU with bfloat16 instructions.

Backend-agnostic (Keras 3 + `keras.ops`): with `KERAS_BACKEND=jax` on a
GPU machine, "graph" means JAX's jit. Prints a table and writes JSON
(`--output`, default benchmarks/results/lm_training.json) whose "figures"
are tfnlp's tokens/s and MFU against keras-hub's.
"""

import argparse
import time

import keras
import keras_hub
import numpy as np

from benchmarks.matmul_rate import matmul_flops_per_second
from benchmarks.reporting import FIGURES_KEY, figure, write_report
from tfnlp.models import GPTCausalLM

SPEED_GOAL = 1.25
KERAS_HUB_MODEL = "keras-hub GPT2CausalLM"
SETTINGS = {"XLA": ("float32", True), "bfloat16 graph": ("mixed_bfloat16", False)}


def sizes(flags):
    return dict(vocabulary_size=flags.vocabulary_size, num_layers=flags.num_layers,
                num_heads=flags.num_heads, hidden_dim=flags.hidden_dim,
                intermediate_dim=4 * flags.hidden_dim,
                max_sequence_length=flags.sequence_length)


def training_flops(flags):
    """3x the forward matmul FLOPs of one step (multiply-adds count 2): per
    layer the Q, K, V and output projections, the attention scores and
    weighted values over all positions (causal masking computes them all),
    the feed-forward network; then the tied output projection. Both models
    perform exactly these."""
    hidden, length = flags.hidden_dim, flags.sequence_length
    layer = (2 * length * hidden * 4 * hidden
             + 2 * 2 * length * length * hidden
             + 2 * 2 * length * hidden * 4 * hidden)
    head = 2 * length * hidden * flags.vocabulary_size
    return 3 * flags.batch_size * (flags.num_layers * layer + head)


def tfnlp_model(flags):
    return GPTCausalLM(**sizes(flags), dropout=0.0), lambda ids: ids


def keras_hub_model(flags):
    backbone = keras_hub.models.GPT2Backbone(**sizes(flags), dropout=0.0)
    model = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    return model, lambda ids: {"token_ids": ids, "padding_mask": np.ones_like(ids, bool)}


def compiled(build, flags, jit_compile):
    """`(model, step)`: the model compiled for training and its one-step
    function on a batch of windows."""
    model, inputs = build(flags)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)

    def step(windows):
        return model.train_on_batch(inputs(windows[:, :-1]), windows[:, 1:])

    return model, step


def measure(flags, policy, jit_compile, windows):
    """`{name: (parameters, step seconds)}` of both models in one setting."""
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    steps = {name: compiled(build, flags, jit_compile)
             for name, build in (("tfnlp", tfnlp_model), ("keras_hub", keras_hub_model))}
    times = {name: [] for name in steps}
    for index in range(flags.warmup_steps + flags.steps):
        for name, (_, step) in steps.items():
            start = time.perf_counter()
            step(windows)
            if index >= flags.warmup_steps:
                times[name].append(time.perf_counter() - start)
    keras.mixed_precision.set_global_policy("float32")
    return {name: (int(model.count_params()), times[name]) for name, (model, _) in steps.items()}


def figures(results):
    rows = []
    for setting, models in results.items():
        ours, reference = models["tfnlp"], models["keras_hub"]
        rows.append(figure(f"training tokens/s, {setting}", ours["tokens_per_second"],
                           "tokens/s", reference=KERAS_HUB_MODEL,
                           reference_value=reference["tokens_per_second"],
                           goal=SPEED_GOAL if setting == "XLA" else None))
        if "model_flops_utilisation" in ours:
            rows.append(figure(f"model FLOPs utilisation, {setting}",
                               100 * ours["model_flops_utilisation"], "%",
                               reference=KERAS_HUB_MODEL,
                               reference_value=100 * reference["model_flops_utilisation"]))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_layers", type=int, default=4)
    parser.add_argument("--hidden_dim", type=int, default=256)
    parser.add_argument("--num_heads", type=int, default=4)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--vocabulary_size", type=int, default=68,
                        help="68: the character vocabulary of Tiny Shakespeare.")
    parser.add_argument("--steps", type=int, default=20, help="Timed steps per model.")
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: 2 layers of width 64, 1 warm-up and 3 timed steps.")
    parser.add_argument("--output", default="benchmarks/results/lm_training.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.num_layers, flags.hidden_dim, flags.num_heads = 2, 64, 2
        flags.warmup_steps, flags.steps = 1, 3
    windows = np.random.default_rng(0).integers(
        0, flags.vocabulary_size, (flags.batch_size, flags.sequence_length + 1)).astype("int32")
    tokens = flags.batch_size * flags.sequence_length
    print(f"GPT {flags.num_layers} layers, width {flags.hidden_dim}, {flags.num_heads} heads, "
          f"batch {flags.batch_size} x {flags.sequence_length}, vocabulary "
          f"{flags.vocabulary_size}, backend {keras.backend.backend()}")
    header = f"{'setting':<16} {'model':<10} {'parameters':>11} {'median step s':>14} {'tokens/s':>10}"
    print(header)
    print("-" * len(header))
    results = {}
    flops = training_flops(flags)
    # The float32 XLA rate; MFU is reported for the XLA setting only, the
    # bfloat16 graph's matmuls run at another rate.
    matmul_rate = matmul_flops_per_second("float32")
    print(f"training FLOPs per step {flops / 1e9:.1f} G; float32 XLA matmul rate "
          f"{matmul_rate / 1e9:.1f} GFLOP/s")
    for setting, (policy, jit_compile) in SETTINGS.items():
        results[setting] = {}
        for name, (parameters, times) in measure(flags, policy, jit_compile, windows).items():
            seconds = float(np.median(times))
            results[setting][name] = {"parameters": parameters, "median_step_seconds": seconds,
                                      "step_seconds": times, "tokens_per_second": tokens / seconds}
            mfu = ""
            if setting == "XLA":
                utilisation = flops / seconds / matmul_rate
                results[setting][name]["model_flops_utilisation"] = utilisation
                mfu = f"  MFU {100 * utilisation:.1f} %"
            print(f"{setting:<16} {name:<10} {parameters:>11,d} {seconds:>14.4f} "
                  f"{tokens / seconds:>10.0f}{mfu}")
    for setting, rows in results.items():
        ratio = rows["tfnlp"]["tokens_per_second"] / rows["keras_hub"]["tokens_per_second"]
        goal = f" (goal >= {SPEED_GOAL}x)" if setting == "XLA" else ""
        print(f"{setting}: tfnlp tokens/s / keras-hub: {ratio:.2f}x{goal}")
    report = {
        "parameters": vars(flags),
        "backend": keras.backend.backend(),
        "training_flops_per_step": flops,
        "matmul_flops_per_second": matmul_rate,
        "results": results,
        FIGURES_KEY: figures(results),
    }
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

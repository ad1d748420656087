"""Training throughput of tfnlp's TransformerSeq2Seq against keras-hub layers.

    python -m benchmarks.translation_training [--data_dir=DIR --buckets=2
        --batches_per_bucket=1 --rounds=3 --eager_rounds=2 --dropout=0.1]
    python -m benchmarks.translation_training --quick    # a smoke run of about 30 s
    KERAS_BACKEND=jax python -m benchmarks.translation_training   # the JAX path

Two models of the same sizes (`TransformerSeq2Seq` preset `--preset`, tiny:
4 + 4 layers, width 128, 4 heads, feed-forward 256, post-LN, ReLU; a shared
`--vocabulary_size` vocabulary; dropout `--dropout` on the embeddings,
attention weights and sublayer outputs):

- tfnlp: `tfnlp.models.TransformerSeq2Seq.from_preset(...)`;
- keras-hub (the reference): `keras_hub.layers.ReversibleEmbedding` (the
  token embedding, tied to the output projection, the same initializer),
  scaled by sqrt(width), plus `keras_hub.layers.SinePositionEncoding`, then
  `keras.layers.Dropout`; `keras_hub.layers.TransformerEncoder` blocks with the
  source padding mask; `keras_hub.layers.TransformerDecoder` blocks (causal
  self-attention, cross-attention with the source padding mask; no decoder
  padding mask, as tfnlp's, since causal attention never reads the padding
  behind a row's end).

Both train with the same step, written here, only the model differs: the
logits of `{"encoder_token_ids", "decoder_token_ids"}`,
`tfnlp.losses.label_smoothed_cross_entropy` (epsilon 0.1) summed over the
real target tokens and divided by their number, gradients, and
`keras.optimizers.Adam` (learning rate 5e-4, beta_2 0.98, epsilon 1e-9; one
optimizer per model). On TensorFlow the step is a
`tf.function(jit_compile=True)` over a `tf.GradientTape` (the "XLA" rows),
and the same `tf.function` without XLA (the "graph" rows, `--eager_rounds`
rounds; 0 skips them). With `KERAS_BACKEND=jax` the same loss runs through
`model.stateless_call` under `jax.value_and_grad` and
`optimizer.stateless_apply`, in one `jax.jit` (the "jax.jit" rows; there is
no non-XLA case on JAX).

The batches are real Multi30k En-De pairs: the shards of `python -m
pipelines.translation_data --source_file=../shared/data/mt/train.en
--target_file=../shared/data/mt/train.de --shared_vocab` (`--data_dir`;
without it the pipeline runs into a temporary directory first, about 10 s;
see `benchmarks.translation_inputs`)
read by `tfnlp.data.translation_dataset` (a budget of
`--max_tokens_per_batch` = 4096 padded positions per side, length buckets
padded to the bucket length, max length 128, shuffled with seed 1). One
epoch has 137 batches of 45 shapes; compiling every shape for two models
would take most of the time on a small CPU (30 to 60 s a shape and model
under XLA), so the benchmark uses the `--buckets` most frequent bucket
shapes of the epoch (2: 186 x 22 and 273 x 15 pairs x positions, both
sides; 3 adds 240 x 17; their lengths are the common ones, near the mean 16
ids a side) and the first `--batches_per_bucket` batches of each (about
7,500 real tokens a batch, 8% padding). Every shape is run once (compiled)
before timing. The decoder inputs are the targets shifted right behind BOS
(`tfnlp.models.seq2seq.transformer_seq2seq.decoder_inputs`), computed once
with the batches.

Timing: `--rounds` rounds; in each, every batch is run by tfnlp then by
keras-hub (interleaved, so that machine noise hits both alike), each step
timed until its loss is on the host, in wall-clock seconds and in this
process's CPU seconds. A model's wall time for the batch set is the sum over
its batches of each batch's fastest step (the one least disturbed by other
processes); its CPU time the sum of each batch's median CPU seconds.
Throughput = the real (non-padding) source + target tokens of the set over
that time. Ratio = tfnlp tokens/s / keras-hub tokens/s (goal at least
1.25), for both clocks. On a shared machine the CPU time is the steadier
(in one run a step's CPU seconds varied by 2% over rounds where its wall
seconds varied by 2x; other processes still slow it through shared caches);
on a machine of one's own the two agree.

Where the difference comes from (CPU, XLA, measured with this script): with
`--dropout=0` the two models train at the same speed (CPU-time ratio 0.99
under XLA, 1.05 without), so tfnlp's lead under XLA is its dropout:
`tfnlp.layers.Dropout` draws its masks with an integer hash that XLA fuses
into the multiply (dropout 0.1 costs tfnlp about 2% of the step), while
`keras.layers.Dropout` draws them with the backend's RNG, which XLA on CPU
cannot fuse (it costs keras-hub about a quarter of its step). Without XLA
the hash is a chain of unfused elementwise ops, a little dearer than
TensorFlow's random kernel, and the advantage is gone (ratio 0.90 to 1.00).

Measured on 2 shared CPU cores (TensorFlow 2.21, Keras 3.15, keras-hub
0.32), the default run (about 3 minutes): XLA 6,679 against 5,350 real
tokens/s, 1.25x (1.248; CPU time 1.35x); without XLA 5,325 against 5,913,
0.90x (CPU time 0.90x). Over five runs of 1 to 3 shapes the XLA ratio went
from 1.05 to 1.36 by wall clock (1.26 to 1.35 by CPU time, the three runs
that had it) and the non-XLA one from 0.90 to 1.15 (0.90 to 1.00): tfnlp is
about 1.25 to 1.35x faster with XLA, at the goal, and level without.
`KERAS_BACKEND=jax` on the same CPU: 3,628 against 3,373, 1.08x (1.06x CPU
time; JAX on CPU ran the step on about one core). The JAX path has not run
on a GPU here. `--quick` (1 + 1 blocks, a 512-position batch) is a smoke
run only; its ratio means little.

Prints a table and writes JSON (default
benchmarks/results/translation_training.json; not with --quick unless
--output is given) with the settings, the machine, every step time and the
figures. Relative paths are resolved from the repository root.
"""

import argparse
import collections
import glob
import math
import os
import time

import keras
import keras_hub
import numpy as np
from keras import ops

from benchmarks.reporting import FIGURES_KEY, figure, machine_description, write_report
from benchmarks.translation_inputs import SHARD_PATTERN, add_data_flags, shards_directory
from tfnlp.losses import label_smoothed_cross_entropy
from tfnlp.models.seq2seq import TRANSFORMER_PRESETS, TransformerSeq2Seq
from tfnlp.models.seq2seq.generation import (
    DECODER_TOKEN_IDS,
    ENCODER_TOKEN_IDS,
    decoder_inputs,
)

SPEED_GOAL = 1.25  # under XLA (jax.jit on JAX); none without XLA
REFERENCE_NAME = "keras-hub TransformerEncoder/TransformerDecoder"
DATA_SEED = 1


# === The reference model ===


class KerasHubSeq2Seq(keras.Model):
    """The Transformer encoder-decoder of `TransformerSeq2Seq`'s sizes, built
    from keras-hub's layers (post-LN blocks, tied embeddings)."""

    def __init__(self, vocabulary_size, num_encoder_layers, num_decoder_layers, hidden_dim,
                 num_heads, intermediate_dim, dropout, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            vocabulary_size, hidden_dim, tie_weights=True,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=hidden_dim**-0.5),
            name="token_embedding")
        self.positions = keras_hub.layers.SinePositionEncoding(name="positions")
        self.embeddings_dropout = keras.layers.Dropout(dropout, name="embeddings_dropout")
        self.encoder_blocks = [
            keras_hub.layers.TransformerEncoder(intermediate_dim, num_heads, dropout=dropout,
                                                name=f"encoder_block_{index}")
            for index in range(num_encoder_layers)]
        self.decoder_blocks = [
            keras_hub.layers.TransformerDecoder(intermediate_dim, num_heads, dropout=dropout,
                                                name=f"decoder_block_{index}")
            for index in range(num_decoder_layers)]

    def embed(self, token_ids, training=None):
        x = self.token_embedding(token_ids)
        x = x * ops.cast(math.sqrt(self.hidden_dim), x.dtype)
        x = x + self.positions(x)
        return self.embeddings_dropout(x, training=training)

    def call(self, inputs, training=None):
        source = ops.cast(inputs[ENCODER_TOKEN_IDS], "int32")
        padding_mask = ops.not_equal(source, 0)
        x = self.embed(source, training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=padding_mask, training=training)
        y = self.embed(ops.cast(inputs[DECODER_TOKEN_IDS], "int32"), training)
        for block in self.decoder_blocks:
            y = block(y, x, encoder_padding_mask=padding_mask, training=training)
        return ops.cast(self.token_embedding(y, reverse=True), "float32")


def build_models(flags):
    preset = TRANSFORMER_PRESETS[flags.preset]
    encoder_layers, decoder_layers = preset["num_encoder_layers"], preset["num_decoder_layers"]
    hidden_dim, num_heads = preset["hidden_dim"], preset["num_heads"]
    intermediate_dim = preset["intermediate_dim"]
    if flags.num_layers:
        encoder_layers = decoder_layers = flags.num_layers
    keras.utils.set_random_seed(0)
    ours = TransformerSeq2Seq.from_preset(flags.preset, vocabulary_size=flags.vocabulary_size,
                                          num_encoder_layers=encoder_layers,
                                          num_decoder_layers=decoder_layers,
                                          dropout=flags.dropout)
    reference = KerasHubSeq2Seq(flags.vocabulary_size, encoder_layers, decoder_layers,
                                hidden_dim, num_heads, intermediate_dim, flags.dropout)
    sample = {ENCODER_TOKEN_IDS: np.array([[5, 6, 3]], "int32"),
              DECODER_TOKEN_IDS: np.array([[2, 7, 8]], "int32")}
    for model in (ours, reference):
        model(sample)  # builds every variable
    return {"tfnlp": ours, "keras_hub": reference}


def make_optimizer():
    return keras.optimizers.Adam(learning_rate=5e-4, beta_2=0.98, epsilon=1e-9)


# === The training step (the same for both models) ===


def mean_loss(targets, logits, label_smoothing):
    """Label-smoothed cross-entropy per real target token."""
    loss, _ = label_smoothed_cross_entropy(targets, logits, label_smoothing)
    tokens = ops.sum(ops.cast(ops.not_equal(targets, 0), "float32"))
    return ops.sum(loss) / ops.maximum(tokens, 1.0)


def model_inputs(batch):
    return {ENCODER_TOKEN_IDS: batch["inputs"], DECODER_TOKEN_IDS: batch["decoder_inputs"]}


class TensorFlowTrainer:
    """A `tf.function` train step (GradientTape + optimizer.apply)."""

    def __init__(self, model, label_smoothing, jit_compile):
        import tensorflow as tf

        self.optimizer = make_optimizer()
        variables = model.trainable_variables
        self.optimizer.build(variables)

        # Without XLA, one graph serves every shape (as a non-XLA trainer
        # runs); with XLA each shape compiles anyway.
        @tf.function(jit_compile=jit_compile, reduce_retracing=not jit_compile)
        def step(batch):
            with tf.GradientTape() as tape:
                logits = model(model_inputs(batch), training=True)
                loss = mean_loss(batch["targets"], logits, label_smoothing)
            gradients = tape.gradient(loss, variables)
            self.optimizer.apply(gradients, variables)
            return loss

        self.step = step

    def __call__(self, batch):
        return float(self.step(batch))  # waits for the step


class JaxTrainer:
    """A `jax.jit` train step over `model.stateless_call` and
    `optimizer.stateless_apply`; the state lives here between steps."""

    def __init__(self, model, label_smoothing, jit_compile=True):
        import jax

        self.optimizer = make_optimizer()
        self.optimizer.build(model.trainable_variables)

        def loss_function(trainable, non_trainable, batch):
            logits, non_trainable = model.stateless_call(
                trainable, non_trainable, model_inputs(batch), training=True)
            return mean_loss(batch["targets"], logits, label_smoothing), non_trainable

        gradient_function = jax.value_and_grad(loss_function, has_aux=True)

        def step(state, batch):
            trainable, non_trainable, optimizer_variables = state
            (loss, non_trainable), gradients = gradient_function(trainable, non_trainable, batch)
            trainable, optimizer_variables = self.optimizer.stateless_apply(
                optimizer_variables, gradients, trainable)
            return loss, (trainable, non_trainable, optimizer_variables)

        self.step = jax.jit(step, donate_argnums=0)
        self.state = (
            [variable.value for variable in model.trainable_variables],
            [variable.value for variable in model.non_trainable_variables],
            [variable.value for variable in self.optimizer.variables],
        )

    def __call__(self, batch):
        loss, self.state = self.step(self.state, batch)
        return float(loss)  # waits for the step


def trainers(models, flags, jit_compile):
    trainer_class = JaxTrainer if keras.backend.backend() == "jax" else TensorFlowTrainer
    return {name: trainer_class(model, flags.label_smoothing, jit_compile)
            for name, model in models.items()}


# === Data ===


def select_batches(data_dir, flags):
    """The first `batches_per_bucket` batches of the `buckets` most frequent
    shapes of one shuffled epoch, and statistics of the epoch."""
    from tfnlp.data import translation_dataset

    files = sorted(glob.glob(os.path.join(data_dir, SHARD_PATTERN)))
    if not files:
        raise FileNotFoundError(f"No translation-* shards in {data_dir}.")
    dataset = translation_dataset(files, max_tokens_per_batch=flags.max_tokens_per_batch,
                                  max_length=flags.max_length, shuffle=True, seed=DATA_SEED,
                                  repeat=False)
    if flags.read_batches:
        dataset = dataset.take(flags.read_batches)
    by_shape = collections.defaultdict(list)
    for batch in dataset.as_numpy_iterator():
        by_shape[batch["inputs"].shape + batch["targets"].shape].append(batch)
    epoch_batches = sum(len(batches) for batches in by_shape.values())
    epoch_tokens = sum(real_tokens(batch) for batches in by_shape.values() for batch in batches)
    # Most frequent first; ties: more real tokens first.
    shapes = sorted(by_shape, key=lambda shape: (-len(by_shape[shape]),
                                                 -sum(map(real_tokens, by_shape[shape]))))
    chosen = shapes[: flags.buckets]
    batches = []
    for shape in chosen:
        for batch in by_shape[shape][: flags.batches_per_bucket]:
            batch = {name: batch[name].astype("int32") for name in ("inputs", "targets")}
            batch["decoder_inputs"] = np.asarray(decoder_inputs(batch["targets"])).astype("int32")
            batches.append(batch)
    chosen_tokens = sum(real_tokens(batch) for shape in chosen for batch in by_shape[shape])
    epoch = {"batches": epoch_batches, "shapes": len(by_shape),
             "real_tokens": epoch_tokens,
             "chosen_shapes": [list(shape) for shape in chosen],
             "chosen_shapes_token_share": chosen_tokens / epoch_tokens}
    return batches, epoch


def add_data_and_timing_flags(parser, eager_rounds):
    """The flags of the batches (`load_batches`), the loss and the timing."""
    add_data_flags(parser)
    parser.add_argument("--vocabulary_size", type=int, default=8000)
    parser.add_argument("--label_smoothing", type=float, default=0.1)
    parser.add_argument("--max_tokens_per_batch", type=int, default=4096)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--buckets", type=int, default=2, help="bucket shapes timed")
    parser.add_argument("--batches_per_bucket", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, compiled steps")
    parser.add_argument("--eager_rounds", type=int, default=eager_rounds,
                        help="timed rounds of the non-XLA tf.function (TensorFlow; 0: skip)")
    parser.add_argument("--read_batches", type=int, default=0,
                        help="batches of the epoch read to choose from (0: all)")


def load_batches(flags):
    """`select_batches` from `--data_dir`, or from shards made in a temporary
    directory; with the real tokens and positions of the chosen batches."""
    started = time.perf_counter()
    with shards_directory(flags.data_dir, flags.source_file, flags.target_file,
                          vocab_size=flags.vocabulary_size,
                          prefix="translation_training_") as data_dir:
        batches, epoch = select_batches(data_dir, flags)
    return {"batches": batches, "epoch": epoch, "seconds": time.perf_counter() - started,
            "tokens": sum(real_tokens(batch) for batch in batches),
            "positions": sum(batch["inputs"].size + batch["targets"].size for batch in batches)}


def data_report(data):
    """The JSON report's description of `load_batches`' batches."""
    return dict(data["epoch"], batches_timed=len(data["batches"]),
                real_tokens_timed=data["tokens"], positions_timed=data["positions"],
                seconds_to_prepare=data["seconds"])


def real_tokens(batch):
    return int(np.count_nonzero(batch["inputs"]) + np.count_nonzero(batch["targets"]))


def on_device(batch):
    """The batch as backend tensors, so that no step pays a host copy."""
    return {name: ops.convert_to_tensor(value) for name, value in batch.items()}


# === Timing ===


def measure(named_trainers, batches, rounds):
    """Per-batch step seconds (wall clock and this process's CPU time) of each
    trainer over `rounds` interleaved rounds, after one warm-up step of every
    batch shape. Returns the times and the warm-up seconds (tracing and
    compilation) per trainer."""
    warmup = {}
    for name, trainer in named_trainers.items():
        start = time.perf_counter()
        seen = set()
        for batch in batches:
            shape = tuple(batch["inputs"].shape) + tuple(batch["targets"].shape)
            if shape not in seen:
                seen.add(shape)
                trainer(batch)
        warmup[name] = time.perf_counter() - start
    times = {name: {"wall": [[] for _ in batches], "cpu": [[] for _ in batches]}
             for name in named_trainers}
    for _ in range(rounds):
        for index, batch in enumerate(batches):
            for name, trainer in named_trainers.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                loss = trainer(batch)
                times[name]["wall"][index].append(time.perf_counter() - start)
                times[name]["cpu"][index].append(time.process_time() - start_cpu)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"{name}: the loss is {loss}.")
    return times, warmup


def summarise(times, warmup, tokens, positions, reference="keras_hub"):
    """Wall: each batch's fastest step (the least disturbed by other
    processes on a shared machine), summed over the batches; CPU: each
    batch's median CPU seconds, summed. The ratios are tfnlp's throughput
    over `reference`'s."""
    rows = {}
    for name, measured in times.items():
        seconds = float(sum(min(batch_times) for batch_times in measured["wall"]))
        cpu_seconds = float(sum(np.median(batch_times) for batch_times in measured["cpu"]))
        rows[name] = {
            "seconds_per_batch_set": seconds,
            "tokens_per_second": tokens / seconds,
            "positions_per_second": positions / seconds,
            "cpu_seconds_per_batch_set": cpu_seconds,
            "tokens_per_cpu_second": tokens / cpu_seconds,
            "warmup_seconds": warmup[name],
            "step_seconds": measured["wall"],
            "step_cpu_seconds": measured["cpu"],
        }
    rows["ratio"] = rows["tfnlp"]["tokens_per_second"] / rows[reference]["tokens_per_second"]
    rows["cpu_ratio"] = (rows["tfnlp"]["tokens_per_cpu_second"]
                         / rows[reference]["tokens_per_cpu_second"])
    return rows


def speed_figures(rows, case, reference, reference_name, goal, subject=""):
    """The report's figures of one case of `summarise`: tfnlp's real tokens/s
    against `reference`'s, by wall clock and by CPU time."""
    return [
        figure(f"{subject}training real tokens/s, {case}", rows["tfnlp"]["tokens_per_second"],
               "tokens/s", reference=reference_name,
               reference_value=rows[reference]["tokens_per_second"], goal=goal),
        figure(f"{subject}training real tokens per CPU second, {case}",
               rows["tfnlp"]["tokens_per_cpu_second"], "tokens/CPU-s",
               reference=reference_name,
               reference_value=rows[reference]["tokens_per_cpu_second"], goal=goal),
    ]


def figures(results, main_case):
    """tfnlp's training tokens/s against keras-hub's in every case, with the
    goal on `main_case` (XLA, or jax.jit)."""
    return [row for case, rows in results.items() for row in speed_figures(
        rows, case, "keras_hub", REFERENCE_NAME, SPEED_GOAL if case == main_case else None)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_and_timing_flags(parser, eager_rounds=2)
    parser.add_argument("--preset", default="tiny", choices=sorted(TRANSFORMER_PRESETS))
    parser.add_argument("--num_layers", type=int, default=0,
                        help="encoder and decoder blocks each (0: the preset's)")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 + 1 blocks, one 512-token batch, 1 round")
    parser.add_argument("--output", default=None,
                        help="the JSON file (default benchmarks/results/translation_training.json;"
                             " none with --quick)")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.buckets, flags.batches_per_bucket, flags.rounds, flags.eager_rounds = 1, 1, 1, 1
        flags.max_tokens_per_batch, flags.num_layers, flags.read_batches = 512, 1, 50
    elif flags.output is None:
        flags.output = "benchmarks/results/translation_training.json"
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")  # the XLA step retraces once per shape, as meant

    data = load_batches(flags)
    batches, epoch, tokens, positions = (data[name] for name in
                                         ("batches", "epoch", "tokens", "positions"))
    device_batches = [on_device(batch) for batch in batches]

    models = build_models(flags)
    parameters = {name: int(model.count_params()) for name, model in models.items()}

    cases = [("jax.jit" if backend == "jax" else "XLA", True, flags.rounds)]
    if backend == "tensorflow" and flags.eager_rounds:
        cases.append(("graph (no XLA)", False, flags.eager_rounds))
    results = {}
    for case, jit_compile, rounds in cases:
        times, warmup = measure(trainers(models, flags, jit_compile), device_batches, rounds)
        results[case] = summarise(times, warmup, tokens, positions)

    print(f"Training tokens/s, TransformerSeq2Seq {flags.preset} vs keras-hub layers of the same "
          f"sizes (vocabulary {flags.vocabulary_size}, dropout {flags.dropout}, label smoothing "
          f"{flags.label_smoothing}, Adam), backend {backend}, on {machine_description()}")
    print(f"batches: {len(batches)} real Multi30k batches of {flags.max_tokens_per_batch} padded "
          f"positions a side, shapes (batch, source length, batch, target length) "
          f"{epoch['chosen_shapes']} ({epoch['chosen_shapes_token_share']:.0%} of an epoch's "
          f"real tokens); {tokens} real tokens of {positions} positions "
          f"(padding {1 - tokens / positions:.1%})")
    print(f"parameters: tfnlp {parameters['tfnlp']:,d}, keras-hub {parameters['keras_hub']:,d}")
    header = (f"{'step':16} {'model':10} {'real tokens/s':>14} {'s / batch set':>14} "
              f"{'ratio':>7} {'tokens/CPU-s':>13} {'CPU ratio':>9} {'warm-up s':>10}")
    print(header)
    print("-" * len(header))
    for case, rows in results.items():
        for name in ("tfnlp", "keras_hub"):
            row = rows[name]
            ours = name == "tfnlp"
            ratio = f"{rows['ratio']:7.2f}" if ours else " " * 7
            cpu_ratio = f"{rows['cpu_ratio']:9.2f}" if ours else " " * 9
            print(f"{case:16} {name:10} {row['tokens_per_second']:14.0f} "
                  f"{row['seconds_per_batch_set']:14.3f} {ratio} "
                  f"{row['tokens_per_cpu_second']:13.0f} {cpu_ratio} "
                  f"{row['warmup_seconds']:10.1f}")
    main_ratio = results[cases[0][0]]["ratio"]
    cpu_ratio = results[cases[0][0]]["cpu_ratio"]
    verdict = {(True, True): "met", (False, False): "NOT met",
               (True, False): "met by wall clock, not by CPU time",
               (False, True): "NOT met by wall clock, met by CPU time"}[
        (main_ratio >= SPEED_GOAL, cpu_ratio >= SPEED_GOAL)]
    print(f"\ntfnlp / keras-hub real tokens/s ({cases[0][0]}): {main_ratio:.3f}x wall clock, "
          f"{cpu_ratio:.3f}x CPU time (goal >= {SPEED_GOAL}x: {verdict})")

    if flags.output is None:
        return results
    report = {
        "settings": vars(flags),
        "backend": backend,
        "data": data_report(data),
        "parameters": parameters,
        "results": results,
        "ratio": {"value": main_ratio, "cpu_time_value": cpu_ratio, "goal": SPEED_GOAL,
                  "met": main_ratio >= SPEED_GOAL},
        FIGURES_KEY: figures(results, cases[0][0]),
    }
    write_report(report, flags.output)
    return results


if __name__ == "__main__":
    main()

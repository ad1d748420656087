"""Latency and throughput of an exported text-in/text-out translation SavedModel.

    python -m benchmarks.translation_serving [--data_dir=DIR --latency_calls=24
        --throughput_batches=3 --rounds=3 --train_steps=0]
    python -m benchmarks.translation_serving --model_dir=RUN    # a trainer.translate run
    python -m benchmarks.translation_serving --export_dir=EXPORT[/VERSION] [--vocab_file=MODEL]
    python -m benchmarks.translation_serving --quick    # a smoke run of about 40 s

What is measured: `tf.saved_model.load(version).signatures["serving_default"]
(inputs=...)` (string sentences in, `translations` and `scores` out: the
SentencePiece tokenization, the decoding and the detokenization all in the
graph, no XLA), called in process on real Multi30k validation English
sentences (`--sentences`, ../shared/data/mt/val.en, 1,014 lines, 4 to 27
words, median 12), each call's outputs brought to numpy:

- latency: batch 1, `--latency_calls` calls a round (the next sentence each
  call), p50 / p90 / mean milliseconds a call;
- throughput: batch `--batch_size` (32), `--throughput_batches` calls a
  round (the next 32 sentences each call), sentences/s = sentences / time.

The reference, in the same run, is the same export's `translate_ids`
signature (int32 source ids in, ids out: the same model and decoder without
the text ops) on the same sentences, tokenized beforehand in Python with the
same SentencePiece model (`tfnlp.text.SentencePieceTokenizer`, EOS
appended, cut to the export's `max_length`, 0-padded, as the text signature
does; not timed). "text/ids" = text time / ids time (mean per call): the
cost of tokenizing and detokenizing in the graph (1.00 = none). The two
signatures' scores must agree ("same scores": they decoded the same ids).
Greedy against beam 4 is a second comparison: "beam/greedy" = the beam
export's time over the greedy export's, same signature and batch. "gen tok"
is the mean number of generated tokens (EOS included) and "at bound" the
share of sentences that stopped at the length bound (see below) rather than
at an EOS of their own.

The export. By default the benchmark makes its own: the SentencePiece model
of `python -m pipelines.translation_data --shared_vocab` on the Multi30k
training text (`--data_dir` holds that job's output; without it the job
runs into a temporary directory first, about 10 s) and a `TransformerSeq2Seq`
preset `--preset` (tiny: 4 + 4 layers, width 128, 2.35 M parameters) with
RANDOM weights, exported twice with
`trainer.tasks.translation.export_translation_model`: version 1 greedy
(`beam_size` 1), version 2 beam search (`--beam_size` 4, GNMT length
penalty, alpha 0.6), `max_length` 128. An untrained model rarely chooses
EOS, so it generates every sentence up to its length bound, `ceil(a *
source) + b` tokens (source without EOS, output with it); the export's
`--max_length_a` 1.0 and `--max_length_b` 2 (not the trainer's 1.5 and 10)
make that bound the length a trained model produces on average: on the
validation set, source + 2 tokens = 16.98 on average, exactly the mean
length of the German references with EOS. So every call decodes as many
steps as it would with a trained model whose outputs had the references'
lengths ("at bound" should read 100%). Speed does not otherwise depend on
the weights: the same run on a `trainer.translate` model (tiny, its best
checkpoint at step 800, validation BLEU 7.7; `--model_dir`, below; lengths
its own: 12 to 16 tokens, 0 to 6% at the bound) measured within about 10% of the
random model in every row (greedy 108 against 111 ms at batch 1, beam 4 148
against 149 ms; 42 against 45 and 15 against 14 sentences/s at batch 32).

Alternatives: `--train_steps=N` trains the model here first (Adam, warm-up
then cosine decay to `--learning_rate`, label-smoothed cross-entropy, token
batches of `--max_tokens_per_batch`, no XLA). Beware: on 2 CPU cores a
couple of minutes buy 100 to 200 steps, a loss near 6, where the outputs
flip between one token and the bound from one step to the next (measured:
100 steps, all at the bound; 120 steps, greedy 13 tokens and beam 2). For
a really trained model, `--model_dir=RUN` exports a `trainer.translate`
run's model (its best checkpoint, else the latest) greedy and with beam
search, with the run's decoding settings (`serving.json`; the trainer's
length bound 1.5 x source + 10, so the lengths are the model's own);
`--export_dir` (a base directory, whose latest version is used, or one
version) measures an export as it is (its own decoder; no greedy / beam
comparison; the `translate_ids` reference needs `--vocab_file`, the run's
SentencePiece model).

What the figures say (2 shared CPU cores, TensorFlow 2.21): the in-graph
tokenization and detokenization cost nothing measurable ("text/ids" 0.95 to
1.06, within the noise); beam 4 costs 1.3x greedy at batch 1 and 3.3 to 3.7x
at batch 32. The signatures' decoding loop runs as a plain TensorFlow graph
(the export does not compile with XLA): a greedy step of the tiny model costs
about 6.5 ms at batch 1 (111 ms for 17 tokens), whereas `model.generate` in a
`tf.function(jit_compile=True)` took 17 ms for a whole greedy sentence at
batch 1 (124 ms without XLA; beam 4: 38 against 162 ms; batch 32: 2x and
1.6x), but XLA compiles once per source shape (3 to 4 s each), so an XLA
export would need sources padded to a few bucket lengths.

Cases are interleaved: `--rounds` rounds, each running every case of a batch
size in turn, so that machine noise hits all alike; the figures are over all
calls. One call of every case (on a batch not timed) warms it up first.

Prints a table and writes JSON (default
benchmarks/results/translation_serving.json; not with --quick unless
--output is given) with the settings, the machine, the export, every
call's time and the headline figures: the text signature's mean latency at
batch 1 and throughput at `--batch_size`, the first export's (greedy)
against its `translate_ids` signature and the beam export's against the
greedy export's. Relative paths are resolved from the repository root.
"""

import argparse
import glob
import os
import shutil
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signature's SentencepieceOp)

from benchmarks.reporting import FIGURES_KEY, figure, from_root, machine_description, write_report
from benchmarks.translation_inputs import (
    SENTENCEPIECE_MODEL,
    SHARD_PATTERN,
    VALIDATION_SOURCE,
    add_data_flags,
    make_shards,
)
from tfnlp.data.translation_schema import EOS_ID, PAD_ID
from tfnlp.losses import label_smoothed_cross_entropy
from tfnlp.models.seq2seq import TRANSFORMER_PRESETS, TransformerSeq2Seq
from tfnlp.models.seq2seq.generation import (
    DECODER_TOKEN_IDS,
    ENCODER_TOKEN_IDS,
    decoder_inputs,
)
from tfnlp.text import SentencePieceTokenizer
from trainer.tasks.translation import export_translation_model

def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


# === Making an export ===


def train(model, files, flags):
    """Trains `--train_steps` steps (none by default); returns the losses."""
    from tfnlp.data import translation_dataset

    if not flags.train_steps:
        return []
    dataset = translation_dataset(files, max_tokens_per_batch=flags.max_tokens_per_batch,
                                  max_length=flags.max_length, shuffle=True, seed=1,
                                  repeat=True)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=flags.train_steps, warmup_target=flags.learning_rate,
        warmup_steps=max(1, flags.train_steps // 5))
    optimizer = keras.optimizers.Adam(schedule, beta_2=0.98, epsilon=1e-9)
    variables = model.trainable_variables
    optimizer.build(variables)

    # One graph for every batch shape (no XLA: the batches have ~45 shapes).
    @tf.function(reduce_retracing=True)
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            logits = model({ENCODER_TOKEN_IDS: inputs,
                            DECODER_TOKEN_IDS: decoder_inputs(targets)}, training=True)
            loss, _ = label_smoothed_cross_entropy(targets, logits, 0.1)
            loss = tf.reduce_sum(loss) / tf.reduce_sum(tf.cast(targets != PAD_ID, tf.float32))
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    losses = []
    for batch in dataset.take(flags.train_steps):
        losses.append(float(step(batch["inputs"], batch["targets"])))
    return losses


DEFAULT_RECORD = {"max_length": 128, "length_penalty": "gnmt", "length_penalty_alpha": 0.6}


def trained_here(flags, work_dir):
    """A `TransformerSeq2Seq` trained `--train_steps` steps here, its
    SentencePiece model and a description."""
    data_dir = from_root(flags.data_dir) if flags.data_dir else make_shards(
        os.path.join(work_dir, "data"), flags.source_file, flags.target_file)
    vocab_file = os.path.join(data_dir, SENTENCEPIECE_MODEL)
    files = sorted(glob.glob(os.path.join(data_dir, SHARD_PATTERN)))
    # Seeded first: tf.random.set_seed in eager mode drops the resources of
    # tokenizers made before it (SentencepieceOp "does not exist" afterwards).
    keras.utils.set_random_seed(0)
    tokenizer = SentencePieceTokenizer(model_file=vocab_file)
    overrides = {"num_encoder_layers": flags.num_layers,
                 "num_decoder_layers": flags.num_layers} if flags.num_layers else {}
    model = TransformerSeq2Seq.from_preset(
        flags.preset, vocabulary_size=tokenizer.vocabulary_size, dropout=0.1,
        max_sequence_length=max(flags.max_length, 256), **overrides)
    start = time.perf_counter()
    losses = train(model, files, flags)
    description = {
        "source": "trained here", "preset": flags.preset, "num_layers": flags.num_layers or None,
        "train_steps": flags.train_steps, "max_tokens_per_batch": flags.max_tokens_per_batch,
        "learning_rate": flags.learning_rate, "train_seconds": time.perf_counter() - start,
        "first_losses": losses[:3], "last_losses": losses[-3:],
    }
    record = dict(DEFAULT_RECORD, vocab_file=vocab_file, max_length=flags.max_length,
                  max_length_a=flags.max_length_a, max_length_b=flags.max_length_b)
    return model, record, description


def from_run(flags):
    """The model of a `trainer.translate` run (its best checkpoint, else the
    latest), its serving record and a description."""
    from trainer.run_files import read_serving_record
    from trainer.tasks.translation import load_translation_model

    model_dir = from_root(flags.model_dir)
    record = read_serving_record(model_dir)
    if not record:
        raise FileNotFoundError(f"{model_dir} has no serving.json: not a trainer.translate run.")
    model = load_translation_model(model_dir)
    return model, record, {"source": f"run {model_dir}"}


def export_greedy_and_beam(model, record, beam_size, work_dir):
    """Version 1 greedy, version 2 beam search; the decoding settings
    otherwise those of `record`. Returns {name: (version path, record)}."""
    export_dir = os.path.join(work_dir, "export")
    versions = {}
    for name, beam in (("greedy", 1), (f"beam {beam_size}", beam_size)):
        version_record = dict(record, beam_size=beam)
        versions[name] = (export_translation_model(model, export_dir, version_record),
                          version_record)
    return versions


def make_exports(flags, work_dir):
    """Exports a model trained here (or a run's, with --model_dir) greedy
    and with beam search; returns the versions' paths, the SentencePiece
    model and a description."""
    model, record, description = (from_run(flags) if flags.model_dir
                                  else trained_here(flags, work_dir))
    start = time.perf_counter()
    versions = export_greedy_and_beam(model, record, flags.beam_size, work_dir)
    description.update({
        "parameters": int(model.count_params()), "vocabulary_size": model.vocabulary_size,
        "layers": [model.num_encoder_layers, model.num_decoder_layers],
        "hidden_dim": model.hidden_dim, "export_seconds": time.perf_counter() - start,
        "records": {name: version_record for name, (_, version_record) in versions.items()},
    })
    return ({name: path for name, (path, _) in versions.items()}, record["vocab_file"],
            description)


def existing_export(path):
    """A version directory: `path` itself or its highest numbered version."""
    path = from_root(path)
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = [name for name in os.listdir(path)
                if name.isdigit() and os.path.exists(os.path.join(path, name, "saved_model.pb"))]
    if not versions:
        raise FileNotFoundError(f"{path} is neither a SavedModel nor a directory of versions.")
    return os.path.join(path, max(versions, key=int))


def export_settings(version):
    """The loaded export and its `max_length` (the width of its output ids)."""
    loaded = tf.saved_model.load(version)
    ids = loaded.signatures["translate_ids"]
    max_length = ids.structured_outputs["ids"].shape[-1]
    return loaded, max_length


# === Measuring ===


def source_ids(tokenizer, sentences, max_length):
    """What the text signature feeds its decoder (see
    `tfnlp.export.translation_signatures.TranslationSignatures.source_ids`)."""
    pieces = tokenizer.tokenize(tf.constant(sentences))[:, : max_length - 1]
    eos = tf.fill([pieces.nrows(), 1], tf.constant(EOS_ID, pieces.dtype))
    return tf.cast(tf.concat([pieces, eos], axis=1).to_tensor(default_value=PAD_ID), tf.int32)


def make_calls(tokenizer, max_length, sentences, batch_size, calls_per_round, rounds):
    """The inputs of every call: `rounds * calls_per_round` batches of the
    next sentences (no batch repeats unless the sentences run out)."""
    batches = []
    for index in range(rounds * calls_per_round + 1):  # +1: the warm-up call
        start = (index * batch_size) % max(1, len(sentences) - batch_size + 1)
        text = sentences[start: start + batch_size]
        batch = {"text": tf.constant(text)}
        if tokenizer is not None:
            batch["ids"] = source_ids(tokenizer, text, max_length)
        batches.append(batch)
    return batches


def run_text(signature, batch):
    outputs = signature(inputs=batch["text"])
    return {name: value.numpy() for name, value in outputs.items()}


def run_ids(signature, batch):
    outputs = signature(source_ids=batch["ids"])
    return {name: value.numpy() for name, value in outputs.items()}


def measure(cases, rounds, calls_per_round):
    """Interleaved timing; `cases` maps a name to (function, batches)."""
    times = {name: [] for name in cases}
    outputs = {name: [] for name in cases}
    for name, (function, batches) in cases.items():
        function(batches[-1])  # warm-up (the extra batch)
    for round_index in range(rounds):
        for name, (function, batches) in cases.items():
            for call in range(calls_per_round):
                batch = batches[round_index * calls_per_round + call]
                start = time.perf_counter()
                result = function(batch)
                times[name].append(time.perf_counter() - start)
                if round_index == 0:
                    outputs[name].append(result)
    return times, outputs


def summary(seconds, batch_size):
    seconds = np.asarray(seconds)
    return {
        "calls": int(seconds.size),
        "p50_ms": float(np.percentile(seconds, 50) * 1e3),
        "p90_ms": float(np.percentile(seconds, 90) * 1e3),
        "mean_ms": float(seconds.mean() * 1e3),
        "sentences_per_second": float(batch_size * seconds.size / seconds.sum()),
        "call_seconds": seconds.tolist(),
    }


def find_row(rows, export, batch_size, signature):
    """The row of one export, batch size and signature, or None."""
    for row in rows:
        if (row["export"], row["batch_size"], row["signature"]) == (export, batch_size, signature):
            return row
    return None


def figures(rows):
    """The text signature's batch-1 latency and batched throughput: the
    first export's against its `translate_ids` signature (the cost of the
    text ops in the graph), the beam export's against the greedy export."""
    first_export = rows[0]["export"]
    result = []
    for row in rows:
        if row["signature"] != "serving_default":
            continue
        if row["export"] == first_export:
            reference = find_row(rows, first_export, row["batch_size"], "translate_ids")
            reference_name = "translate_ids signature (ids in and out, tokenized outside)"
        else:
            reference = find_row(rows, first_export, row["batch_size"], "serving_default")
            reference_name = f"the {first_export} export's serving_default"
        result.append(call_figure(row, reference, reference_name if reference else None))
    return result


def call_figure(row, reference, reference_name):
    """A batch-1 row as its mean latency, a batched one as its throughput."""
    name = f"{row['export']} {row['signature']}"
    if row["batch_size"] == 1:
        return figure(f"{name} latency, batch 1", row["mean_ms"], "ms",
                      reference=reference_name,
                      reference_value=reference["mean_ms"] if reference else None,
                      higher_is_better=False)
    return figure(f"{name} throughput, batch {row['batch_size']}",
                  row["sentences_per_second"], "sentences/s", reference=reference_name,
                  reference_value=reference["sentences_per_second"] if reference else None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export_dir", default=None,
                        help="an existing export (base directory or version) to measure; "
                             "default: train and export a small model here")
    parser.add_argument("--model_dir", default=None,
                        help="a trainer.translate run: export its model (best, else latest "
                             "checkpoint) greedy and with beam search, instead of training here")
    parser.add_argument("--sentences", default=VALIDATION_SOURCE)
    parser.add_argument("--vocab_file", default=None,
                        help="with --export_dir: its SentencePiece model (the run's "
                             "serving.json names it), for the translate_ids reference; "
                             "without it only serving_default is measured")
    add_data_flags(parser)
    parser.add_argument("--preset", default="tiny", choices=sorted(TRANSFORMER_PRESETS))
    parser.add_argument("--num_layers", type=int, default=0,
                        help="encoder and decoder blocks each (0: the preset's)")
    parser.add_argument("--train_steps", type=int, default=0,
                        help="training steps of the model made here (0: random weights)")
    parser.add_argument("--learning_rate", type=float, default=2e-3)
    parser.add_argument("--max_tokens_per_batch", type=int, default=2048,
                        help="the token budget of the training batches made here")
    parser.add_argument("--max_length_a", type=float, default=1.0,
                        help="the export's length bound: ceil(a * source) + b tokens "
                             "(the model made here; a run keeps its own)")
    parser.add_argument("--max_length_b", type=int, default=2)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--latency_calls", type=int, default=24, help="batch-1 calls a round")
    parser.add_argument("--throughput_batches", type=int, default=3,
                        help="batch_size calls a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep_export", default=None,
                        help="copy the export made here to this directory")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 + 1 blocks, batch 8, few calls")
    parser.add_argument("--output", default=None,
                        help="the JSON file (default benchmarks/results/translation_serving.json;"
                             " none with --quick)")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.num_layers = 1
        flags.latency_calls, flags.throughput_batches, flags.rounds = 3, 1, 1
        flags.batch_size = 8
    elif flags.output is None:
        flags.output = "benchmarks/results/translation_serving.json"

    work_dir = tempfile.mkdtemp(prefix="translation_serving_")
    try:
        if flags.export_dir:
            version = existing_export(flags.export_dir)
            versions = {"export": version}
            vocab_file = flags.vocab_file
            description = {"source": "existing export", "version": version}
        else:
            versions, vocab_file, description = make_exports(flags, work_dir)
            if flags.keep_export:
                target = from_root(flags.keep_export)
                shutil.copytree(os.path.dirname(next(iter(versions.values()))), target,
                                dirs_exist_ok=True)
        report = benchmark(flags, versions, vocab_file, description)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    return report


def benchmark(flags, versions, vocab_file, description):
    sentences = read_lines(from_root(flags.sentences))
    tokenizer = SentencePieceTokenizer(model_file=vocab_file) if vocab_file else None
    loaded_models, meta = [], {}
    groups = {1: {}, flags.batch_size: {}}  # batch size -> case -> (function, batches)
    calls = {1: flags.latency_calls, flags.batch_size: flags.throughput_batches}
    for name, version in versions.items():
        loaded, max_length = export_settings(version)
        loaded_models.append(loaded)  # keeps the signatures' objects alive
        meta[name] = {"version": version, "max_length": int(max_length)}
        text_signature = loaded.signatures["serving_default"]
        ids_signature = loaded.signatures["translate_ids"]
        for batch_size, group in groups.items():
            batches = make_calls(tokenizer, max_length, sentences, batch_size,
                                 calls[batch_size], flags.rounds)
            group[(name, "serving_default")] = (
                lambda batch, signature=text_signature: run_text(signature, batch), batches)
            if tokenizer is not None:
                group[(name, "translate_ids")] = (
                    lambda batch, signature=ids_signature: run_ids(signature, batch), batches)

    rows = []
    for batch_size, group in groups.items():
        times, outputs = measure(group, flags.rounds, calls[batch_size])
        for key in group:
            name, signature = key
            row = {"export": name, "batch_size": batch_size, "signature": signature}
            row.update(summary(times[key], batch_size))
            if signature == "translate_ids":
                lengths = np.concatenate([result["lengths"] for result in outputs[key]])
                row["mean_generated_tokens"] = float(lengths.mean())
                sources = np.concatenate([
                    np.count_nonzero(batch["ids"].numpy(), axis=1) - 1  # without EOS
                    for batch in group[key][1][: len(outputs[key])]])
                row["mean_source_tokens"] = float(sources.mean())
                record = description.get("records", {}).get(name)
                if record:  # generate's bound: ceil(a * source) + b, at most max_length
                    bounds = np.minimum(
                        np.ceil(record["max_length_a"] * sources) + record["max_length_b"],
                        meta[name]["max_length"])
                    row["share_at_length_bound"] = float(np.mean(lengths >= bounds))
                text_scores = np.concatenate(
                    [result["scores"] for result in outputs[(name, "serving_default")]])
                ids_scores = np.concatenate([result["scores"] for result in outputs[key]])
                row["same_scores"] = bool(np.allclose(text_scores, ids_scores, atol=1e-4))
            rows.append(row)

    for row in rows:
        ids = find_row(rows, row["export"], row["batch_size"], "translate_ids")
        if row["signature"] == "serving_default" and ids:
            row["text_over_ids"] = row["mean_ms"] / ids["mean_ms"]
        greedy = find_row(rows, "greedy", row["batch_size"], row["signature"])
        if greedy and row["export"] != "greedy":
            row["beam_over_greedy"] = row["mean_ms"] / greedy["mean_ms"]

    print(f"Translation SavedModel serving, in process, on {machine_description()}, "
          f"TensorFlow {tf.__version__}")
    if "records" in description:
        losses = description.get("first_losses", [])[:1] + description.get("last_losses", [])[-1:]
        if description["source"] != "trained here":
            training = description["source"]
        elif losses:
            training = (f"trained here {description['train_steps']} steps "
                        f"({description['train_seconds']:.0f} s, loss "
                        f"{' -> '.join(f'{loss:.2f}' for loss in losses)})")
        else:
            training = "random weights (untrained)"
        layers = description["layers"]
        print(f"export: TransformerSeq2Seq {layers[0]} + {layers[1]} layers, width "
              f"{description['hidden_dim']} ({description['parameters']:,d} parameters, "
              f"vocabulary {description['vocabulary_size']}), {training}; exported greedy and "
              f"beam {flags.beam_size}")
    else:
        print(f"export: {description['version']}")
    print(f"inputs: {flags.sentences} ({len(sentences)} sentences), batch 1 and "
          f"{flags.batch_size}; {flags.rounds} rounds")
    header = (f"{'export':8} {'batch':>5} {'signature':16} {'p50 ms':>8} {'p90 ms':>8} "
              f"{'mean ms':>8} {'sent/s':>8} {'gen tok':>7} {'at bound':>8} {'text/ids':>8} "
              f"{'beam/greedy':>11} {'same scores':>11}")
    print(header)
    print("-" * len(header))
    for row in rows:
        def optional(key, width, form):
            value = row.get(key)
            return f"{'':>{width}}" if value is None else f"{value:>{width}{form}}"
        same = row.get("same_scores")
        print(f"{row['export']:8} {row['batch_size']:5d} {row['signature']:16} "
              f"{row['p50_ms']:8.1f} {row['p90_ms']:8.1f} {row['mean_ms']:8.1f} "
              f"{row['sentences_per_second']:8.1f} {optional('mean_generated_tokens', 7, '.1f')} "
              f"{optional('share_at_length_bound', 8, '.0%')} "
              f"{optional('text_over_ids', 8, '.2f')} {optional('beam_over_greedy', 11, '.2f')} "
              f"{'' if same is None else str(same):>11}")
    report = {"settings": vars(flags), "export": dict(description, versions=meta), "results": rows,
              FIGURES_KEY: figures(rows)}
    if flags.output:
        write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

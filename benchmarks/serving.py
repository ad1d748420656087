"""Serving latency and throughput of exported BERT encoders: through the
REST server, through a direct SavedModel call, against a Keras call, and
with in-graph tokenization against tokenizing in Python first.

    python -m benchmarks.serving [--configs=tiny,mini --sequence_length=128
        --rounds=3 --calls=30 --batch_calls=6 --server_requests=150
        --server_batch_requests=24 --load_test_requests=2000]
    python -m benchmarks.serving --quick   # a smoke run: tiny only, few calls

The default run takes about 4 minutes on a 2-core machine, about 40% of
it for tiny and 60% for mini. It reads the bert-base-uncased vocabulary and
WikiText-2 (test) from ../shared/data.

For each `tfnlp.models.BertConfig` preset (RANDOM weights: speed does not
depend on them), a `BertEncoder` is exported with `export_saved_model` and
a `BertTextPreprocessor` (the bert-base-uncased vocabulary, 30,522 tokens)
into a temporary directory, and then measured as follows. The inputs are
real text: non-heading lines of WikiText-2 (test) with at least
`--min_words` words, so nearly every example fills the `sequence_length`
tokens (longer ones are truncated by the model, as in serving); each call
takes the next examples, so calls do not repeat the same text.

In process (`tf.saved_model.load` after `import tensorflow_text`), at batch
1 and at batch 16 (`--batch_size`):

- `keras eager`: `encoder(inputs, training=False)` on pre-packed int32 ids,
  the reference for the SavedModel overhead;
- `keras tf.function`: the same call inside a `tf.function` (no XLA), a
  second reference (what the SavedModel graph does, minus loading);
- `SM encode_ids`: the loaded `encode_ids` signature on the same ids;
  ratio vs `keras eager` is the issue's "SavedModel call vs eager Keras call"
  (goal at most 1.10);
- `py tokenize+pack`: `PlainBertTokenizer` (its word cache is warm, as in
  a long-running process; natural text repeats its words) and numpy
  packing, tokenization alone;
- `graph tokenize+pack`: the in-graph `BertTextPreprocessor` in a
  `tf.function`, tokenization alone;
- `py tok + SM encode_ids`: tokenizing in Python first, then `encode_ids`:
  the reference for `SM serving_default`;
- `SM serving_default`: the text signature (tokenized in the graph);
- `server's response JSON`: what the server does with those outputs
  (`tfnlp.serve.rest_api.format_predict_response` and `json_bytes`), alone,
  to tell how much of a server request is spent writing the response.

Every call converts its outputs to numpy (as a server must). The cases
are interleaved: `--rounds` rounds, each making `--calls` calls (batch 1)
or `--batch_calls` calls (batch 16) of every case in turn, so that machine
noise hits all alike; p50/p99 are over all calls (with few calls, p99 is
about the slowest one), `spread` is the lowest and highest per-round
median (how noisy the machine was), and examples/s is batch size / median
call time.

Through the server: `python -m tfnlp.serve` on the export runs in a
SUBPROCESS (its own interpreter, so the load generator's threads do not
share its GIL; they do share the machine's cores) with its default
batching settings (`--server_max_batch_size`,
`--server_batch_timeout_micros`), and `tfnlp.serve.load_test.run_load_test`
sends TF Serving JSON `{"signature_name": "serving_default", "instances":
[text, ...]}` requests. The response holds every output of the signature,
`sequence_output` included (`sequence_length` x hidden floats per example,
as JSON text): that cost is part of what is measured. Cases: batch 1 at
concurrency 1 (latency; `--server_requests`, split over the rounds), batch
16 at concurrency `--server_concurrency` (throughput; `--server_batch_requests`)
and the issue's load test, `--load_test_requests` single-instance requests
at concurrency `--load_test_concurrency`. Server examples/s is requests/s x
batch size; p50/p99 are per request (the median over rounds of each
round's); `spread` is the per-round p50s. Each request body is one fixed
text (or 16 texts). The server merges concurrent requests into
batches (the checks line says whether it does for the text signature).

Ratio = reference examples/s / row examples/s, i.e. time per example
relative to the reference named in the table (above 1 means slower);
computed within the same run. Prints a table and writes JSON (`--output`,
default benchmarks/results/serving.json) with settings, machine and all
figures; its "figures", per config, are the batch-1 p50s of `SM
encode_ids` against `keras eager` (goal at most 1.10), of `SM
serving_default` against `py tok + SM encode_ids` and of the server against
`SM serving_default`, and the load test's requests/s against `SM
serving_default` called one at a time.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signature's ops)

from benchmarks.reporting import (
    FIGURES_KEY, REPOSITORY_ROOT, figure, from_root, machine_description, write_report)
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.models import BertConfig, BertEncoder
from tfnlp.serve import rest_api
from tfnlp.serve.load_test import run_load_test
from tfnlp.serve.model_store import ModelStore
from tfnlp.text import BertTokenizer
from tfnlp.text.plain_bert_tokenizer import PlainBertTokenizer

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
_SERVING_LINE = re.compile(r"Serving model (\S+) versions \[.*?\] at (http://\S+:(\d+))")
SAVED_MODEL_CALL_GOAL = 1.10
QUICK = {"configs": "tiny", "max_texts": 64, "rounds": 1, "calls": 5, "batch_calls": 2,
         "warmup": 1, "server_requests": 10, "server_batch_requests": 4,
         "load_test_requests": 100}


def load_texts(path, min_words, limit):
    """Non-heading lines of a WikiText file with at least `min_words` words."""
    texts = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith("="):
                continue
            if len(line.split()) >= min_words:
                texts.append(line)
                if len(texts) >= limit:
                    break
    if not texts:
        raise SystemExit(f"No line of {path} has {min_words} words or more.")
    return texts


def python_pack(tokenizer, texts, sequence_length, cls_id, sep_id):
    """Tokenizes in Python and packs `[CLS] A [SEP]` into int32 numpy arrays."""
    input_ids = np.zeros((len(texts), sequence_length), np.int32)
    input_mask = np.zeros((len(texts), sequence_length), np.int32)
    for row, text in enumerate(texts):
        ids = [cls_id, *tokenizer.tokenize(text)[: sequence_length - 2], sep_id]
        input_ids[row, : len(ids)] = ids
        input_mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "input_mask": input_mask,
            "segment_ids": np.zeros_like(input_ids)}


class Case:
    """One timed path at one batch size: `call(index)` runs call `index`."""

    def __init__(self, name, batch, call, reference=None):
        self.name, self.batch, self.call, self.reference = name, batch, call, reference
        self.times = []  # seconds per call, all rounds
        self.round_medians = []

    def run(self, first, count):
        times = []
        for index in range(first, first + count):
            start = time.perf_counter()
            self.call(index)
            times.append(time.perf_counter() - start)
        self.times += times
        self.round_medians.append(float(np.median(times)))

    def summary(self):
        times = np.array(self.times) * 1e3
        p50 = float(np.percentile(times, 50))
        return {
            "path": self.name, "batch": self.batch, "calls": len(times),
            "p50_ms": round(p50, 3), "p99_ms": round(float(np.percentile(times, 99)), 3),
            "mean_ms": round(float(times.mean()), 3),
            "round_p50_ms": [round(1e3 * value, 3) for value in self.round_medians],
            "examples_per_second": round(self.batch / p50 * 1e3, 1),
            "reference": self.reference,
        }


def direct_cases(encoder, loaded, preprocessor, plain, texts, batch_sizes, sequence_length):
    """The in-process cases, at each batch size, on rotating real text."""
    encode_ids = loaded.signatures["encode_ids"]
    serving_default = loaded.signatures["serving_default"]
    keras_function = tf.function(lambda inputs: encoder(inputs, training=False))
    # Unknown rank, as in the exported text signature: traced on a known
    # `[batch]` shape, the preprocessor's (untaken) pair branch fails to build.
    graph_preprocess = tf.function(
        preprocessor, input_signature=[tf.TensorSpec(None, tf.string)])
    cls_id, sep_id = preprocessor.tokenizer.cls_id, preprocessor.tokenizer.sep_id
    cases = []
    for batch in batch_sizes:
        count = max(1, len(texts) // batch)
        text_batches = [texts[i * batch:(i + 1) * batch] for i in range(count)]
        string_batches = [tf.constant(b) for b in text_batches]
        id_batches = [
            {k: tf.constant(v) for k, v in
             python_pack(plain, b, sequence_length, cls_id, sep_id).items()}
            for b in text_batches
        ]

        def pick(batches, index):
            return batches[index % len(batches)]

        def keras_eager(index, batches=id_batches):
            encoder(pick(batches, index), training=False)["pooled_output"].numpy()

        def keras_graph(index, batches=id_batches):
            keras_function(pick(batches, index))["pooled_output"].numpy()

        def saved_ids(index, batches=id_batches):
            outputs = encode_ids(**pick(batches, index))
            {k: v.numpy() for k, v in outputs.items()}

        def python_tokenize(index, batches=text_batches):
            python_pack(plain, pick(batches, index), sequence_length, cls_id, sep_id)

        def graph_tokenize(index, batches=string_batches):
            {k: v.numpy() for k, v in graph_preprocess(pick(batches, index)).items()}

        def python_then_ids(index, batches=text_batches):
            packed = python_pack(plain, pick(batches, index), sequence_length, cls_id, sep_id)
            outputs = encode_ids(**{k: tf.constant(v) for k, v in packed.items()})
            {k: v.numpy() for k, v in outputs.items()}

        def saved_text(index, batches=text_batches):
            outputs = serving_default(text=tf.constant(pick(batches, index)))
            {k: v.numpy() for k, v in outputs.items()}

        text_outputs = {k: v.numpy() for k, v in serving_default(
            text=string_batches[0]).items()}

        def response_json(index, outputs=text_outputs, batch=batch):
            rows = np.arange(batch)
            request = rest_api.PredictRequest(signature=None, parts=[], row_format=True,
                                              batch_size=batch)
            rest_api.json_bytes(rest_api.format_predict_response(request, [(rows, outputs)]))

        cases += [
            Case("keras eager", batch, keras_eager),
            Case("keras tf.function", batch, keras_graph, "keras eager"),
            Case("SM encode_ids", batch, saved_ids, "keras eager"),
            Case("py tokenize+pack", batch, python_tokenize),
            Case("graph tokenize+pack", batch, graph_tokenize, "py tokenize+pack"),
            Case("py tok + SM encode_ids", batch, python_then_ids),
            Case("SM serving_default", batch, saved_text, "py tok + SM encode_ids"),
            Case("server's response JSON", batch, response_json),
        ]
    return cases


def check_equivalence(encoder, loaded, preprocessor, plain, texts, sequence_length):
    """Python packing == in-graph packing; SavedModel outputs == Keras outputs."""
    tokenizer = preprocessor.tokenizer
    packed = python_pack(plain, texts, sequence_length, tokenizer.cls_id, tokenizer.sep_id)
    in_graph = {k: v.numpy() for k, v in preprocessor(tf.constant(texts)).items()}
    rows_differing = int(np.sum(np.any(
        np.stack([packed[k] != in_graph[k] for k in INPUT_NAMES]), axis=(0, 2))))
    inputs = {k: tf.constant(v) for k, v in packed.items()}
    keras_pooled = encoder(inputs, training=False)["pooled_output"].numpy()
    saved_pooled = loaded.signatures["encode_ids"](**inputs)["pooled_output"].numpy()
    text_pooled = loaded.signatures["serving_default"](
        text=tf.constant(texts))["pooled_output"].numpy()
    return {
        "examples": len(texts),
        "packing_rows_differing": rows_differing,
        "mean_real_tokens": round(float(packed["input_mask"].sum(axis=1).mean()), 1),
        "max_abs_diff_saved_vs_keras": float(np.max(np.abs(saved_pooled - keras_pooled))),
        "max_abs_diff_text_vs_ids": float(np.max(np.abs(text_pooled - saved_pooled))),
    }


class ServerProcess:
    """`python -m tfnlp.serve` on an export directory, in a subprocess, with
    the extra command-line `flags` given."""

    def __init__(self, model_dir, name, log_path, flags=()):
        self.log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tfnlp.serve", f"--model_dir={model_dir}",
             f"--model_name={name}", "--port=0", *flags],
            cwd=REPOSITORY_ROOT, stdout=self._log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 180
        while True:
            with open(log_path, encoding="utf-8", errors="replace") as file:
                match = _SERVING_LINE.search(file.read())
            if match:
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(log_path, encoding="utf-8", errors="replace") as file:
                    tail = file.read()[-2000:]
                raise RuntimeError(f"The server did not start:\n{tail}")
            time.sleep(0.2)
        self.url = f"{match.group(2)}/v1/models/{name}:predict"

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def request_body(texts):
    return json.dumps({"signature_name": "serving_default", "instances": list(texts)})


def server_results(server, texts, args, rounds):
    """Batch 1 latency, batch-16 throughput and the issue's load test."""
    one = request_body(texts[:1])
    many = request_body(texts[: args.batch_size])
    response_bytes = {}
    for label, body in (("1", one), (str(args.batch_size), many)):  # warm-up + sizes
        warm = run_load_test(server.url, body, requests=5, concurrency=1, timeout_seconds=120)
        if warm["errors"]:
            raise RuntimeError(f"Server warm-up failed: {warm['first_error']}")
    import urllib.request
    for label, body in (("1", one), (str(args.batch_size), many)):
        request = urllib.request.Request(server.url, body.encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            response_bytes[label] = len(response.read())

    runs = {"latency": [], "throughput": []}
    for index in range(rounds):
        runs["latency"].append(run_load_test(
            server.url, one, requests=max(1, args.server_requests // rounds),
            concurrency=1, timeout_seconds=args.server_timeout_seconds))
        runs["throughput"].append(run_load_test(
            server.url, many, requests=max(1, args.server_batch_requests // rounds),
            concurrency=args.server_concurrency, timeout_seconds=args.server_timeout_seconds))
    load_test = run_load_test(server.url, one, requests=args.load_test_requests,
                              concurrency=args.load_test_concurrency,
                              timeout_seconds=args.server_timeout_seconds)

    def combine(parts, batch, concurrency, path):
        # p50/p99 of the combined run: the median over rounds of each round's
        # (load_test returns percentiles, not the raw latencies).
        return {
            "path": path, "batch": batch, "concurrency": concurrency,
            "requests": sum(p["requests"] for p in parts),
            "errors": sum(p["errors"] for p in parts),
            "p50_ms": float(np.median([p["p50_ms"] for p in parts])),
            "p99_ms": float(np.median([p["p99_ms"] for p in parts])),
            "round_p50_ms": [p["p50_ms"] for p in parts],
            "round_requests_per_second": [p["requests_per_second"] for p in parts],
            "requests_per_second": float(np.median([p["requests_per_second"] for p in parts])),
            "examples_per_second": round(
                batch * float(np.median([p["requests_per_second"] for p in parts])), 1),
            "timed_out": any(p["timed_out"] for p in parts),
            "first_error": next((p["first_error"] for p in parts if p["first_error"]), None),
            "reference": "SM serving_default",
        }

    return [
        combine(runs["latency"], 1, 1, "server b1 c1"),
        combine(runs["throughput"], args.batch_size, args.server_concurrency,
                f"server b{args.batch_size} c{args.server_concurrency}"),
        combine([load_test], 1, args.load_test_concurrency,
                f"server load test c{args.load_test_concurrency}"),
    ], response_bytes


def text_signature_is_batchable(export_dir):
    """Whether the server merges concurrent requests to `serving_default`."""
    store = ModelStore(export_dir)
    return store.get(store.name).signatures["serving_default"].batchable


def benchmark_config(name, args, texts, vocab_file, plain):
    config = BertConfig.preset(name, vocab_size=plain.vocab_size)
    encoder = BertEncoder(config)
    tokenizer = BertTokenizer(vocab_file)
    preprocessor = BertTextPreprocessor(tokenizer, args.sequence_length)
    zeros = tf.zeros([1, args.sequence_length], tf.int32)
    encoder({k: zeros for k in INPUT_NAMES}, training=False)  # build
    export_dir = tempfile.mkdtemp(prefix=f"serving-bench-{name}-")
    try:
        started = time.perf_counter()
        version_dir = export_saved_model(encoder, export_dir, preprocessor)
        export_seconds = time.perf_counter() - started
        started = time.perf_counter()
        loaded = tf.saved_model.load(version_dir)
        load_seconds = time.perf_counter() - started
        batchable = text_signature_is_batchable(export_dir)

        checks = check_equivalence(encoder, loaded, preprocessor, plain,
                                   texts[: args.batch_size], args.sequence_length)
        cases = direct_cases(encoder, loaded, preprocessor, plain, texts,
                             (1, args.batch_size), args.sequence_length)
        def calls(case, count):
            # Batch-16 calls cost 5-20 times more; the response JSON, more still.
            if case.batch > 1:
                count = min(count, args.batch_calls)
            return min(count, 3) if case.name == "server's response JSON" else count

        for case in cases:  # warm-up: traces, caches, thread pools
            case.run(0, calls(case, args.warmup))
            case.times, case.round_medians = [], []
        position = args.warmup
        for _ in range(args.rounds):
            for case in cases:
                case.run(position, calls(case, args.calls))
            position += args.calls
        direct = [case.summary() for case in cases]

        server_rows, response_bytes = [], {}
        if not args.skip_server:
            server = ServerProcess(
                export_dir, f"bert_{name}", os.path.join(export_dir, "server.log"),
                [f"--max_batch_size={args.server_max_batch_size}",
                 f"--batch_timeout_micros={args.server_batch_timeout_micros}"])
            try:
                server_rows, response_bytes = server_results(server, texts, args, args.rounds)
            finally:
                server.stop()
    finally:
        shutil.rmtree(export_dir, ignore_errors=True)

    rows = direct + server_rows
    for row in rows:
        row["config"] = name
        reference = next((r for r in rows if r["path"] == row["reference"]
                          and r["batch"] == row["batch"]), None)
        row["ratio"] = (round(reference["examples_per_second"] / row["examples_per_second"], 3)
                        if reference else None)
    return {
        "config": name, "bert_config": config.to_dict(),
        "parameters": int(encoder.count_params()),
        "export_seconds": round(export_seconds, 2), "load_seconds": round(load_seconds, 2),
        "checks": checks, "text_signature_batchable_by_server": batchable,
        "server_response_bytes": response_bytes, "rows": rows,
    }


def config_figures(result):
    """One config's headline figures, at batch 1: the SavedModel call
    against Keras, in-graph tokenization against Python's, and the server
    against the SavedModel."""
    config = result["config"]
    rows = {row["path"]: row for row in result["rows"] if row["batch"] == 1}
    text_call = rows["SM serving_default"]
    figures = [
        figure(f"{config}: SavedModel encode_ids call, batch 1, p50",
               rows["SM encode_ids"]["p50_ms"], "ms", reference="eager Keras call",
               reference_value=rows["keras eager"]["p50_ms"], goal=SAVED_MODEL_CALL_GOAL,
               higher_is_better=False),
        figure(f"{config}: SavedModel text call, batch 1, p50", text_call["p50_ms"], "ms",
               reference="Python tokenization + SavedModel encode_ids",
               reference_value=rows["py tok + SM encode_ids"]["p50_ms"],
               higher_is_better=False),
    ]
    if "server b1 c1" in rows:  # Not with --skip_server.
        latency = rows["server b1 c1"]
        load_test = next(row for path, row in rows.items() if path.startswith("server load test"))
        figures += [
            figure(f"{config}: server request, batch 1, p50", latency["p50_ms"], "ms",
                   reference="SavedModel text call", reference_value=text_call["p50_ms"],
                   higher_is_better=False),
            figure(f"{config}: server load test, {load_test['requests']:,} requests at "
                   f"concurrency {load_test['concurrency']}", load_test["requests_per_second"],
                   "requests/s", reference="SavedModel text calls one at a time",
                   reference_value=text_call["examples_per_second"]),
        ]
    return figures


def print_table(results, args):
    print(f"\nBERT encoders (random weights), sequence length {args.sequence_length}, "
          f"on {machine_description()}, TF {tf.__version__}")
    header = (f"{'config':6} {'path':28} {'batch':>5} {'p50 ms':>9} {'p99 ms':>9} "
              f"{'spread ms':>15} {'examples/s':>10} {'ratio':>6}  reference")
    print(header)
    print("-" * len(header))
    for result in results:
        for row in result["rows"]:
            spread = row["round_p50_ms"]
            spread = f"{min(spread):.2f}-{max(spread):.2f}"
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
            errors = f" ({row['errors']} errors)" if row.get("errors") else ""
            print(f"{row['config']:6} {row['path']:28} {row['batch']:5d} {row['p50_ms']:9.2f} "
                  f"{row['p99_ms']:9.2f} {spread:>15} {row['examples_per_second']:10.1f} "
                  f"{ratio:>6}  {row['reference'] or ''}{errors}")
        checks = result["checks"]
        print(f"{result['config']:6} checks: {checks['mean_real_tokens']} real tokens/example; "
              f"python vs graph packing: {checks['packing_rows_differing']} rows differ; "
              f"max |SM - keras| {checks['max_abs_diff_saved_vs_keras']:.1e}; "
              f"server merges text requests: {result['text_signature_batchable_by_server']}; "
              f"response bytes {result['server_response_bytes']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="tiny,mini")
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--input_file", default="../shared/data/mono/wikitext-2-test.txt")
    parser.add_argument("--min_words", type=int, default=60)
    parser.add_argument("--max_texts", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds.")
    parser.add_argument("--calls", type=int, default=30,
                        help="Batch-1 calls per case and round.")
    parser.add_argument("--batch_calls", type=int, default=6,
                        help="Batch-16 calls per case and round (response JSON: 3).")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--server_requests", type=int, default=150,
                        help="Batch-1 requests at concurrency 1, over all rounds.")
    parser.add_argument("--server_batch_requests", type=int, default=24,
                        help="Batch-16 requests, over all rounds.")
    parser.add_argument("--server_concurrency", type=int, default=4)
    parser.add_argument("--load_test_requests", type=int, default=2000)
    parser.add_argument("--load_test_concurrency", type=int, default=16)
    parser.add_argument("--server_max_batch_size", type=int, default=16)
    parser.add_argument("--server_batch_timeout_micros", type=int, default=2000)
    parser.add_argument("--server_timeout_seconds", type=float, default=300.0)
    parser.add_argument("--skip_server", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: " + ", ".join(f"--{k}={v}" for k, v in QUICK.items()))
    parser.add_argument("--output", default="benchmarks/results/serving.json")
    args = parser.parse_args()
    if args.quick:
        vars(args).update(QUICK)

    vocab_file, input_file = from_root(args.vocab_file), from_root(args.input_file)
    texts = load_texts(input_file, args.min_words, args.max_texts)
    plain = PlainBertTokenizer(vocab_file)
    started = time.perf_counter()
    results = []
    for name in [n.strip() for n in args.configs.split(",") if n.strip()]:
        print(f"[{time.perf_counter() - started:6.0f}s] {name}...", flush=True)
        results.append(benchmark_config(name, args, texts, vocab_file, plain))
    print_table(results, args)

    write_report({
        "settings": {**vars(args), "texts": len(texts), "weights": "random"},
        "total_seconds": round(time.perf_counter() - started, 1),
        "results": results,
        FIGURES_KEY: [row for result in results for row in config_figures(result)],
    }, args.output)


if __name__ == "__main__":
    main()

"""Peak memory of the REST server: under the load test, under a burst of
the largest requests its limits allow, and on the issue's request of 16,000
short strings, with the limits and without them.

    python -m benchmarks.serving_memory [--config=tiny --sequence_length=128
        --load_test_requests=2000 --burst_requests=32 --concurrency=16]
    python -m benchmarks.serving_memory --quick   # a smoke run: 100 requests, a burst of 4

A random-weight `BertEncoder` of the `--config` preset is exported with its
text signature (the bert-base-uncased vocabulary, `--sequence_length`
tokens), whose answer holds `sequence_output`: sequence length x hidden
floats per instance, the heaviest answer tfnlp's exports give. Then
`python -m tfnlp.serve` serves it twice, each time in a SUBPROCESS whose
resident memory (VmRSS in /proc/PID/status) a thread samples every 20 ms:

- "limits": the server's defaults (`--max_batch_size=16`,
  `--max_instances_per_request=128`, `--max_body_bytes` 10 MiB,
  `--max_string_bytes` 64 KiB);
- "no limits", the reference: `--max_batch_size` and
  `--max_instances_per_request` at 1,000,000, so that every request runs
  as one batch of any size (what the server did before issue 14).

Phases, one after the other on each server:

1. start: the memory once the model is loaded and has answered one request;
2. load test: `--load_test_requests` requests of one WikiText-2 line each,
   at concurrency `--concurrency`;
3. burst: `--burst_requests` requests at concurrency `--concurrency`, each
   of the largest size the limits allow: 128 instances of 64 KiB of text
   (8 MiB of JSON), each truncated by the model to the sequence length;
4. many strings: one request of two-word strings, the issue's example:
   16,000 of them (0.2 MB) to the server with limits, which refuses it
   (413) unread by the model; `--unlimited_strings` (2,000) to the one
   without, which runs it as one batch (16,000 took 17 GiB there, which a
   benchmark should not risk).

For each phase: requests, errors (answers other than the expected status:
200, or 413 for the 16,000 strings with the limits), the phase's peak
memory, and its ratio to the start. Prints a table and writes JSON
(`--output`, default benchmarks/results/serving_memory.json) whose
"figures" are the peaks of the load test, the burst and the many strings
with the limits against those without, and the errors.

Reads the vocabulary and WikiText-2 (test) from ../shared/data.
"""

import argparse
import json
import os
import shutil
import tempfile
import threading
import time

import keras

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from benchmarks.serving import ServerProcess, load_texts
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.models import BertConfig, BertEncoder
from tfnlp.serve.load_test import run_load_test
from tfnlp.text import BertTokenizer

SERVERS = {
    "limits": [],
    "no limits": ["--max_batch_size=1000000", "--max_instances_per_request=1000000"],
}
REFERENCE = "the same server without limits"
LARGEST_INSTANCES = 128
MAX_STRING_BYTES = 2**16
ISSUE_STRINGS = 16_000


class MemorySampler:
    """Samples a process's resident memory every 20 ms from a thread; the
    peak since the last `reset()` is `peak_bytes`."""

    def __init__(self, pid):
        self._path = f"/proc/{pid}/status"
        self._lock = threading.Lock()
        self._running = True
        self.peak_bytes = self.resident_bytes()
        threading.Thread(target=self._sample, daemon=True).start()

    def resident_bytes(self):
        with open(self._path, encoding="ascii") as file:
            for line in file:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(f"No VmRSS in {self._path}.")

    def _sample(self):
        while self._running:
            try:
                resident = self.resident_bytes()
            except (OSError, RuntimeError):
                return  # The process ended.
            with self._lock:
                self.peak_bytes = max(self.peak_bytes, resident)
            time.sleep(0.02)

    def reset(self):
        with self._lock:
            self.peak_bytes = self.resident_bytes()

    def stop(self):
        self._running = False


def largest_request(texts):
    """128 instances of 64 KiB of text, the largest the default limits
    allow (8 MiB of JSON, under the 10 MiB body limit)."""
    instance_bytes = MAX_STRING_BYTES
    long_text = " ".join(texts)
    while len(long_text) < instance_bytes:
        long_text += " " + long_text
    text = long_text.encode("utf-8")[:instance_bytes].decode("utf-8", "ignore")
    return json.dumps({"instances": [text] * LARGEST_INSTANCES})


def many_strings(server, args):
    """How many short strings the last phase sends to `server`: the issue's
    16,000 with the limits (refused), fewer without (run as one batch)."""
    return ISSUE_STRINGS if server == "limits" else args.unlimited_strings


def measure_server(name, export_dir, texts, args):
    """The phases' rows for one server configuration."""
    server = ServerProcess(export_dir, "memory", os.path.join(export_dir, f"{name}.log"),
                           SERVERS[name])
    sampler = MemorySampler(server.process.pid)
    rows = []

    def phase(label, body, requests, concurrency, expected_status=200):
        sampler.reset()
        result = run_load_test(server.url, body=body, requests=requests,
                               concurrency=concurrency, timeout_seconds=1800)
        errors = result["errors"]
        if expected_status != 200:  # run_load_test counts every non-200 answer.
            wrong = result["first_error"] and not result["first_error"].startswith(
                f"HTTP {expected_status}:")
            errors = result["requests"] if wrong else 0
        time.sleep(0.1)
        rows.append({"server": name, "phase": label, "requests": result["requests"],
                     "errors": errors, "peak_bytes": sampler.peak_bytes,
                     "requests_per_second": result["requests_per_second"],
                     "first_error": result["first_error"] if errors else None})
        print(f"{name:10} {label:16} {rows[-1]['peak_bytes'] / 2**20:9.0f} MiB  "
              f"{errors} errors", flush=True)

    try:
        phase("start", json.dumps({"instances": texts[:1]}), 1, 1)
        phase("load test", [json.dumps({"instances": [text]}) for text in texts[:64]],
              args.load_test_requests, args.concurrency)
        phase("burst", largest_request(texts), args.burst_requests, args.concurrency)
        strings = many_strings(name, args)
        phase(f"{strings:,} strings", json.dumps({"instances": ["two words"] * strings}), 1, 1,
              expected_status=413 if name == "limits" else 200)
    finally:
        sampler.stop()
        server.stop()
    start = rows[0]["peak_bytes"]
    for row in rows:
        row["ratio_to_start"] = round(row["peak_bytes"] / start, 2)
    return rows


def peak_mib(rows, server, phase):
    return next(row["peak_bytes"] for row in rows
                if row["server"] == server and row["phase"] == phase) / 2**20


def figures(rows, args):
    """The headline figures: the server's peak memory with its limits
    against without them, per phase, and the errors of both."""
    limited, unlimited = many_strings("limits", args), many_strings("no limits", args)

    def peak(label, phase, reference_phase, reference=REFERENCE):
        return figure(f"peak memory, {label}", peak_mib(rows, "limits", phase), "MiB",
                      reference=reference,
                      reference_value=peak_mib(rows, "no limits", reference_phase),
                      higher_is_better=False)

    return [
        peak(f"load test of {args.load_test_requests:,} requests", "load test", "load test"),
        peak(f"burst of {args.burst_requests} largest requests", "burst", "burst"),
        peak(f"one request of {limited:,} short strings", f"{limited:,} strings",
             f"{unlimited:,} strings", reference=f"{REFERENCE}, on {unlimited:,} strings"),
        figure("errors, both servers", sum(row["errors"] for row in rows), "answers",
               higher_is_better=False),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--load_test_requests", type=int, default=2000)
    parser.add_argument("--burst_requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--unlimited_strings", type=int, default=2000)
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--texts", default="../shared/data/mono/wikitext-2-test.txt")
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: 100 load-test requests, a burst of 4, concurrency "
                             "4, 200 strings without limits.")
    parser.add_argument("--output", default="benchmarks/results/serving_memory.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.load_test_requests, args.burst_requests = 100, 4
        args.concurrency, args.unlimited_strings = 4, 200

    keras.utils.set_random_seed(0)
    texts = load_texts(from_root(args.texts), min_words=8, limit=2000)
    tokenizer = BertTokenizer(from_root(args.vocab_file))
    encoder = BertEncoder(BertConfig.preset(args.config, vocab_size=tokenizer.vocab_size))
    export_dir = tempfile.mkdtemp(prefix="serving-memory-")
    try:
        export_saved_model(encoder, export_dir,
                           BertTextPreprocessor(tokenizer, args.sequence_length))
        rows = [row for name in SERVERS for row in measure_server(name, export_dir, texts, args)]
    finally:
        shutil.rmtree(export_dir, ignore_errors=True)

    print(f"\n{'server':10} {'phase':16} {'requests':>8} {'errors':>6} {'peak MiB':>9} "
          f"{'x start':>8}")
    for row in rows:
        print(f"{row['server']:10} {row['phase']:16} {row['requests']:8d} {row['errors']:6d} "
              f"{row['peak_bytes'] / 2**20:9.0f} {row['ratio_to_start']:8.2f}")
    write_report({
        "benchmark": "serving_memory",
        "settings": vars(args),
        "rows": rows,
        FIGURES_KEY: figures(rows, args),
    }, args.output)


if __name__ == "__main__":
    main()

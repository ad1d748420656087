"""Speed of tfnlp.decoding on a small GPT-style decoder.

    python -m benchmarks.decoding [--batch_size=4 --beam_size=4 --max_length=64 --repeats=5]
    python -m benchmarks.decoding --quick   # a smoke run of a few seconds

The model: token and position embeddings, `--layers` decoder-only
`tfnlp.layers.TransformerDecoderBlock`s with a key/value cache, and an output
projection, with random weights. Every decoder below runs in one
`tf.function(jit_compile=True)` and is timed after compilation, interleaved
with its reference in the same run, so that machine noise hits both alike:

1. beam search: `tfnlp.decoding.BeamSearch` against
   `keras_hub.samplers.BeamSampler`, same model, cache layout, beam width,
   batch and number of tokens (no end token is ever generated, so both run
   `--max_length` steps; no length penalty, the same ranking as keras-hub's).
   The best hypotheses of the two must be the same tokens.
2. greedy search with the key/value cache against greedy search that
   recomputes the whole prefix at every step (the `--max_length`-token
   buffer, causally masked, through the whole model), both with
   `tfnlp.decoding.GreedySearch`. The outputs must be the same tokens.

Prints a table and writes JSON (`--output`, default
benchmarks/results/decoding.json; not with --quick unless --output is
given) whose "figures" are the two cases' times against their references'.
Speed-up = reference time / tfnlp time (above 1 means tfnlp is faster).
"""

import argparse
import time

import keras
import keras_hub
import numpy as np
import tensorflow as tf
from keras import ops

from benchmarks.reporting import FIGURES_KEY, machine_description, time_figures, write_report
from tfnlp import decoding, layers


class TinyGPT:
    """A decoder-only Transformer with random weights and a key/value cache.

    Args:
        vocabulary_size, hidden_dim, num_heads, num_layers: the model size.
        max_length: the longest sequence (start token included).
    """

    def __init__(self, vocabulary_size, hidden_dim, num_heads, num_layers, max_length, seed=0):
        keras.utils.set_random_seed(seed)
        self.num_heads, self.head_dim = num_heads, hidden_dim // num_heads
        self.max_length = max_length
        self.token_embedding = keras.layers.Embedding(vocabulary_size, hidden_dim)
        self.position_embedding = layers.PositionEmbedding(max_length)
        self.blocks = [
            layers.TransformerDecoderBlock(num_heads, 4 * hidden_dim, dropout=0.0, norm_first=True)
            for _ in range(num_layers)
        ]
        self.final_norm = keras.layers.LayerNormalization(epsilon=1e-5)
        self.output_projection = keras.layers.Dense(vocabulary_size)
        self.forward(np.zeros((1, max_length), "int32"))  # builds every layer

    def forward(self, token_ids, caches=None, index=None):
        """Logits `(batch, length, vocabulary)`; with `caches` (one per block)
        the tokens go at position `index` and the updated caches come back."""
        x = self.token_embedding(token_ids)
        x = x + self.position_embedding(x, start_index=0 if index is None else index)
        new_caches = []
        for position, block in enumerate(self.blocks):
            if caches is None:
                x = block(x)
            else:
                x, cache = block(x, self_attention_cache=caches[position],
                                 self_attention_cache_update_index=index)
                new_caches.append(cache)
        logits = self.output_projection(self.final_norm(x))
        return logits if caches is None else (logits, new_caches)

    def empty_cache(self, rows):
        shape = (rows, 2, self.max_length, self.num_heads, self.head_dim)
        return [ops.zeros(shape, "float32") for _ in self.blocks]

    # tfnlp's step-function contract.
    def cached_step(self, token_ids, cache, index):
        logits, cache = self.forward(token_ids[:, None], cache, index)
        return logits[:, 0], cache

    def uncached_step(self, token_ids, cache, index):
        """Writes the token into the buffer and runs the model on all of it."""
        buffer = cache["tokens"]
        buffer = ops.where(ops.arange(self.max_length)[None, :] == index,
                           token_ids[:, None], buffer)
        logits = self.forward(buffer)  # (rows, max_length, vocabulary), causal
        logits = ops.take(logits, ops.reshape(index, (1,)), axis=1)[:, 0]
        return logits, {"tokens": buffer}


def keras_hub_beam_search(model, sampler, start_ids, max_length):
    """keras_hub.samplers.BeamSampler over the same model, as its CausalLMs call it."""
    batch_size = ops.shape(start_ids)[0]
    prompt = ops.concatenate(
        [start_ids[:, None], ops.zeros((batch_size, max_length), "int32")], axis=1
    )
    mask = ops.arange(max_length + 1)[None, :] < 1  # the start token is the prompt
    mask = ops.broadcast_to(mask, ops.shape(prompt))

    def next_logits(prompt, cache, index):
        token_ids = ops.slice(prompt, [0, index - 1], [ops.shape(prompt)[0], 1])
        logits, cache = model.forward(token_ids, cache, index - 1)
        return logits[:, 0], None, cache

    ids, log_probs = sampler(next_logits, prompt, cache=model.empty_cache(batch_size),
                             index=1, mask=mask)
    return ids[:, 0, 1:], log_probs[:, 0]


def median_seconds(function, inputs, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        keras.tree.map_structure(np.asarray, function(*inputs))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def compare(name, reference_name, ours, reference, inputs, repeats, rounds):
    for function in (ours, reference):
        function(*inputs)  # compile
    ours_times, reference_times = [], []
    for _ in range(rounds):  # interleave, so drift affects both
        ours_times.append(median_seconds(ours, inputs, repeats))
        reference_times.append(median_seconds(reference, inputs, repeats))
    ours_ms, reference_ms = 1e3 * min(ours_times), 1e3 * min(reference_times)
    return {"case": name, "reference": reference_name, "tfnlp_ms": ours_ms,
            "reference_ms": reference_ms, "speedup": round(reference_ms / ours_ms, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--max_length", type=int, default=64)
    parser.add_argument("--vocabulary_size", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny sizes, 1 repeat")
    parser.add_argument("--output", default=None,
                        help="the JSON file (default benchmarks/results/decoding.json; "
                             "none with --quick)")
    args = parser.parse_args()
    if args.quick:
        args.max_length, args.vocabulary_size, args.hidden, args.layers = 8, 50, 32, 1
        args.repeats, args.rounds = 1, 1
    elif args.output is None:
        args.output = "benchmarks/results/decoding.json"

    length = args.max_length
    model = TinyGPT(args.vocabulary_size, args.hidden, args.heads, args.layers, length)
    start_ids = tf.constant(np.arange(args.batch_size) % args.vocabulary_size, tf.int32)
    never = args.vocabulary_size  # an end id outside the vocabulary: no early end

    beam_search = decoding.BeamSearch(args.beam_size, length_penalty="none")
    ours_beam = tf.function(
        lambda start: beam_search(model.cached_step, model.empty_cache(args.batch_size), start,
                                  never, length),
        jit_compile=True)
    sampler = keras_hub.samplers.BeamSampler(num_beams=args.beam_size, return_all_beams=True)
    reference_beam = tf.function(lambda start: keras_hub_beam_search(model, sampler, start, length),
                                 jit_compile=True)

    greedy = decoding.GreedySearch()
    cached_greedy = tf.function(
        lambda start: greedy(model.cached_step, model.empty_cache(args.batch_size), start,
                             never, length),
        jit_compile=True)
    uncached_greedy = tf.function(
        lambda start: greedy(model.uncached_step,
                             {"tokens": tf.zeros((args.batch_size, length), tf.int32)}, start,
                             never, length),
        jit_compile=True)

    rows = []
    row = compare(f"beam search (beam {args.beam_size})", "keras-hub BeamSampler",
                  ours_beam, reference_beam, (start_ids,), args.repeats, args.rounds)
    ours, (reference_ids, reference_log_probs) = ours_beam(start_ids), reference_beam(start_ids)
    row["same_best_ids"] = bool(np.array_equal(ours["ids"][:, 0], reference_ids))
    row["max_score_difference"] = float(np.max(np.abs(ours["scores"][:, 0] - reference_log_probs)))
    rows.append(row)

    row = compare(f"greedy search with the key/value cache ({length} tokens)",
                  "greedy search recomputing the prefix", cached_greedy, uncached_greedy,
                  (start_ids,), args.repeats, args.rounds)
    cached, uncached = cached_greedy(start_ids), uncached_greedy(start_ids)
    row["same_best_ids"] = bool(np.array_equal(cached["ids"], uncached["ids"]))
    row["max_score_difference"] = float(np.max(np.abs(cached["scores"] - uncached["scores"])))
    rows.append(row)

    print(f"XLA, batch {args.batch_size}, {length} tokens, vocabulary {args.vocabulary_size}, "
          f"{args.layers} blocks × hidden {args.hidden}, {args.heads} heads, on "
          f"{machine_description()}, "
          f"backend {keras.backend.backend()}")
    print(f"{'case':52} {'tfnlp ms':>9} {'reference ms':>13} {'speed-up':>9} {'same ids':>9}  "
          "reference")
    for row in rows:
        print(f"{row['case']:52} {row['tfnlp_ms']:9.2f} {row['reference_ms']:13.2f} "
              f"{row['speedup']:9.2f} {str(row['same_best_ids']):>9}  {row['reference']}")
    if args.output is None:
        return
    figures = time_figures(rows, lambda row: f"{row['case']} time per decode")
    write_report({"settings": vars(args), "results": rows, FIGURES_KEY: figures},
                 args.output)


if __name__ == "__main__":
    main()

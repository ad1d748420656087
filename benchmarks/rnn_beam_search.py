"""Speed of beam search on RNNSeq2Seq: tfnlp.decoding against a Python loop.

    python -m benchmarks.rnn_beam_search [--preset=small --batch_size=8 --beam_size=4
        --max_length=32 --repeats=5]
    python -m benchmarks.rnn_beam_search --quick   # a smoke run of about 15 s

The model: `RNNSeq2Seq.from_preset(--preset)` (small: a 2-layer
bidirectional LSTM encoder and a 2-layer LSTM decoder of width 256,
embeddings of 256; 6.4 M parameters) with `--attention` (luong_general)
over a `--vocabulary_size` (8,000) vocabulary, dropout 0, random weights
(seeded). As initialised its next-token distributions are almost uniform
(the best extensions 1e-4 to 1e-6 nats apart, some tied), so XLA's float
rounding reorders near-tied beams: with `--logit_std=0` (the initialised
weights) 7 of the 8 best hypotheses agreed, the eighth differed from its
8th token on (0.008 nats apart, the reference's the more probable; the
graph row without XLA agreed exactly).
The output projection's kernel is therefore scaled so that the first
step's logits spread by `--logit_std` (3), a trained model's peakedness (the
best hypotheses then average -1.4 nats a token); see `sharpen`. That changes
no operation: the speeds are the same either way. The sources:
`--batch_size` (8) rows of `--source_length` (16) random ids ending with
`EOS_ID` (seeded). The random model never ends its best hypotheses early, so
both searches run the full `--max_length` (32) steps (the run prints the
steps run and the best hypotheses' lengths).

Two beam searches of the same model, beam `--beam_size` (4), no length
penalty (hypotheses ranked by their log-probability), the best hypothesis
kept:

- tfnlp: `model.generate(sources, tfnlp.decoding.BeamSearch(beam_size,
  length_penalty="none"), max_length)`, the whole search (encoder, every
  step, the cache reordering) in one `tf.function(jit_compile=True)`, as a
  serving export or a `--jit_compile` evaluation runs it; timed after a
  warm-up call that compiles it. The "graph" row is the same `tf.function`
  without XLA.
- the reference (`python_loop_beam_search`): a textbook beam search written
  here over the same model object: `model.initial_cache` encodes once, then a
  Python loop calls the model's own `decode_step` eagerly on the `batch *
  beam` rows, takes the log-softmax, picks the `2 * beam` best extensions of
  each sentence in NumPy, moves hypotheses that end with `EOS_ID` to the
  sentence's finished ones and keeps the `beam` best others alive, reorders
  every cache leaf with `ops.take`, and stops a sentence once no alive
  hypothesis can beat its best finished one (with no length penalty the
  log-probability only falls; the same exact early stopping as tfnlp's).
  The "graph encode + step" row is the same loop with `initial_cache` and
  `decode_step` each in a `tf.function` (one graph call for the encoder and
  one a step instead of eager ops): it tells how much of the gap is eager
  execution and how much the Python loop itself.

Both must return the same best hypothesis per sentence; the run reports how
many agree and the largest score difference. Timing: after the warm-up,
`--repeats` (5) rounds, each running every row once in turn (interleaved,
so that machine noise hits them alike), wall-clock seconds until the result
is on the host (and this process's CPU seconds). A row's time is its
median. Beam tokens/s = batch x beam x steps run / seconds (each step
extends every beam by one token). Speed-up = the eager reference's median /
tfnlp XLA's median (goal at least 5).

Measured on a shared 2-core CPU while a training job used most of it (this
run at nice 19; TensorFlow 2.21, Keras 3.15), the default run (about 25 s;
8 x 4 beams x 32 steps = 1,024 beam tokens; all 8 best hypotheses the same
in every row, the XLA scores within 4e-5 of the reference's):

    row                                median s   CPU s  beam tokens/s  x tfnlp XLA
    tfnlp BeamSearch, XLA                 0.158   0.153          6,489         1.00
    tfnlp BeamSearch, graph (no XLA)      0.197   0.195          5,203         1.25
    Python loop, eager                    0.894   0.881          1,145         5.67
    Python loop, graph encode + step      0.466   0.459          2,198         2.95

tfnlp under XLA is 5.67x faster than the eager Python loop (goal >= 5:
met). Over six default runs the ratio went from 5.7 to 7.0: 5.67, 5.72,
5.84 and 5.95 as here, 5.99 and 7.04 with the initialised weights (7.04 in
a run where the machine slowed the eager reference most, to 1.17 s). Where
the eager reference's time goes (each part timed alone): the eager encoder,
Keras' LSTM looping eagerly over the 16 source positions, about 0.24 s;
then about 23 ms a step: the eager `decode_step` 15 ms, reordering the
cache 3 ms, the NumPy top-k 3 ms, the log-softmax and the bookkeeping 2 ms.
With both in graphs the loop still takes 2.9x tfnlp's time: the compiled
step (5 ms) is about tfnlp's whole step, and the reordering and NumPy work
come on top of it. `--quick` (tiny preset, batch 2, 6 steps, 1 repeat;
about 15 s) is a smoke run only; its ratio means little.

Prints a table and writes JSON (default benchmarks/results/rnn_beam_search.json;
not with --quick unless --output is given) with the settings, the machine,
every repeat's times, the agreement and the speed-up. Relative paths are
resolved from the repository root.
"""

import argparse
import time

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from benchmarks.reporting import FIGURES_KEY, figure, machine_description, write_report
from tfnlp import decoding
from tfnlp.data.translation_schema import BOS_ID, EOS_ID
from tfnlp.models.seq2seq.rnn_seq2seq import ATTENTIONS, RNN_PRESETS, RNNSeq2Seq

SPEED_GOAL = 5.0
FIRST_WORD_ID = EOS_ID + 1  # ids below are padding, unknown, BOS and EOS
OURS = "tfnlp BeamSearch, XLA"
REFERENCE = "Python loop, eager"
GRAPH_LOOP = "Python loop, graph encode + step"


# === The model and its inputs ===


def build_model(flags):
    """The random-weight model (seeded)."""
    keras.utils.set_random_seed(flags.seed)
    return RNNSeq2Seq.from_preset(flags.preset, vocabulary_size=flags.vocabulary_size,
                                  attention=flags.attention, dropout=0.0)


def sharpen(model, source_ids, logit_std):
    """Scales the output projection's kernel so that the first step's logits
    have a standard deviation of `logit_std` (the bias is zero at
    initialisation, so the logits scale with it); 0 leaves the model as
    initialised. Returns the factor.

    A freshly initialised `RNNSeq2Seq` has tiny states (standard deviation
    about 0.004), so its logits spread by about 0.001 and every next-token
    distribution is almost uniform: the best extensions differ by 1e-4 to
    1e-6 nats, and sometimes tie. Float rounding that differs between XLA
    and eager execution (about 1e-6) then reorders near-tied beams, and the
    two searches can keep different ones. A trained model's distributions
    are peaked (a logit spread of a few units, the chosen tokens at about
    -1.5 nats); so are these after scaling. It changes no shape and no
    operation, so it does not change the speed.
    """
    if not logit_std:
        return 1.0
    cache = model.initial_cache(source_ids, 1)
    start_ids = ops.full((ops.shape(source_ids)[0],), BOS_ID, dtype="int32")
    logits, _ = model.decode_step(start_ids, cache, ops.convert_to_tensor(0, "int32"))
    factor = logit_std / float(np.std(ops.convert_to_numpy(logits)))
    kernel = model.output_projection.kernel
    kernel.assign(kernel * factor)
    return factor


def random_sources(batch_size, source_length, vocabulary_size, seed):
    """int32 `(batch_size, source_length)` random word ids, each row ending
    with `EOS_ID`, as the translation data's sources do."""
    generator = np.random.default_rng(seed)
    sources = generator.integers(FIRST_WORD_ID, vocabulary_size,
                                 size=(batch_size, source_length))
    sources[:, -1] = EOS_ID
    return sources.astype("int32")


# === Ours: the shared decoding module ===


def tfnlp_beam_search(model, beam_size, max_length, jit_compile):
    """`model.generate` with `tfnlp.decoding.BeamSearch` in one
    `tf.function`; returns the best hypothesis per sentence."""
    beam_search = decoding.BeamSearch(beam_size=beam_size, length_penalty="none")

    @tf.function(jit_compile=jit_compile)
    def search(source_ids):
        result = model.generate(source_ids, beam_search, max_length=max_length)
        return {"ids": result["ids"][:, 0], "lengths": result["lengths"][:, 0],
                "scores": result["scores"][:, 0]}

    return lambda source_ids: keras.tree.map_structure(np.asarray, search(source_ids))


# === The reference: a Python-loop beam search ===


def top_candidates(scores, count):
    """The indices of the `count` highest of each row of `scores`, best
    first, the lower index first on ties (as `top_k` orders them)."""
    chosen = np.argpartition(-scores, count - 1, axis=1)[:, :count]
    ordered = np.empty_like(chosen)
    for row, indices in enumerate(chosen):
        ordered[row] = indices[np.lexsort((indices, -scores[row, indices]))]
    return ordered


def python_loop_beam_search(model, source_ids, beam_size, max_length, initial_cache=None,
                            decode_step=None):
    """The reference: a plain beam search driven by a Python loop.

    It exists to measure tfnlp's compiled search against the way beam search
    is often written by hand: one model step a Python iteration, the
    bookkeeping in NumPy. It uses only the model's own single-step API
    (`initial_cache` and `decode_step`), not `tfnlp.decoding`, and follows
    the same rules as `tfnlp.decoding.BeamSearch` with no length penalty, so
    that the two must find the same best hypotheses:

    - the cache is encoded once and repeated `beam_size` times along the
      rows (sentence `b`'s beams are rows `b * beam_size ...`); only the
      first beam of a sentence is live at the start;
    - each step scores every extension of every alive beam (beam
      log-probability + the token's log-softmax) and takes the
      `2 * beam_size` best of each sentence; those ending with `EOS_ID`
      become finished hypotheses (the best one is kept, the earlier on
      ties), the `beam_size` best others stay alive, and every cache leaf is
      reordered to follow them (`ops.take` along the rows);
    - at `max_length` the alive beams finish as they are; a sentence stops
      once its best alive log-probability is below its best finished score
      (it can only fall), and the loop stops when every sentence has.

    Args:
        model: an `RNNSeq2Seq` (any model with `initial_cache` and
            `decode_step`).
        source_ids: int32 `(batch, source_length)`.
        beam_size: the alive hypotheses per sentence.
        max_length: the most tokens generated.
        initial_cache, decode_step: the functions to call instead of
            `model.initial_cache` and `model.decode_step` (eager) by default.

    Returns:
        A dict of NumPy arrays: `"ids"` `(batch, max_length)` (the best
        hypothesis, 0-padded), `"lengths"`, `"scores"` (log-probabilities),
        and `"steps"`, the number of steps run.
    """
    initial_cache = initial_cache or model.initial_cache
    decode_step = decode_step or model.decode_step
    batch_size = source_ids.shape[0]
    rows = batch_size * beam_size
    cache = initial_cache(source_ids, max_length)
    cache = reorder_rows(cache, np.repeat(np.arange(batch_size), beam_size))
    hypotheses = np.zeros((rows, 0), "int32")  # the tokens after BOS, per row
    last_tokens = np.full((rows,), BOS_ID, "int32")
    beam_log_probs = np.full((batch_size, beam_size), -np.inf, "float32")
    beam_log_probs[:, 0] = 0.0
    best_finished = [(-np.inf, None)] * batch_size  # (score, tokens)
    done = np.zeros((batch_size,), bool)
    steps = 0
    for index in range(max_length):
        logits, cache = decode_step(ops.convert_to_tensor(last_tokens), cache,
                                    ops.convert_to_tensor(index, "int32"))
        log_probs = ops.convert_to_numpy(ops.log_softmax(logits, axis=-1))
        vocabulary_size = log_probs.shape[-1]
        candidates = (beam_log_probs.reshape(rows, 1) + log_probs).reshape(
            batch_size, beam_size * vocabulary_size)
        is_last_step = index + 1 == max_length
        parent_rows = np.arange(rows)
        for sentence, flat_indices in enumerate(top_candidates(candidates, 2 * beam_size)):
            alive = []  # (log_prob, parent row, token), best first
            for flat_index in flat_indices:
                log_prob = candidates[sentence, flat_index]
                beam, token = divmod(int(flat_index), vocabulary_size)
                parent_row = sentence * beam_size + beam
                if token == EOS_ID:
                    if not done[sentence] and log_prob > best_finished[sentence][0]:
                        best_finished[sentence] = (
                            log_prob, np.append(hypotheses[parent_row], token))
                elif len(alive) < beam_size:
                    alive.append((log_prob, parent_row, token))
            first_row = sentence * beam_size
            for offset, (log_prob, parent_row, token) in enumerate(alive):
                parent_rows[first_row + offset] = parent_row
                last_tokens[first_row + offset] = token
                beam_log_probs[sentence, offset] = log_prob
            if is_last_step and not done[sentence]:
                log_prob, parent_row, token = alive[0]
                if log_prob > best_finished[sentence][0]:
                    best_finished[sentence] = (
                        log_prob, np.append(hypotheses[parent_row], token))
            if is_last_step or alive[0][0] < best_finished[sentence][0]:
                done[sentence] = True
        hypotheses = np.concatenate([hypotheses[parent_rows], last_tokens[:, None]], axis=1)
        cache = reorder_rows(cache, parent_rows)
        steps += 1
        if done.all():
            break
    return best_hypotheses(best_finished, max_length, steps)


def reorder_rows(cache, rows):
    """Every cache leaf's rows `rows` (int `(rows,)`), in that order."""
    rows = ops.convert_to_tensor(rows, "int32")
    return keras.tree.map_structure(lambda leaf: ops.take(leaf, rows, axis=0), cache)


def best_hypotheses(best_finished, max_length, steps):
    """The reference's result arrays from its `(score, tokens)` per sentence."""
    ids = np.zeros((len(best_finished), max_length), "int32")
    lengths = np.zeros((len(best_finished),), "int32")
    for sentence, (_, tokens) in enumerate(best_finished):
        ids[sentence, : len(tokens)] = tokens
        lengths[sentence] = len(tokens)
    scores = np.array([score for score, _ in best_finished], "float32")
    return {"ids": ids, "lengths": lengths, "scores": scores, "steps": steps}


def graph_functions(model):
    """`model.initial_cache` and `model.decode_step`, each in a
    `tf.function` (one trace each: the index is a tensor and the cache keeps
    its shapes)."""
    return {"initial_cache": tf.function(model.initial_cache),
            "decode_step": tf.function(model.decode_step)}


# === Timing and comparing ===


def measure(searches, source_ids, repeats):
    """Wall-clock and CPU seconds of every search over `repeats` rounds,
    each round running every search once in turn, after one warm-up call
    each (which compiles or traces). Returns the times, the warm-up seconds
    and each search's last result."""
    warmup, results = {}, {}
    for name, search in searches.items():
        start = time.perf_counter()
        results[name] = search(source_ids)
        warmup[name] = time.perf_counter() - start
    times = {name: {"wall": [], "cpu": []} for name in searches}
    for _ in range(repeats):
        for name, search in searches.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            results[name] = search(source_ids)
            times[name]["wall"].append(time.perf_counter() - start)
            times[name]["cpu"].append(time.process_time() - start_cpu)
    return times, warmup, results


def agreement(ours, reference):
    """How many sentences' best hypotheses are the same tokens, and the
    largest difference of their scores."""
    same = [np.array_equal(ours["ids"][row], reference["ids"][row])
            for row in range(len(reference["ids"]))]
    return {"same_best_ids": int(sum(same)), "sentences": len(same),
            "fraction": sum(same) / len(same),
            "max_score_difference": float(np.max(np.abs(ours["scores"] - reference["scores"])))}


def summarise(times, warmup, beam_tokens):
    """Each row's median seconds, beam tokens/s and time over tfnlp XLA's."""
    ours_seconds = float(np.median(times[OURS]["wall"]))
    rows = {}
    for name, measured in times.items():
        seconds = float(np.median(measured["wall"]))
        rows[name] = {
            "median_seconds": seconds,
            "median_cpu_seconds": float(np.median(measured["cpu"])),
            "beam_tokens_per_second": beam_tokens / seconds,
            "seconds_over_tfnlp_xla": seconds / ours_seconds,
            "warmup_seconds": warmup[name],
            "wall_seconds": measured["wall"],
            "cpu_seconds": measured["cpu"],
        }
    return rows


def figures(rows, agreements):
    """tfnlp XLA's beam tokens/s against the eager Python loop's (the goal)
    and the graph loop's, and how many of its best hypotheses are the eager
    reference's."""
    ours = rows[OURS]["beam_tokens_per_second"]
    return [
        figure("beam search tokens/s, XLA", ours, "beam tokens/s",
               reference="Python-loop beam search, eager",
               reference_value=rows[REFERENCE]["beam_tokens_per_second"], goal=SPEED_GOAL),
        figure("beam search tokens/s, XLA (against graph steps)", ours, "beam tokens/s",
               reference="Python-loop beam search, graph encode + step",
               reference_value=rows[GRAPH_LOOP]["beam_tokens_per_second"]),
        figure("best hypotheses equal to the eager reference's, XLA",
               agreements[OURS]["same_best_ids"], "sentences",
               reference="sentences searched",
               reference_value=agreements[OURS]["sentences"], goal=1.0),
    ]


def print_table(rows):
    header = (f"{'row':38} {'median s':>9} {'CPU s':>7} {'beam tokens/s':>14} "
              f"{'x tfnlp XLA':>12} {'warm-up s':>10}")
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        print(f"{name:38} {row['median_seconds']:9.3f} {row['median_cpu_seconds']:7.3f} "
              f"{row['beam_tokens_per_second']:14,.0f} {row['seconds_over_tfnlp_xla']:12.2f} "
              f"{row['warmup_seconds']:10.1f}")


def parse_flags(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small", choices=sorted(RNN_PRESETS))
    parser.add_argument("--attention", default="luong_general", choices=ATTENTIONS + ("none",))
    parser.add_argument("--vocabulary_size", type=int, default=8000)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--source_length", type=int, default=16)
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--max_length", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logit_std", type=float, default=3.0,
                        help="scale the output projection to this logit spread (see sharpen); "
                             "0: the initialised weights")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: tiny preset, batch 2, 6 steps, 1 repeat")
    parser.add_argument("--output", default=None,
                        help="the JSON file (default benchmarks/results/rnn_beam_search.json; "
                             "none with --quick)")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.preset, flags.batch_size, flags.max_length, flags.repeats = "tiny", 2, 6, 1
    elif flags.output is None:
        flags.output = "benchmarks/results/rnn_beam_search.json"
    return flags


def main(argv=None):
    flags = parse_flags(argv)
    tf.get_logger().setLevel("ERROR")
    model = build_model(flags)
    source_ids = ops.convert_to_tensor(random_sources(
        flags.batch_size, flags.source_length, flags.vocabulary_size, flags.seed))
    logit_factor = sharpen(model, source_ids, flags.logit_std)
    beam, length = flags.beam_size, flags.max_length
    searches = {
        OURS: tfnlp_beam_search(model, beam, length, jit_compile=True),
        "tfnlp BeamSearch, graph (no XLA)": tfnlp_beam_search(model, beam, length,
                                                              jit_compile=False),
        REFERENCE: lambda ids: python_loop_beam_search(model, ids, beam, length),
        GRAPH_LOOP: lambda ids, functions=graph_functions(model):
            python_loop_beam_search(model, ids, beam, length, **functions),
    }
    times, warmup, results = measure(searches, source_ids, flags.repeats)
    reference = results[REFERENCE]
    steps = reference["steps"]
    beam_tokens = flags.batch_size * beam * steps
    rows = summarise(times, warmup, beam_tokens)
    agreements = {name: agreement(result, reference) for name, result in results.items()
                  if name != REFERENCE}
    speedup = rows[REFERENCE]["median_seconds"] / rows[OURS]["median_seconds"]

    print(f"Beam search on RNNSeq2Seq {flags.preset} ({flags.attention}, vocabulary "
          f"{flags.vocabulary_size}, {model.count_params():,d} parameters, random weights): "
          f"batch {flags.batch_size}, source length {flags.source_length}, beam {beam}, "
          f"max length {length}, no length penalty; on {machine_description()}")
    print(f"output kernel x {logit_factor:.4g} (first-step logit std {flags.logit_std:g}); "
          f"best hypotheses {np.mean(reference['scores'] / reference['lengths']):.2f} nats a "
          f"token; steps run: {steps} of {length}; {beam_tokens:,d} beam tokens; best "
          f"hypothesis lengths {reference['lengths'].tolist()}")
    print_table(rows)
    for name, result in agreements.items():
        print(f"{name} vs the eager reference: {result['same_best_ids']}/{result['sentences']} "
              f"best hypotheses the same, largest score difference "
              f"{result['max_score_difference']:.2g}")
    all_same = all(result["fraction"] == 1 for result in agreements.values())
    if not all_same:
        print("WARNING: not every search found the reference's best hypotheses (see above); "
              "near-tied beams? try a larger --logit_std")
    met = speedup >= SPEED_GOAL
    print(f"\nspeed-up, eager Python loop / tfnlp XLA: {speedup:.2f}x "
          f"(goal >= {SPEED_GOAL:g}x: {'met' if met else 'NOT met'})")

    if flags.output is None:
        return rows
    report = {
        "settings": vars(flags),
        "parameters": int(model.count_params()),
        "output_kernel_factor": logit_factor,
        "best_scores": reference["scores"].tolist(),
        "steps_run": steps,
        "beam_tokens": beam_tokens,
        "best_lengths": reference["lengths"].tolist(),
        "agreement_with_reference": agreements,
        "all_best_the_same": all_same,
        "results": rows,
        "speedup": {"value": speedup, "goal": SPEED_GOAL, "met": met},
        FIGURES_KEY: figures(rows, agreements),
    }
    write_report(report, flags.output)
    return rows


if __name__ == "__main__":
    main()

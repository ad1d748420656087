"""Text generation speed: tfnlp's GPTCausalLM against keras-hub's
GPT2CausalLM.generate on the same weights, and the export against the
in-process model.

    python -m benchmarks.lm_generation [--num_layers=4 --hidden_dim=256 --num_heads=4
        --vocabulary_size=68 --prompt_length=16 --new_tokens=256 --batch_sizes=1,16]
    python -m benchmarks.lm_generation --quick    # a smoke run: tiny, 16 new tokens

One random GPT-2 checkpoint in Hugging Face's layout (written with numpy,
`benchmarks/huggingface_gpt2.py`) is loaded by both libraries'
converters (`GPTCausalLM.from_huggingface`, keras-hub's
`GPT2Backbone.from_preset`), so they hold the same weights. Each case
samples `--new_tokens` tokens after a `--prompt_length`-token prompt with
top-p 0.9 and no end token, compiled with XLA as keras-hub's `generate`
is, and reports new tokens per second (the median of `--repeats` calls
after a warm-up call):

- tfnlp (`tfnlp.decoding.RandomSampling` with the key/value cache and the
  prompt prefilled) against keras-hub's `GPT2CausalLM.generate` with its
  `TopPSampler` (which also caches keys and values), at each batch size
  (goal: at least 2x);
- tfnlp with the cache against tfnlp recomputing the whole prefix at every
  step (the same sampler driving a step function that runs the full
  forward pass over the token buffer);
- the `generate_with_options` signature of a SavedModel export
  (`tfnlp.export.LanguageModelSignatures`, character tokenizer in the
  graph, loaded back with `tf.saved_model.load`) against the in-process
  Keras model running the same function (the concrete function the
  export saves, called in this process: text in, text out, the same
  options), at batch 1, the two called in turn, the order alternating,
  over `--export_rounds` rounds (goal: at most 1.1x its time).

Prints a table and writes JSON (`--output`, default
benchmarks/results/lm_generation.json) whose "figures" are those ratios.
"""

import argparse
import tempfile
import time
from pathlib import Path

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from pipelines import lm_data
from benchmarks.huggingface_gpt2 import CONFIG, random_gpt2_tensors, write_checkpoint
from tfnlp.decoding import RandomSampling
from tfnlp.export.language_model_signatures import LanguageModelSignatures
from tfnlp.export.saved_model import write_next_version
from tfnlp.models import GPTCausalLM
from tfnlp.text import load_language_model_tokenizer

TOP_P = 0.9
# The export's character tokenizer is learned from the demo's text: 68 ids,
# the default --vocabulary_size.
SHAKESPEARE = from_root("demo/data/tinyshakespeare.txt")
SPEED_GOAL = 2.0
EXPORT_GOAL = 1.1


def checkpoint_config(flags):
    return {**CONFIG, "vocab_size": flags.vocabulary_size, "n_layer": flags.num_layers,
            "n_head": flags.num_heads, "n_embd": flags.hidden_dim,
            "n_positions": flags.prompt_length + flags.new_tokens + 8}


def median_seconds(function, repeats):
    function()  # compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def tfnlp_generation(model, prompts, new_tokens, cached=True):
    """A compiled call sampling `new_tokens` after `prompts` with tfnlp."""
    sampler = RandomSampling(top_p=TOP_P, seed=1)
    batch_size, prompt_length = prompts.shape
    seeds = np.stack([np.arange(batch_size), np.zeros(batch_size)], 1).astype("int32")

    if cached:
        @tf.function(jit_compile=True)
        def generate():
            return model.generate(prompts, None, sampler, new_tokens, seed=seeds)["ids"]
    else:
        length = prompt_length + new_tokens

        def step(token_ids, cache, index):
            buffer = tf.tensor_scatter_nd_update(
                tf.transpose(cache["buffer"]), index[None, None], token_ids[None, :])
            buffer = tf.transpose(buffer)
            logits = model(buffer)
            return tf.gather(logits, index, axis=1), {"buffer": buffer}

        @tf.function(jit_compile=True)
        def generate():
            cache = {"buffer": tf.zeros([batch_size, length], tf.int32)}
            return sampler(step, cache, end_id=model.vocabulary_size, max_length=new_tokens,
                           prompt_ids=prompts, seed=seeds)["ids"]
    return generate


def keras_hub_generation(directory, prompts, new_tokens):
    """keras-hub's `generate` of `new_tokens` after `prompts` (its inputs
    are the padded buffer and the prompt's padding mask)."""
    backbone = keras_hub.models.GPT2Backbone.from_preset(str(directory))
    causal_lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    causal_lm.compile(sampler=keras_hub.samplers.TopPSampler(p=TOP_P, seed=1))
    batch_size, prompt_length = prompts.shape
    length = prompt_length + new_tokens
    inputs = {"token_ids": np.pad(prompts, [[0, 0], [0, new_tokens]]),
              "padding_mask": np.arange(length)[None, :].repeat(batch_size, 0) < prompt_length}
    return lambda: causal_lm.generate(inputs, stop_token_ids=None)


def export_case(model, flags, folder):
    """`(export seconds, in-process seconds, prompt ids)` of one prompt at
    batch 1: the loaded signature against the same concrete function in
    this process, called in turn (`--export_rounds` rounds, the order
    alternating), medians. A call takes under a second and single calls
    vary by up to 1.7x on this CPU, so a few rounds do not settle a 1.1x
    goal."""
    data_dir = folder / "data"
    lm_data.main([f"--input_file={SHAKESPEARE}", f"--output_dir={data_dir}",
                  "--document_boundary=file", "--sequence_length=8", "--num_shards=1"])
    tokenizer = load_language_model_tokenizer(str(data_dir))
    signatures = LanguageModelSignatures(model, tokenizer, max_new_tokens=flags.new_tokens)
    functions = signatures.signatures()
    export = write_next_version(str(folder / "export"), functions,
                                {"tokenizer": tokenizer}, signatures.extra_files())
    serving = tf.saved_model.load(export).signatures["generate_with_options"]
    prompt = "ROMEO: what light through yonder window breaks"[:flags.prompt_length]
    inputs = dict(prompts=tf.constant([prompt]), temperature=tf.constant([1.0]),
                  top_k=tf.constant([0]), top_p=tf.constant([TOP_P]),
                  max_new_tokens=tf.constant([flags.new_tokens]),
                  seed=tf.constant([1], tf.int64), stop=tf.constant([""]))
    cases = {"export": lambda: serving(**inputs),
             "in-process": lambda: functions["generate_with_options"](**inputs)}
    times = {name: [] for name in cases}
    for function in cases.values():
        function()  # traces, allocates
    order = list(cases)
    for _ in range(flags.export_rounds):
        for name in order:
            start = time.perf_counter()
            cases[name]()
            times[name].append(time.perf_counter() - start)
        order.reverse()  # neither goes first every round
    _, lengths = signatures.prompt_ids(inputs["prompts"])
    return (float(np.median(times["export"])), float(np.median(times["in-process"])),
            int(lengths[0]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_layers", type=int, default=4)
    parser.add_argument("--hidden_dim", type=int, default=256)
    parser.add_argument("--num_heads", type=int, default=4)
    parser.add_argument("--vocabulary_size", type=int, default=68,
                        help="68: the character vocabulary of Tiny Shakespeare, which the "
                             "export case's tokenizer has.")
    parser.add_argument("--prompt_length", type=int, default=16)
    parser.add_argument("--new_tokens", type=int, default=256)
    parser.add_argument("--batch_sizes", default="1,16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--export_rounds", type=int, default=15,
                        help="Rounds of the export case (one call of each function a round).")
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: 2 layers of width 32, 16 new tokens, 1 repeat.")
    parser.add_argument("--output", default="benchmarks/results/lm_generation.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.num_layers, flags.hidden_dim, flags.num_heads = 2, 32, 2
        flags.new_tokens, flags.repeats, flags.export_rounds = 16, 1, 1
    batch_sizes = [int(size) for size in flags.batch_sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="lm_generation_"))
    config = checkpoint_config(flags)
    directory = write_checkpoint(folder / "gpt2", random_gpt2_tensors(config, scale=0.1),
                                 config)
    model = GPTCausalLM.from_huggingface(str(directory))
    rows, figures = [], []
    print(f"GPT {flags.num_layers} layers, width {flags.hidden_dim}, vocabulary "
          f"{flags.vocabulary_size}; {flags.new_tokens} new tokens after "
          f"{flags.prompt_length}, top-p {TOP_P}, XLA")
    print(f"{'case':<44} {'batch':>5} {'seconds':>9} {'new tokens/s':>13}")
    for batch_size in batch_sizes:
        prompts = np.random.default_rng(batch_size).integers(
            0, flags.vocabulary_size, (batch_size, flags.prompt_length)).astype("int32")
        cases = {
            "tfnlp, key/value cache": tfnlp_generation(model, prompts, flags.new_tokens),
            "tfnlp, prefix recomputed each step": tfnlp_generation(
                model, prompts, flags.new_tokens, cached=False),
            "keras-hub GPT2CausalLM.generate (TopPSampler)": keras_hub_generation(
                directory, prompts, flags.new_tokens),
        }
        rates = {}
        for case, function in cases.items():
            seconds = median_seconds(function, flags.repeats)
            rates[case] = batch_size * flags.new_tokens / seconds
            rows.append({"case": case, "batch_size": batch_size, "seconds": seconds,
                         "new_tokens_per_second": rates[case]})
            print(f"{case:<44} {batch_size:>5} {seconds:>9.3f} {rates[case]:>13.0f}")
        ours = rates["tfnlp, key/value cache"]
        figures.append(figure(f"top-p generation, batch {batch_size}", ours, "tokens/s",
                              reference="keras-hub GPT2CausalLM.generate",
                              reference_value=rates["keras-hub GPT2CausalLM.generate (TopPSampler)"],
                              goal=SPEED_GOAL))
        figures.append(figure(f"cached generation, batch {batch_size}", ours, "tokens/s",
                              reference="tfnlp recomputing the prefix",
                              reference_value=rates["tfnlp, prefix recomputed each step"]))
    exported, in_process, prompt_ids = export_case(model, flags, folder)
    rows.append({"case": "export generate_with_options", "batch_size": 1, "seconds": exported,
                 "reference_seconds": in_process, "prompt_ids": prompt_ids})
    print(f"{'export generate_with_options (text in/out)':<44} {1:>5} {exported:>9.3f}  "
          f"in-process: {in_process:.3f} s ({exported / in_process:.2f}x)")
    figures.append(figure("export generate signature time, batch 1", exported * 1000, "ms",
                          reference="the in-process Keras model",
                          reference_value=in_process * 1000, goal=EXPORT_GOAL,
                          higher_is_better=False))
    report = {"parameters": vars(flags), "results": rows, FIGURES_KEY: figures}
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()

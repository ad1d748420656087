"""Exactness of tfnlp's GPT-2 converter: `GPTCausalLM.from_huggingface`
against Hugging Face `transformers`' `GPT2LMHeadModel` on the same
checkpoint.

    make torch-env     # once: .venv-torch, with torch, transformers, safetensors
    python -m benchmarks.lm_transformers_equality [--checkpoint_dir=DIR]
        [--torch_python=PATH] [--sequence_length=32]

Without `--checkpoint_dir` it writes random GPT-2 checkpoints in Hugging
Face's layout (with numpy, `benchmarks/huggingface_gpt2.py`) into a
temporary directory, at three sizes: the GPT tests' config, 4 layers of
width 256 with 4 heads, and 6 layers of width 384 with 6 heads (GPT-2's
head size of 64), the last two with vocabularies of a few hundred. With
it, it checks that one directory (`config.json` + safetensors; nothing is
downloaded).

tfnlp computes the logits of a fixed batch of token ids in this process
(the project's environment, which has no torch). `GPT2LMHeadModel` computes
them in another Python, the one of `make torch-env` by default, running
`transformers_gpt2_logits.py` of this package (numpy, torch and
transformers only) on the same ids saved as .npy, so the project and its
tests never need torch. The batch holds full rows and right-padded rows (padding mask
for tfnlp, `attention_mask` for transformers). Both models number
positions from 0 whatever the mask, and under the causal mask a real token
of a right-padded row attends to real tokens only, so the real positions
of those rows are comparable; the padding positions are not compared.

For each checkpoint it reports, over the real positions, the largest
absolute difference between the two models' float32 logits (goal: at most
`TOLERANCE`) and how many greedy next tokens (each position's arg max)
agree (goal: all). Float32 results differ by rounding alone, and rounding
grows with the logits' size, so beside them it reports the largest
difference of each float32 model from `GPT2LMHeadModel` in float64: a
converter that put a weight in the wrong place is far from that reference,
while correct float32 computations are about as near to it as
transformers' own. Prints a table, writes JSON (`--output`, default
benchmarks/results/lm_transformers_equality.json) whose "figures" are
those two per checkpoint, and exits with status 1 if a goal is missed.

It is not part of `python -m benchmarks` (`benchmarks.suite`), which runs
without torch; hence a package of its own (see `__init__.py`).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from benchmarks.huggingface_gpt2 import CONFIG, random_gpt2_tensors, write_checkpoint
from tfnlp.models import GPTCausalLM

TOLERANCE = 1e-4
TORCH_PYTHON_VARIABLE = "TFNLP_TORCH_PYTHON"
DEFAULT_TORCH_PYTHON = ".venv-torch/bin/python"
REFERENCE_SCRIPT = "benchmarks/lm_transformers_equality/transformers_gpt2_logits.py"
REFERENCE = "transformers GPT2LMHeadModel"
PADDING_ID = 0
# Hugging Face's defaults for a config.json that leaves them out.
DEFAULT_VOCABULARY_SIZE = 50257
DEFAULT_POSITIONS = 1024


def random_checkpoint_configs():
    """Name -> Hugging Face GPT-2 config of the random checkpoints."""
    def sized(vocabulary_size, num_layers, hidden_dim, num_heads, positions):
        return {**CONFIG, "vocab_size": vocabulary_size, "n_layer": num_layers,
                "n_embd": hidden_dim, "n_head": num_heads, "n_positions": positions,
                "bos_token_id": vocabulary_size - 1, "eos_token_id": vocabulary_size - 1}

    return {
        "test config (2 layers, width 32)": CONFIG,
        "4 layers, width 256, 4 heads": sized(384, 4, 256, 4, 64),
        "6 layers, width 384, 6 heads": sized(512, 6, 384, 6, 64),
    }


def token_batch(vocabulary_size, length, seed=0):
    """A fixed batch of `(token_ids, padding_mask)`, `(4, length)`: two
    full rows and two right-padded ones (two thirds of the row, and a
    single token), padded with `PADDING_ID`."""
    generator = np.random.default_rng(seed)
    token_ids = generator.integers(0, vocabulary_size, (4, length)).astype("int32")
    lengths = np.array([length, length, max(1, 2 * length // 3), 1])
    padding_mask = np.arange(length)[None, :] < lengths[:, None]
    return np.where(padding_mask, token_ids, PADDING_ID).astype("int32"), padding_mask


def torch_python_path(flag):
    """The Python that runs the reference: `flag`, else the
    `TFNLP_TORCH_PYTHON` variable, else `.venv-torch/bin/python`.

    Raises:
        SystemExit: with how to make that Python, if it is not there.
    """
    path = flag or os.environ.get(TORCH_PYTHON_VARIABLE) or from_root(DEFAULT_TORCH_PYTHON)
    if not os.path.isfile(path):
        raise SystemExit(
            f"No Python at {path} to run {REFERENCE}. This check runs Hugging Face "
            "transformers with PyTorch in a separate environment, so that tfnlp does not "
            "depend on torch. Create it with `make torch-env` (it makes "
            f"{DEFAULT_TORCH_PYTHON}), or pass --torch_python=PATH (or set "
            f"{TORCH_PYTHON_VARIABLE}) to a Python that has torch, transformers and "
            "safetensors.")
    return path


def transformers_logits(torch_python, directory, token_ids, padding_mask, folder):
    """`GPT2LMHeadModel`'s logits of the batch in float32 and in float64,
    computed by `REFERENCE_SCRIPT` under `torch_python`; and the versions
    it reports.

    Raises:
        RuntimeError: with the end of its output, if the script fails.
    """
    paths = {name: str(folder / f"{name}.npy")
             for name in ("token_ids", "attention_mask", "logits", "logits_float64")}
    np.save(paths["token_ids"], token_ids)
    np.save(paths["attention_mask"], padding_mask.astype("int64"))
    command = [torch_python, from_root(REFERENCE_SCRIPT), f"--checkpoint_dir={directory}",
               f"--token_ids={paths['token_ids']}",
               f"--attention_mask={paths['attention_mask']}", f"--output={paths['logits']}",
               f"--float64_output={paths['logits_float64']}"]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment)
    if finished.returncode != 0:
        output = (finished.stdout + finished.stderr).strip().splitlines()
        raise RuntimeError(
            f"{REFERENCE_SCRIPT} failed under {torch_python} (exit status "
            f"{finished.returncode}) on {directory}; it needs torch, transformers and "
            "safetensors there (`make torch-env` installs them). The end of its output:\n"
            + "\n".join(output[-15:]))
    versions = json.loads(finished.stdout.strip().splitlines()[-1])
    return np.load(paths["logits"]), np.load(paths["logits_float64"]), versions


def comparison(ours, theirs, theirs_float64, padding_mask):
    """Over the real positions of `(batch, length, vocabulary)` logits:
    the largest absolute difference of tfnlp's from transformers' and the
    greedy agreement (both float32), and each one's largest difference
    from transformers' float64 logits."""
    ours, theirs, reference = (logits[padding_mask] for logits in
                               (ours, theirs, theirs_float64))

    def max_difference(first, second):
        return float(np.max(np.abs(first - second)))

    return {
        "positions": int(padding_mask.sum()),
        "max_abs_difference": max_difference(ours, theirs),
        "max_abs_logit": float(np.max(np.abs(theirs))),
        "greedy_agreements": int(np.sum(ours.argmax(-1) == theirs.argmax(-1))),
        "tfnlp_from_float64": max_difference(ours, reference),
        "transformers_from_float64": max_difference(theirs, reference),
    }


def check_checkpoint(name, directory, torch_python, sequence_length, folder):
    """One row of the table: both models' logits on `directory` compared."""
    model = GPTCausalLM.from_huggingface(str(directory))
    config = json.loads((Path(directory) / "config.json").read_text())
    length = min(sequence_length, config.get("n_positions", DEFAULT_POSITIONS))
    token_ids, padding_mask = token_batch(config.get("vocab_size", DEFAULT_VOCABULARY_SIZE),
                                          length)
    ours = np.asarray(model({"token_ids": token_ids, "padding_mask": padding_mask}), "float32")
    theirs, theirs_float64, versions = transformers_logits(
        torch_python, directory, token_ids, padding_mask, folder)
    return {"checkpoint": name, "directory": str(directory), "batch_size": len(token_ids),
            "sequence_length": length, "row_lengths": padding_mask.sum(1).tolist(),
            "reference_versions": versions,
            **comparison(ours, theirs, theirs_float64, padding_mask)}


def headline_figures(rows):
    """Per checkpoint: the largest logit difference against `TOLERANCE`
    (the goal, a ratio of at most 1), and the greedy next tokens that agree
    out of the real positions (the goal, all of them)."""
    figures = []
    for row in rows:
        figures.append(figure(f"max |logit difference| from {REFERENCE}, "
                              f"{row['checkpoint']}", row["max_abs_difference"], "logit",
                              reference="the tolerance",
                              reference_value=TOLERANCE, goal=1.0, higher_is_better=False))
        figures.append(figure(f"greedy next tokens equal to {REFERENCE}'s, "
                              f"{row['checkpoint']}", row["greedy_agreements"], "positions",
                              reference="real positions compared",
                              reference_value=row["positions"], goal=1.0))
    return figures


def print_table(rows):
    """The rows, differences in logits; the last two columns are each
    float32 model's largest difference from transformers in float64."""
    print(f"{'checkpoint':<34} {'length':>6} {'max |diff|':>11} {'greedy agree':>12} "
          f"{'max |logit|':>11} {'tfnlp-hf64':>10} {'hf32-hf64':>10}")
    for row in rows:
        agreement = f"{row['greedy_agreements']}/{row['positions']}"
        print(f"{row['checkpoint']:<34} {row['sequence_length']:>6} "
              f"{row['max_abs_difference']:>11.2e} {agreement:>12} "
              f"{row['max_abs_logit']:>11.2f} {row['tfnlp_from_float64']:>10.2e} "
              f"{row['transformers_from_float64']:>10.2e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint_dir",
                        help="A Hugging Face GPT-2 directory to check (config.json + "
                             "safetensors); default: random checkpoints of three sizes.")
    parser.add_argument("--torch_python",
                        help=f"The Python with torch and transformers (default: "
                             f"${TORCH_PYTHON_VARIABLE}, else {DEFAULT_TORCH_PYTHON}, "
                             "which `make torch-env` creates).")
    parser.add_argument("--sequence_length", type=int, default=32,
                        help="Token ids per row, at most the checkpoint's n_positions.")
    parser.add_argument("--scale", type=float, default=0.1,
                        help="The standard deviation of the random checkpoints' weights.")
    parser.add_argument("--output", default="benchmarks/results/lm_transformers_equality.json")
    flags = parser.parse_args(argv)
    torch_python = torch_python_path(flags.torch_python)
    folder = Path(tempfile.mkdtemp(prefix="lm_transformers_equality_"))
    if flags.checkpoint_dir:
        if not os.path.isdir(flags.checkpoint_dir):
            raise SystemExit(
                f"--checkpoint_dir={flags.checkpoint_dir} is not a directory. Expected a "
                "Hugging Face GPT-2 checkpoint directory (config.json + model.safetensors), "
                "such as GPT2LMHeadModel.save_pretrained writes; or leave the flag out to "
                "check random checkpoints.")
        checkpoints = {Path(flags.checkpoint_dir).name: Path(flags.checkpoint_dir)}
    else:
        checkpoints = {
            name: write_checkpoint(folder / f"gpt2_{index}",
                                   random_gpt2_tensors(config, scale=flags.scale), config)
            for index, (name, config) in enumerate(random_checkpoint_configs().items())}
    rows = [check_checkpoint(name, directory, torch_python, flags.sequence_length, folder)
            for name, directory in checkpoints.items()]
    print(f"tfnlp GPTCausalLM.from_huggingface against {REFERENCE} "
          f"({json.dumps(rows[0]['reference_versions'])}), float32, CPU")
    print_table(rows)
    figures = headline_figures(rows)
    report = {"parameters": vars(flags), "tolerance": TOLERANCE, "results": rows,
              FIGURES_KEY: figures,
              "machine": {"python": platform.python_version(), "platform": platform.platform(),
                          "cpus": os.cpu_count()}}
    write_report(report, flags.output)
    missed = [row["name"] for row in figures if not row["met"]]
    if missed:
        print("goals missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

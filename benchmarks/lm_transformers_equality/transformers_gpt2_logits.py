"""The logits of Hugging Face `transformers`' `GPT2LMHeadModel` on saved
token ids: the reference side of `benchmarks.lm_transformers_equality`.

    .venv-torch/bin/python benchmarks/lm_transformers_equality/transformers_gpt2_logits.py \\
        --checkpoint_dir=DIR --token_ids=ids.npy --attention_mask=mask.npy \\
        --output=logits.npy [--float64_output=logits64.npy]

It runs in the separate environment of `make torch-env`, the only one with
PyTorch, as a script file given by its path, and imports numpy, torch
and transformers only (no tfnlp module, whose dependencies that
environment lacks). The model is loaded from the local directory alone
(`local_files_only`: nothing is downloaded), in eval mode (no dropout);
its float32 logits are written as a `(batch, length, vocabulary)` array,
and, with `--float64_output`, those of the same model in float64 too: a
reference with little rounding error, against which both libraries'
float32 rounding can be measured. A JSON line on standard output says
which versions and attention implementation computed them.
"""

import argparse
import json
import sys

import numpy as np
import torch
import transformers


def load_model(checkpoint_dir):
    """`GPT2LMHeadModel` from the local directory, in eval mode."""
    model = transformers.GPT2LMHeadModel.from_pretrained(checkpoint_dir, local_files_only=True)
    return model.eval()


def gpt2_logits(model, token_ids, attention_mask, dtype):
    """The logits of `token_ids` (int `(batch, length)`) under
    `attention_mask` (1 = real token), the model cast to `dtype`."""
    model.to(dtype)
    with torch.no_grad():
        outputs = model(input_ids=torch.from_numpy(token_ids.astype(np.int64)),
                        attention_mask=torch.from_numpy(attention_mask.astype(np.int64)))
    return outputs.logits.numpy()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint_dir", required=True,
                        help="A Hugging Face GPT-2 directory: config.json + safetensors.")
    parser.add_argument("--token_ids", required=True, help="An int .npy (batch, length).")
    parser.add_argument("--attention_mask", required=True,
                        help="A .npy of the token ids' shape, 1 for real tokens, 0 for padding.")
    parser.add_argument("--output", required=True,
                        help="Where to write the float32 logits' .npy.")
    parser.add_argument("--float64_output",
                        help="Where to write the float64 model's logits' .npy, if anywhere.")
    flags = parser.parse_args(argv)
    model = load_model(flags.checkpoint_dir)
    token_ids, attention_mask = np.load(flags.token_ids), np.load(flags.attention_mask)
    np.save(flags.output, gpt2_logits(model, token_ids, attention_mask, torch.float32))
    if flags.float64_output:
        np.save(flags.float64_output,
                gpt2_logits(model, token_ids, attention_mask, torch.float64))
    print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                      "attention_implementation": getattr(
                          model.config, "_attn_implementation", None),
                      "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()

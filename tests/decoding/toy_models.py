"""Toy models for the decoding tests, with exact numpy log-probabilities.

`ToyModel` follows the step-function contract of `tfnlp.decoding` with
`keras.ops` only (so it also runs on JAX). Its next-token logits come from a
fixed random table indexed by the position, the previous token and the
token before it, plus a per-example bias vector held in the cache (as an
encoder output would be). The token before the previous one is read from a
cache leaf that records the token history, so a decoder that reorders the
cache wrongly computes wrong log-probabilities; a second leaf counts the
steps, and a count that disagrees with `index` corrupts the logits.
`ToyModel.log_probs` computes the same distribution in numpy from a prefix,
for the references in `tests/decoding/references.py`; `ToyModel.prompts`
makes right-padded prompts and `ToyModel.prefilled_cache` the cache a
prefill pass over their first positions would leave.
"""

import numpy as np
from keras import ops


def log_softmax(logits):
    logits = np.asarray(logits, dtype=np.float32)
    shifted = logits - logits.max()
    return (shifted - np.log(np.exp(shifted).sum())).astype(np.float32)


class ToyModel:
    """A second-order Markov model over a small vocabulary.

    Args:
        vocabulary_size: the number of tokens.
        max_length: the largest `index` the model accepts (exclusive).
        batch_size: the number of examples (rows of the bias).
        seed: numpy seed of the tables.
        end_id: the token `end_bias` is added to.
        end_bias: added to the end token's logit (more, shorter outputs).
        scale: standard deviation of the table's logits.
    """

    def __init__(self, vocabulary_size=5, max_length=6, batch_size=3, seed=0,
                 end_id=1, end_bias=0.0, scale=2.0):
        rng = np.random.default_rng(seed)
        self.vocabulary_size = vocabulary_size
        self.max_length = max_length
        # table[index, token before previous + 1 (0: none), previous token]
        self.table = rng.normal(
            scale=scale, size=(max_length, vocabulary_size + 1, vocabulary_size, vocabulary_size)
        ).astype(np.float32)
        self.table[..., end_id] += end_bias
        self.bias = rng.normal(size=(batch_size, vocabulary_size)).astype(np.float32)
        self.start_ids = rng.integers(0, vocabulary_size, batch_size).astype(np.int32)
        self.flat_table = self.table.reshape(-1, vocabulary_size)

    def initial_cache(self, examples=None):
        """The cache of the examples `examples` (default: all)."""
        bias = self.bias if examples is None else self.bias[examples]
        rows = bias.shape[0]
        return {
            "bias": bias,
            "history": np.full((rows, self.max_length + 1), -1, np.int32),
            "steps": np.zeros((rows,), np.int32),
        }

    def step_fn(self, token_ids, cache, index):
        history = cache["history"]
        before = ops.reshape(
            ops.take(history, ops.reshape(ops.maximum(index - 1, 0), (1,)), axis=1), (-1,)
        )
        before = ops.where(index > 0, before, -1)
        rows = (index * (self.vocabulary_size + 1) + before + 1) * self.vocabulary_size + token_ids
        logits = ops.take(self.flat_table, rows, axis=0) + cache["bias"]
        # A step counter out of step with `index` shows in the logits.
        wrong_count = ops.cast(cache["steps"] != index, "float32")[:, None]
        logits = logits + 100.0 * wrong_count * ops.one_hot(0, self.vocabulary_size)[None, :]
        # A select, not `ops.slice_update` (XlaDynamicUpdateSlice on TensorFlow,
        # not a stock op): the exported toy model must hold stock ops only.
        written = ops.arange(self.max_length + 1)[None, :] == index
        history = ops.where(written, ops.cast(token_ids, "int32")[:, None], history)
        return logits, {"bias": cache["bias"], "history": history, "steps": cache["steps"] + 1}

    def logits(self, example, prefix):
        """Next-token logits after `prefix` (start token or prompt first)."""
        index = len(prefix) - 1
        before = prefix[index - 1] if index > 0 else -1
        return self.table[index, before + 1, prefix[index]] + self.bias[example]

    def log_probs(self, example, prefix):
        """Next-token log-probabilities after `prefix` (start token or prompt first)."""
        return log_softmax(self.logits(example, prefix))

    def prompts(self, lengths, width=None, seed=0):
        """int32 `(batch, width)` random prompts of `lengths` tokens, padded on
        the right with random tokens too (the decoders must ignore them)."""
        lengths = np.asarray(lengths, np.int32)
        width = int(lengths.max()) if width is None else width
        rng = np.random.default_rng(seed)
        return rng.integers(0, self.vocabulary_size, (len(lengths), width)).astype(np.int32)

    def prefilled_cache(self, prompt_ids, first_index, examples=None):
        """The cache after feeding `prompt_ids[:, :first_index]` (a prefill pass)."""
        cache = self.initial_cache(examples)
        cache["history"][:, :first_index] = prompt_ids[:, :first_index]
        cache["steps"][:] = first_index
        return cache


class ConstantModel:
    """Every row and step has the same next-token distribution `probabilities`."""

    def __init__(self, probabilities):
        self.probabilities = np.asarray(probabilities, np.float64)
        self.logits = np.log(self.probabilities).astype(np.float32)

    def step_fn(self, token_ids, cache, index):
        rows = ops.shape(token_ids)[0]
        return ops.broadcast_to(self.logits[None, :], (rows, self.logits.shape[0])), cache


def numpy_outputs(result):
    return {name: np.asarray(ops.convert_to_numpy(value)) for name, value in result.items()}


def backend_cases():
    """Decoders and inputs computed on two backends by tests/decoding/test_compilation.py.

    Returns a list of `(name, decoder, model, max_length, first_index,
    inputs)`, `inputs` a dict of the decoder's tensor arguments (`cache`,
    `start_ids` or `prompt_ids` and `prompt_lengths`, `max_lengths`,
    `seed` for per-example seeds, and stop sequences).
    """
    from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling

    model = ToyModel(vocabulary_size=6, max_length=7, batch_size=3, seed=40, end_bias=0.5)
    max_lengths = np.array([7, 3, 5], np.int32)
    started = {"cache": model.initial_cache(), "start_ids": model.start_ids,
               "max_lengths": max_lengths}
    # Prompts of 3, 1 and 2 tokens, then up to 5 new ones: indices up to 6.
    prompt_lengths = np.array([3, 1, 2], np.int32)
    prompt_ids = model.prompts(prompt_lengths, seed=6)
    prompted = {"cache": model.initial_cache(), "prompt_ids": prompt_ids,
                "prompt_lengths": prompt_lengths, "max_lengths": np.array([5, 2, 4], np.int32)}
    seeds = np.array([[1, 0], [2, 0], [1 << 20, 3]], np.int32)
    # Stop sequences of 2, 0 and 1 tokens.
    stops = {"stop_sequence_ids": np.array([[4, 2], [0, 0], [3, 1]], np.int32),
             "stop_sequence_lengths": np.array([2, 0, 1], np.int32)}
    return [
        ("greedy", GreedySearch(min_length=1, no_repeat_ngram_size=2), model, 7, 0, started),
        ("beam_gnmt", BeamSearch(3, "gnmt", 0.6, num_return_sequences=2,
                                 no_repeat_ngram_size=2), model, 7, 0, started),
        ("beam_average", BeamSearch(2, "average", -0.5, num_return_sequences=2, min_length=2),
         model, 7, 0, dict(started, max_lengths=np.full((3,), 7, np.int32))),
        ("sampling_top_k_1", RandomSampling(top_k=1, seed=1), model, 7, 0, started),
        ("sampling", RandomSampling(top_p=0.9, top_k=4, seed=1, num_return_sequences=2),
         model, 7, 0, started),
        ("greedy_prompt", GreedySearch(min_length=2, no_repeat_ngram_size=2,
                                       repetition_penalty=1.3, suppressed_token_ids=(3,)),
         model, 5, 0, dict(prompted, **stops)),
        ("beam_prompt", BeamSearch(3, "gnmt", 0.6, num_return_sequences=2,
                                   repetition_penalty=1.2),
         model, 5, 1, dict(prompted, cache=model.prefilled_cache(prompt_ids, 1),
                           prompt_lengths=np.array([3, 2, 2], np.int32))),
        ("sampling_prompt", RandomSampling(top_p=0.9, top_k=4, num_return_sequences=2,
                                           no_repeat_ngram_size=3, repetition_penalty=1.2,
                                           suppressed_token_ids=(0, 5)),
         model, 5, 0, dict(prompted, seed=seeds, **stops)),
    ]


def run_backend_cases(compile_function, names=None):
    """{"NAME/ids": ..., ...} for the backend cases `names` (default: all);
    `compile_function` wraps `decode(inputs)` (e.g. `jax.jit`)."""
    outputs = {}
    for name, decoder, model, max_length, first_index, inputs in backend_cases():
        if names is not None and name not in names:
            continue

        def decode(inputs, decoder=decoder, model=model, max_length=max_length,
                   first_index=first_index):
            return decoder(model.step_fn, end_id=1, max_length=max_length,
                           first_index=first_index, **inputs)

        result = numpy_outputs(compile_function(decode)(inputs))
        for key, value in result.items():
            outputs[f"{name}/{key}"] = value
    return outputs

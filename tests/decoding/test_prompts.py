"""Prompts: forced tokens, bounds on new tokens, batches of mixed prompt lengths
and caches prefilled for the first positions, on every decoder."""

import numpy as np
import pytest

from tests.decoding import references
from tests.decoding.toy_models import ConstantModel, ToyModel, log_softmax, numpy_outputs
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling

END = 1
DECODERS = {
    "greedy": GreedySearch(min_length=1, no_repeat_ngram_size=3, repetition_penalty=1.2),
    "beam": BeamSearch(3, "gnmt", 0.6, num_return_sequences=2, repetition_penalty=1.2),
    "sampling": RandomSampling(top_k=4, top_p=0.95, num_return_sequences=2,
                               repetition_penalty=1.2),
}


def decode(decoder, model, prompt_ids, prompt_lengths, max_length, examples=None,
           max_lengths=None, first_index=0, cache=None, seeds=None, step_fn=None):
    """Decodes the prompts of `examples` (default: all); sampling gets the
    per-example `seeds` of those examples."""
    examples = list(range(len(prompt_ids))) if examples is None else examples
    options = {}
    if isinstance(decoder, RandomSampling):
        options["seed"] = seeds[examples]
    if max_lengths is not None:
        max_lengths = max_lengths[examples]
    cache = model.initial_cache(examples) if cache is None else cache
    result = decoder(step_fn or model.step_fn, cache, end_id=END, max_length=max_length,
                     max_lengths=max_lengths, prompt_ids=prompt_ids[examples],
                     prompt_lengths=np.asarray(prompt_lengths)[examples],
                     first_index=first_index, **options)
    return numpy_outputs(result)


def assert_same_rows(result, row, other, other_row):
    for name in ("ids", "lengths"):
        np.testing.assert_array_equal(result[name][row], other[name][other_row], err_msg=name)
    # The same row's log-softmax may differ in the last bit between batch sizes.
    np.testing.assert_allclose(result["scores"][row], other["scores"][other_row], rtol=1e-6)


@pytest.mark.parametrize("name", DECODERS)
def test_a_prompt_decodes_the_same_alone_and_in_a_batch_of_other_lengths(name):
    decoder = DECODERS[name]
    model = ToyModel(vocabulary_size=6, max_length=11, batch_size=4, seed=50, end_bias=-0.5)
    lengths = np.array([3, 1, 5, 2], np.int32)
    prompt_ids = model.prompts(lengths, seed=1)  # padded with random tokens
    max_lengths = np.array([6, 4, 2, 5], np.int32)
    seeds = np.array([[11, 0], [12, 0], [13, 1], [14, 2]], np.int32)
    batched = decode(decoder, model, prompt_ids, lengths, 6, max_lengths=max_lengths,
                     seeds=seeds)
    assert (batched["lengths"] > 2).any()  # rows run on after the short bound of row 2
    order = [2, 0, 3, 1]
    shuffled = decode(decoder, model, prompt_ids, lengths, 6, order, max_lengths, seeds=seeds)
    for position, example in enumerate(order):
        alone_ids = prompt_ids[:, : lengths[example]]  # no padding at all
        alone = decode(decoder, model, alone_ids, lengths, 6, [example], max_lengths,
                       seeds=seeds)
        assert_same_rows(alone, 0, batched, example)
        assert_same_rows(shuffled, position, batched, example)


@pytest.mark.parametrize("name", ["greedy", "beam"])
def test_prompted_decoding_equals_the_reference_with_the_prompt_as_prefix(name):
    decoder = DECODERS[name]
    model = ToyModel(vocabulary_size=6, max_length=10, batch_size=3, seed=51, end_bias=0.5)
    lengths = np.array([4, 1, 3], np.int32)
    prompt_ids = model.prompts(lengths, seed=2)
    result = decode(decoder, model, prompt_ids, lengths, 6)

    def log_probs(example):
        return lambda prefix: log_softmax(references.penalize_repetitions(
            model.logits(example, prefix), prefix, decoder.repetition_penalty))

    if name == "greedy":
        expected = [references.greedy_search(
            log_probs(b), list(prompt_ids[b, : lengths[b]]), END, 6, decoder.min_length,
            decoder.no_repeat_ngram_size) for b in range(3)]
    else:
        expected = [references.beam_search(
            log_probs(b), list(prompt_ids[b, : lengths[b]]), END, 6, decoder.beam_size,
            decoder.num_return_sequences, decoder.length_penalty, decoder.alpha)
            for b in range(3)]
    references.assert_result_matches(result, expected)


@pytest.mark.parametrize("name", DECODERS)
def test_forced_prompt_tokens_are_not_chosen_scored_returned_or_taken_for_the_end(name):
    # The prompt holds END twice and tokens the model finds improbable; the
    # generated tokens are the first columns, and the score is theirs alone.
    decoder = {"greedy": GreedySearch(), "beam": BeamSearch(2, "none", num_return_sequences=2),
               "sampling": RandomSampling(seed=3, num_return_sequences=2)}[name]
    model = ToyModel(vocabulary_size=5, max_length=9, batch_size=2, seed=52, end_bias=-1.0)
    prompt_ids = np.array([[0, END, END, 4, 2], [3, END, 0, 0, 0]], np.int32)
    lengths = np.array([5, 2], np.int32)
    seeds = np.array([[1, 0], [2, 0]], np.int32)
    result = decode(decoder, model, prompt_ids, lengths, 4, seeds=seeds)
    assert result["ids"].shape == (2, decoder.num_sequences, 4)
    for b in range(2):
        for rank in range(decoder.num_sequences):
            length = result["lengths"][b, rank]
            assert length >= 1
            tokens = result["ids"][b, rank, :length]
            assert not result["ids"][b, rank, length:].any()
            assert length == 4 or tokens[-1] == END
            prefix, log_prob = list(prompt_ids[b, : lengths[b]]), np.float32(0.0)
            for token in tokens:
                log_prob += model.log_probs(b, prefix)[token]
                prefix.append(int(token))
            np.testing.assert_allclose(result["scores"][b, rank], log_prob, rtol=1e-5)


@pytest.mark.parametrize("name", DECODERS)
def test_max_length_and_max_lengths_count_only_new_tokens(name):
    decoder = DECODERS[name]
    model = ToyModel(vocabulary_size=5, max_length=9, batch_size=3, seed=53, end_bias=-30.0)
    lengths = np.array([1, 6, 3], np.int32)
    prompt_ids = model.prompts(lengths, seed=3)
    seeds = np.array([[1, 0], [2, 0], [3, 0]], np.int32)
    result = decode(decoder, model, prompt_ids, lengths, 4, seeds=seeds)
    assert result["ids"].shape == (3, decoder.num_sequences, 4)
    assert (result["lengths"] == 4).all() and (result["ids"] != END).all()
    result = decode(decoder, model, prompt_ids, lengths, 4, max_lengths=np.array([2, 4, 1]),
                    seeds=seeds)
    np.testing.assert_array_equal(result["lengths"], [[2] * decoder.num_sequences,
                                                      [4] * decoder.num_sequences,
                                                      [1] * decoder.num_sequences])


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("first_index", [1, 2])
def test_first_index_with_a_prefilled_cache_gives_the_results_of_first_index_0(name, first_index):
    decoder = DECODERS[name]
    model = ToyModel(vocabulary_size=6, max_length=10, batch_size=3, seed=54, end_bias=-0.5)
    lengths = np.array([4, 3, 5], np.int32)
    prompt_ids = model.prompts(lengths, seed=4)
    seeds = np.array([[5, 0], [6, 0], [7, 0]], np.int32)
    fed = []

    def recording_step_fn(token_ids, cache, index):
        fed.append(int(index))
        return model.step_fn(token_ids, cache, index)

    expected = decode(decoder, model, prompt_ids, lengths, 5, seeds=seeds)
    prefilled = model.prefilled_cache(prompt_ids, first_index)
    result = decode(decoder, model, prompt_ids, lengths, 5, first_index=first_index,
                    cache=prefilled, seeds=seeds, step_fn=recording_step_fn)
    for key in ("ids", "lengths"):
        np.testing.assert_array_equal(result[key], expected[key], err_msg=key)
    np.testing.assert_allclose(result["scores"], expected["scores"], rtol=1e-6)
    assert fed[0] == first_index  # positions before it are never fed again
    # Without the prefill (the toy model then sees a step count that is not
    # `index`), the results differ: the prefilled cache is what is read.
    unfilled = decode(decoder, model, prompt_ids, lengths, 5, first_index=first_index,
                      seeds=seeds)
    assert (unfilled["ids"] != expected["ids"]).any()


@pytest.mark.parametrize("decoder", [GreedySearch(no_repeat_ngram_size=2),
                                     BeamSearch(2, "none", no_repeat_ngram_size=2),
                                     RandomSampling(top_k=1, seed=0, no_repeat_ngram_size=2)],
                         ids=["greedy", "beam", "sampling"])
def test_no_repeat_ngram_size_counts_the_prompt(decoder):
    # Token 2 is always the most probable; after a prompt ending in 2 the
    # bigram (2, 2) is blocked only where the prompt already holds it.
    model = ConstantModel([0.05, 0.05, 0.6, 0.3])
    prompt_ids = np.array([[2, 2, 0, 2], [3, 2, 0, 0]], np.int32)
    result = numpy_outputs(decoder(model.step_fn, None, end_id=END, max_length=1,
                                   prompt_ids=prompt_ids, prompt_lengths=[4, 2]))
    np.testing.assert_array_equal(result["ids"][:, 0, 0], [3, 2])

"""`suppressed_token_ids`: ids that no decoder generates, whatever the model
prefers (a tokenizer's padding and unknown ids)."""

import numpy as np
import pytest

from tests.decoding import references
from tests.decoding.toy_models import ConstantModel, ToyModel, numpy_outputs
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling
from tfnlp.decoding.constraints import next_token_log_probs

END = 1
SUPPRESSED = (0, 3)


def suppressing(log_probs, token_ids=SUPPRESSED):
    """`log_probs` with `token_ids` at -inf (the reference's constraint)."""
    def constrained(prefix):
        values = np.array(log_probs(prefix), np.float32)
        values[list(token_ids)] = -np.inf
        return values

    return constrained


def prompted_outputs(decoder, model, lengths, max_length=6):
    prompt_ids = model.prompts(lengths, seed=3)
    result = numpy_outputs(decoder(model.step_fn, model.initial_cache(), end_id=END,
                                   max_length=max_length, prompt_ids=prompt_ids,
                                   prompt_lengths=lengths))
    prompts = [list(prompt_ids[b, : lengths[b]]) for b in range(len(lengths))]
    return result, prompts


def generated_tokens(result):
    return {int(token) for b, row in enumerate(result["ids"]) for r, tokens in enumerate(row)
            for token in tokens[: result["lengths"][b, r]]}


def test_next_token_log_probs_forbids_exactly_the_suppressed_ids():
    logits = np.array([[0.5, 2.0, -1.0, 3.0, 0.0]], np.float32)
    sequences = np.zeros((1, 4), np.int32)
    plain = np.asarray(next_token_log_probs(logits, sequences, 0, END))
    # An id outside the vocabulary (9) is ignored.
    suppressed = np.asarray(next_token_log_probs(logits, sequences, 0, END,
                                                 suppressed_token_ids=(3, 0, 9)))
    assert np.isneginf(suppressed[0, [0, 3]]).all()
    np.testing.assert_array_equal(suppressed[0, [1, 2, 4]], plain[0, [1, 2, 4]])


@pytest.mark.parametrize("min_length", [0, 2])
def test_greedy_search_equals_the_reference_without_the_suppressed_ids(min_length):
    model = ToyModel(vocabulary_size=6, max_length=10, batch_size=3, seed=70, end_bias=-1.0)
    lengths = np.array([2, 1, 3], np.int32)
    decoder = GreedySearch(min_length=min_length, suppressed_token_ids=SUPPRESSED)
    result, prompts = prompted_outputs(decoder, model, lengths)
    plain, _ = prompted_outputs(GreedySearch(min_length=min_length), model, lengths)
    assert set(SUPPRESSED) & generated_tokens(plain)  # what is suppressed shows otherwise
    assert not set(SUPPRESSED) & generated_tokens(result)
    references.assert_result_matches(result, [
        references.greedy_search(suppressing(lambda prefix, b=b: model.log_probs(b, prefix)),
                                 prompts[b], END, 6, min_length)
        for b in range(3)])


def test_beam_search_equals_the_reference_without_the_suppressed_ids():
    model = ToyModel(vocabulary_size=6, max_length=10, batch_size=3, seed=71, end_bias=-0.5)
    lengths = np.array([1, 3, 2], np.int32)
    decoder = BeamSearch(3, "none", num_return_sequences=3, early_stopping=False,
                         suppressed_token_ids=SUPPRESSED)
    result, prompts = prompted_outputs(decoder, model, lengths)
    plain, _ = prompted_outputs(BeamSearch(3, "none", num_return_sequences=3), model, lengths)
    assert set(SUPPRESSED) & generated_tokens(plain)
    assert not set(SUPPRESSED) & generated_tokens(result)
    references.assert_result_matches(result, [
        references.beam_search(suppressing(lambda prefix, b=b: model.log_probs(b, prefix)),
                               prompts[b], END, 6, 3, 3)
        for b in range(3)])


@pytest.mark.parametrize("decoder, drawn", [
    (RandomSampling(seed=4, num_return_sequences=50, suppressed_token_ids=SUPPRESSED),
     {1, 2, 4, 5}),
    # The top 3 are taken among the allowed ids: 5, 1 and 2.
    (RandomSampling(top_k=3, top_p=0.9, seed=4, num_return_sequences=50,
                    suppressed_token_ids=SUPPRESSED), {1, 2, 5}),
], ids=["full_distribution", "top_k_top_p"])
def test_sampling_never_draws_a_suppressed_id(decoder, drawn):
    # 0 and 3 are the most probable tokens, and 4 the end.
    model = ConstantModel([0.3, 0.1, 0.1, 0.3, 0.05, 0.15])
    start_ids = np.zeros((2,), np.int32)
    result = numpy_outputs(decoder(model.step_fn, None, start_ids, end_id=4, max_length=5))
    plain = RandomSampling(**dict(decoder.get_config(), suppressed_token_ids=()))
    assert set(SUPPRESSED) <= generated_tokens(
        numpy_outputs(plain(model.step_fn, None, start_ids, end_id=4, max_length=5)))
    assert generated_tokens(result) == drawn
    # A sample's score is its log-probability under the model.
    first = result["ids"][0, 0, : result["lengths"][0, 0]]
    np.testing.assert_allclose(result["scores"][0, 0], np.log(model.probabilities[first]).sum(),
                               rtol=1e-5)

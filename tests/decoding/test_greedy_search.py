"""GreedySearch against a plain-numpy greedy search."""

import numpy as np
import pytest

from tests.decoding import references
from tests.decoding.toy_models import ConstantModel, ToyModel, numpy_outputs
from tfnlp.decoding import GreedySearch

END = 1


def decode(decoder, model, max_length, examples=None, max_lengths=None):
    examples = list(range(len(model.start_ids))) if examples is None else examples
    return numpy_outputs(decoder(model.step_fn, model.initial_cache(examples),
                                 model.start_ids[examples], END, max_length, max_lengths))


def reference(model, example, max_length, decoder):
    return references.greedy_search(
        lambda prefix: model.log_probs(example, prefix), int(model.start_ids[example]), END,
        max_length, decoder.min_length, decoder.no_repeat_ngram_size,
    )


@pytest.mark.parametrize("min_length, ngram_size", [(0, 0), (3, 0), (0, 2), (2, 1)])
def test_greedy_search_equals_the_numpy_greedy_search(min_length, ngram_size):
    model = ToyModel(vocabulary_size=6, max_length=8, batch_size=4, seed=20, end_bias=1.0)
    max_lengths = np.array([8, 2, 5, 7], np.int32)
    decoder = GreedySearch(min_length=min_length, no_repeat_ngram_size=ngram_size)
    result = decode(decoder, model, 8, max_lengths=max_lengths)
    assert result["ids"].shape == (4, 1, 8)
    assert result["ids"].dtype == np.int32 and result["lengths"].dtype == np.int32
    assert result["scores"].dtype == np.float32
    references.assert_result_matches(
        result, [reference(model, b, int(max_lengths[b]), decoder) for b in range(4)]
    )


def test_the_constraints_are_exercised():
    # Without them, the toy model above ends early and repeats bigrams.
    model = ToyModel(vocabulary_size=6, max_length=8, batch_size=4, seed=20, end_bias=1.0)
    assert (decode(GreedySearch(), model, 8)["lengths"] < 4).any()
    model = ToyModel(vocabulary_size=5, max_length=8, batch_size=4, seed=21, end_bias=-3.0)

    def bigram_repeats(result):
        repeats = 0
        for b, row in enumerate(result["ids"][:, 0]):
            tokens = [int(model.start_ids[b])] + list(row[: result["lengths"][b, 0]])
            bigrams = list(zip(tokens, tokens[1:]))
            repeats += len(bigrams) - len(set(bigrams))
        return repeats

    assert bigram_repeats(decode(GreedySearch(), model, 8)) > 0
    result = decode(GreedySearch(no_repeat_ngram_size=2), model, 8)
    assert bigram_repeats(result) == 0 and np.isfinite(result["scores"]).all()


def test_an_example_decodes_the_same_alone_and_in_a_batch():
    model = ToyModel(vocabulary_size=6, max_length=8, batch_size=4, seed=22)
    max_lengths = np.array([3, 8, 6, 1], np.int32)
    batched = decode(GreedySearch(), model, 8, max_lengths=max_lengths)
    for example in range(4):
        alone = decode(GreedySearch(), model, 8, [example], max_lengths[[example]])
        for name in ("ids", "lengths"):
            np.testing.assert_array_equal(alone[name][0], batched[name][example])
        np.testing.assert_allclose(alone["scores"][0], batched["scores"][example], rtol=1e-6)


def test_ties_go_to_the_lower_token():
    model = ConstantModel([0.1, 0.3, 0.3, 0.3])
    result = numpy_outputs(GreedySearch()(model.step_fn, None, np.array([0, 3], np.int32), 99, 3))
    np.testing.assert_array_equal(result["ids"], [[[1, 1, 1]]] * 2)

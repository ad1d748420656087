"""BeamSearch against exhaustive search and a plain-Python reference beam search."""

import numpy as np
import pytest

from tests.decoding import references
from tests.decoding.toy_models import ConstantModel, ToyModel, numpy_outputs
from tfnlp.decoding import BeamSearch

END = 1


def decode(decoder, model, max_length, examples=None, max_lengths=None, step_fn=None):
    examples = list(range(len(model.start_ids))) if examples is None else examples
    result = decoder(step_fn or model.step_fn, model.initial_cache(examples),
                     model.start_ids[examples], END, max_length, max_lengths)
    return numpy_outputs(result)


def reference(model, example, max_length, decoder):
    return references.beam_search(
        lambda prefix: model.log_probs(example, prefix), int(model.start_ids[example]), END,
        max_length, decoder.beam_size, decoder.num_return_sequences, decoder.length_penalty,
        decoder.alpha, decoder.min_length, decoder.no_repeat_ngram_size,
    )


PENALTIES = [("none", 0.0), ("gnmt", 0.6), ("gnmt", -0.7), ("average", 1.0), ("average", -0.5)]


@pytest.mark.parametrize("length_penalty, alpha", PENALTIES)
@pytest.mark.parametrize("early_stopping", [True, False])
def test_a_large_beam_is_exhaustive_search(length_penalty, alpha, early_stopping):
    # 4 tokens, 4 steps: at most 27 alive prefixes and 108 extensions, so a
    # beam of 54 keeps every one of them and must find the exact n-best.
    model = ToyModel(vocabulary_size=4, max_length=4, batch_size=2, seed=1, end_bias=0.5)
    decoder = BeamSearch(54, length_penalty, alpha, num_return_sequences=5,
                         early_stopping=early_stopping)
    result = decode(decoder, model, max_length=4)
    expected = [
        references.exhaustive_search(
            lambda prefix, example=example: model.log_probs(example, prefix),
            int(model.start_ids[example]), END, 4, 5, length_penalty, alpha, vocabulary_size=4)
        for example in range(2)
    ]
    references.assert_result_matches(result, expected)


@pytest.mark.parametrize("length_penalty, alpha", PENALTIES)
@pytest.mark.parametrize("beam_size, num_return", [(1, 1), (2, 2), (3, 2)])
def test_small_beams_equal_the_reference_beam_search(length_penalty, alpha, beam_size, num_return):
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=3, seed=2, end_bias=1.0)
    decoder = BeamSearch(beam_size, length_penalty, alpha, num_return_sequences=num_return)
    result = decode(decoder, model, max_length=6)
    references.assert_result_matches(
        result, [reference(model, example, 6, decoder) for example in range(3)]
    )
    # n-best: best first.
    assert np.all(np.diff(result["scores"], axis=1) <= 0)


@pytest.mark.parametrize("length_penalty, alpha", PENALTIES + [("gnmt", 2.0), ("average", -2.0)])
def test_early_stopping_gives_the_results_of_running_to_the_maximum_length(length_penalty, alpha):
    # Model A ends often (early stopping happens); on model B a bound
    # computed at the wrong length (e.g. the next length instead of the
    # maximum one for alpha > 0) stops too early and changes the results.
    for seed, end_bias, stops_early in ((3, 2.5, True), (4, 0.0, False)):
        model = ToyModel(vocabulary_size=6, max_length=10, batch_size=3, seed=seed,
                         end_bias=end_bias)
        calls = {}

        def counting_step_fn(token_ids, cache, index):
            calls[key] = calls.get(key, 0) + 1
            return model.step_fn(token_ids, cache, index)

        results = {}
        for key in (True, False):
            decoder = BeamSearch(3, length_penalty, alpha, num_return_sequences=2,
                                 early_stopping=key)
            results[key] = decode(decoder, model, 10, step_fn=counting_step_fn)
        for name in ("ids", "lengths", "scores"):
            np.testing.assert_array_equal(results[True][name], results[False][name],
                                          err_msg=name)
        references.assert_result_matches(
            results[True], [reference(model, example, 10, decoder) for example in range(3)]
        )
        assert calls[False] == 10
        # It did stop early, except where length ** 1 or ((5 + length) / 6) ** 2
        # at length 10 leaves the alive hypotheses a chance to the end.
        if stops_early and (length_penalty, alpha) not in {("average", 1.0), ("gnmt", 2.0)}:
            assert calls[True] < 10


def test_finished_scores_are_frozen_at_the_length_they_finished_with():
    model = ToyModel(vocabulary_size=6, max_length=8, batch_size=3, seed=5, end_bias=1.5)
    decoder = BeamSearch(3, "gnmt", 1.0, num_return_sequences=3, early_stopping=False)
    result = decode(decoder, model, 8)
    finished_early = 0
    for example in range(3):
        for rank in range(3):
            length = result["lengths"][example, rank]
            tokens = result["ids"][example, rank, :length]
            prefix, log_prob = [int(model.start_ids[example])], np.float32(0.0)
            for token in tokens:
                log_prob += model.log_probs(example, prefix)[token]
                prefix.append(int(token))
            expected = log_prob / references.penalty(length, "gnmt", 1.0)
            np.testing.assert_allclose(result["scores"][example, rank], expected, rtol=1e-5)
            finished_early += int(length < 8 and tokens[-1] == END)
    assert finished_early >= 3  # the decoding went on for 8 steps after they finished


def test_min_length():
    model = ToyModel(vocabulary_size=5, max_length=7, batch_size=3, seed=6, end_bias=3.0)
    unconstrained = decode(BeamSearch(2, num_return_sequences=2), model, 7)
    assert (unconstrained["lengths"] < 4).any()  # the constraint matters
    decoder = BeamSearch(2, num_return_sequences=2, min_length=3)
    result = decode(decoder, model, 7)
    assert (result["lengths"] >= 4).all()
    ids = result["ids"]
    assert not (ids[:, :, :3] == END).any()
    references.assert_result_matches(
        result, [reference(model, example, 7, decoder) for example in range(3)]
    )


def repeated_ngrams(sequence, size):
    ngrams = [tuple(sequence[i:i + size]) for i in range(len(sequence) - size + 1)]
    return len(ngrams) - len(set(ngrams))


@pytest.mark.parametrize("ngram_size", [1, 2, 3])
def test_no_repeat_ngram(ngram_size):
    # Few tokens and long outputs: without blocking, n-grams repeat.
    model = ToyModel(vocabulary_size=5, max_length=9, batch_size=3, seed=7, end_bias=-2.0)

    def count_repeats(result):
        return sum(
            repeated_ngrams([int(model.start_ids[b])] + list(result["ids"][b, r, :length]),
                            ngram_size)
            for b in range(3) for r in range(2)
            for length in [result["lengths"][b, r]] if length > 0
        )

    assert count_repeats(decode(BeamSearch(3, num_return_sequences=2), model, 9)) > 0
    decoder = BeamSearch(3, num_return_sequences=2, no_repeat_ngram_size=ngram_size)
    result = decode(decoder, model, 9)
    assert count_repeats(result) == 0
    references.assert_result_matches(
        result, [reference(model, example, 9, decoder) for example in range(3)]
    )


def test_per_example_max_lengths():
    model = ToyModel(vocabulary_size=6, max_length=7, batch_size=3, seed=8, end_bias=-1.0)
    # A bound past max_length is max_length.
    max_lengths = np.array([2, 4, 9], np.int32)
    decoder = BeamSearch(3, "gnmt", 0.6, num_return_sequences=2)
    result = decode(decoder, model, 7, max_lengths=max_lengths)
    bounds = np.minimum(max_lengths, 7)
    assert (result["lengths"] <= bounds[:, None]).all()
    assert (result["lengths"][0] == 2).all()  # no end within 2 tokens: truncated
    assert (result["lengths"][2] == 7).all()  # no end within 7 either
    references.assert_result_matches(
        result, [reference(model, example, int(bounds[example]), decoder) for example in range(3)],
    )


def test_no_finished_hypothesis_returns_the_alive_ones_with_their_scores():
    model = ToyModel(vocabulary_size=5, max_length=3, batch_size=2, seed=9, end_bias=-30.0)
    result = decode(BeamSearch(2, "none", num_return_sequences=2), model, 3)
    assert (result["lengths"] == 3).all() and not (result["ids"] == END).any()
    assert np.isfinite(result["scores"]).all()


def test_an_example_decodes_the_same_alone_and_in_any_batch():
    model = ToyModel(vocabulary_size=6, max_length=8, batch_size=4, seed=10, end_bias=-1.0)
    max_lengths = np.array([8, 3, 6, 5], np.int32)
    decoder = BeamSearch(3, "gnmt", 0.6, num_return_sequences=2)
    batched = decode(decoder, model, 8, max_lengths=max_lengths)
    assert (batched["lengths"] > 3).any()  # some outlive the shortest bound
    order = [2, 0, 3, 1]
    shuffled = decode(decoder, model, 8, examples=order, max_lengths=max_lengths[order])
    for position, example in enumerate(order):
        alone = decode(decoder, model, 8, examples=[example],
                       max_lengths=max_lengths[[example]])
        assert_same_outputs(alone, 0, batched, example)
        assert_same_outputs(shuffled, position, batched, example)


def assert_same_outputs(result, row, other, other_row):
    for name in ("ids", "lengths"):
        np.testing.assert_array_equal(result[name][row], other[name][other_row], err_msg=name)
    # TensorFlow's CPU kernels vectorise differently for different sizes:
    # the same row's log-softmax may differ in the last bit.
    np.testing.assert_allclose(result["scores"][row], other["scores"][other_row], rtol=1e-6)


def test_the_cache_is_reordered_with_the_beams():
    # The toy model writes each fed token into the cache leaf "history". When
    # a returned hypothesis' last token was produced, one of the example's
    # rows must have held exactly that hypothesis' prefix.
    model = ToyModel(vocabulary_size=6, max_length=7, batch_size=3, seed=11, end_bias=-0.5)
    returned_histories = {}

    def recording_step_fn(token_ids, cache, index):
        logits, cache = model.step_fn(token_ids, cache, index)
        returned_histories[int(index)] = np.asarray(cache["history"])
        return logits, cache

    beam = 3
    decoder = BeamSearch(beam, "gnmt", 0.6, num_return_sequences=beam)
    result = decode(decoder, model, 7, step_fn=recording_step_fn)
    for example in range(3):
        for rank in range(beam):
            length = result["lengths"][example, rank]
            prefix = [model.start_ids[example]] + list(result["ids"][example, rank, : length - 1])
            rows = returned_histories[length - 1][example * beam:(example + 1) * beam]
            assert any(list(row[:length]) == prefix and (row[length:] == -1).all()
                       for row in rows), (example, rank)
    references.assert_result_matches(
        result, [reference(model, example, 7, decoder) for example in range(3)]
    )


def test_ties_go_to_the_earlier_beam_then_the_lower_token():
    # Three equally likely tokens: every extension ties.
    model = ConstantModel([0.1, 0.3, 0.3, 0.3])
    decoder = BeamSearch(2, "none", num_return_sequences=2)
    result = numpy_outputs(decoder(model.step_fn, None, np.array([0, 3], np.int32), 99, 2))
    np.testing.assert_array_equal(result["ids"], [[[1, 1], [1, 2]]] * 2)
    expected = [references.beam_search(lambda prefix: model.logits, start, 99, 2, 2, 2)
                for start in (0, 3)]
    references.assert_result_matches(result, expected)

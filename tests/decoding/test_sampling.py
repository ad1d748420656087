"""RandomSampling: seeds (one per batch or per example), top-k, top-p and temperature."""

import numpy as np
import pytest

from tests.decoding.toy_models import ConstantModel, ToyModel, numpy_outputs
from tfnlp.decoding import GreedySearch, RandomSampling

END = 1
# A fixed next-token distribution over 8 tokens (no end token in range).
PROBABILITIES = np.array([0.05, 0.3, 0.02, 0.2, 0.15, 0.1, 0.08, 0.1])


def decode(decoder, model, max_length=6, **options):
    return numpy_outputs(decoder(model.step_fn, model.initial_cache(), model.start_ids, END,
                                 max_length, **options))


def sample_once(decoder, rows=20000):
    """One token for each of `rows` rows from PROBABILITIES, as frequencies."""
    model = ConstantModel(PROBABILITIES)
    result = decoder(model.step_fn, None, np.zeros((rows,), np.int32), end_id=99, max_length=1)
    tokens = np.asarray(result["ids"])[:, 0, 0]
    return np.bincount(tokens, minlength=len(PROBABILITIES)) / rows


def test_the_same_seed_gives_the_same_samples():
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=4, seed=30)
    first = decode(RandomSampling(seed=5, num_return_sequences=3), model)
    again = decode(RandomSampling(seed=5, num_return_sequences=3), model)
    other = decode(RandomSampling(seed=6, num_return_sequences=3), model)
    for name in ("ids", "lengths", "scores"):
        np.testing.assert_array_equal(first[name], again[name])
    assert (first["ids"] != other["ids"]).any()
    # A seed passed at call time overrides the decoder's.
    overridden = decode(RandomSampling(seed=1, num_return_sequences=3), model, seed=5)
    np.testing.assert_array_equal(first["ids"], overridden["ids"])
    # seed=None: a new seed at every call.
    unseeded = RandomSampling(num_return_sequences=3)
    assert (decode(unseeded, model)["ids"] != decode(unseeded, model)["ids"]).any()


def test_samples_are_sorted_and_scored_by_their_log_probability():
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=4, seed=31)
    result = decode(RandomSampling(seed=2, num_return_sequences=4), model)
    assert result["ids"].shape == (4, 4, 6)
    assert np.all(np.diff(result["scores"], axis=1) <= 0)
    for b in range(4):
        for r in range(4):
            length = result["lengths"][b, r]
            prefix, log_prob = [int(model.start_ids[b])], np.float32(0.0)
            for token in result["ids"][b, r, :length]:
                log_prob += model.log_probs(b, prefix)[token]
                prefix.append(int(token))
            assert not result["ids"][b, r, length:].any()
            np.testing.assert_allclose(result["scores"][b, r], log_prob, rtol=1e-5)


@pytest.mark.parametrize("decoder", [RandomSampling(top_k=1, seed=3),
                                     RandomSampling(top_p=1e-6, seed=3),
                                     RandomSampling(temperature=1e-4, seed=3)],
                         ids=["top_k=1", "top_p=1e-6", "temperature=1e-4"])
def test_sampling_reduces_to_greedy_search(decoder):
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=4, seed=32, end_bias=0.5)
    greedy = decode(GreedySearch(), model)
    sampled = decode(decoder, model)
    for name in ("ids", "lengths"):
        np.testing.assert_array_equal(sampled[name], greedy[name])
    np.testing.assert_allclose(sampled["scores"], greedy["scores"], rtol=1e-6)


def test_top_k_samples_only_the_k_most_probable_tokens():
    frequencies = sample_once(RandomSampling(top_k=3, seed=4))
    top = np.argsort(-PROBABILITIES, kind="stable")[:3]  # tokens 1, 3, 4
    outside = np.setdiff1d(np.arange(len(PROBABILITIES)), top)
    assert frequencies[outside].sum() == 0
    expected = PROBABILITIES[top] / PROBABILITIES[top].sum()
    np.testing.assert_allclose(frequencies[top], expected, atol=0.015)


@pytest.mark.parametrize("top_k", [len(PROBABILITIES), len(PROBABILITIES) + 1])
def test_top_k_of_the_vocabulary_size_or_more_samples_every_token(top_k):
    frequencies = sample_once(RandomSampling(top_k=top_k, seed=4))
    assert (frequencies > 0).all()
    np.testing.assert_allclose(frequencies, PROBABILITIES, atol=0.015)


# The sorted cumulative masses are 0.3, 0.5, 0.65, 0.75, 0.85, ...: each
# top_p lies at least 0.05 from them, where float32 rounding cannot move a
# token across the nucleus's edge.
@pytest.mark.parametrize("top_p", [0.4, 0.7, 0.9])
def test_top_p_samples_the_renormalised_nucleus(top_p):
    frequencies = sample_once(RandomSampling(top_p=top_p, seed=5))
    order = np.argsort(-PROBABILITIES, kind="stable")
    mass_before = np.cumsum(PROBABILITIES[order]) - PROBABILITIES[order]
    nucleus = order[mass_before < top_p]
    expected = np.zeros_like(PROBABILITIES)
    expected[nucleus] = PROBABILITIES[nucleus] / PROBABILITIES[nucleus].sum()
    assert len(nucleus) < len(PROBABILITIES)
    assert frequencies[expected == 0].sum() == 0
    np.testing.assert_allclose(frequencies, expected, atol=0.015)


def test_temperature_sharpens_and_flattens():
    cold = sample_once(RandomSampling(temperature=0.5, seed=6))
    hot = sample_once(RandomSampling(temperature=2.0, seed=6))
    for frequencies, temperature in ((cold, 0.5), (hot, 2.0)):
        expected = PROBABILITIES ** (1 / temperature)
        np.testing.assert_allclose(frequencies, expected / expected.sum(), atol=0.015)


def sample_per_row(settings, rows=20000):
    """Like `sample_once`, each half of the rows with its own call settings
    (`{name: (first half's, second half's)}`), as two frequency rows."""
    model = ConstantModel(PROBABILITIES)
    options = {name: np.repeat(np.array(values), rows // 2) for name, values in settings.items()}
    result = RandomSampling(seed=8)(model.step_fn, None, np.zeros((rows,), np.int32),
                                    end_id=99, max_length=1, **options)
    tokens = np.asarray(result["ids"])[:, 0, 0]
    return [np.bincount(half, minlength=len(PROBABILITIES)) / (rows // 2)
            for half in (tokens[: rows // 2], tokens[rows // 2:])]


def test_each_example_samples_with_its_own_temperature_top_k_and_top_p():
    top_k, everything = sample_per_row({"top_k": (3, 0)})
    top = np.argsort(-PROBABILITIES, kind="stable")[:3]
    assert top_k[np.setdiff1d(np.arange(len(PROBABILITIES)), top)].sum() == 0
    np.testing.assert_allclose(top_k[top], PROBABILITIES[top] / PROBABILITIES[top].sum(),
                               atol=0.02)
    np.testing.assert_allclose(everything, PROBABILITIES, atol=0.02)
    greedy, nucleus = sample_per_row({"top_p": (0.01, 0.5)})
    assert greedy[1] == 1.0
    assert nucleus[[0, 2, 5, 6, 7]].sum() == 0 and nucleus[[1, 3]].min() > 0.3
    cold, hot = sample_per_row({"temperature": (0.5, 2.0)})
    for frequencies, temperature in ((cold, 0.5), (hot, 2.0)):
        expected = PROBABILITIES ** (1 / temperature)
        np.testing.assert_allclose(frequencies, expected / expected.sum(), atol=0.02)


def test_per_example_settings_equal_to_the_decoder_s_draw_the_same_samples():
    model = ToyModel(vocabulary_size=9, max_length=6, batch_size=4, seed=12)
    decoder = RandomSampling(top_k=4, top_p=0.8, temperature=0.7, seed=3)
    settings = dict(temperature=np.full((4,), 0.7, np.float32), top_k=np.full((4,), 4),
                    top_p=np.full((4,), 0.8, np.float32))
    given = decode(decoder, model, **settings)
    default = decode(decoder, model)
    np.testing.assert_array_equal(given["ids"], default["ids"])
    np.testing.assert_allclose(given["scores"], default["scores"], rtol=1e-6)


def test_min_length():
    model = ToyModel(vocabulary_size=5, max_length=6, batch_size=4, seed=33, end_bias=3.0)
    unconstrained = decode(RandomSampling(seed=7, num_return_sequences=4), model)
    assert (unconstrained["lengths"] < 3).any()
    result = decode(RandomSampling(seed=7, num_return_sequences=4, min_length=2), model)
    # End is allowed from the third token on, and taken there.
    assert (result["lengths"] >= 3).all() and (result["lengths"] == 3).any()


def test_every_step_draws_new_random_numbers():
    # Same distribution at every step: a row should not repeat one token.
    model = ConstantModel(np.full(8, 1 / 8))
    result = RandomSampling(seed=8)(model.step_fn, None, np.zeros((500,), np.int32), 99, 6)
    ids = np.asarray(result["ids"])[:, 0]
    assert (ids == ids[:, :1]).all(axis=1).sum() < 3  # expected 500 / 8 ** 5
    for step in range(6):
        frequencies = np.bincount(ids[:, step], minlength=8) / 500
        np.testing.assert_allclose(frequencies, 1 / 8, atol=0.07)


def test_one_seed_per_example_samples_the_same_alone_in_any_batch_and_at_every_call():
    model = ToyModel(vocabulary_size=6, max_length=6, batch_size=4, seed=34)
    seeds = np.array([[3, 0], [3, 1], [4, 0], [1 << 30, 7]], np.int64)
    decoder = RandomSampling(top_k=5, top_p=0.95, num_return_sequences=3)
    batched = decode(decoder, model, seed=seeds)
    assert len({tuple(row.ravel()) for row in batched["ids"]}) == 4
    order = [3, 1, 0, 2]
    shuffled = numpy_outputs(decoder(model.step_fn, model.initial_cache(order),
                                     model.start_ids[order], END, 6, seed=seeds[order]))
    for position, example in enumerate(order):
        alone = numpy_outputs(decoder(model.step_fn, model.initial_cache([example]),
                                      model.start_ids[[example]], END, 6,
                                      seed=seeds[[example]]))
        for result, row in ((alone, 0), (shuffled, position)):
            np.testing.assert_array_equal(result["ids"][row], batched["ids"][example])
            np.testing.assert_array_equal(result["lengths"][row], batched["lengths"][example])
            np.testing.assert_allclose(result["scores"][row], batched["scores"][example],
                                       rtol=1e-6)
    again = decode(decoder, model, seed=seeds)
    np.testing.assert_array_equal(again["ids"], batched["ids"])
    # The three samples of an example differ (streams), as do the examples.
    assert all(len({tuple(sample) for sample in row}) > 1 for row in batched["ids"])


def test_equal_seeds_give_equal_samples_and_a_seed_word_changes_them():
    model = ConstantModel(np.full(8, 1 / 8))
    start_ids = np.zeros((3,), np.int32)

    def sample(seeds):
        result = RandomSampling()(model.step_fn, None, start_ids, 99, 8, seed=np.array(seeds))
        return np.asarray(result["ids"])[:, 0]

    ids = sample([[5, 0], [5, 0], [5, 1]])
    np.testing.assert_array_equal(ids[0], ids[1])
    assert (ids[0] != ids[2]).any() and (ids[0] != sample([[6, 0]] * 3)[0]).any()


def test_consecutive_draws_are_independent():
    # Two steps of a uniform distribution over 8 tokens: the 64 pairs of a
    # row's tokens must be uniform (chi-square, 63 degrees of freedom).
    model = ConstantModel(np.full(8, 1 / 8))
    rows = 6400
    result = RandomSampling(seed=9)(model.step_fn, None, np.zeros((rows,), np.int32), 99, 2)
    ids = np.asarray(result["ids"])[:, 0]
    counts = np.bincount(ids[:, 0] * 8 + ids[:, 1], minlength=64)
    chi_square = ((counts - rows / 64) ** 2 / (rows / 64)).sum()
    assert chi_square < 104  # the 0.999 quantile of chi-square(63)


def test_seed_shapes_are_explained():
    model = ConstantModel(np.full(4, 1 / 4))
    decoder = RandomSampling(seed=1)
    with pytest.raises(ValueError, match=r"of shape \(2,\) \(one seed for the batch\)"):
        decoder(model.step_fn, None, np.zeros((2,), np.int32), 99, 2, seed=np.zeros((3,)))
    with pytest.raises(ValueError, match=r"shape \(batch, 2\) = \(2, 2\); received"):
        decoder(model.step_fn, None, np.zeros((2,), np.int32), 99, 2,
                seed=np.zeros((3, 2), np.int32))


def filtered_distribution(temperature, top_k, top_p):
    """The documented rule, in numpy: divide the log-probabilities by the
    temperature, keep the top k (0: all), then the nucleus of the top k
    renormalised, and renormalise what remains."""
    tempered = PROBABILITIES ** (1 / temperature)
    tempered /= tempered.sum()
    order = np.argsort(-tempered, kind="stable")[:top_k or len(PROBABILITIES)]
    kept = tempered[order] / tempered[order].sum()
    nucleus = order[np.cumsum(kept) - kept < top_p]
    expected = np.zeros_like(PROBABILITIES)
    expected[nucleus] = tempered[nucleus] / tempered[nucleus].sum()
    return expected


# Each case keeps another set of tokens if one setting is applied out of
# its documented order (the nucleus before the temperature, or over the
# whole distribution rather than the top k); every top_p lies at least
# 0.01 from the cumulative masses it is compared with.
@pytest.mark.parametrize("temperature, top_k, top_p", [
    (1.0, 3, 0.6),   # nucleus over the top 3 renormalised: 2 tokens, not 3
    (0.5, 0, 0.6),   # nucleus of the sharpened distribution: 2 tokens, not 3
    (2.0, 5, 0.75),  # all three: 4 tokens, not 3
])
@pytest.mark.parametrize("per_example", [False, True], ids=["decoder", "per_example"])
def test_temperature_top_k_and_top_p_combine_in_their_documented_order(
        temperature, top_k, top_p, per_example):
    rows = 20000
    expected = filtered_distribution(temperature, top_k, top_p)
    if per_example:
        model = ConstantModel(PROBABILITIES)
        result = RandomSampling(seed=9)(
            model.step_fn, None, np.zeros((rows,), np.int32), end_id=99, max_length=1,
            temperature=np.full((rows,), temperature, np.float32),
            top_k=np.full((rows,), top_k, np.int32),
            top_p=np.full((rows,), top_p, np.float32))
        tokens = np.asarray(result["ids"])[:, 0, 0]
        frequencies = np.bincount(tokens, minlength=len(PROBABILITIES)) / rows
    else:
        frequencies = sample_once(RandomSampling(temperature=temperature, top_k=top_k,
                                                 top_p=top_p, seed=9), rows)
    assert frequencies[expected == 0].sum() == 0, (frequencies, expected)
    np.testing.assert_allclose(frequencies, expected, atol=0.015)

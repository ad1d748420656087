"""Stop sequences: a row stops right after its generated tokens end with its
own stop sequence, and only then."""

import numpy as np
import pytest

from tests.decoding.toy_models import ConstantModel, ToyModel, numpy_outputs
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling

END = 1
MAX_LENGTH = 8
PROMPT_LENGTHS = np.array([2, 1, 3, 2], np.int32)


def decode(decoder, model, prompt_ids, **options):
    return numpy_outputs(decoder(model.step_fn, model.initial_cache(), end_id=END,
                                 max_length=MAX_LENGTH, prompt_ids=prompt_ids,
                                 prompt_lengths=PROMPT_LENGTHS, **options))


def stopped(tokens, stop):
    """`tokens` up to the first place where they end with `stop` (all of
    them without a match or with an empty `stop`)."""
    tokens, stop = list(tokens), list(stop)
    if stop:
        for length in range(len(stop), len(tokens) + 1):
            if tokens[length - len(stop): length] == stop:
                return tokens[:length]
    return tokens


def log_probability(model, example, prompt, tokens):
    prefix, total = list(prompt), np.float32(0.0)
    for token in tokens:
        total += model.log_probs(example, prefix)[token]
        prefix.append(int(token))
    return total


def padded(stops, width):
    """`(ids, lengths)` of a list of stop sequences, right-padded with 4s."""
    ids = np.full((len(stops), width), 4, np.int32)
    for row, stop in enumerate(stops):
        ids[row, : len(stop)] = stop
    return ids, np.array([len(stop) for stop in stops], np.int32)


def sequences(result, example):
    """The generated tokens of every sequence of an example, as tuples."""
    return sorted(tuple(result["ids"][example, rank, : result["lengths"][example, rank]])
                  for rank in range(result["ids"].shape[1]))


def test_greedy_search_stops_right_after_each_example_s_stop_sequence():
    # No end token in sight: without stop sequences every row runs to the end.
    model = ToyModel(vocabulary_size=5, max_length=12, batch_size=4, seed=80, end_bias=-4.0)
    prompt_ids = model.prompts(PROMPT_LENGTHS, seed=8)
    full = decode(GreedySearch(), model, prompt_ids)
    assert (full["lengths"] == MAX_LENGTH).all()
    tokens = [list(full["ids"][b, 0]) for b in range(4)]
    # Stops of 2, 1 and 3 tokens taken from the outputs; row 3 has none,
    # though its padding is its first generated tokens.
    stops = [tokens[0][2:4], tokens[1][:1], tokens[2][3:6], []]
    ids, lengths = padded(stops, 3)
    ids[3] = tokens[3][:3]
    result = decode(GreedySearch(), model, prompt_ids, stop_sequence_ids=ids,
                    stop_sequence_lengths=lengths)
    for b in range(4):
        expected = stopped(tokens[b], stops[b])
        assert result["lengths"][b, 0] == len(expected), b
        np.testing.assert_array_equal(result["ids"][b, 0, : len(expected)], expected)
        assert not result["ids"][b, 0, len(expected):].any(), b
        prompt = prompt_ids[b, : PROMPT_LENGTHS[b]]
        np.testing.assert_allclose(result["scores"][b, 0],
                                   log_probability(model, b, prompt, expected), rtol=1e-5)
    assert result["lengths"][:, 0].tolist()[:3] < [MAX_LENGTH] * 3
    assert result["lengths"][1, 0] == 1 and result["lengths"][3, 0] == MAX_LENGTH


def test_a_stop_sequence_that_begins_in_the_prompt_does_not_stop():
    model = ConstantModel([0.1, 0.2, 0.7])  # always 2, never the end (99)
    prompt_ids = np.array([[0, 2], [0, 2], [0, 0]], np.int32)
    ids = np.array([[2, 2], [0, 2], [2, 2]], np.int32)
    result = numpy_outputs(GreedySearch()(
        model.step_fn, None, end_id=99, max_length=5, prompt_ids=prompt_ids,
        prompt_lengths=[2, 2, 1], stop_sequence_ids=ids))
    # Row 0 ends with "2, 2" after one token, but the first 2 is the
    # prompt's: it stops after two. Row 1's "0, 2" is never generated.
    assert result["lengths"][:, 0].tolist() == [2, 5, 2]
    np.testing.assert_array_equal(result["ids"][0, 0], [2, 2, 0, 0, 0])


def test_each_sample_stops_at_its_example_s_stop_sequence():
    # The random draws do not depend on the stop sequences, so each sample
    # is its unstopped self, cut after the first match.
    model = ToyModel(vocabulary_size=5, max_length=12, batch_size=4, seed=81, end_bias=-4.0)
    prompt_ids = model.prompts(PROMPT_LENGTHS, seed=9)
    decoder = RandomSampling(top_k=3, num_return_sequences=3)
    seed = np.array([[b, 7] for b in range(4)], np.int32)
    full = decode(decoder, model, prompt_ids, seed=seed)
    stops = [list(full["ids"][0, 0, 1:3]), list(full["ids"][1, 2, 4:5]),
             list(full["ids"][2, 1, :2]), []]
    ids, lengths = padded(stops, 2)
    result = decode(decoder, model, prompt_ids, seed=seed, stop_sequence_ids=ids,
                    stop_sequence_lengths=lengths)
    for b in range(4):
        expected = sorted(tuple(stopped(tokens, stops[b])) for tokens in sequences(full, b))
        assert sequences(result, b) == expected, b
    assert (result["lengths"][:3] < MAX_LENGTH).any(axis=1).all()


def test_beam_search_refuses_stop_sequences():
    model = ToyModel(vocabulary_size=5, max_length=6, batch_size=2)
    with pytest.raises(ValueError, match="BeamSearch does not take `stop_sequence_ids`.*"
                                         "Use `GreedySearch` or `RandomSampling`"):
        BeamSearch(2)(model.step_fn, model.initial_cache(), model.start_ids, END, 3,
                      stop_sequence_ids=np.ones((2, 1), np.int32))


def test_invalid_stop_sequences_are_explained():
    model = ToyModel(vocabulary_size=5, max_length=6, batch_size=2)

    def call(**arguments):
        return GreedySearch()(model.step_fn, model.initial_cache(), model.start_ids, END, 3,
                              **arguments)

    with pytest.raises(ValueError, match=r"`stop_sequence_ids` must have shape \(batch, width\) "
                                         r"with a static width.*received shape \(2,\)"):
        call(stop_sequence_ids=np.ones((2,), np.int32))
    with pytest.raises(ValueError, match="`stop_sequence_ids` has 3 rows but the prompts 2"):
        call(stop_sequence_ids=np.ones((3, 2), np.int32))
    with pytest.raises(ValueError, match=r"`stop_sequence_lengths` must have shape \(batch,\)"):
        call(stop_sequence_ids=np.ones((2, 2), np.int32), stop_sequence_lengths=[[1], [2]])
    with pytest.raises(ValueError, match=r"in \[0, width\] = \[0, 2\]; received \[3, 0\]"):
        call(stop_sequence_ids=np.ones((2, 2), np.int32), stop_sequence_lengths=[3, 0])
    with pytest.raises(ValueError, match="`stop_sequence_lengths` goes with `stop_sequence_ids`"):
        call(stop_sequence_lengths=[1, 1])
    # The edges: lengths 0 and the width.
    result = call(stop_sequence_ids=np.ones((2, 2), np.int32), stop_sequence_lengths=[0, 2])
    assert result["ids"].shape == (2, 1, 3)

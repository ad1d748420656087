"""The repetition penalty (CTRL) against a NumPy reference, in every decoder."""

import numpy as np
import pytest
from keras import ops

from tests.decoding import references
from tests.decoding.toy_models import ConstantModel, ToyModel, log_softmax, numpy_outputs
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling
from tfnlp.decoding.constraints import penalize_repetitions

END = 1


@pytest.mark.parametrize("penalty", [1.7, 0.6])
@pytest.mark.parametrize("index", [0, 3, 6])
def test_the_penalty_changes_exactly_the_logits_of_seen_tokens(penalty, index):
    rng = np.random.default_rng(60)
    vocabulary_size = 12
    logits = rng.normal(scale=3.0, size=(4, vocabulary_size)).astype(np.float32)
    logits[:, 0] = 0.0  # zero stays zero
    sequences = rng.integers(1, vocabulary_size, (4, 7)).astype(np.int32)
    sequences[1, 1] = 0  # seen, of logit 0
    sequences[0, 0] = vocabulary_size + 3  # a start token outside the vocabulary
    penalized = np.asarray(ops.convert_to_numpy(
        penalize_repetitions(logits, sequences, index, penalty)))
    changed_rows = 0
    for row in range(4):
        prefix = [int(token) for token in sequences[row, : index + 1]]
        expected = references.penalize_repetitions(logits[row], prefix, penalty)
        np.testing.assert_array_equal(penalized[row], expected)
        seen = np.isin(np.arange(vocabulary_size), prefix)
        changed = penalized[row] != logits[row]
        assert not changed[~seen].any()  # unseen tokens keep their logits
        nonzero = seen & (logits[row] != 0)
        assert changed[nonzero].all()
        # A penalty above 1 lowers every seen logit, below 1 raises it.
        direction = np.sign(penalized[row] - logits[row])[nonzero]
        assert (direction == (-1 if penalty > 1 else 1)).all()
        changed_rows += int(changed.any())
    assert changed_rows >= 3  # (row 0 at index 0 holds only an out-of-vocabulary id)


def reference(decoder, model, example, prompt, max_length, penalty):
    def log_probs(prefix):
        return log_softmax(references.penalize_repetitions(
            model.logits(example, prefix), prefix, penalty))
    if isinstance(decoder, BeamSearch):
        return references.beam_search(log_probs, prompt, END, max_length, decoder.beam_size,
                                      decoder.num_return_sequences)
    return references.greedy_search(log_probs, prompt, END, max_length)


@pytest.mark.parametrize("decoder", [
    GreedySearch(repetition_penalty=2.0),
    RandomSampling(top_k=1, seed=0, repetition_penalty=2.0),
    BeamSearch(2, "none", num_return_sequences=2, repetition_penalty=2.0, early_stopping=False),
], ids=["greedy", "sampling_top_k_1", "beam"])
def test_every_decoder_penalises_the_prompt_and_generated_tokens(decoder):
    # Few tokens, long outputs, no end: repetitions are frequent, and the
    # penalty changes which tokens are chosen.
    model = ToyModel(vocabulary_size=5, max_length=10, batch_size=3, seed=61, end_bias=-4.0)
    lengths = np.array([3, 1, 4], np.int32)
    prompt_ids = model.prompts(lengths, seed=5)
    result = numpy_outputs(decoder(model.step_fn, model.initial_cache(), end_id=END,
                                   max_length=6, prompt_ids=prompt_ids,
                                   prompt_lengths=lengths))
    expected = [reference(decoder, model, b, list(prompt_ids[b, : lengths[b]]), 6, 2.0)
                for b in range(3)]
    unpenalized = [reference(decoder, model, b, list(prompt_ids[b, : lengths[b]]), 6, 1.0)
                   for b in range(3)]
    assert [e[0][1] for e in expected] != [u[0][1] for u in unpenalized]
    references.assert_result_matches(result, expected)


def test_a_penalty_above_one_breaks_a_loop_on_the_most_probable_token():
    model = ConstantModel([0.05, 0.05, 0.5, 0.4])  # negative logits only
    loop = numpy_outputs(GreedySearch()(model.step_fn, None, np.zeros((1,), np.int32), END, 4))
    np.testing.assert_array_equal(loop["ids"][0, 0], [2, 2, 2, 2])
    # log 0.5 * 1.5 < log 0.4: once seen, 2 falls below 3, then both are seen.
    penalized = numpy_outputs(GreedySearch(repetition_penalty=1.5)(
        model.step_fn, None, np.zeros((1,), np.int32), END, 4))
    np.testing.assert_array_equal(penalized["ids"][0, 0], [2, 3, 2, 2])

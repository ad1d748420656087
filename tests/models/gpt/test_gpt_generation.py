"""GPTCausalLM.generate: prompts continued through tfnlp.decoding, against
greedy choices of full forward passes and against each prompt alone."""

import numpy as np
import pytest
import tensorflow as tf

from tests.layer_test_helpers import to_numpy
from tests.models.gpt.test_gpt_causal_lm import VOCABULARY, sharp_model
from tfnlp.decoding import BeamSearch, GreedySearch
from tfnlp.models.gpt.gpt_causal_lm import prefill_length

# Prompts of 4, 6 and 5 tokens, right-padded with 0 to 6.
PROMPTS = [[5, 9, 2, 30], [11, 3, 8, 8, 21, 7], [6, 14, 2, 9, 13]]
PROMPT_LENGTHS = np.array([len(prompt) for prompt in PROMPTS], "int32")


def padded_prompts():
    ids = np.zeros((len(PROMPTS), max(PROMPT_LENGTHS)), "int32")
    for row, prompt in enumerate(PROMPTS):
        ids[row, :len(prompt)] = prompt
    return ids


def greedy_by_full_passes(model, prompt, count):
    """`count` greedy tokens after `prompt`, each from a full forward pass
    over everything so far (no cache)."""
    sequence = list(prompt)
    for _ in range(count):
        sequence.append(int(np.argmax(to_numpy(model(np.array([sequence])))[0, -1])))
    return sequence[len(prompt):]


def test_greedy_generation_continues_each_prompt_as_full_passes_would():
    model = sharp_model()
    result = model.generate(padded_prompts(), PROMPT_LENGTHS, GreedySearch(), max_new_tokens=6)
    ids = to_numpy(result["ids"])[:, 0]
    assert ids.shape == (3, 6)
    expected = [greedy_by_full_passes(model, prompt, 6) for prompt in PROMPTS]
    np.testing.assert_array_equal(ids, expected)
    # The rows continue differently, so a row read at another's length shows.
    assert len({tuple(row) for row in expected}) == 3
    np.testing.assert_array_equal(to_numpy(result["lengths"])[:, 0], [6, 6, 6])


def test_a_prompt_decodes_alone_as_in_a_batch_with_beam_search():
    model = sharp_model()
    decoder = BeamSearch(beam_size=3)
    together = model.generate(padded_prompts(), PROMPT_LENGTHS, decoder, max_new_tokens=5)
    for row, prompt in enumerate(PROMPTS):
        alone = model.generate(np.array([prompt]), None, decoder, max_new_tokens=5)
        np.testing.assert_array_equal(to_numpy(together["ids"])[row], to_numpy(alone["ids"])[0])
        np.testing.assert_allclose(to_numpy(together["scores"])[row],
                                   to_numpy(alone["scores"])[0], atol=1e-4)


def test_generation_under_xla_equals_eager_generation():
    model = sharp_model()
    eager = model.generate(padded_prompts(), PROMPT_LENGTHS, GreedySearch(), max_new_tokens=6)

    @tf.function(jit_compile=True)
    def generate(prompt_ids, prompt_lengths):
        # prompt_lengths are symbolic here: nothing is prefilled.
        return model.generate(prompt_ids, prompt_lengths, GreedySearch(), max_new_tokens=6)

    compiled = generate(tf.constant(padded_prompts()), tf.constant(PROMPT_LENGTHS))
    np.testing.assert_array_equal(to_numpy(compiled["ids"]), to_numpy(eager["ids"]))


def test_the_end_token_ends_a_sequence():
    model = sharp_model()
    free = to_numpy(model.generate(padded_prompts(), PROMPT_LENGTHS, GreedySearch(), 6)["ids"])
    end = int(free[0, 0, 2])  # the third token the first prompt generates
    model.end_token_id = end
    result = model.generate(padded_prompts(), PROMPT_LENGTHS, GreedySearch(), 6)
    ids, lengths = to_numpy(result["ids"])[:, 0], to_numpy(result["lengths"])[:, 0]
    first_end = list(free[0, 0]).index(end)
    assert lengths[0] == first_end + 1 and ids[0, first_end] == end
    assert (ids[0, first_end + 1:] == 0).all()
    # Without an end token, no id of the vocabulary ends a sequence.
    assert sharp_model().generation_end_id == VOCABULARY


def test_the_prefill_covers_what_every_prompt_shares():
    assert prefill_length(PROMPT_LENGTHS, 6) == 3
    assert prefill_length(None, 6) == 5
    assert prefill_length(np.array([0, 4]), 6) == 0


def test_generation_up_to_the_position_table_and_one_more_refused():
    model = sharp_model()  # max_sequence_length 32
    prompts = np.ones((1, 20), "int32")
    assert to_numpy(model.generate(prompts, None, GreedySearch(), 13)["ids"]).shape == (1, 1, 13)
    with pytest.raises(ValueError, match=r"the cache length \(prompt_length \+ max_new_tokens "
                                         r"- 1\)=33 is longer than the model's "
                                         r"max_sequence_length=32"):
        model.generate(prompts, None, GreedySearch(), 14)

"""Configs, lookup by name, argument checks and the length penalties."""

import keras
import numpy as np
import pytest

from tests.decoding.toy_models import ToyModel
from tfnlp import decoding
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling

# Every argument other than its default, so a setting that is dropped or
# replaced by its default on the way shows.
ARGUMENTS = {
    GreedySearch: dict(min_length=2, no_repeat_ngram_size=3, repetition_penalty=1.3,
                       suppressed_token_ids=(0, 3)),
    BeamSearch: dict(beam_size=5, length_penalty="average", alpha=-0.5, num_return_sequences=3,
                     min_length=1, no_repeat_ngram_size=2, early_stopping=False,
                     repetition_penalty=0.8, suppressed_token_ids=(2,)),
    RandomSampling: dict(top_k=10, top_p=0.8, temperature=0.7, seed=3, num_return_sequences=2,
                         min_length=1, no_repeat_ngram_size=4, repetition_penalty=1.5,
                         suppressed_token_ids=(4, 1)),
}
DECODERS = [cls(**arguments) for cls, arguments in ARGUMENTS.items()]


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: type(d).__name__)
def test_config_round_trip(decoder):
    config = decoder.get_config()
    assert config == ARGUMENTS[type(decoder)]
    for name, value in config.items():
        assert getattr(decoder, name) == value
    rebuilt = type(decoder).from_config(config)
    assert type(rebuilt) is type(decoder) and rebuilt.get_config() == config
    revived = decoding.deserialize(decoding.serialize(decoder))
    assert type(revived) is type(decoder) and revived.get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(decoder))
    assert type(revived) is type(decoder) and revived.get_config() == config
    assert decoding.get(decoding.serialize(decoder)).get_config() == config
    assert decoding.get(decoder) is decoder


def test_get_by_name():
    assert type(decoding.get("greedy")) is GreedySearch
    assert type(decoding.get("beam_search")) is BeamSearch
    assert type(decoding.get("sampling")) is RandomSampling
    assert decoding.get(None) is None
    with pytest.raises(ValueError, match="Unknown decoder 'nucleus'"):
        decoding.get("nucleus")


def test_num_sequences():
    assert [d.num_sequences for d in DECODERS] == [1, 3, 2]


@pytest.mark.parametrize("make, message", [
    (lambda: BeamSearch(length_penalty="wu"), "`length_penalty` must be one of"),
    (lambda: BeamSearch(beam_size=2, num_return_sequences=3), "Raise `beam_size`"),
    (lambda: BeamSearch(beam_size=0), "`beam_size` must be"),
    (lambda: BeamSearch(beam_size=2, num_return_sequences=0), "between 1 and `beam_size`"),
    (lambda: GreedySearch(min_length=-1), "`min_length` must be"),
    (lambda: GreedySearch(no_repeat_ngram_size=-1), "`no_repeat_ngram_size` must be"),
    (lambda: RandomSampling(top_p=0.0), r"`top_p` must be a number in \(0, 1\]"),
    (lambda: RandomSampling(top_p=1.01), r"`top_p` must be a number in \(0, 1\]"),
    (lambda: RandomSampling(top_k=-1), "`top_k` must be"),
    (lambda: RandomSampling(temperature=0.0), "use `GreedySearch`"),
    (lambda: RandomSampling(seed=-1), "`seed` must be"),
    (lambda: RandomSampling(num_return_sequences=0), "`num_return_sequences` must be"),
    (lambda: GreedySearch(repetition_penalty=0.0), "`repetition_penalty` must be a number > 0"),
    (lambda: BeamSearch(repetition_penalty=-1.2), "`repetition_penalty` must be a number > 0"),
    (lambda: RandomSampling(repetition_penalty=True), "`repetition_penalty` must be a number"),
    (lambda: RandomSampling(no_repeat_ngram_size=-1), "`no_repeat_ngram_size` must be"),
    (lambda: GreedySearch(suppressed_token_ids=[0, -1]), r"received \[0, -1\], with -1"),
    (lambda: BeamSearch(suppressed_token_ids=[1.0]), "`suppressed_token_ids` must be a list"),
    (lambda: RandomSampling(suppressed_token_ids=3), "`suppressed_token_ids` must be a list"),
    (lambda: GreedySearch(suppressed_token_ids="<unk>"), "must be a list of token ids"),
])
def test_invalid_arguments_are_explained(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_arguments_at_the_edges_of_their_ranges_are_accepted():
    # The last accepted value at each edge that
    # test_invalid_arguments_are_explained steps past.
    assert BeamSearch(beam_size=1).num_sequences == 1
    assert BeamSearch().beam_size == 4  # the documented default
    assert BeamSearch(beam_size=3, num_return_sequences=3).num_sequences == 3
    assert GreedySearch(min_length=0, no_repeat_ngram_size=0).min_length == 0
    sampling = RandomSampling(top_k=0, top_p=1.0, seed=0, min_length=0)
    assert (sampling.top_k, sampling.top_p, sampling.seed) == (0, 1.0, 0)
    assert RandomSampling(top_p=1e-6, temperature=1e-6).top_p == 1e-6
    assert GreedySearch(repetition_penalty=1e-6).repetition_penalty == 1e-6
    assert [d().repetition_penalty for d in ARGUMENTS] == [1.0, 1.0, 1.0]  # off by default
    assert [d().suppressed_token_ids for d in ARGUMENTS] == [(), (), ()]
    assert GreedySearch(suppressed_token_ids=np.array([0, 2])).suppressed_token_ids == (0, 2)


def test_invalid_calls_are_explained():
    model = ToyModel(vocabulary_size=5, max_length=4, batch_size=2)
    decoder = GreedySearch()
    cache = model.initial_cache()
    with pytest.raises(ValueError, match="`max_length` must be a Python int >= 1"):
        decoder(model.step_fn, cache, model.start_ids, 1, 0)
    with pytest.raises(ValueError, match="`end_id` must be a non-negative Python int"):
        decoder(model.step_fn, cache, model.start_ids, -1, 3)
    assert decoder(model.step_fn, cache, model.start_ids, 0, 3)["ids"].shape[0] == 2  # the edge
    with pytest.raises(ValueError, match=r"`start_ids` must have shape \(batch,\)"):
        decoder(model.step_fn, cache, model.start_ids[:, None], 1, 3)
    with pytest.raises(ValueError, match="the cache leaf at cache\\['bias'\\] has shape"):
        decoder(model.step_fn, dict(cache, bias=cache["bias"][:1]), model.start_ids, 1, 3)

    def growing_step_fn(token_ids, cache, index):
        logits, cache = model.step_fn(token_ids, cache, index)
        return logits, dict(cache, bias=keras.ops.concatenate([cache["bias"]] * 2, axis=1))

    with pytest.raises(ValueError, match="Keep the cache at a fixed size"):
        decoder(growing_step_fn, cache, model.start_ids, 1, 3)


def test_length_penalties():
    lengths = np.array([1, 4, 9])
    np.testing.assert_allclose(decoding.length_penalty(lengths, "gnmt", 0.6),
                               ((5 + lengths) / 6) ** 0.6, rtol=1e-6)
    np.testing.assert_allclose(decoding.length_penalty(lengths, "average", -0.5),
                               lengths ** -0.5, rtol=1e-6)
    np.testing.assert_allclose(decoding.length_penalty(lengths, "none", 2.0), 1.0)
    assert decoding.LENGTH_PENALTIES == ("gnmt", "average", "none")


def test_invalid_prompts_are_explained():
    model = ToyModel(vocabulary_size=5, max_length=6, batch_size=2)
    decoder = GreedySearch()
    cache = model.initial_cache()
    prompts = np.array([[2, 3, 4], [1, 0, 0]], np.int32)

    def call(cache=cache, **arguments):
        arguments = dict(dict(end_id=1, max_length=3, prompt_ids=prompts), **arguments)
        return decoder(model.step_fn, cache, **arguments)

    with pytest.raises(ValueError, match="Pass either `start_ids`.*not both"):
        call(start_ids=model.start_ids)
    with pytest.raises(ValueError, match="Pass either `start_ids`.*not neither"):
        call(prompt_ids=None)
    with pytest.raises(ValueError, match="`prompt_lengths` goes with `prompt_ids`"):
        decoder(model.step_fn, cache, model.start_ids, 1, 3, prompt_lengths=[1, 1])
    with pytest.raises(ValueError, match=r"`prompt_ids` must have shape \(batch, prompt_length\)"):
        call(prompt_ids=prompts[:, 0])
    with pytest.raises(ValueError, match=r"`prompt_lengths` must have shape \(batch,\)"):
        call(prompt_lengths=[[3], [1]])
    with pytest.raises(ValueError, match=r"must be in \[first_index \+ 1, prompt_length\] = "
                                         r"\[1, 3\]; received \[3, 0\]"):
        call(prompt_lengths=[3, 0])
    with pytest.raises(ValueError, match=r"= \[1, 3\]; received \[4, 1\]"):
        call(prompt_lengths=[4, 1])
    with pytest.raises(ValueError, match=r"= \[2, 3\]; received \[3, 1\]"):
        call(prompt_lengths=[3, 1], first_index=1)
    with pytest.raises(ValueError, match=r"`first_index` \(3\) must be below the prompt length"):
        call(first_index=3)
    with pytest.raises(ValueError, match="`first_index` must be a Python int >= 0"):
        call(first_index=-1)
    with pytest.raises(ValueError, match=r"`first_index` \(1\) must be below the prompt length "
                                         r"\(1\)"):
        decoder(model.step_fn, cache, model.start_ids, 1, 3, first_index=1)
    # The edges: a prompt of one token, prefilled up to every prompt's last token.
    assert call(prompt_lengths=[1, 3])["ids"].shape == (2, 1, 3)
    assert call(prompt_lengths=[2, 3], first_index=1,
                cache=model.prefilled_cache(prompts, 1))["ids"].shape == (2, 1, 3)

"""tfnlp.text.augmentation: Tang et al.'s transfer-set augmentation, checked
by properties over drawn sentences and settings, and by counts over many
draws with fixed seeds."""

import collections
import json
import subprocess
import sys

import hypothesis
import pytest
from hypothesis import strategies as st

from tfnlp.text.augmentation import AugmentationStatistics, TransferSetAugmenter, count_words

PROPERTY_SETTINGS = hypothesis.settings(
    max_examples=60, deadline=None, derandomize=True, database=None)

WORD = st.sampled_from(["the", "a", "film", "is", "good", "bad", "very", "Film", "é", "x y"])
SENTENCE = st.lists(WORD, min_size=0, max_size=12)
SENTENCES = st.lists(SENTENCE, min_size=1, max_size=6)
PROBABILITY = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0])


def settings_strategy():
    return st.fixed_dictionaries({
        "mask_probability": st.sampled_from([0.0, 0.1, 0.5]),
        "swap_probability": st.sampled_from([0.0, 0.1, 0.5]),
        "ngram_probability": PROBABILITY,
        "samples_per_sentence": st.integers(1, 12),
        "seed": st.integers(0, 2**40),
    })


def is_contiguous_part(part, sentence):
    return any(list(sentence[start:start + len(part)]) == part
               for start in range(len(sentence) - len(part) + 1))


@PROPERTY_SETTINGS
@hypothesis.given(sentences=SENTENCES, options=settings_strategy())
def test_samples_are_new_distinct_and_counted(sentences, options):
    augmenter = TransferSetAugmenter.from_sentences(sentences, **options)
    for sentence in sentences:
        samples = augmenter.augment(sentence)
        assert sentence not in samples
        assert len({tuple(sample) for sample in samples}) == len(samples)
        assert len(samples) <= options["samples_per_sentence"]
        assert all(sample and all(isinstance(word, str) for word in sample)
                   for sample in samples)
    statistics = augmenter.statistics
    nonempty = sum(1 for sentence in sentences if sentence)
    assert statistics.sentences == len(sentences)
    assert statistics.candidates == nonempty * options["samples_per_sentence"]
    assert statistics.candidates == (statistics.emitted + statistics.dropped_duplicates
                                     + statistics.dropped_excluded)
    assert statistics.dropped_excluded == 0


@PROPERTY_SETTINGS
@hypothesis.given(sentences=SENTENCES, options=settings_strategy(), data=st.data())
def test_excluded_sentences_are_dropped_and_only_they(sentences, options, data):
    free = TransferSetAugmenter.from_sentences(sentences, **options)
    produced = [free.augment(sentence) for sentence in sentences]
    everything = sorted({tuple(sample) for samples in produced for sample in samples})
    excluded = set(data.draw(st.lists(st.sampled_from(everything), unique=True))
                   if everything else [])
    excluded |= {tuple(sentence) for sentence in data.draw(st.lists(SENTENCE, max_size=3))}
    # Strings are split at whitespace; lists are taken as they are.
    given = [" ".join(sentence) if " " not in "".join(sentence) and data.draw(st.booleans())
             else list(sentence) for sentence in excluded]
    guarded = TransferSetAugmenter.from_sentences(
        sentences, excluded_sentences=given, **options)
    for sentence, samples in zip(sentences, produced):
        kept = guarded.augment(sentence)
        assert not any(tuple(sample) in excluded for sample in kept)
        assert kept == [sample for sample in samples if tuple(sample) not in excluded]
    dropped = sum(tuple(sample) in excluded for samples in produced for sample in samples)
    assert guarded.statistics.dropped_excluded == dropped
    assert guarded.statistics.emitted == free.statistics.emitted - dropped
    assert guarded.statistics.dropped_duplicates == free.statistics.dropped_duplicates


@PROPERTY_SETTINGS
@hypothesis.given(sentences=SENTENCES, options=settings_strategy(), data=st.data())
def test_the_same_seed_gives_the_same_samples_in_any_order(sentences, options, data):
    order = data.draw(st.permutations(range(len(sentences))))
    forward = TransferSetAugmenter.from_sentences(sentences, **options)
    shuffled = TransferSetAugmenter.from_sentences(
        [sentences[index] for index in order], **options)
    expected = [forward.augment(sentence) for sentence in sentences]
    got = {index: shuffled.augment(sentences[index]) for index in order}
    assert [got[index] for index in range(len(sentences))] == expected
    # Augmenting a sentence again, after others, gives the same samples.
    assert [forward.augment(sentence) for sentence in reversed(sentences)] == expected[::-1]


@PROPERTY_SETTINGS
@hypothesis.given(sentence=st.lists(WORD, min_size=1, max_size=30),
                  samples=st.integers(1, 30), seed=st.integers(0, 2**32))
def test_ngrams_are_contiguous_and_one_to_five_words_long(sentence, samples, seed):
    augmenter = TransferSetAugmenter(
        count_words([sentence]), mask_probability=0.0, swap_probability=0.0,
        ngram_probability=1.0, samples_per_sentence=samples, seed=seed)
    for sample in augmenter.augment(sentence):
        assert 1 <= len(sample) <= min(5, len(sentence))
        assert is_contiguous_part(sample, sentence)


@PROPERTY_SETTINGS
@hypothesis.given(sentence=st.lists(WORD, min_size=1, max_size=30),
                  mask=PROBABILITY, ngram=PROBABILITY, seed=st.integers(0, 2**32))
def test_masking_only_masks_and_cuts(sentence, mask, ngram, seed):
    augmenter = TransferSetAugmenter(
        count_words([sentence]), mask_probability=mask, swap_probability=0.0,
        ngram_probability=ngram, samples_per_sentence=10, seed=seed)
    for sample in augmenter.augment(sentence):
        if mask == 0.0:
            assert "[MASK]" not in sample
        # Every word is the original's, or masked, within a contiguous part.
        assert any(
            all(word in (original, "[MASK]")
                for word, original in zip(sample, sentence[start:start + len(sample)]))
            for start in range(len(sentence) - len(sample) + 1))
        if ngram == 0.0:
            assert len(sample) == len(sentence)


def test_sample_counts_follow_the_probabilities():
    sentences = [[f"w{index}_{position}" for position in range(40)] for index in range(10)]
    for probability in (0.05, 0.1, 0.3, 0.6):
        augmenter = TransferSetAugmenter.from_sentences(
            sentences, mask_probability=probability, swap_probability=0.0,
            ngram_probability=0.0, samples_per_sentence=20, seed=7)
        words = [word for sentence in sentences for sample in augmenter.augment(sentence)
                 for word in sample]
        assert len(words) == 40 * 20 * 10 - 40 * augmenter.statistics.dropped_duplicates
        masked = words.count("[MASK]") / len(words)
        # Dropping unmasked duplicates of the original biases this up a
        # little; the binomial spread over 8,000 words is under 0.006.
        assert abs(masked - probability) < 0.025, (probability, masked)

    augmenter = TransferSetAugmenter.from_sentences(
        sentences, mask_probability=0.0, swap_probability=0.0,
        ngram_probability=0.25, samples_per_sentence=200, seed=7)
    lengths = collections.Counter(
        len(sample) for sample in augmenter.augment(sentences[0]))
    # Three quarters of the candidates keep all 40 words, duplicates of the
    # original; a quarter are n-grams, n uniform in 1..5.
    assert set(lengths) == {1, 2, 3, 4, 5}
    assert all(count > 3 for count in lengths.values())
    assert augmenter.statistics.dropped_duplicates > 120


def test_masking_everything_or_nothing():
    augmenter = TransferSetAugmenter(
        {"a": 1}, mask_probability=1.0, swap_probability=0.0, ngram_probability=0.0,
        samples_per_sentence=5)
    assert augmenter.augment(["a", "b", "c"]) == [["[MASK]"] * 3]
    assert augmenter.statistics == AugmentationStatistics(
        sentences=1, candidates=5, emitted=1, dropped_duplicates=4, dropped_excluded=0)
    unchanged = TransferSetAugmenter(
        {"a": 1}, mask_probability=0.0, swap_probability=0.0, ngram_probability=0.0,
        samples_per_sentence=5)
    assert unchanged.augment(["a", "b"]) == []
    assert unchanged.statistics.dropped_duplicates == 5
    assert unchanged.augment([]) == [] and unchanged.statistics.candidates == 5


def test_random_swaps_draw_other_words_by_frequency():
    counts = {"common": 80, "rare": 20, "once": 0, "[MASK]": 1000}
    augmenter = TransferSetAugmenter(
        counts, mask_probability=0.0, swap_probability=1.0, ngram_probability=0.0,
        samples_per_sentence=1, seed=11)
    drawn = collections.Counter()
    for index in range(2000):
        sample, = augmenter.augment(["common", "rare", f"new{index}"])
        assert sample[:2] == ["rare", "common"]
        drawn[sample[2]] += 1
    assert set(drawn) == {"common", "rare"}
    assert abs(drawn["common"] / 2000 - 0.8) < 0.04


@PROPERTY_SETTINGS
@hypothesis.given(sentence=st.lists(WORD, min_size=1, max_size=15), seed=st.integers(0, 2**32),
                  swap=st.sampled_from([0.5, 1.0]))
def test_part_of_speech_swaps_stay_within_the_tag(sentence, seed, swap):
    tags = {"the": "DET", "a": "DET", "film": "NOUN", "Film": "NOUN", "good": "ADJ",
            "bad": "ADJ", "very": "ADV", "x y": "NOUN"}  # "is" and "é" have none.
    augmenter = TransferSetAugmenter(
        count_words([list(tags), sentence]), mask_probability=0.0, swap_probability=swap,
        ngram_probability=0.0, samples_per_sentence=10, swap="part_of_speech",
        part_of_speech=tags, seed=seed)
    for sample in augmenter.augment(sentence):
        for word, original in zip(sample, sentence):
            if original not in tags or original == "very":
                # Untagged, or the only word of its tag: never swapped.
                assert word == original
            elif swap == 1.0:
                assert word != original and tags[word] == tags[original]
            else:
                assert tags[word] == tags[original]


def test_a_different_seed_gives_other_samples():
    sentence = "the film is very good but far too long".split()
    first = TransferSetAugmenter.from_sentences([sentence], seed=0).augment(sentence)
    second = TransferSetAugmenter.from_sentences([sentence], seed=1).augment(sentence)
    assert first != second and len(first) > 10


def test_samples_do_not_depend_on_pythons_hash_seed():
    program = (
        "import json\n"
        "from tfnlp.text.augmentation import TransferSetAugmenter\n"
        "sentences = [s.split() for s in ['the film is good', 'a bad film', 'very very bad']]\n"
        "augmenter = TransferSetAugmenter.from_sentences(\n"
        "    sentences, samples_per_sentence=8, swap='part_of_speech',\n"
        "    part_of_speech={'good': 'ADJ', 'bad': 'ADJ', 'film': 'NOUN', 'the': 'DET',\n"
        "                    'a': 'DET'}, seed=5)\n"
        "print(json.dumps([augmenter.augment(s) for s in sentences]))\n")
    outputs = []
    for hash_seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": hash_seed, "PATH": ""})
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1] and any(outputs[0])


def test_bad_arguments_say_what_to_pass():
    counts = {"a": 1}
    with pytest.raises(ValueError, match="mask_probability is 1.5; expected a probability"):
        TransferSetAugmenter(counts, mask_probability=1.5)
    with pytest.raises(ValueError, match="at most 1"):
        TransferSetAugmenter(counts, mask_probability=0.6, swap_probability=0.6)
    with pytest.raises(ValueError, match="Unknown swap 'pos'"):
        TransferSetAugmenter(counts, swap="pos")
    with pytest.raises(ValueError, match="part_of_speech mapping"):
        TransferSetAugmenter(counts, swap="part_of_speech")
    with pytest.raises(ValueError, match="part_of_speech mapping"):
        TransferSetAugmenter(counts, part_of_speech={"a": "DET"})
    with pytest.raises(ValueError, match="samples_per_sentence is 0"):
        TransferSetAugmenter(counts, samples_per_sentence=0)
    with pytest.raises(ValueError, match="count -1"):
        TransferSetAugmenter({"a": -1})
    with pytest.raises(ValueError, match="single string"):
        TransferSetAugmenter(counts).augment("the film")
    with pytest.raises(ValueError, match="single string"):
        count_words(["the film"])


def test_transfer_set_puts_each_original_before_its_samples():
    sentences = [["a", "good", "film"], ["bad"]]
    augmenter = TransferSetAugmenter.from_sentences(sentences, samples_per_sentence=5, seed=2)
    transfer = augmenter.transfer_set(sentences)
    first = augmenter.augment(sentences[0])
    assert transfer[:1 + len(first)] == [sentences[0]] + first
    assert transfer[1 + len(first)] == ["bad"]
    assert augmenter.transfer_set(sentences, include_originals=False) == [
        sample for sentence in sentences for sample in augmenter.augment(sentence)]


def test_exported_from_tfnlp_text():
    import tfnlp.text

    assert tfnlp.text.TransferSetAugmenter is TransferSetAugmenter
    assert tfnlp.text.count_words is count_words


@pytest.mark.parametrize("swap", ["random", "part_of_speech"])
def test_masking_swapping_and_ngrams_together_follow_their_probabilities(swap):
    # Every setting non-neutral at once: a word is masked below 0.2, swapped
    # in [0.2, 0.5) and kept above; a candidate is then cut with chance 0.4.
    sentences = [[f"w{index}_{position}" for position in range(40)] for index in range(20)]
    tags = {word: position % 2 for sentence in sentences
            for position, word in enumerate(sentence)}
    augmenter = TransferSetAugmenter.from_sentences(
        sentences, mask_probability=0.2, swap_probability=0.3, ngram_probability=0.4,
        samples_per_sentence=30, seed=5, swap=swap,
        part_of_speech=tags if swap == "part_of_speech" else None)
    outcomes = collections.Counter()
    uncut = 0
    for sentence in sentences:
        for sample in augmenter.augment(sentence):
            if len(sample) < len(sentence):
                continue
            uncut += 1
            for word, original in zip(sample, sentence):
                if word == "[MASK]":
                    outcomes["masked"] += 1
                elif word != original:
                    assert swap == "random" or tags[word] == tags[original]
                    outcomes["swapped"] += 1
                else:
                    outcomes["kept"] += 1
    words = sum(outcomes.values())
    # About 14,400 words: the binomial spread of each share is under 0.005.
    for outcome, expected in (("masked", 0.2), ("swapped", 0.3), ("kept", 0.5)):
        assert abs(outcomes[outcome] / words - expected) < 0.02, (outcome, outcomes)
    cut = 1 - uncut / augmenter.statistics.candidates
    assert abs(cut - 0.4) < 0.04, cut


def test_an_ngram_longer_than_the_sentence_keeps_the_whole_sentence():
    # n is uniform in 1..5 and a 3-word sentence is kept whole for n >= 3,
    # so 3/5 of the candidates are the sentence itself (duplicates), not
    # 1/3 as with n uniform in 1..3; a 1-gram starts anywhere, uniformly.
    sentences = [[f"a{index}", f"b{index}", f"c{index}"] for index in range(3000)]
    augmenter = TransferSetAugmenter.from_sentences(
        sentences, mask_probability=0.0, swap_probability=0.0, ngram_probability=1.0,
        samples_per_sentence=1, seed=2)
    samples = [sample for sentence in sentences for sample in augmenter.augment(sentence)]
    assert abs(augmenter.statistics.dropped_duplicates / 3000 - 0.6) < 0.03
    lengths = collections.Counter(len(sample) for sample in samples)
    assert set(lengths) == {1, 2}
    assert abs(lengths[1] / 3000 - 0.2) < 0.03 and abs(lengths[2] / 3000 - 0.2) < 0.03
    starts = collections.Counter(sample[0][0] for sample in samples if len(sample) == 1)
    assert all(abs(starts[letter] / lengths[1] - 1 / 3) < 0.06 for letter in "abc")

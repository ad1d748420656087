"""The transfer-set augmentation of Tang et al. (2019), for distillation.

To distil a fine-tuned BERT teacher into a small student, Tang et al. label
a transfer set with the teacher's logits: the training sentences and, made
from each of them, up to `n_iter` synthetic sentences (their section 3.2).
A synthetic sentence is made by walking the words: with probability
`p_mask` a word becomes `[MASK]`, with probability `p_pos` it is replaced by
another word of the same part of speech drawn from the training words'
unigram distribution; then, with probability `p_ng`, only a random n-gram
of the result is kept, n uniform in 1..5. Duplicates are discarded.

`TransferSetAugmenter` does that for tokenized sentences (lists of words),
and refuses to emit any sentence of a given exclusion set (the dev or test
sentences, which must not leak into what the teacher labels for the
student). `count_words` gives the word counts it is built from.

There is no part-of-speech tagger here (tfnlp has no tagger dependency and
taggers' models are downloads), so the swap draws either from all words
(`swap="random"`) or from the words a given word-to-tag mapping puts in
the replaced word's tag (`swap="part_of_speech"`). A mapping gives a word
one tag whatever its context, where the paper tags each occurrence.
"""

import bisect
import collections
import dataclasses
import hashlib
import json
import random

SWAP_MODES = ("random", "part_of_speech")


def _sentence_words(sentence, what="sentence"):
    """The words of `sentence` as a tuple, checked."""
    if isinstance(sentence, (str, bytes)):
        raise ValueError(
            f"The {what} {sentence[:60]!r} is a single string; expected a list of "
            "words. Tokenize it first (e.g. sentence.split()).")
    words = tuple(sentence)
    for word in words:
        if not isinstance(word, str):
            raise ValueError(
                f"The {what} {list(words)[:10]!r} holds {word!r}; expected words as "
                "str. Decode or convert the words first.")
    return words


def count_words(sentences):
    """The word counts of tokenized sentences: the augmenter's vocabulary.

    Args:
        sentences: an iterable of sentences, each a list of words (str).

    Returns:
        A `collections.Counter` from word to how many times it occurs.

    Raises:
        ValueError: a sentence is a single string rather than a list of
            words.

    Example:

    >>> count_words([["the", "cat", "sat"], ["the", "dog"]]).most_common(2)
    [('the', 2), ('cat', 1)]

    References:
        - [Tang et al., 2019](https://arxiv.org/abs/1903.12136)
    """
    counts = collections.Counter()
    for sentence in sentences:
        counts.update(_sentence_words(sentence))
    return counts


@dataclasses.dataclass
class AugmentationStatistics:
    """What an augmenter did with the candidates it drew.

    `candidates == emitted + dropped_duplicates + dropped_excluded`.

    Args:
        sentences: how many sentences were augmented.
        candidates: how many synthetic sentences were drawn
            (`samples_per_sentence` for each non-empty sentence).
        emitted: how many were returned.
        dropped_duplicates: how many were dropped for equalling their
            original sentence or an earlier candidate of it.
        dropped_excluded: how many were dropped for being in the exclusion
            set (and not duplicates).

    Example:

    >>> statistics = AugmentationStatistics()
    >>> statistics.candidates
    0

    References:
        - [Tang et al., 2019](https://arxiv.org/abs/1903.12136)
    """

    sentences: int = 0
    candidates: int = 0
    emitted: int = 0
    dropped_duplicates: int = 0
    dropped_excluded: int = 0


class _WeightedWords:
    """Words drawn in proportion to their counts, any one word left out."""

    def __init__(self, counts):
        self.words = []
        self.cumulative = []
        self.starts = {}
        self.weights = {}
        total = 0
        for word, count in counts:
            self.words.append(word)
            self.starts[word] = total
            self.weights[word] = count
            total += count
            self.cumulative.append(total)
        self.total = total

    def draw_other_than(self, word, generator):
        """A word other than `word`, by count; `word` where there is none."""
        weight = self.weights.get(word, 0)
        remaining = self.total - weight
        if remaining <= 0:
            return word
        point = generator.randrange(remaining)
        if weight and point >= self.starts[word]:
            point += weight
        return self.words[bisect.bisect_right(self.cumulative, point)]


def _check_probability(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(
            f"{name} is {value!r}; expected a probability from 0 to 1. Pass a number "
            "in that range (the paper uses 0.1 for masking and swapping, 0.25 for "
            "n-grams).")
    return float(value)


def _check_whole_number(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} is {value!r}; expected a whole number of at least 1.")
    return value


class TransferSetAugmenter:
    """Makes the synthetic sentences of a distillation transfer set.

    For each sentence (a list of words), `augment` draws
    `samples_per_sentence` candidates as Tang et al. do: each word, in turn,
    draws a uniform number X; X < `mask_probability` masks it,
    `mask_probability <= X < mask_probability + swap_probability` swaps it
    for another word (so masking and swapping never touch the same word);
    then, with probability `ngram_probability`, only an n-gram of the
    result is kept (n uniform in 1..`max_ngram_length`, the whole sentence
    when that is shorter, at a uniform position). A candidate equal to the
    original sentence or to an earlier candidate is a duplicate and
    dropped; one in `excluded_sentences` is dropped too; the rest are
    returned. So each sentence gets up to `samples_per_sentence` new ones,
    none of them excluded.

    Swapping draws the replacement from the word counts, in proportion to
    them, leaving out the replaced word itself (a word that is the only one
    it could be swapped for stays). `swap="random"` draws from all counted
    words; `swap="part_of_speech"` from those the `part_of_speech` mapping
    gives the replaced word's tag (a word the mapping lacks is never
    swapped, nor drawn). The mask token is never drawn.

    Each sentence's random numbers come from a generator seeded with
    `seed` and a hash of the sentence's words (SHA-256, not Python's
    salted `hash`), so the same seed gives a sentence the same samples in
    any process, whatever other sentences were augmented before, in
    whatever order, and whatever the order of `word_counts`. `statistics` counts the candidates drawn, emitted and
    dropped, over all calls.

    Args:
        word_counts: the training words' counts (a mapping from word to
            count, e.g. from `count_words`): what swaps draw from.
        mask_probability: the chance that a word is masked (`p_mask`).
        swap_probability: the chance that a word is swapped (`p_pos`).
        ngram_probability: the chance that a candidate is cut to an
            n-gram (`p_ng`).
        samples_per_sentence: how many candidates each sentence draws
            (`n_iter`).
        swap: `"random"` or `"part_of_speech"`.
        part_of_speech: with `swap="part_of_speech"`, a mapping from word to
            its tag (any hashable).
        excluded_sentences: sentences never to emit (lists of words, or
            strings, which are split at whitespace).
        mask_token: what a masked word becomes.
        max_ngram_length: the longest n-gram kept.
        seed: an int; with the sentence, it seeds each sentence's draws.

    Example:

    >>> sentences = [["a", "quiet", "film"], ["a", "loud", "film"]]
    >>> augmenter = TransferSetAugmenter.from_sentences(
    ...     sentences, samples_per_sentence=4, seed=1,
    ...     excluded_sentences=["a loud film"])
    >>> samples = augmenter.augment(["a", "quiet", "film"])
    >>> ["a", "loud", "film"] in samples
    False
    >>> samples == augmenter.augment(["a", "quiet", "film"])
    True
    >>> stats = augmenter.statistics
    >>> dropped = stats.dropped_duplicates + stats.dropped_excluded
    >>> stats.candidates == stats.emitted + dropped
    True

    References:
        - [Tang et al., 2019](https://arxiv.org/abs/1903.12136)
    """

    def __init__(self, word_counts, mask_probability=0.1, swap_probability=0.1,
                 ngram_probability=0.25, samples_per_sentence=20, swap="random",
                 part_of_speech=None, excluded_sentences=(), mask_token="[MASK]",
                 max_ngram_length=5, seed=0):
        self.mask_probability = _check_probability("mask_probability", mask_probability)
        self.swap_probability = _check_probability("swap_probability", swap_probability)
        self.ngram_probability = _check_probability("ngram_probability", ngram_probability)
        if self.mask_probability + self.swap_probability > 1:
            raise ValueError(
                f"mask_probability + swap_probability is "
                f"{self.mask_probability + self.swap_probability}; expected at most 1, "
                "since a word is masked or swapped, never both. Lower one of them.")
        self.samples_per_sentence = _check_whole_number(
            "samples_per_sentence", samples_per_sentence)
        self.max_ngram_length = _check_whole_number("max_ngram_length", max_ngram_length)
        if swap not in SWAP_MODES:
            raise ValueError(
                f"Unknown swap {swap!r}; expected \"random\" or \"part_of_speech\". "
                "Pass swap=\"part_of_speech\" with a part_of_speech mapping to swap "
                "words within their tag, or \"random\" to draw from all words.")
        if (swap == "part_of_speech") != (part_of_speech is not None):
            raise ValueError(
                f"swap={swap!r} with part_of_speech="
                f"{'a mapping' if part_of_speech is not None else 'None'}; expected "
                "a part_of_speech mapping (word to tag) exactly when swap="
                "\"part_of_speech\". Pass both, or neither.")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"seed is {seed!r}; expected an int.")
        self.swap = swap
        self.part_of_speech = dict(part_of_speech) if part_of_speech is not None else None
        self.mask_token = mask_token
        self.seed = seed
        self.excluded_sentences = frozenset(
            tuple(sentence.split()) if isinstance(sentence, str)
            else _sentence_words(sentence, "excluded sentence")
            for sentence in excluded_sentences)
        self.statistics = AugmentationStatistics()
        self._swap_groups = self._make_swap_groups(word_counts)

    @classmethod
    def from_sentences(cls, sentences, **options):
        """An augmenter whose word counts are those of `sentences`.

        Args:
            sentences: the training sentences, each a list of words.
            **options: the other arguments of `TransferSetAugmenter`.

        Returns:
            The `TransferSetAugmenter`.

        Example:

        >>> augmenter = TransferSetAugmenter.from_sentences([["a", "b"]], seed=3)
        >>> augmenter.seed
        3
        """
        return cls(count_words(sentences), **options)

    def _make_swap_groups(self, word_counts):
        """A `_WeightedWords` per tag (one, under None, for "random")."""
        groups = collections.defaultdict(list)
        for word, count in word_counts.items():
            if not isinstance(word, str):
                raise ValueError(f"word_counts holds the word {word!r}; expected str words.")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(
                    f"word_counts gives {word!r} the count {count!r}; expected a whole "
                    "number of at least 0. Build the counts with count_words.")
            if word == self.mask_token or count == 0:
                continue
            tag = self._tag(word)
            if self.swap == "random" or tag is not None:
                groups[tag].append((word, count))
        # Sorted, so that the draws do not depend on the order of the counts
        # (that of the sentences they were counted from).
        return {tag: _WeightedWords(sorted(counts)) for tag, counts in groups.items()}

    def _tag(self, word):
        return None if self.part_of_speech is None else self.part_of_speech.get(word)

    def _generator(self, words):
        """The sentence's own generator: from the seed and its words."""
        key = json.dumps([self.seed, list(words)], ensure_ascii=False).encode("utf-8")
        digest = hashlib.sha256(key).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _swapped(self, word, generator):
        # Under "part_of_speech", untagged words have no group (None).
        group = self._swap_groups.get(self._tag(word))
        return word if group is None else group.draw_other_than(word, generator)

    def _candidate(self, words, generator):
        swap_below = self.mask_probability + self.swap_probability
        candidate = []
        for word in words:
            draw = generator.random()
            if draw < self.mask_probability:
                candidate.append(self.mask_token)
            elif draw < swap_below:
                candidate.append(self._swapped(word, generator))
            else:
                candidate.append(word)
        if generator.random() < self.ngram_probability:
            length = min(generator.randint(1, self.max_ngram_length), len(candidate))
            start = generator.randrange(len(candidate) - length + 1)
            candidate = candidate[start:start + length]
        return tuple(candidate)

    def augment(self, sentence):
        """The synthetic sentences made from one sentence.

        Args:
            sentence: a list of words.

        Returns:
            Up to `samples_per_sentence` new sentences (lists of words), in
            the order drawn: none equal to `sentence`, to each other, or to
            an excluded sentence. An empty sentence gives none.

        Raises:
            ValueError: `sentence` is a single string, or holds non-str
                words.

        Example:

        >>> augmenter = TransferSetAugmenter(
        ...     {"good": 3, "fine": 1}, mask_probability=0.0, swap_probability=1.0,
        ...     ngram_probability=0.0, samples_per_sentence=3)
        >>> augmenter.augment(["good", "fine"])
        [['fine', 'good']]
        >>> augmenter.statistics.dropped_duplicates
        2
        """
        words = _sentence_words(sentence)
        self.statistics.sentences += 1
        if not words:
            return []
        generator = self._generator(words)
        seen = {words}
        samples = []
        for _ in range(self.samples_per_sentence):
            candidate = self._candidate(words, generator)
            self.statistics.candidates += 1
            if candidate in seen:
                self.statistics.dropped_duplicates += 1
                continue
            seen.add(candidate)
            if candidate in self.excluded_sentences:
                self.statistics.dropped_excluded += 1
                continue
            samples.append(list(candidate))
        self.statistics.emitted += len(samples)
        return samples

    def transfer_set(self, sentences, include_originals=True):
        """The transfer set of `sentences`: each one, then its samples.

        Args:
            sentences: the training sentences, each a list of words.
            include_originals: put each original sentence before its
                samples (the paper's transfer set holds both).

        Returns:
            A list of sentences (lists of words).

        Example:

        >>> augmenter = TransferSetAugmenter(
        ...     {"a": 1}, mask_probability=1.0, swap_probability=0.0,
        ...     ngram_probability=0.0, samples_per_sentence=2)
        >>> augmenter.transfer_set([["a", "b"], ["c"]])
        [['a', 'b'], ['[MASK]', '[MASK]'], ['c'], ['[MASK]']]
        """
        transfer = []
        for sentence in sentences:
            if include_originals:
                transfer.append(list(_sentence_words(sentence)))
            transfer.extend(self.augment(sentence))
        return transfer

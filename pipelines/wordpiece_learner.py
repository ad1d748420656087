"""The learning step of `python -m pipelines.wordpiece_vocab`: the most
frequent words in, a vocabulary of at most `vocab_size` tokens out.

- `VocabularyOptions`: what `LearnWordPieceVocabulary` learns, and the
  learner's keyword arguments.
- `ranking_key`, `word_from_ranking_key`: words ordered by count, ties
  broken by the word, so that Beam's `Top` picks the same words whatever
  the number of workers.
- `learn_vocabulary`: runs tensorflow-text's WordPiece learner
  (`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
  keras_hub's `compute_word_piece_vocabulary`) on one worker, and
  `cut_vocabulary` brings its result down to the size asked for without
  losing the alphabet.
- `vocabulary_file_bytes`: the vocabulary file, one token a line.
"""

import dataclasses

from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
)

from tfnlp.text.vocabulary import SPECIAL_TOKENS

SUFFIX_INDICATOR = "##"
# The highest count threshold the learner's search considers (its default).
UPPER_COUNT_THRESHOLD = 10_000_000
# Maps each byte b to 255 - b; used to rank words in reverse byte order.
_INVERTED_BYTES = bytes(range(255, -1, -1))


@dataclasses.dataclass(frozen=True)
class VocabularyOptions:
    """What `LearnWordPieceVocabulary` learns, and how.

    Attributes:
        vocab_size: the largest number of tokens, the reserved ones
            included.
        lower_case: lower-case and strip accents before splitting words
            (uncased BERT).
        reserved_tokens: tokens placed after `SPECIAL_TOKENS` (which are
            always reserved), in order.
        max_input_words: only the most frequent words (this many) go to the
            learner.
        min_token_count: the lowest count threshold the learner searches
            for a piece.
        max_token_length: longer words (in characters) are left out of
            learning.
        max_unique_characters: the alphabet: words with a character outside
            the most frequent ones are left out of learning.
        num_iterations: the learner's iterations.
        slack_ratio: the learner accepts a size between
            `(1 - slack_ratio) * vocab_size` and `vocab_size`.
    """

    vocab_size: int
    lower_case: bool = True
    reserved_tokens: tuple = ()
    max_input_words: int = 5_000_000
    min_token_count: int = 10
    max_token_length: int = 50
    max_unique_characters: int = 1000
    num_iterations: int = 4
    slack_ratio: float = 0.05

    @property
    def all_reserved_tokens(self):
        """`SPECIAL_TOKENS` then `reserved_tokens`: the vocabulary's start."""
        return [*SPECIAL_TOKENS, *self.reserved_tokens]

    def learner_options(self):
        """The WordPiece learner's keyword arguments other than the size
        and the reserved tokens."""
        return {
            "upper_thresh": UPPER_COUNT_THRESHOLD,
            "lower_thresh": self.min_token_count,
            "num_iterations": self.num_iterations,
            "max_input_tokens": self.max_input_words,
            "max_token_length": self.max_token_length,
            "max_unique_chars": self.max_unique_characters,
            "slack_ratio": self.slack_ratio,
            "include_joiner_token": True,
            "joiner": SUFFIX_INDICATOR,
        }


def ranking_key(word_and_count):
    """Orders words by count, then by the word, in one comparable tuple.

    Args:
        word_and_count: a `(word, count)` pair.

    Returns:
        `(count, inverted)`, where `inverted` is the word's UTF-8 bytes each
        replaced by 255 minus itself, followed by 0xFF: the larger of two
        keys has the larger count or, for equal counts, the word that comes
        first in code-point order. `word_from_ranking_key` inverts it.
    """
    word, count = word_and_count
    return count, word.encode("utf-8").translate(_INVERTED_BYTES) + b"\xff"


def word_from_ranking_key(key):
    """The `(word, count)` pair of a `ranking_key`.

    Args:
        key: a `(count, inverted)` pair from `ranking_key`.

    Returns:
        The `(word, count)` pair.
    """
    count, inverted = key
    return inverted[:-1].translate(_INVERTED_BYTES).decode("utf-8"), count


def learn_vocabulary(ranked_words, vocab_size, reserved_tokens, learner_options):
    """Runs the WordPiece learner on the most frequent words.

    Args:
        ranked_words: `ranking_key`s of the most frequent words.
        vocab_size: the largest number of tokens to return.
        reserved_tokens: the tokens that come first, in order.
        learner_options: the learner's other keyword arguments.

    Returns:
        A dict with "tokens" (the vocabulary: the reserved tokens first,
        each once, at most `vocab_size` tokens), "learned_size" (the
        learner's size before any cut) and "words_used" (the number of
        words given to the learner).
    """
    word_counts = [
        word_from_ranking_key(key) for key in sorted(ranked_words, reverse=True)
    ]
    if word_counts:
        tokens = learner.learn(
            word_counts,
            vocab_size=vocab_size,
            reserved_tokens=list(reserved_tokens),
            **learner_options,
        )
    else:
        tokens = list(reserved_tokens)
    reserved_first = tokens[: len(reserved_tokens)] == list(reserved_tokens)
    if not reserved_first or len(set(tokens)) != len(tokens):
        raise RuntimeError(
            "The WordPiece learner did not put each reserved token first exactly once."
        )
    return {
        "tokens": cut_vocabulary(tokens, vocab_size, len(reserved_tokens)),
        "learned_size": len(tokens),
        "words_used": len(word_counts),
    }


def is_alphabet_token(token):
    """Whether `token` is one character, alone or as a "##" continuation."""
    return len(token) == 1 or (
        len(token) == len(SUFFIX_INDICATOR) + 1 and token.startswith(SUFFIX_INDICATOR)
    )


def cut_vocabulary(tokens, vocab_size, reserved_count):
    """Cuts a learned vocabulary to at most `vocab_size` tokens.

    The learner orders tokens as: the reserved ones, the single characters,
    then the pieces by decreasing count, where a "##" character it had to
    add comes last with count 1. Cutting the tail would drop such
    characters and turn every word that needs one into [UNK], so the least
    frequent longer pieces go first; only when the alphabet alone is too
    large are characters cut, from the end.

    Args:
        tokens: the learner's vocabulary.
        vocab_size: the largest size to return.
        reserved_count: how many tokens at the start are never cut.

    Returns:
        The tokens, in the same order, at most `vocab_size` of them.
    """
    excess = len(tokens) - vocab_size
    if excess <= 0:
        return list(tokens)
    dropped = set()
    for index in range(len(tokens) - 1, reserved_count - 1, -1):
        if len(dropped) == excess:
            break
        if not is_alphabet_token(tokens[index]):
            dropped.add(index)
    kept = [token for index, token in enumerate(tokens) if index not in dropped]
    return kept[:vocab_size]


def vocabulary_file_bytes(tokens):
    """The bytes of a vocabulary file, as `tfnlp.text.write_vocabulary`
    writes them.

    Args:
        tokens: the tokens in id order.

    Returns:
        UTF-8 bytes, one token per line, each ending in "\\n".

    Raises:
        ValueError: a token is empty or has surrounding whitespace or a line
            break, which a one-token-per-line file cannot hold.
    """
    for token in tokens:
        if not token or token != token.strip() or "\n" in token:
            raise ValueError(
                f"Vocabulary token {token!r} is empty or has surrounding "
                "whitespace; one-token-per-line files cannot hold it."
            )
    return "".join(token + "\n" for token in tokens).encode("utf-8")

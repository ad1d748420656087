"""The BERT tokenizer in plain Python, for processes without TensorFlow.

Why a second implementation: the Beam jobs tokenize in workers that should
not load TensorFlow, which alone takes about 650 MB per process (the whole
memory budget of a worker that the original one-process script exceeds),
so `BertTokenizer`'s tensorflow-text ops are out. Hugging Face `tokenizers`
needs no TensorFlow but does not give the original's ids in general (a
100-character word limit, final sigma, private-use characters, a CJK range;
see tests/text/test_bert_tokenizer_parity.py). This module gives the
original ids at the speed of a dictionary lookup per word: the text is
cleaned and split on whitespace as the original does, and each distinct
word is normalized and split by WordPiece once, then served from a cache
(natural text repeats its words, so nearly every word is a hit).
"""

import functools
import itertools
import re
import sys
import unicodedata

from tfnlp.text.vocabulary import load_vocabulary

UNKNOWN_TOKEN = "[UNK]"
CONTINUATION_PREFIX = "##"
MAX_CHARS_PER_WORD = 200

# Code point ranges of CJK ideographs: each becomes a word of its own.
CJK_IDEOGRAPHS = (
    "\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b820-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f"
)
# ASCII control characters other than tab, newline and carriage return.
ASCII_CONTROLS = (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)
ASCII_CONTROL_PATTERN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


ASCII_PUNCTUATION = re.compile("([!-/:-@\\[-`{-~])")


@functools.cache
def _character_classes():
    """The cleaning table and the punctuation pattern of non-ASCII text, from
    Python's Unicode database (the one the original tokenizer consults).
    Built on the first non-ASCII word (it takes a few tenths of a second)."""
    cleaning = {0x00: None, 0xFFFD: None}
    punctuation = ["!-/:-@\\[-`{-~"]
    for code_point in range(0x80, sys.maxunicode + 1):
        category = unicodedata.category(chr(code_point))
        if category in ("Cc", "Cf"):
            cleaning[code_point] = None
        elif category == "Zs":
            cleaning[code_point] = " "
        elif category[0] == "P":
            punctuation.append(re.escape(chr(code_point)))
    cleaning.update(dict.fromkeys(ASCII_CONTROLS))
    for whitespace in "\t\n\r":
        cleaning[ord(whitespace)] = " "
    return cleaning, re.compile("([" + "".join(punctuation) + "])")


class PlainBertTokenizer:
    """Original BERT tokenization to ids, in plain Python with a word cache.

    Gives the ids of google-research/bert's `FullTokenizer` (and of
    `tfnlp.text.BertTokenizer`): invalid characters, NUL, U+FFFD and control
    characters (Cc, Cf except tab/newline/CR) are dropped, whitespace splits
    words, CJK ideographs are words of their own; with `lower_case`, each
    word is lower-cased (Python's rules, final sigma included) and stripped
    of accents (NFD, then no Mn); punctuation characters are tokens of their
    own; WordPiece takes the longest vocabulary match first, and a word over
    200 characters, or one it cannot cover, is [UNK]. Special-token strings
    in the text are ordinary text.

    Vocabularies are taken as the original takes them: a token listed twice
    has the id of its later line (the earlier id is never produced), and a
    token that no word piece can equal (one with whitespace inside, such as
    "new york", the empty token of a blank line, a lone "##") is never
    produced, since WordPiece only looks up pieces of words that were split
    on whitespace.

    Args:
        vocabulary: a vocabulary file path (read with
            `tfnlp.text.load_vocabulary`, as the original reads it: one
            token per line, the id is the line number) or the list of tokens
            in id order.
        lower_case: lower-case and strip accents (uncased vocabularies).
        cache_size: how many distinct words the cache holds before it starts
            over, which bounds its memory (about 200 bytes a word).

    Example:

    >>> tokenizer = PlainBertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "!"])
    >>> tokenizer.tokenize("The Cats!")
    [5, 6, 7, 8]
    >>> tokenizer.tokenize("the dogs")
    [5, 1]

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805)
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144) (WordPiece)
    """

    def __init__(self, vocabulary, lower_case=True, cache_size=500_000):
        if isinstance(vocabulary, (str, bytes)) or hasattr(vocabulary, "__fspath__"):
            vocabulary = load_vocabulary(vocabulary)
        self.vocabulary = list(vocabulary)
        self.lower_case = lower_case
        self.cache_size = cache_size
        # Later duplicates win, as in the original's load_vocab.
        self._ids = {token: index for index, token in enumerate(self.vocabulary)}
        if UNKNOWN_TOKEN not in self._ids:
            raise ValueError(
                f"The vocabulary has no {UNKNOWN_TOKEN} token; WordPiece needs it "
                "for words it cannot split. Add it to the vocabulary file."
            )
        self.unk_id = self._ids[UNKNOWN_TOKEN]
        self._cache = {}
        self._cjk = re.compile(f"([{CJK_IDEOGRAPHS}])")

    @property
    def vocab_size(self):
        return len(self.vocabulary)

    def tokenize(self, text):
        """The token ids of `text` (a str; bytes are read as UTF-8, invalid
        bytes dropped), as a list of ints."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="ignore")
        if not text.isascii():
            cleaning, _ = _character_classes()
            text = self._cjk.sub(r" \1 ", text.translate(cleaning))
        elif not text.isprintable():
            # A control character, or a tab, newline or carriage return
            # (which the pattern keeps: they split words).
            text = ASCII_CONTROL_PATTERN.sub("", text)
        words = text.split()
        word_ids = list(map(self._cache.get, words))
        if None in word_ids:
            for index, ids in enumerate(word_ids):
                if ids is None:
                    word_ids[index] = self._cached_word_ids(words[index])
        return list(itertools.chain.from_iterable(word_ids))

    def _cached_word_ids(self, word):
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        ids = self._cache[word] = self._word_ids(word)
        return ids

    def _word_ids(self, word):
        if word.isascii():
            if self.lower_case:
                word = word.lower()
            if word.isalnum():
                # Letters and digits only: no punctuation to split off.
                return tuple(self._wordpiece(word))
            punctuation = ASCII_PUNCTUATION
        else:
            _, punctuation = _character_classes()
            if self.lower_case:
                word = "".join(
                    character
                    for character in unicodedata.normalize("NFD", word.lower())
                    if unicodedata.category(character) != "Mn"
                )
        ids = []
        for piece in punctuation.split(word):
            if piece:
                ids += self._wordpiece(piece)
        return tuple(ids)

    def _wordpiece(self, word):
        """Greedy longest-match-first WordPiece ids of one word."""
        if len(word) > MAX_CHARS_PER_WORD:
            return [self.unk_id]
        ids = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else CONTINUATION_PREFIX + word[start:end]
                piece_id = self._ids.get(piece)
                if piece_id is not None:
                    break
            else:
                return [self.unk_id]
            ids.append(piece_id)
            start = end
        return ids

"""Character vocabularies and the character tokenizer in plain Python.

A character vocabulary gives every character (Unicode code point) its own
id, after three special tokens:

| id | token   | what |
|----|---------|------|
| 0  | `<pad>` | padding (never produced by tokenizing) |
| 1  | `<unk>` | a character the vocabulary lacks |
| 2  | `<eod>` | the end of a document (appended by the language-model job) |

and then the characters in code-point order (`character_vocabulary`). No
normalization: every character of the text is a token, line breaks, tabs
and spaces included, as char-rnn and nanoGPT's `shakespeare_char` have it.

The vocabulary file (`character_vocabulary_bytes`) is UTF-8, one token a
line, each line the token as a JSON string (`"a"`, `"\\n"`, `"<eod>"`), so
that a line break or a space is a readable line of its own, and a special
token (several characters) cannot be taken for a character.

`PlainCharacterTokenizer` gives the ids of the in-graph
`tfnlp.text.CharacterTokenizer` of the same vocabulary without TensorFlow,
for the Beam workers of `pipelines.lm_data`.
"""

import json

PAD_TOKEN = "<pad>"
UNKNOWN_TOKEN = "<unk>"
END_OF_DOCUMENT_TOKEN = "<eod>"
SPECIAL_TOKENS = (PAD_TOKEN, UNKNOWN_TOKEN, END_OF_DOCUMENT_TOKEN)
PAD_ID, UNKNOWN_ID, END_OF_DOCUMENT_ID = range(len(SPECIAL_TOKENS))
# Invalid UTF-8 decodes to this character, as in `bytes.decode(errors="replace")`
# and `tf.strings.unicode_decode(errors="replace")`.
REPLACEMENT_CHARACTER = "\ufffd"


def character_vocabulary(character_counts, min_count=1):
    """The tokens of a character vocabulary, in id order.

    Args:
        character_counts: a mapping from character (a str of length 1) to
            how often it occurs.
        min_count: characters seen fewer times are left out (they become
            `<unk>`).

    Returns:
        `SPECIAL_TOKENS`, then the characters seen at least `min_count`
        times, in code-point order.

    Raises:
        ValueError: a key is not one character, or `min_count` < 1.

    Example:

    >>> character_vocabulary({"b": 3, "a": 1, "\\n": 2}, min_count=2)
    ['<pad>', '<unk>', '<eod>', '\\n', 'b']
    """
    if int(min_count) < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}.")
    for character in character_counts:
        if not isinstance(character, str) or len(character) != 1:
            raise ValueError(
                f"Character counts must be keyed by single characters, got {character!r}."
            )
    kept = sorted(character for character, count in character_counts.items()
                  if count >= min_count)
    return [*SPECIAL_TOKENS, *kept]


def character_vocabulary_bytes(tokens):
    """The vocabulary file's contents: one JSON string a line, UTF-8.

    Example:

    >>> character_vocabulary_bytes(["<pad>", "<unk>", "<eod>", "\\n", "é"])
    b'"<pad>"\\n"<unk>"\\n"<eod>"\\n"\\\\n"\\n"\\xc3\\xa9"\\n'
    """
    return "".join(json.dumps(token, ensure_ascii=False) + "\n"
                   for token in tokens).encode("utf-8")


def parse_character_vocabulary(contents, name="the character vocabulary"):
    """The tokens of a vocabulary file's contents (`character_vocabulary_bytes`).

    Args:
        contents: the file's bytes.
        name: what to call the file in errors (e.g. its path).

    Returns:
        The tokens in id order.

    Raises:
        ValueError: a line is not a JSON string, the special tokens are not
            the first three, a token after them is not one character, or a
            character is listed twice.
    """
    try:
        lines = contents.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name} is not UTF-8 ({error.reason}).") from None
    if lines and lines[-1] == "":
        lines.pop()
    tokens = []
    for number, line in enumerate(lines, start=1):
        try:
            token = json.loads(line)
        except ValueError:
            token = None
        if not isinstance(token, str):
            raise ValueError(
                f"Line {number} of {name} is {line[:40]!r}, not a JSON string; a "
                "character vocabulary holds one token a line as a JSON string "
                "(\"a\"), as pipelines.lm_data writes it."
            )
        tokens.append(token)
    if tuple(tokens[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
        raise ValueError(
            f"{name} starts with {tokens[:len(SPECIAL_TOKENS)]}, but a character "
            f"vocabulary starts with the special tokens {list(SPECIAL_TOKENS)}."
        )
    characters = tokens[len(SPECIAL_TOKENS):]
    for index, character in enumerate(characters, start=len(SPECIAL_TOKENS)):
        if len(character) != 1:
            raise ValueError(
                f"Token {index} of {name} is {character!r}; after the special tokens "
                "every token is one character."
            )
    if len(set(characters)) != len(characters):
        raise ValueError(f"{name} lists a character twice.")
    return tokens


class PlainCharacterTokenizer:
    """A character vocabulary's tokenizer, in plain Python.

    Each character of the text becomes its id, or `<unk>`'s when the
    vocabulary lacks it; bytes are decoded as UTF-8 with each invalid
    sequence replaced by U+FFFD first. The ids are those of
    `tfnlp.text.CharacterTokenizer` with the same vocabulary.

    Args:
        vocabulary: the tokens in id order (`character_vocabulary`, or
            `parse_character_vocabulary` of a file).

    Attributes:
        vocabulary: the tokens.
        vocabulary_size: the number of ids.
        pad_id, unknown_id, end_of_document_id: the special ids (0, 1, 2).

    Example:

    >>> tokenizer = PlainCharacterTokenizer(character_vocabulary({"a": 1, "b": 1, "\\n": 1}))
    >>> tokenizer.tokenize("ab\\nc")
    [4, 5, 3, 1]
    >>> tokenizer.detokenize([4, 5, 3, 1, 2, 4])
    'ab\\n\\ufffd'
    """

    pad_id = PAD_ID
    unknown_id = UNKNOWN_ID
    end_of_document_id = END_OF_DOCUMENT_ID

    def __init__(self, vocabulary):
        self.vocabulary = list(vocabulary)
        if tuple(self.vocabulary[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(
                f"A character vocabulary starts with {list(SPECIAL_TOKENS)}; got "
                f"{self.vocabulary[:len(SPECIAL_TOKENS)]}."
            )
        self._ids = {token: index for index, token
                     in enumerate(self.vocabulary[len(SPECIAL_TOKENS):], len(SPECIAL_TOKENS))}

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def tokenize(self, text):
        """The ids of `text` (str, or UTF-8 bytes), one per character."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        get = self._ids.get
        return [get(character, UNKNOWN_ID) for character in text]

    def detokenize(self, ids):
        """The text of `ids`, as `CharacterTokenizer.detokenize` gives it:
        it ends at the first `<eod>`, `<pad>` is left out and `<unk>` is
        U+FFFD."""
        characters = []
        for index in ids:
            index = int(index)
            if index == END_OF_DOCUMENT_ID:
                break
            if index == UNKNOWN_ID:
                characters.append(REPLACEMENT_CHARACTER)
            elif index != PAD_ID:
                characters.append(self.vocabulary[index])
        return "".join(characters)

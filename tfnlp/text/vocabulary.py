"""WordPiece vocabulary files: one token per line, the id is the line number.

The format of google-research/bert's vocab.txt: each line is stripped of
surrounding whitespace, [PAD] is id 0 in tfnlp's vocabularies, and the
special tokens are looked up by name, so the original vocabularies (where
[UNK] is 100) work unchanged.
"""

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocabulary(path):
    """The tokens of a vocabulary file, in id order, read as the original.

    google-research/bert reads vocab.txt line by line through `tf.gfile`,
    which ends lines at "\\n" only and drops every "\\r" (so "\\r\\n" line
    ends work, and a "\\r" inside a line vanishes); each line is UTF-8 and
    is stripped of surrounding whitespace. So a blank line is the token "",
    whitespace inside a token stays ("new york"), and a token listed twice
    is kept twice (the tokenizers give it the id of its later line, as the
    original does).

    Args:
        path: the vocabulary file.

    Returns:
        The list of tokens; a token's id is its index.

    Raises:
        ValueError: a line is not valid UTF-8.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"[UNK]\\r\\n new york \\ncat\\n\\ncat\\n")
    >>> load_vocabulary(path)
    ['[UNK]', 'new york', 'cat', '', 'cat']
    """
    with open(path, "rb") as file:
        lines = file.read().replace(b"\r", b"").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    tokens = []
    for number, line in enumerate(lines, start=1):
        try:
            tokens.append(line.decode("utf-8").strip())
        except UnicodeDecodeError as error:
            raise ValueError(
                f"Line {number} of the vocabulary {path} is not valid UTF-8 "
                f"({error.reason}); vocabulary files are UTF-8 text, one token "
                "per line. Re-encode the file as UTF-8 or fix that line."
            ) from None
    return tokens


def write_vocabulary(tokens, path):
    """Writes `tokens` one per line (UTF-8, "\\n" line ends)."""
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        for token in tokens:
            if not token or token != token.strip() or "\n" in token or "\r" in token:
                raise ValueError(
                    f"Vocabulary token {token!r} is empty, has surrounding "
                    "whitespace or a line break; one-token-per-line files cannot "
                    "hold it."
                )
            file.write(token + "\n")

"""WordPiece vocabulary files: one token per line, the id is the line number.

The format of google-research/bert's vocab.txt: each line is stripped of
surrounding whitespace, [PAD] is id 0 in tfnlp's vocabularies, and the
special tokens are looked up by name, so the original vocabularies (where
[UNK] is 100) work unchanged.
"""

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocabulary(path):
    """The tokens of a vocabulary file, in id order."""
    with open(path, encoding="utf-8", errors="strict") as file:
        return [line.strip() for line in file]


def write_vocabulary(tokens, path):
    """Writes `tokens` one per line (UTF-8, "\\n" line ends)."""
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        for token in tokens:
            if not token or token != token.strip() or "\n" in token:
                raise ValueError(
                    f"Vocabulary token {token!r} is empty or has surrounding "
                    "whitespace; one-token-per-line files cannot hold it."
                )
            file.write(token + "\n")

"""The descriptor of a language-model data directory's tokenizer.

`pipelines.lm_data` writes `DIR/tokenizer.json` beside its shards: which
tokenizer made the ids, the file it reads (in `DIR`, by name) and the ids
that a trainer, an export and a server need. It is plain JSON:

| key                  | value |
|----------------------|-------|
| `format_version`     | 1 |
| `kind`               | "character", "sentencepiece" or "wordpiece" |
| `file`               | the vocabulary or model file's name in `DIR` (`characters.txt`, `sentencepiece.model`, `vocab.txt`) |
| `sha256`             | the SHA-256 of that file's bytes (checked when loaded) |
| `vocabulary_size`    | the number of ids |
| `end_of_document_id` | the id appended to every document (`<eod>`; SentencePiece's EOS `</s>`; WordPiece's `[SEP]`) |
| `unknown_id`         | the id of what the vocabulary lacks |
| `pad_id`             | the padding id, or null |
| `lower_case`         | WordPiece: whether the text is lower-cased; null otherwise |

`tfnlp.text.load_language_model_tokenizer(DIR)` reads it and returns the
in-graph tokenizer. This module imports no TensorFlow: the job writes the
descriptor from Beam workers.
"""

import dataclasses
import json

FORMAT_VERSION = 1
KINDS = ("character", "sentencepiece", "wordpiece")


@dataclasses.dataclass(frozen=True)
class TokenizerDescriptor:
    """What `DIR/tokenizer.json` says (see the module docstring).

    Example:

    >>> descriptor = TokenizerDescriptor("character", "characters.txt", "ab12",
    ...                                  vocabulary_size=68, end_of_document_id=2,
    ...                                  unknown_id=1, pad_id=0)
    >>> TokenizerDescriptor.from_json_bytes(descriptor.to_json_bytes()) == descriptor
    True
    """

    kind: str
    file: str
    sha256: str
    vocabulary_size: int
    end_of_document_id: int
    unknown_id: int
    pad_id: int | None = None
    lower_case: bool | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"The tokenizer kind must be one of {KINDS}, not {self.kind!r}.")
        if not self.file or "/" in self.file or "\\" in self.file:
            raise ValueError(
                f"The tokenizer file must be a file name in the data directory, got "
                f"{self.file!r}."
            )
        if self.vocabulary_size < 1:
            raise ValueError(f"vocabulary_size must be at least 1, got {self.vocabulary_size}.")
        ids = {"end_of_document_id": self.end_of_document_id, "unknown_id": self.unknown_id,
               "pad_id": self.pad_id}
        for name, value in ids.items():
            if value is not None and not 0 <= value < self.vocabulary_size:
                raise ValueError(
                    f"{name}={value} is outside [0, vocabulary_size={self.vocabulary_size})."
                )
        if (self.kind == "wordpiece") != (self.lower_case is not None):
            raise ValueError("lower_case is given for wordpiece tokenizers, and only for them.")

    def to_json_bytes(self):
        """The file's contents: indented, key-sorted JSON ending in a newline."""
        fields = {"format_version": FORMAT_VERSION, **dataclasses.asdict(self)}
        return (json.dumps(fields, indent=2, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_json_bytes(cls, contents, name="the tokenizer descriptor"):
        """The descriptor in `contents` (a file's bytes).

        Raises:
            ValueError: not JSON, another format version, a missing or
                unknown key, or a value out of range; the message names
                `name`.
        """
        try:
            fields = json.loads(contents.decode("utf-8"))
        except ValueError as error:
            raise ValueError(f"{name} is not JSON ({error}).") from None
        if not isinstance(fields, dict) or fields.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{name} is not a tokenizer descriptor of format version {FORMAT_VERSION}; "
                "write the data again with python -m pipelines.lm_data."
            )
        fields = {key: value for key, value in fields.items() if key != "format_version"}
        known = {field.name for field in dataclasses.fields(cls)}
        if set(fields) - known:
            raise ValueError(f"{name} has unknown keys {sorted(set(fields) - known)}.")
        try:
            return cls(**fields)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name} is invalid: {error}") from None

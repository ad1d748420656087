"""The language-model job's tokenizers, in plain Python, for its Beam workers.

A tokenizer travels through the pipeline as a `TokenizerSpec` (its kind and
the bytes of its vocabulary or model file), a side input from which each
worker builds a `DocumentTokenizer` once (`document_tokenizer`). Encoding a
document gives its ids and, per id, the characters of text it stands for
(`tfnlp.data.language_model_schema` defines them):

- "character" (`tfnlp.text.PlainCharacterTokenizer`): one id per
  character, 1 character each;
- "sentencepiece" (the `sentencepiece` package, the ids of
  `tfnlp.text.SentencePieceTokenizer`): each piece its decoded length ("▁"
  a space; a byte piece 1 if it starts a UTF-8 character, else 0), the
  first piece less the space SentencePiece puts in front of the text, so
  that a document's counts add up to the length of its detokenized text;
- "wordpiece" (`tfnlp.text.PlainBertTokenizer`, the ids of
  `tfnlp.text.BertTokenizer`): each token its length in the detokenized
  text (a "##" continuation without the "##", any other token plus the
  space before it, except a document's first).

The end-of-document id stands for 1 character. Neither the tokenizers nor
this module load TensorFlow.

`LearnCharacterVocabulary` learns a character vocabulary from documents
(every character seen at least `min_count` times, counted by a combiner,
so no worker holds more than the distinct characters); `LearnTokenizer`
gives the job's tokenizer, learned from the training texts or given; and
`write_tokenizer` writes its file and `tokenizer.json`
(`tfnlp.text.tokenizer_descriptor`) into the output directory.
"""

import collections
import dataclasses
import hashlib
import os
import re

import apache_beam as beam
import numpy as np

from pipelines import job, sentencepiece_model
from tfnlp.data import file_names
from tfnlp.text import plain_character_tokenizer
from tfnlp.text.plain_bert_tokenizer import PlainBertTokenizer
from tfnlp.text.tokenizer_descriptor import TokenizerDescriptor

KINDS = ("character", "sentencepiece", "wordpiece")
# The file of each kind in the job's output directory.
TOKENIZER_FILES = {
    "character": file_names.CHARACTER_VOCABULARY,
    "sentencepiece": file_names.SENTENCEPIECE_MODEL,
    "wordpiece": file_names.WORDPIECE_VOCABULARY,
}
WORDPIECE_END_OF_DOCUMENT = "[SEP]"
_CONTINUATION = re.compile(r"##.+", re.DOTALL)
_SENTENCEPIECE_BYTE = re.compile(r"<0x([0-9A-F]{2})>")


@dataclasses.dataclass(frozen=True)
class TokenizerSpec:
    """A tokenizer as the job passes it around (picklable, small).

    Attributes:
        kind: one of `KINDS`.
        contents: the bytes of its file: the character vocabulary
            (`plain_character_tokenizer.character_vocabulary_bytes`), the
            SentencePiece model, or the WordPiece vocabulary.
        lower_case: for "wordpiece", whether text is lower-cased.
        tokens: for "wordpiece", the vocabulary's tokens
            (`tfnlp.text.load_vocabulary` of the file).
    """

    kind: str
    contents: bytes
    lower_case: bool | None = None
    tokens: tuple | None = None


class DocumentTokenizer:
    """Encodes documents to ids and per-id character counts.

    Attributes:
        vocabulary_size, end_of_document_id, unknown_id, pad_id: the ids
            (`pad_id` may be None).
    """

    def __init__(self, vocabulary_size, end_of_document_id, unknown_id, pad_id):
        self.vocabulary_size = vocabulary_size
        self.end_of_document_id = end_of_document_id
        self.unknown_id = unknown_id
        self.pad_id = pad_id

    def encode(self, text):
        """`(ids, characters)`: int32 numpy arrays of the document's ids
        (without the end-of-document id) and the characters each stands
        for."""
        raise NotImplementedError


class _CharacterTokenizer(DocumentTokenizer):

    def __init__(self, contents):
        self._tokenizer = plain_character_tokenizer.PlainCharacterTokenizer(
            plain_character_tokenizer.parse_character_vocabulary(contents))
        super().__init__(self._tokenizer.vocabulary_size,
                         plain_character_tokenizer.END_OF_DOCUMENT_ID,
                         plain_character_tokenizer.UNKNOWN_ID,
                         plain_character_tokenizer.PAD_ID)

    def encode(self, text):
        ids = np.array(self._tokenizer.tokenize(text), np.int32)
        return ids, np.ones_like(ids)


def _piece_characters(piece):
    """The characters a SentencePiece piece stands for (see the module docstring)."""
    byte = _SENTENCEPIECE_BYTE.fullmatch(piece)
    if byte:
        return 0 if 0x80 <= int(byte.group(1), 16) <= 0xBF else 1
    return len(piece)


class _SentencePieceTokenizer(DocumentTokenizer):

    def __init__(self, contents):
        self._processor = sentencepiece_model.load_processor(contents)
        size = self._processor.get_piece_size()
        characters = [_piece_characters(self._processor.id_to_piece(index))
                      for index in range(size)]
        for index in range(size):
            if self._processor.is_control(index) or self._processor.is_unknown(index):
                characters[index] = len(self._processor.decode([index]))
        self._characters = np.array(characters, np.int32)
        super().__init__(size, self._processor.eos_id(), self._processor.unk_id(),
                         self._processor.pad_id())

    def encode(self, text):
        ids = np.array(self._processor.encode(text), np.int32)
        characters = self._characters[ids]
        if len(ids):
            # The space SentencePiece puts in front of the text is not the text's.
            excess = int(characters.sum()) - len(self._processor.decode(ids.tolist()))
            characters[0] -= min(max(excess, 0), characters[0])
        return ids, characters


class _WordPieceTokenizer(DocumentTokenizer):

    def __init__(self, tokens, lower_case):
        self._tokenizer = PlainBertTokenizer(list(tokens), lower_case=lower_case)
        ids = {token: index for index, token in enumerate(tokens)}
        missing = [token for token in ("[UNK]", WORDPIECE_END_OF_DOCUMENT) if token not in ids]
        if missing:
            raise ValueError(
                f"The WordPiece vocabulary has no {' or '.join(missing)}; a language "
                f"model's WordPiece vocabulary needs [UNK], and {WORDPIECE_END_OF_DOCUMENT} "
                "as its end-of-document token."
            )
        self._continuation = np.array([bool(_CONTINUATION.fullmatch(token)) for token in tokens])
        self._characters = np.array(
            [len(token) - 2 if continuation else len(token) + 1
             for token, continuation in zip(tokens, self._continuation)], np.int32)
        super().__init__(len(tokens), ids[WORDPIECE_END_OF_DOCUMENT], ids["[UNK]"],
                         ids.get("[PAD]"))

    def encode(self, text):
        ids = np.array(self._tokenizer.tokenize(text), np.int32)
        characters = self._characters[ids]
        if len(ids) and not self._continuation[ids[0]]:
            characters[0] -= 1  # No space before a document's first word.
        return ids, characters


def document_tokenizer(spec):
    """The `DocumentTokenizer` of a `TokenizerSpec`.

    Raises:
        ValueError: the spec's file is not a valid vocabulary or model of
            its kind (see `check_spec`).
    """
    if spec.kind == "character":
        return _CharacterTokenizer(spec.contents)
    if spec.kind == "sentencepiece":
        return _SentencePieceTokenizer(spec.contents)
    if spec.kind == "wordpiece":
        return _WordPieceTokenizer(spec.tokens, spec.lower_case)
    raise ValueError(f"The tokenizer kind must be one of {KINDS}, not {spec.kind!r}.")


def descriptor(spec, file_name):
    """The `TokenizerDescriptor` of a spec whose file is written as `file_name`."""
    tokenizer = document_tokenizer(spec)
    return TokenizerDescriptor(
        kind=spec.kind,
        file=file_name,
        sha256=hashlib.sha256(spec.contents).hexdigest(),
        vocabulary_size=tokenizer.vocabulary_size,
        end_of_document_id=tokenizer.end_of_document_id,
        unknown_id=tokenizer.unknown_id,
        pad_id=tokenizer.pad_id,
        lower_case=spec.lower_case if spec.kind == "wordpiece" else None,
    )


def write_tokenizer(spec, output_dir):
    """Writes a spec's file (`TOKENIZER_FILES`; a SentencePiece model's
    `.vocab` beside it) and its `tokenizer.json` into `output_dir` (any
    Beam filesystem).

    Returns:
        The paths written.
    """
    name = TOKENIZER_FILES[spec.kind]
    paths = [job.write_file(spec.contents, os.path.join(output_dir, name))]
    if spec.kind == "sentencepiece":
        vocabulary = os.path.splitext(name)[0] + ".vocab"
        paths.append(job.write_file(sentencepiece_model.vocab_file_bytes(spec.contents),
                                    os.path.join(output_dir, vocabulary)))
    paths.append(job.write_file(descriptor(spec, name).to_json_bytes(),
                                os.path.join(output_dir, file_names.TOKENIZER_DESCRIPTOR)))
    return paths


class CountCharacters(beam.CombineFn):
    """Counts the characters of texts: `{character: count}`."""

    def create_accumulator(self):
        return collections.Counter()

    def add_input(self, accumulator, text):
        accumulator.update(text)
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = collections.Counter()
        for accumulator in accumulators:
            merged.update(accumulator)
        return merged

    def extract_output(self, accumulator):
        return dict(accumulator)


class LearnCharacterVocabulary(beam.PTransform):
    """Learns a character vocabulary from documents.

    Applied to a PCollection of texts, it returns a single-element
    PCollection: the vocabulary's tokens
    (`plain_character_tokenizer.character_vocabulary`: the special tokens,
    then every character seen at least `min_count` times, in code-point
    order), the same whatever the runner or the workers.

    Args:
        min_count: characters seen fewer times become `<unk>`.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (pipeline | beam.Create(["ba\\n", "ab"]) | LearnCharacterVocabulary(2)
    ...          | beam.Map(print))
    ['<pad>', '<unk>', '<eod>', 'a', 'b']
    """

    def __init__(self, min_count=1, label=None):
        super().__init__(label)
        if int(min_count) < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}.")
        self.min_count = int(min_count)

    def expand(self, texts):
        return (
            texts
            | "CountCharacters" >> beam.CombineGlobally(CountCharacters())
            | "Vocabulary" >> beam.Map(plain_character_tokenizer.character_vocabulary,
                                       self.min_count)
        )


@dataclasses.dataclass(frozen=True)
class TokenizerOptions:
    """Which tokenizer `LearnTokenizer` gives.

    Attributes:
        kind: one of `KINDS`.
        given: the `TokenizerSpec` of an existing file, or None to learn
            one ("character", or "sentencepiece" with `sentencepiece`).
        min_character_count: "character": characters seen fewer times in
            the training text become `<unk>`.
        sentencepiece: the `sentencepiece_model.SentencePieceOptions` to
            learn with.
        sample_size: "sentencepiece": the most lines learned from.
    """

    kind: str
    given: TokenizerSpec | None = None
    min_character_count: int = 1
    sentencepiece: sentencepiece_model.SentencePieceOptions | None = None
    sample_size: int = 1_000_000

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"The tokenizer kind must be one of {KINDS}, not {self.kind!r}.")
        if self.given is None and self.kind == "wordpiece":
            raise ValueError("A WordPiece vocabulary is not learned here; give its file.")
        if self.given is None and self.kind == "sentencepiece" and self.sentencepiece is None:
            raise ValueError("Learning a SentencePiece model needs its SentencePieceOptions.")


def _lines(text):
    return text.split("\n")


class LearnTokenizer(beam.PTransform):
    """The job's tokenizer: learned from the training texts, or given.

    Applied to a PCollection of training texts, it returns two
    single-element PCollections: the `TokenizerSpec`, and the number of
    training units it was learned from (documents for "character", lines
    sampled for "sentencepiece"; 0 when given). A character vocabulary
    comes from `LearnCharacterVocabulary`; a SentencePiece model from
    `sentencepiece_model.LearnSentencePieceModel` on the texts' lines (the
    trainer skips sentences over 4,192 bytes, and lines stay well under).

    Args:
        options: the `TokenizerOptions`.
        label: an optional label for the transform.
    """

    def __init__(self, options, label=None):
        super().__init__(label)
        self.options = options

    def expand(self, texts):
        options = self.options
        if options.given is not None:
            spec = texts.pipeline | "GivenTokenizer" >> beam.Create([options.given])
            units = texts.pipeline | "NothingLearned" >> beam.Create([0])
        elif options.kind == "character":
            spec = (texts | "LearnCharacters" >> LearnCharacterVocabulary(
                        options.min_character_count)
                    | "CharacterSpec" >> beam.Map(lambda tokens: TokenizerSpec(
                        "character",
                        plain_character_tokenizer.character_vocabulary_bytes(tokens))))
            units = texts | "CountDocuments" >> beam.combiners.Count.Globally()
        else:
            model, units = (
                texts | "Lines" >> beam.FlatMap(_lines)
                | "LearnSentencePiece" >> sentencepiece_model.LearnSentencePieceModel(
                    options.sentencepiece, options.sample_size))
            spec = model | "SentencePieceSpec" >> beam.Map(
                lambda proto: TokenizerSpec("sentencepiece", proto))
        return spec, units

"""Tokenized documents kept in temporary files, referenced through the shuffle.

The pretraining-data job groups the documents of the whole corpus into
buckets with a GroupByKey. A runner holds what goes through a shuffle: the
local runner in its own memory (in several copies), Dataflow, Flink or
Spark in their shuffle services. So the documents do not go through it:
the tokenizing workers append each document, as compact bytes, to a
temporary file of their bundle (on any Beam filesystem: local, GCS, S3,
HDFS) and send a small `DocumentReference` instead; the worker that makes a
bucket's instances reads its documents back. Memory then stays flat as the
corpus grows, and the shuffle carries about 100 bytes a document.

A document is encoded as a little-endian header (type code, sentence
count), the sentence lengths (uint32) and the ids (uint16 when the
vocabulary fits, else uint32): 2 bytes a token.

`TokenizeDocuments` is the transform that fills the store: it tokenizes
documents of sentence strings and emits each one's content key and
`DocumentReference`; `read_documents` reads them back after the shuffle.
"""

import array
import collections
import struct
import sys
import uuid

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines import job
from pipelines.pretraining_instances import document_key
from tfnlp.text.plain_bert_tokenizer import PlainBertTokenizer
from tfnlp.text.vocabulary import load_vocabulary

HEADER = struct.Struct("<cI")

DocumentReference = collections.namedtuple(
    "DocumentReference", ["path", "offset", "size", "tokens"]
)


def id_typecode(vocab_size):
    """The `array` type code that holds every id of a vocabulary."""
    return "H" if vocab_size <= 1 << 16 else "I"


def _little_endian(values):
    if sys.byteorder == "big":
        values.byteswap()
    return values


def encode_document(document, typecode):
    """A document (a list of sentences, each a list of ids) as bytes."""
    lengths = _little_endian(array.array("I", map(len, document)))
    ids = array.array(typecode)
    for sentence in document:
        ids.fromlist(sentence)
    _little_endian(ids)
    return HEADER.pack(typecode.encode(), len(document)) + lengths.tobytes() + ids.tobytes()


def decode_document(encoded):
    """The sentences (`array`s of ids) of an `encode_document` result."""
    typecode, count = HEADER.unpack_from(encoded)
    typecode = typecode.decode()
    lengths = array.array("I")
    lengths.frombytes(encoded[HEADER.size:HEADER.size + 4 * count])
    ids = array.array(typecode)
    ids.frombytes(encoded[HEADER.size + 4 * count:])
    _little_endian(lengths)
    _little_endian(ids)
    sentences = []
    start = 0
    for length in lengths:
        sentences.append(ids[start:start + length])
        start += length
    return sentences


class DocumentWriter:
    """Appends documents to one new temporary file under `directory`.

    Open one per bundle and `close` it in `finish_bundle`, so that the file
    is complete before any reader (after the shuffle) opens it.
    """

    def __init__(self, directory, typecode):
        self.path = FileSystems.join(directory, f"tokens-{uuid.uuid4().hex}.bin")
        self._typecode = typecode
        self._file = None
        self._offset = 0

    def write(self, document):
        """Writes a tokenized document; returns its `DocumentReference`."""
        if self._file is None:
            self._file = FileSystems.create(
                self.path, compression_type=CompressionTypes.UNCOMPRESSED
            )
        encoded = encode_document(document, self._typecode)
        self._file.write(encoded)
        reference = DocumentReference(
            self.path, self._offset, len(encoded), sum(map(len, document))
        )
        self._offset += len(encoded)
        return reference

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


def read_documents(references):
    """The documents (lists of `array`s of ids) of `references`, in order.

    Opens each file once and reads its documents in file order.
    """
    documents = [None] * len(references)
    by_path = collections.defaultdict(list)
    for index, reference in enumerate(references):
        by_path[reference.path].append(index)
    for path, indices in by_path.items():
        indices.sort(key=lambda index: references[index].offset)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as file:
            for index in indices:
                reference = references[index]
                file.seek(reference.offset)
                encoded = file.read(reference.size)
                if len(encoded) != reference.size:
                    raise IOError(
                        f"{path} ends before the document at byte {reference.offset} "
                        f"({reference.size} bytes); the job's temporary token files "
                        "must not change while it runs."
                    )
                documents[index] = decode_document(encoded)
    return documents


class _TokenizeAndStore(job.CountingDoFn):
    """Tokenizes documents and appends them to the bundle's temporary file.

    The tokenizer gives the ids of the in-graph `BertTokenizer` without
    loading TensorFlow, and its word cache makes a worker's cost about one
    dictionary lookup per word.
    """

    def __init__(self, vocab_file, lower_case, token_directory):
        self._vocab_file = vocab_file
        self._lower_case = lower_case
        self._token_directory = token_directory

    def setup(self):
        self._tokenizer = PlainBertTokenizer(
            load_vocabulary(self._vocab_file), lower_case=self._lower_case
        )
        self._typecode = id_typecode(self._tokenizer.vocab_size)

    def start_bundle(self):
        super().start_bundle()
        self._writer = DocumentWriter(self._token_directory, self._typecode)

    def process(self, document):
        unk_id = self._tokenizer.unk_id
        tokenized = [ids for ids in map(self._tokenizer.tokenize, document) if ids]
        if tokenized:
            self.count("documents_used")
            self.count("sentences", len(tokenized))
            self.count("tokens", sum(map(len, tokenized)))
            self.count("unknown_tokens", sum(ids.count(unk_id) for ids in tokenized))
            yield document_key(tokenized), self._writer.write(tokenized)
        else:
            self.count("documents_skipped_empty")

    def finish_bundle(self):
        self._writer.close()
        yield from super().finish_bundle()


class TokenizeDocuments(beam.PTransform):
    """Tokenizes documents into the store, emitting references to them.

    Applied to a PCollection of documents (lists of sentence strings, as
    `pipelines.text_input.ReadDocuments` gives), it tokenizes each sentence
    with `tfnlp.text.PlainBertTokenizer`, drops sentences with no tokens (as
    the original BERT does), writes each document left to a temporary file
    of its bundle under `token_directory`, and returns two PCollections:
    `(key, DocumentReference)` per document, where the key is the SHA-256
    of its ids (`pipelines.pretraining_instances.document_key`), and dicts
    of counts, one per bundle, that `job.SumCounts` adds up:
    "documents_used", "documents_skipped_empty" (documents with no
    tokens), "sentences", "tokens" and "unknown_tokens" (names never
    counted may be missing).

    Args:
        vocab_file: the WordPiece vocabulary (one token per line).
        lower_case: lower-case and strip accents (uncased vocabularies).
        token_directory: an existing directory (any Beam filesystem) for the
            temporary files; the caller deletes it once the references
            have been read.
        label: an optional label for the transform.
    """

    def __init__(self, vocab_file, lower_case, token_directory, label=None):
        super().__init__(label)
        self.vocab_file = vocab_file
        self.lower_case = lower_case
        self.token_directory = token_directory

    def expand(self, documents):
        tokenized = documents | "Tokenize" >> beam.ParDo(
            _TokenizeAndStore(self.vocab_file, self.lower_case, self.token_directory)
        ).with_outputs(job.COUNTS_TAG, main="documents")
        return tokenized.documents, tokenized[job.COUNTS_TAG]

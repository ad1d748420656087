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
"""

import array
import collections
import itertools
import struct
import sys
import uuid

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

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
    ids = _little_endian(array.array(typecode, itertools.chain.from_iterable(document)))
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

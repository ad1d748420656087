"""Documents of the language-model job: their keys, their split, their ids.

- `document_key`: a document's identity, the SHA-256 of its text. It
  orders documents in the packed stream and chooses their bucket
  (`pipelines.lm_packing`) and their split, so that all three depend on
  the text alone, never on the runner, the workers or the files' order.
  Identical documents share a key and so a split (a duplicate never
  straddles training and validation) and give identical ids, so their
  relative order changes no byte of the output.
- `SplitDocuments`: keys documents and holds out those whose key falls in
  the first `validation_fraction` of the key space (bytes 8-15 of the
  digest, the bucket using bytes 0-7).
- `TokenizeLanguageModelDocuments`: each keyed document to its ids and
  per-id characters (`pipelines.lm_tokenizers`), the end-of-document id
  appended (1 character), counting documents, tokens, characters and
  unknown tokens under a split's prefix.
"""

import hashlib

import apache_beam as beam
import numpy as np

from pipelines import job, lm_tokenizers

SPLITS = ("train", "validation")
TOKENIZE_COUNTERS = ("documents", "documents_skipped_empty", "tokens",
                     "end_of_document_tokens", "characters", "unknown_tokens")


def document_key(text):
    """The SHA-256 digest (32 bytes) of a document's UTF-8 text.

    Example:

    >>> document_key("ROMEO:\\n").hex()[:16]
    'adc511cab17a648e'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def is_validation(key, validation_fraction):
    """Whether the document of `key` is held out: bytes 8-15 of the key, as
    a fraction of 2**64, are below `validation_fraction`."""
    return int.from_bytes(key[8:16], "big") < validation_fraction * 2**64


def keyed(text):
    """`(document_key(text), text)`."""
    return document_key(text), text


class SplitDocuments(beam.PTransform):
    """Keys documents and splits them into training and validation by key.

    Applied to a PCollection of texts, it returns the PCollections
    `(train, validation)` of `(key, text)` pairs (`document_key`); a
    document is held out when `is_validation(key, validation_fraction)`.

    Args:
        validation_fraction: the share of the key space held out, in
            [0, 1).
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     train, validation = (pipeline | beam.Create(["a", "b", "c", "d"])
    ...                          | SplitDocuments(0.5))
    ...     _ = (validation | beam.Values() | beam.combiners.ToList()
    ...          | beam.Map(lambda texts: print(sorted(texts))))
    ['b', 'c', 'd']
    """

    def __init__(self, validation_fraction, label=None):
        super().__init__(label)
        if not 0 <= validation_fraction < 1:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {validation_fraction}."
            )
        self.validation_fraction = validation_fraction

    def expand(self, texts):
        fraction = self.validation_fraction
        train, validation = (
            texts
            | "Key" >> beam.Map(keyed)
            | "Split" >> beam.Partition(
                lambda pair, _: int(is_validation(pair[0], fraction)), len(SPLITS))
        )
        return train, validation


class _TokenizeDocuments(job.CountingDoFn):
    """`(key, text)` → `(key, (ids, characters))`, the end-of-document id
    appended; documents without ids are counted and dropped."""

    def __init__(self, prefix):
        self._prefix = prefix
        self.COUNTER_NAMES = tuple(prefix + name for name in TOKENIZE_COUNTERS)

    def setup(self):
        self._spec = self._tokenizer = None

    def process(self, keyed_text, spec):
        if spec is not self._spec:
            self._spec, self._tokenizer = spec, lm_tokenizers.document_tokenizer(spec)
        tokenizer, prefix = self._tokenizer, self._prefix
        key, text = keyed_text
        ids, characters = tokenizer.encode(text)
        if not len(ids):
            self.count(prefix + "documents_skipped_empty")
            return
        ids = np.append(ids, np.int32(tokenizer.end_of_document_id))
        characters = np.append(characters, np.int32(1))
        self.count(prefix + "documents")
        self.count(prefix + "tokens", len(ids))
        self.count(prefix + "end_of_document_tokens")
        self.count(prefix + "characters", int(characters.sum()))
        self.count(prefix + "unknown_tokens", int(np.count_nonzero(ids == tokenizer.unknown_id)))
        yield key, (ids, characters)


class TokenizeLanguageModelDocuments(beam.PTransform):
    """Keyed documents in, their ids and per-id characters out.

    Applied to a PCollection of `(key, text)`, it returns two PCollections:
    `(key, (ids, characters))` per document with ids (int32 numpy arrays,
    the end-of-document id last), and a single dict of counts, each name
    prefixed with `split + "_"`: "documents", "documents_skipped_empty"
    (no id), "tokens" (end-of-document ids included),
    "end_of_document_tokens", "characters" and "unknown_tokens".

    Args:
        tokenizer_spec: a single-element PCollection of the
            `lm_tokenizers.TokenizerSpec` (a side input).
        split: "train" or "validation", the counters' prefix.
        label: an optional label for the transform.
    """

    def __init__(self, tokenizer_spec, split, label=None):
        super().__init__(label)
        self.tokenizer_spec = tokenizer_spec
        self.split = split

    def expand(self, keyed_texts):
        prefix = f"{self.split}_"
        tokenized = keyed_texts | "Tokenize" >> beam.ParDo(
            _TokenizeDocuments(prefix), spec=beam.pvalue.AsSingleton(self.tokenizer_spec)
        ).with_outputs(job.COUNTS_TAG, main="documents")
        counts = tokenized[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts([prefix + name for name in TOKENIZE_COUNTERS]))
        return tokenized.documents, counts

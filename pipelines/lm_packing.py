"""Packing tokenized documents into fixed-length causal-LM windows.

A stream is documents, each ending with its end-of-document id, in the
order of their keys (`pipelines.lm_data.document_key`). It is cut
into windows of `sequence_length + 1` ids that overlap by one id: window
`r` holds `stream[r * L : r * L + L + 1]` (`L = sequence_length`), so the
model reads `ids[:-1]` and predicts `ids[1:]`, and every id of the stream
but the first is predicted exactly once (nanoGPT's x/y windows; GPT-2's
training data and Hugging Face's `run_clm` packing concatenate documents
the same way). What does not fill a last window, the tail, is dropped.

For scale, the documents are spread over `ceil(tokens / bucket_tokens)`
buckets by their key, and each bucket is one stream, packed by one worker
holding about `bucket_tokens` ids. So for a split, with `S` buckets that
hold at least one window, `R` windows and `T` tokens:

    T == R * L + S + dropped_tail_tokens

(`S` first ids are read but never predicted; each bucket drops fewer than
`L + 1` ids: a bucket with fewer than `L + 1` ids is all tail.) The stats
check it (`pipelines.lm_data.stats_from_counts`).

`pack_stream` is that cut, as numpy; `PackLanguageModelRecords` the
composite transform from tokenized documents to serialized records
(`tfnlp.data.language_model_schema`).
"""

import math

import apache_beam as beam
import numpy as np

from pipelines import job
from tfnlp.data import language_model_schema

PACK_COUNTERS = ("buckets", "packed_tokens", "records",
                 "predicted_characters", "unpredicted_first_tokens", "dropped_tail_tokens")


def pack_stream(ids, characters, sequence_length):
    """The windows of one stream.

    Args:
        ids: the stream's ids (a 1-D integer array).
        characters: the characters each id stands for (same length).
        sequence_length: `L`; each window holds `L + 1` ids.

    Returns:
        `(windows, window_characters, dropped_tail)`: an int array
        `[R, L + 1]` of the windows (`R = (len(ids) - 1) // L` when
        `len(ids) > L`, else 0), the characters of each window's predicted
        ids `[1:]` (`[R]`), and how many ids at the end are in no window.

    Example:

    >>> windows, characters, tail = pack_stream(np.arange(10), np.ones(10), 3)
    >>> windows.tolist(), characters.tolist(), tail
    ([[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]], [3, 3, 3], 0)
    >>> windows, characters, tail = pack_stream(np.arange(9), np.ones(9), 3)
    >>> windows.tolist(), tail
    ([[0, 1, 2, 3], [3, 4, 5, 6]], 2)
    """
    ids = np.asarray(ids)
    length = int(sequence_length)
    records = (len(ids) - 1) // length if len(ids) > length else 0
    if not records:
        return (np.zeros([0, length + 1], ids.dtype), np.zeros([0], np.int64), len(ids))
    starts = np.arange(records) * length
    windows = ids[starts[:, None] + np.arange(length + 1)]
    cumulative = np.concatenate([[0], np.cumsum(characters, dtype=np.int64)])
    window_characters = cumulative[starts + length + 1] - cumulative[starts + 1]
    return windows, window_characters, len(ids) - (records * length + 1)


def bucket_of(key, total_tokens, bucket_tokens):
    """The bucket of the document with key `key`: one of
    `ceil(total_tokens / bucket_tokens)` (at least 1), by bytes 0-7 of the key."""
    buckets = max(1, math.ceil(total_tokens / bucket_tokens))
    return int.from_bytes(key[:8], "big") % buckets


def _keyed_by_bucket(document, bucket_tokens, total_tokens):
    return bucket_of(document[0], total_tokens, bucket_tokens), document


class _PackBuckets(job.CountingDoFn):
    """Packs one bucket's documents, in key order, into serialized records."""

    def __init__(self, prefix, sequence_length):
        self._prefix = prefix
        self._sequence_length = sequence_length
        self.COUNTER_NAMES = tuple(prefix + name for name in PACK_COUNTERS)

    def process(self, bucket_and_documents):
        _, documents = bucket_and_documents
        documents = sorted(documents, key=lambda document: document[0])
        ids = np.concatenate([document[1][0] for document in documents])
        characters = np.concatenate([document[1][1] for document in documents])
        del documents
        windows, window_characters, tail = pack_stream(ids, characters, self._sequence_length)
        prefix = self._prefix
        self.count(prefix + "buckets")
        self.count(prefix + "packed_tokens", len(ids))
        self.count(prefix + "records", len(windows))
        self.count(prefix + "unpredicted_first_tokens", int(len(windows) > 0))
        self.count(prefix + "predicted_characters", int(window_characters.sum()))
        self.count(prefix + "dropped_tail_tokens", tail)
        for window, count in zip(windows, window_characters):
            yield language_model_schema.serialize_record(window, count)


class PackLanguageModelRecords(beam.PTransform):
    """Tokenized documents in, serialized causal-LM records out.

    Applied to a PCollection of `(key, (ids, characters))` (each document's
    ids ending with its end-of-document id, as
    `lm_data.TokenizeLanguageModelDocuments` gives them), it spreads
    the documents over `ceil(tokens / bucket_tokens)` buckets by key,
    concatenates each bucket's documents in key order and cuts the stream
    into windows (`pack_stream`). It returns two PCollections: the records
    (bytes, `tfnlp.data.language_model_schema`) and a single dict of
    counts, each name prefixed with `split + "_"`: "buckets" (non-empty
    ones), "packed_tokens", "records",
    "predicted_characters", "unpredicted_first_tokens" and
    "dropped_tail_tokens" (see the module docstring for how they add up).

    Args:
        sequence_length: `L`; each record holds `L + 1` ids.
        bucket_tokens: about how many ids a bucket (one worker's stream)
            holds.
        split: "train" or "validation", the counters' prefix.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam, numpy as np
    >>> documents = [(b"\\x01" * 32, (np.array([7, 8, 2]), np.ones(3, np.int32))),
    ...              (b"\\x00" * 32, (np.array([5, 6, 2]), np.ones(3, np.int32)))]
    >>> with beam.Pipeline() as pipeline:
    ...     records, counts = (pipeline | beam.Create(documents)
    ...                        | PackLanguageModelRecords(2, 100, "train"))
    ...     _ = records | beam.Map(lambda record: print(list(
    ...         language_model_schema.example_proto.Example.FromString(record)
    ...         .features.feature["token_ids"].int64_list.value)))
    [5, 6, 2]
    [2, 7, 8]

    References:
        - [nanoGPT](https://github.com/karpathy/nanoGPT) (`data/shakespeare_char/prepare.py`, `get_batch`)
        - [Hugging Face transformers, `run_clm.py`](
          https://github.com/huggingface/transformers/blob/main/examples/pytorch/language-modeling/run_clm.py)
          (`group_texts`)
    """

    def __init__(self, sequence_length, bucket_tokens, split, label=None):
        super().__init__(label)
        if int(sequence_length) < 1:
            raise ValueError(f"sequence_length must be at least 1, got {sequence_length}.")
        if int(bucket_tokens) <= int(sequence_length):
            raise ValueError(
                f"bucket_tokens={bucket_tokens} cannot hold one record of "
                f"sequence_length + 1 = {int(sequence_length) + 1} ids; make it much "
                "larger (each bucket drops up to sequence_length ids at its end)."
            )
        self.sequence_length = int(sequence_length)
        self.bucket_tokens = int(bucket_tokens)
        self.split = split

    def expand(self, documents):
        prefix = f"{self.split}_"
        total_tokens = (
            documents
            | "DocumentTokens" >> beam.Map(lambda document: len(document[1][0]))
            | "TotalTokens" >> beam.CombineGlobally(sum)
        )
        packed = (
            documents
            | "Bucket" >> beam.Map(_keyed_by_bucket, self.bucket_tokens,
                                   total_tokens=beam.pvalue.AsSingleton(total_tokens))
            | "GroupBuckets" >> beam.GroupByKey()
            | "Pack" >> beam.ParDo(_PackBuckets(prefix, self.sequence_length)).with_outputs(
                job.COUNTS_TAG, main="records")
        )
        counts = packed[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts([prefix + name for name in PACK_COUNTERS]))
        return packed.records, counts

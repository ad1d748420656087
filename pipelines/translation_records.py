"""From string pairs to translation records for `python -m pipelines.translation_data`.

`TokenizeTranslationPairs` tokenizes each side of a `(source, target)` pair
with its SentencePiece model (the Python `sentencepiece` package on the
workers), drops pairs, in this order, when either side is empty after
normalization ("empty"), either side has more than `max_length` ids, EOS
included ("too_long"), the longer side has more than `max_length_ratio`
times the subword ids of the shorter ("length_ratio", as Moses'
clean-corpus-n.perl does on words; 0 turns it off), and with `dedupe` when
the pair's record equals an earlier one ("duplicate"), then appends EOS to
both sides and serializes the kept pairs
(`tfnlp.data.translation_schema.serialize_pair`). Every pair is counted:
`TOKENIZE_DROP_REASONS` by reason, and per side of the kept pairs (`SIDES`)
the ids, [UNK] and byte-fallback ids and lengths in bins of `LENGTH_BIN`.
"""

import apache_beam as beam

from pipelines import job, sentencepiece_model
from tfnlp.data import translation_schema

SIDES = ("source", "target")
LENGTH_BIN = 8
TOKENIZE_DROP_REASONS = ("empty", "too_long", "length_ratio", "duplicate")
_SIDE_COUNTS = ("ids", "unk_ids", "byte_ids", "pairs_with_unk", "pairs_with_byte_fallback")
COUNTER_NAMES = (
    "pairs_kept",
    *(f"pairs_dropped_{reason}" for reason in TOKENIZE_DROP_REASONS),
    *(f"{side}_{name}" for side in SIDES for name in _SIDE_COUNTS),
)


class _TokenizePairs(job.CountingDoFn):
    """Tokenizes `(source, target)` pairs and drops those that fail a filter.

    The models come as side inputs (serialized bytes); each is loaded once
    per worker. The output is `(record, summary)` per pair kept, where
    `summary` is `pair_summary`'s tuple.
    """

    COUNTER_NAMES = tuple(f"pairs_dropped_{reason}" for reason in
                          ("empty", "too_long", "length_ratio"))

    def __init__(self, max_length, max_length_ratio):
        self._max_length = max_length
        self._max_length_ratio = max_length_ratio

    def setup(self):
        self._models = {}  # model bytes -> (processor, byte-piece ids)
        self._recent = []  # (bytes object, model): found by identity, no compare

    def _model(self, model_proto):
        for proto, model in self._recent:
            if proto is model_proto:
                return model
        model = self._models.get(model_proto)
        if model is None:
            processor = sentencepiece_model.load_processor(model_proto)
            byte_ids = frozenset(index for index in range(processor.get_piece_size())
                                 if processor.is_byte(index))
            model = self._models[model_proto] = (processor, byte_ids)
        self._recent = [(model_proto, model), *self._recent[:1]]
        return model

    def process(self, pair, source_model, target_model):
        source_processor, source_bytes = self._model(source_model)
        target_processor, target_bytes = self._model(target_model)
        source_ids = source_processor.encode(pair[0])
        target_ids = target_processor.encode(pair[1])
        source_length, target_length = len(source_ids), len(target_ids)
        if not source_length or not target_length:
            self.counts["pairs_dropped_empty"] += 1
            return
        if max(source_length, target_length) + 1 > self._max_length:
            self.counts["pairs_dropped_too_long"] += 1
            return
        ratio = self._max_length_ratio
        if ratio and max(source_length, target_length) > ratio * min(
                source_length, target_length):
            self.counts["pairs_dropped_length_ratio"] += 1
            return
        source_ids.append(translation_schema.EOS_ID)
        target_ids.append(translation_schema.EOS_ID)
        yield (
            translation_schema.serialize_pair(source_ids, target_ids),
            pair_summary(source_ids, source_bytes) + pair_summary(target_ids, target_bytes),
        )


def pair_summary(ids, byte_ids):
    """`(length, unk_ids, byte_ids)` of one side's ids (EOS included in the
    length, counted in neither share)."""
    return (
        len(ids),
        sum(1 for index in ids if index == translation_schema.UNK_ID),
        sum(1 for index in ids if index in byte_ids),
    )


class _KeepOne(beam.CombineFn):
    """Keeps one value per key and counts the values: `(value, count)`."""

    def create_accumulator(self):
        return None, 0

    def add_input(self, accumulator, value):
        kept, count = accumulator
        return (value if kept is None else kept), count + 1

    def merge_accumulators(self, accumulators):
        kept, total = None, 0
        for value, count in accumulators:
            if kept is None:
                kept = value
            total += count
        return kept, total

    def extract_output(self, accumulator):
        return accumulator


class _CountDuplicates(job.CountingDoFn):
    """`(record, (summary, count))` -> `(record, summary)`, counting the
    `count - 1` duplicates dropped."""

    COUNTER_NAMES = ("pairs_dropped_duplicate",)

    def process(self, keyed):
        record, (summary, count) = keyed
        self.counts["pairs_dropped_duplicate"] += count - 1
        yield record, summary


class _CountKeptPairs(job.CountingDoFn):
    """Counts the kept pairs (lengths, [UNK] and byte pieces per side) and
    yields their records."""

    COUNTER_NAMES = COUNTER_NAMES

    def process(self, record_and_summary):
        record, summary = record_and_summary
        counts = self.counts
        counts["pairs_kept"] += 1
        for side, (length, unknown, byte_pieces) in zip(
                SIDES, (summary[:3], summary[3:])):
            counts[f"{side}_ids"] += length - 1
            counts[f"{side}_unk_ids"] += unknown
            counts[f"{side}_byte_ids"] += byte_pieces
            counts[f"{side}_pairs_with_unk"] += unknown > 0
            counts[f"{side}_pairs_with_byte_fallback"] += byte_pieces > 0
            self.count(f"{side}_length_bin_{(length - 1) // LENGTH_BIN}")
        yield record


class TokenizeTranslationPairs(beam.PTransform):
    """String pairs in, serialized translation records out, every pair counted.

    Applied to a PCollection of `(source, target)` string pairs, it
    tokenizes each side with its SentencePiece model (the Python
    `sentencepiece` package: the ids of `tfnlp.text.SentencePieceTokenizer`
    with the same model), drops pairs by the rules of the module docstring
    ("empty", "too_long", "length_ratio", and with `dedupe` "duplicate"),
    appends EOS to both sides and serializes the kept pairs with
    `tfnlp.data.translation_schema.serialize_pair`.

    It returns two PCollections: the records (bytes, in no particular
    order) and a single dict of counts: "pairs_kept",
    "pairs_dropped_<reason>", and per side ("source_", "target_") "ids"
    (without EOS), "unk_ids", "byte_ids", "pairs_with_unk",
    "pairs_with_byte_fallback" and "length_bin_<b>" (kept pairs whose side
    has `8 b + 1` to `8 b + 8` ids, EOS included). So
    `len(pairs) == pairs_kept + sum of the drops`.

    Args:
        source_model: a single-element PCollection of the source model's
            bytes (a `.model` file's contents), used as a side input.
        target_model: the same for the target side (the same PCollection
            for a shared model).
        max_length: the most ids a side may have, EOS included.
        max_length_ratio: the most times the longer side's subword ids may
            outnumber the shorter side's (0: no limit).
        dedupe: keep one of each set of pairs with identical records.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> from pipelines import sentencepiece_model
    >>> model = sentencepiece_model.train_sentencepiece(
    ...     [f"a small sentence {i}" for i in range(200)],
    ...     sentencepiece_model.SentencePieceOptions(vocab_size=280))
    >>> with beam.Pipeline() as pipeline:
    ...     models = pipeline | "Model" >> beam.Create([model])
    ...     records, counts = (
    ...         pipeline | beam.Create([("a small sentence", "a sentence"), ("", "x")])
    ...         | TokenizeTranslationPairs(models, models, max_length=16))
    ...     _ = counts | beam.Map(lambda c: print(c["pairs_kept"], c["pairs_dropped_empty"]))
    1 1

    References:
        - [Kudo & Richardson, 2018. SentencePiece](https://arxiv.org/abs/1808.06226)
        - [Koehn et al., 2007. Moses: Open Source Toolkit for Statistical
          Machine Translation](https://aclanthology.org/P07-2045)
          (clean-corpus-n.perl's length and ratio filters)
    """

    def __init__(self, source_model, target_model, max_length, max_length_ratio=9.0,
                 dedupe=False, label=None):
        super().__init__(label)
        self.source_model = source_model
        self.target_model = target_model
        self.max_length = max_length
        self.max_length_ratio = max_length_ratio
        self.dedupe = dedupe

    def expand(self, pairs):
        tokenized = pairs | "Tokenize" >> beam.ParDo(
            _TokenizePairs(self.max_length, self.max_length_ratio),
            source_model=beam.pvalue.AsSingleton(self.source_model),
            target_model=beam.pvalue.AsSingleton(self.target_model),
        ).with_outputs(job.COUNTS_TAG, main="records")
        records, counts = tokenized.records, [tokenized[job.COUNTS_TAG]]
        if self.dedupe:
            deduplicated = (
                records
                | "KeepOnePerRecord" >> beam.CombinePerKey(_KeepOne())
                | "CountDuplicates" >> beam.ParDo(_CountDuplicates()).with_outputs(
                    job.COUNTS_TAG, main="records")
            )
            records = deduplicated.records
            counts.append(deduplicated[job.COUNTS_TAG])
        kept = records | "CountKept" >> beam.ParDo(_CountKeptPairs()).with_outputs(
            job.COUNTS_TAG, main="records")
        counts.append(kept[job.COUNTS_TAG])
        summed = (
            counts
            | "AllCounts" >> beam.Flatten()
            | "SumCounts" >> beam.CombineGlobally(job.SumCounts(COUNTER_NAMES))
        )
        return kept.records, summed


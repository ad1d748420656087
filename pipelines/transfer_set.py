"""The texts of a distillation transfer set, before the teacher labels them.

Tang et al. (2019) distil a fine-tuned BERT into a small student on a
transfer set: the labelled training texts, synthetic texts made from them
(`tfnlp.text.augmentation.TransferSetAugmenter`), and any unlabelled
in-domain text. This module makes that set of distinct texts; the teacher
(`pipelines.teacher_inference`) then gives each its logits.

- `normalize_text`: the text a record holds: its words joined by single
  spaces (the teacher's WordPiece tokenizer splits at whitespace, so the
  spacing changes none of its inputs), which is also what makes two texts
  equal here.
- `prepare_labelled_texts`: the labelled examples, read on the driver
  (`tfnlp.data.labelled_files.read_classification`), to one `(text, class_id)`
  per distinct text: excluded texts dropped, the first of equal texts kept;
  every row counted.
- `DropExcludedTexts`: texts in, their normalized form out, those equal to
  an excluded text (a dev or test set's) dropped and counted.
- `AugmentTexts`: labelled texts in, the augmenter's synthetic texts out,
  with its statistics as counts.
- `SelectTransferTexts`: one record per distinct text over the origins,
  the earliest origin of `ORIGINS` winning (a labelled text over the same
  text augmented or unlabelled), each text keyed by its SHA-256.

Every transform returns its texts and a single dict of counts
(`pipelines.job`): the stats of `pipelines.distillation_data` add up from
them.
"""

import hashlib

import apache_beam as beam

from pipelines import job
from tfnlp.data.distillation_schema import NO_LABEL, ORIGINS

LABELLED, AUGMENTED, UNLABELLED = ORIGINS
AUGMENTATION_COUNTERS = ("sentences", "candidates", "emitted", "dropped_duplicates",
                         "dropped_excluded")


def normalize_text(text):
    """`text`'s words (split at whitespace) joined by single spaces.

    Example:

    >>> normalize_text("  a\\tfine   film ")
    'a fine film'
    """
    return " ".join(text.split())


def text_key(text):
    """The SHA-256 digest (32 bytes) of a text's UTF-8 bytes: its identity
    in the transfer set, what orders and shards it.

    Example:

    >>> text_key("a fine film").hex()[:16]
    'bac6d0ff1e0a93ed'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def prepare_labelled_texts(examples, labels, excluded_texts):
    """The distinct labelled texts, in the order first read, with counts.

    Args:
        examples: `(text, label)` pairs in file order (the label a string
            of `labels`).
        labels: the label list; a label's class id is its index.
        excluded_texts: a set of normalized texts never to keep.

    Returns:
        `(texts, counts)`: a list of `(normalized text, class id)`, one per
        distinct text (the first row of equal texts gives the label), and
        a dict: "labelled_examples" (rows given), "labelled_excluded"
        (equal to an excluded text), "labelled_repeated" (equal to an
        earlier row) and "labelled_conflicting_labels" (of those repeated,
        the rows whose label differs from the kept one).

    Raises:
        ValueError: a label is not in `labels`.

    Example:

    >>> texts, counts = prepare_labelled_texts(
    ...     [("good  film", "pos"), ("bad", "neg"), ("good film", "neg"), ("dev", "pos")],
    ...     ["neg", "pos"], {"dev"})
    >>> texts
    [('good film', 1), ('bad', 0)]
    >>> counts["labelled_repeated"], counts["labelled_conflicting_labels"]
    (1, 1)
    """
    class_ids = {label: index for index, label in enumerate(labels)}
    counts = dict.fromkeys(("labelled_examples", "labelled_excluded", "labelled_repeated",
                            "labelled_conflicting_labels"), 0)
    kept = {}
    for text, label in examples:
        counts["labelled_examples"] += 1
        if label not in class_ids:
            raise ValueError(
                f"The label {label!r} of {text[:60]!r} is not one of the teacher's labels "
                f"{list(labels)}. Read the file with that label list, so that such rows "
                "are skipped as unknown.")
        text = normalize_text(text)
        if text in excluded_texts:
            counts["labelled_excluded"] += 1
        elif text in kept:
            counts["labelled_repeated"] += 1
            counts["labelled_conflicting_labels"] += kept[text] != class_ids[label]
        else:
            kept[text] = class_ids[label]
    return list(kept.items()), counts


class _DropExcluded(job.CountingDoFn):
    """text → its normalized text, unless excluded (counted)."""

    def __init__(self, excluded_texts, origin):
        self._excluded = frozenset(excluded_texts)
        self._counter = f"{origin}_excluded"
        self.COUNTER_NAMES = (self._counter,)

    def process(self, text):
        text = normalize_text(text)
        if text in self._excluded:
            self.counts[self._counter] += 1
            return
        yield text


class DropExcludedTexts(beam.PTransform):
    """Normalizes texts and drops those equal to an excluded text.

    Applied to a PCollection of texts (str), it returns two PCollections:
    the normalized texts (`normalize_text`) that are not in
    `excluded_texts`, and a single dict of counts, `{origin}_excluded`: the
    texts dropped.

    Args:
        excluded_texts: the normalized texts never to keep (a dev or test
            set's: none of them may reach the student's training data).
        origin: the texts' origin (`ORIGINS`), the counter's prefix.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     texts, counts = (pipeline | beam.Create(["a  b", "dev text", "c"])
    ...                      | DropExcludedTexts({"dev text"}, "unlabelled"))
    ...     _ = counts | beam.Map(print)
    {'unlabelled_excluded': 1}

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
    """

    def __init__(self, excluded_texts, origin, label=None):
        super().__init__(label)
        if origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}, got {origin!r}.")
        self.excluded_texts = frozenset(excluded_texts)
        self.origin = origin

    def expand(self, texts):
        kept = texts | "DropExcluded" >> beam.ParDo(
            _DropExcluded(self.excluded_texts, self.origin)).with_outputs(
                job.COUNTS_TAG, main="texts")
        counts = kept[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts([f"{self.origin}_excluded"]))
        return kept.texts, counts


class _Augment(job.CountingDoFn):
    """text → the augmenter's samples of its words, joined by spaces; the
    augmenter's statistics are the bundle's counts."""

    COUNTER_NAMES = tuple(f"augmentation_{name}" for name in AUGMENTATION_COUNTERS)

    def __init__(self, augmenter):
        self._augmenter = augmenter

    def start_bundle(self):
        super().start_bundle()
        self._start = self._statistics()

    def _statistics(self):
        statistics = self._augmenter.statistics
        return {name: getattr(statistics, name) for name in AUGMENTATION_COUNTERS}

    def process(self, text):
        for words in self._augmenter.augment(text.split()):
            yield " ".join(words)

    def finish_bundle(self):
        end = self._statistics()
        for name in AUGMENTATION_COUNTERS:
            self.count(f"augmentation_{name}", end[name] - self._start[name])
        yield from super().finish_bundle()


class AugmentTexts(beam.PTransform):
    """The synthetic texts of the transfer set, made from the labelled texts.

    Applied to a PCollection of normalized texts, it returns two
    PCollections: the synthetic texts (each sample's words joined by single
    spaces; up to `augmenter.samples_per_sentence` per text, none equal to
    its text, to one another or to an excluded sentence of the augmenter),
    and a single dict of counts "augmentation_<name>" for the augmenter's
    statistics: "sentences", "candidates", "emitted", "dropped_duplicates"
    and "dropped_excluded" (`candidates == emitted + dropped_duplicates +
    dropped_excluded`). A text's samples depend on the text and the
    augmenter's seed alone, so on no runner or worker.

    Args:
        augmenter: a `tfnlp.text.augmentation.TransferSetAugmenter` (its
            word counts, probabilities, seed and excluded sentences); each
            worker uses its own copy.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> from tfnlp.text.augmentation import TransferSetAugmenter
    >>> augmenter = TransferSetAugmenter(
    ...     {"a": 1}, mask_probability=1.0, swap_probability=0.0,
    ...     ngram_probability=0.0, samples_per_sentence=2)
    >>> with beam.Pipeline() as pipeline:
    ...     texts, counts = pipeline | beam.Create(["a b"]) | AugmentTexts(augmenter)
    ...     _ = texts | beam.Map(print)
    [MASK] [MASK]

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
          (section 3.2)
    """

    def __init__(self, augmenter, label=None):
        super().__init__(label)
        self.augmenter = augmenter

    def expand(self, texts):
        augmented = texts | "Augment" >> beam.ParDo(_Augment(self.augmenter)).with_outputs(
            job.COUNTS_TAG, main="texts")
        counts = augmented[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts(_Augment.COUNTER_NAMES))
        return augmented.texts, counts


class _KeyText(job.CountingDoFn):
    """`(text, label)` → `(key, (origin rank, label, text))`, counted."""

    def __init__(self, origin):
        self._rank = ORIGINS.index(origin)
        self._counter = f"{origin}_texts"
        self.COUNTER_NAMES = (self._counter,)

    def process(self, text_and_label):
        text, label = text_and_label
        self.counts[self._counter] += 1
        yield text_key(text), (self._rank, label, text)


class _SelectOne(job.CountingDoFn):
    """`(key, candidates)` → `(key, origin, text, label)` of the winner;
    the others counted as their origin's duplicates."""

    COUNTER_NAMES = tuple(f"{origin}_{name}" for origin in ORIGINS
                          for name in ("selected", "duplicates"))

    def process(self, key_and_candidates):
        key, candidates = key_and_candidates
        candidates = sorted(candidates)
        rank, label, text = candidates[0]
        self.counts[f"{ORIGINS[rank]}_selected"] += 1
        for other_rank, _, _ in candidates[1:]:
            self.counts[f"{ORIGINS[other_rank]}_duplicates"] += 1
        yield key, ORIGINS[rank], text, label


def _without_label(text):
    return text, NO_LABEL


class SelectTransferTexts(beam.PTransform):
    """One transfer-set text per distinct text, over every origin.

    Applied to a dict `{origin: PCollection}` (origins of `ORIGINS`; the
    labelled texts as `(text, class_id)` pairs, the others as texts), it
    returns two PCollections: `(key, origin, text, label)` for each
    distinct text (`key` its `text_key`; `label` the class id of a
    labelled text, else `NO_LABEL`), and a single dict of counts per
    origin: "{origin}_texts" (given), "{origin}_selected" and
    "{origin}_duplicates" (`texts == selected + duplicates`). Of equal
    texts, the one of the earliest origin in `ORIGINS` is kept ("labelled",
    then "augmented", then "unlabelled"), then the smallest label; so the
    choice depends on the texts alone.

    Args:
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     selected, counts = {
    ...         "labelled": pipeline | "Labelled" >> beam.Create([("a b", 1)]),
    ...         "augmented": pipeline | "Augmented" >> beam.Create(["a b", "a"]),
    ...     } | SelectTransferTexts()
    ...     _ = (selected | beam.Map(lambda row: row[1:]) | beam.combiners.ToList()
    ...          | beam.Map(lambda rows: print(sorted(rows))))
    [('augmented', 'a', -1), ('labelled', 'a b', 1)]

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
    """

    def expand(self, texts_by_origin):
        unknown = set(texts_by_origin) - set(ORIGINS)
        if unknown:
            raise ValueError(f"Unknown origins {sorted(unknown)}; expected some of {ORIGINS}.")
        keyed, counts = [], []
        for origin, texts in sorted(texts_by_origin.items(),
                                    key=lambda item: ORIGINS.index(item[0])):
            name = origin.capitalize()
            if origin != LABELLED:
                texts = texts | f"NoLabel{name}" >> beam.Map(_without_label)
            keyed_texts = texts | f"Key{name}" >> beam.ParDo(_KeyText(origin)).with_outputs(
                job.COUNTS_TAG, main="keyed")
            keyed.append(keyed_texts.keyed)
            counts.append(keyed_texts[job.COUNTS_TAG])
        selected = (
            keyed
            | "AllTexts" >> beam.Flatten()
            | "GroupEqualTexts" >> beam.GroupByKey()
            | "SelectOne" >> beam.ParDo(_SelectOne()).with_outputs(
                job.COUNTS_TAG, main="selected")
        )
        counts.append(selected[job.COUNTS_TAG])
        summed = (counts | "AllCounts" >> beam.Flatten()
                  | "SumCounts" >> beam.CombineGlobally(job.SumCounts(
                      [f"{origin}_{name}" for origin in texts_by_origin
                       for name in ("texts", "selected", "duplicates")])))
        return selected.selected, summed

"""The teacher of a distillation transfer set: its export, checked before
the job, and its logits for every text, with Beam's `RunInference`.

`describe_teacher_export` checks the export on the driver,
`TeacherBatches` forms the teacher's batches, `TeacherModelHandler` runs the
export on each worker, and `LabelTransferSet` turns the transfer-set texts
into distillation records (`tfnlp.data.distillation_schema`).
"""

import dataclasses
import os

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import (KeyedModelHandler, ModelHandler, PredictionResult,
                                           RunInference)

from pipelines import job
from pipelines.user_errors import UserError
from tfnlp.data.distillation_schema import NO_LABEL, ORIGINS, serialize_record

SIGNATURE_NAME = "serving_default"
TEXT_INPUT = "text"
LOGITS_OUTPUT = "logits"
LABELLED = ORIGINS[0]


@dataclasses.dataclass(frozen=True)
class TeacherExport:
    """A teacher's SavedModel, as `describe_teacher_export` found it.

    Attributes:
        path: the version directory (holding `saved_model.pb`).
        num_classes: the classes of its `logits` (None when the shape does
            not say).
        labels: the label list the export records
            (`assets.extra/labels.json`), or None.
    """

    path: str
    num_classes: int
    labels: tuple = None


def saved_model_version(path):
    """The SavedModel directory of `path`: `path` itself when it holds a
    `saved_model.pb`, else its newest numbered version (TensorFlow
    Serving's layout, `tfnlp.export.versions`).

    Raises:
        FileNotFoundError: `path` holds neither.
    """
    import tensorflow as tf

    from tfnlp.export.versions import version_paths

    if tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = version_paths(path)
    if not versions:
        raise FileNotFoundError(
            f"--teacher_export={path} holds no SavedModel: no saved_model.pb and no "
            "numbered version directory with one. Pass the --export_dir of "
            "trainer.finetune (or of trainer.export), or one of its versions.")
    return versions[max(versions)]


def describe_teacher_export(path):
    """Checks a teacher's export from its `saved_model.pb`, without loading it.

    The export is a classifier's SavedModel (the `--export_dir` of
    `trainer.finetune`, or `trainer.export`'s), checked on the driver (no
    variables loaded): its `serving_default` must take a string `text` and
    give float32 `logits` of `[batch, classes]`.

    Args:
        path: an export directory (its newest version is used) or one
            version of it.

    Returns:
        The `TeacherExport`.

    Raises:
        FileNotFoundError: no SavedModel at `path`.
        ValueError: the SavedModel has no `serving_default` that takes a
            string `text` and gives float32 `logits` of `[batch, classes]`;
            or its `labels.json` is not a list of strings.
    """
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    from tfnlp.export.saved_model import read_export_labels

    version = saved_model_version(path)
    with tf.io.gfile.GFile(os.path.join(version, "saved_model.pb"), "rb") as file:
        saved_model = saved_model_pb2.SavedModel.FromString(file.read())
    signatures = saved_model.meta_graphs[0].signature_def if saved_model.meta_graphs else {}
    if SIGNATURE_NAME not in signatures:
        raise ValueError(
            f"The teacher {version} has no {SIGNATURE_NAME} signature (it has "
            f"{sorted(signatures)}); expected a classifier exported with text "
            "signatures by trainer.finetune --export_dir or trainer.export.")
    signature = signatures[SIGNATURE_NAME]
    text = signature.inputs.get(TEXT_INPUT)
    if text is None or text.dtype != tf.string.as_datatype_enum:
        raise ValueError(
            f"The teacher {version}'s {SIGNATURE_NAME} does not take a string "
            f"{TEXT_INPUT!r} input (its inputs are {sorted(signature.inputs)}); expected "
            "a BERT classifier exported with text signatures (not --notext_signatures).")
    logits = signature.outputs.get(LOGITS_OUTPUT)
    dimensions = [] if logits is None else [size.size for size in logits.tensor_shape.dim]
    if logits is None or logits.dtype != tf.float32.as_datatype_enum or len(dimensions) != 2:
        raise ValueError(
            f"The teacher {version}'s {SIGNATURE_NAME} has no float32 {LOGITS_OUTPUT!r} "
            f"output of shape [batch, classes] (its outputs are "
            f"{sorted(signature.outputs)}). Export the sequence classifier again with "
            "this version of tfnlp (trainer.export --model_dir=RUN), which adds it.")
    labels = read_export_labels(version)
    return TeacherExport(version, dimensions[1] if dimensions[1] > 0 else None,
                         None if labels is None else tuple(labels))


class TeacherModelHandler(ModelHandler):
    """Beam's model handler for a classifier export's logits of raw texts.

    `load_model` loads the SavedModel (TensorFlow and the tensorflow-text
    ops on the worker, once per process: `RunInference` shares it between
    threads). Each element is one batch of texts, a tuple of str formed
    upstream (`TeacherBatches`); `run_inference` calls `serving_default`
    once per element and returns a `PredictionResult` per element whose
    `inference` is the float32 logits of its texts (`[texts, classes]`).
    `RunInference` hands it one element at a time.

    Why not Beam's `TFModelHandlerTensor` (`apache_beam.ml.inference.
    tensorflow_inference`): that module imports `tensorflow_hub`, which
    tfnlp does not depend on, and its handler loads the model with
    `tf.keras.models.load_model`, which under Keras 3 loads `.keras` files
    only, not a SavedModel of `tf.Module` signatures. Subclassing Beam's
    `ModelHandler` lets `RunInference` share the model between a worker's
    threads and report its metrics as it does for its own handlers.

    Args:
        saved_model_dir: the SavedModel's version directory
            (`TeacherExport.path`).
        signature_name: the signature to call; it takes `text` (a string
            `[batch]`).
        output_name: its output of float32 `[batch, classes]`.

    Example:

    >>> handler = TeacherModelHandler("export/1")
    >>> handler.batch_elements_kwargs()
    {'min_batch_size': 1, 'max_batch_size': 1}

    References:
        - [Beam RunInference](https://beam.apache.org/documentation/ml/about-ml/)
    """

    def __init__(self, saved_model_dir, signature_name=SIGNATURE_NAME,
                 output_name=LOGITS_OUTPUT):
        super().__init__(min_batch_size=1, max_batch_size=1)
        self.saved_model_dir = saved_model_dir
        self.signature_name = signature_name
        self.output_name = output_name

    def load_model(self):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401 (the text signature's tokenizer ops)

        return tf.saved_model.load(self.saved_model_dir)

    def run_inference(self, batch, model, inference_args=None):
        import tensorflow as tf

        signature = model.signatures[self.signature_name]
        return [PredictionResult(texts, signature(**{TEXT_INPUT: tf.constant(list(texts))})[
                    self.output_name].numpy()) for texts in batch]

    def get_num_bytes(self, batch):
        return sum(len(text.encode("utf-8")) for texts in batch for text in texts)

    def get_metrics_namespace(self):
        return "tfnlp_teacher"


# Texts longer than this many words share one group of `TeacherBatches`.
LONGEST_GROUPED_LENGTH = 64
# Each word count's texts are split into this many groups by a byte of
# their key, so that a runner has groups to spread over its workers.
KEY_GROUPS = 16


def teacher_batch_group(row):
    """`(group, row)` of a `(key, origin, text, label)` row: its text's word
    count (at most `LONGEST_GROUPED_LENGTH`) and its key's first byte
    modulo `KEY_GROUPS`.

    Example:

    >>> teacher_batch_group((bytes([17]), "labelled", "a fine film", 1))[0]
    (3, 1)
    """
    key, _, text, _ = row
    return (min(len(text.split()), LONGEST_GROUPED_LENGTH), key[0] % KEY_GROUPS), row


def cut_into_batches(group_rows, batch_size):
    """`(group, rows)` → `(row keys, texts)` per batch: the rows sorted by
    key, cut into batches of `batch_size` (the last may be smaller); row
    keys are the `(key, origin, label)` of each text."""
    _, rows = group_rows
    rows = sorted(rows, key=lambda row: row[0])
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        yield (tuple((key, origin, label) for key, origin, _, label in batch),
               tuple(text for _, _, text, _ in batch))


class TeacherBatches(beam.PTransform):
    """The teacher's batches of the transfer-set texts, the same whatever
    the runner, its bundles or its number of workers.

    Applied to a PCollection of `(key, origin, text, label)` rows with
    distinct keys, it returns `(row keys, texts)` per batch: texts grouped
    by `teacher_batch_group`, each group sorted by key and cut into
    batches of `batch_size`; row keys are the `(key, origin, label)` of
    each text, in the same order.

    Why the batches are formed here rather than by `RunInference`'s own
    `BatchElements`: a float's last bits depend on the shapes it was
    computed in and on its row's place in them, and a classifier's text
    signature cuts its batch to the longest text in it
    (`tfnlp.export.bert_signatures.trim_to_longest`). Batches that a runner
    formed from whatever its bundles held would give a text other bits on
    another runner or with another number of workers. Grouping the texts by
    word count and a byte of their key, sorting each group by key and
    cutting it into batches makes the batches, and so every logit's bits,
    depend on the set of texts alone. Texts of one word count have close
    WordPiece lengths, so little of a batch is padding.

    Args:
        batch_size: the most texts of a batch.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> rows = [(bytes([index]), "augmented", "a fine film", -1) for index in (32, 0, 16)]
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (pipeline | beam.Create(rows) | TeacherBatches(batch_size=2)
    ...          | beam.Map(lambda batch: print([key[0][0] for key in batch[0]])))
    [0, 16]
    [32]

    References:
        - [Beam RunInference](https://beam.apache.org/documentation/ml/about-ml/)
    """

    def __init__(self, batch_size, label=None):
        super().__init__(label)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        self.batch_size = int(batch_size)

    def expand(self, rows):
        return (rows
                | "KeyByGroup" >> beam.Map(teacher_batch_group)
                | "GroupTexts" >> beam.GroupByKey()
                | "CutBatches" >> beam.FlatMap(cut_into_batches, self.batch_size))


def _each_text(batch_result):
    """`(row keys, PredictionResult of the batch)` → `(row key,
    PredictionResult of one text)` per text."""
    row_keys, result = batch_result
    if len(result.inference) != len(row_keys):
        raise UserError(
            f"The teacher gave {len(result.inference)} rows of logits for a batch of "
            f"{len(row_keys)} texts; expected one row per text. Check --teacher_export.")
    for row_key, text, logits in zip(row_keys, result.example, result.inference):
        yield row_key, PredictionResult(text, logits)


class _SerializeRecords(job.CountingDoFn):
    """`((key, origin, label), PredictionResult)` → the serialized record."""

    def __init__(self, num_classes):
        self._num_classes = num_classes
        self.COUNTER_NAMES = (
            "labelled_teacher_agrees",
            *(f"{origin}_written" for origin in ORIGINS),
            *(f"{origin}_teacher_class_{index}" for origin in ORIGINS
              for index in range(num_classes)))

    def process(self, keyed_result):
        (_, origin, label), result = keyed_result
        logits = np.asarray(result.inference, np.float32)
        if logits.shape != (self._num_classes,):
            raise UserError(
                f"The teacher gave logits of shape {logits.shape} for {result.example!r}; "
                f"expected ({self._num_classes},), one per label. Check --teacher_export "
                "and --labels.")
        predicted = int(np.argmax(logits))
        self.counts[f"{origin}_written"] += 1
        self.counts[f"{origin}_teacher_class_{predicted}"] += 1
        if label != NO_LABEL:
            self.counts["labelled_teacher_agrees"] += predicted == label
        yield serialize_record(result.example, logits.tolist(), label, origin)


class LabelTransferSet(beam.PTransform):
    """The teacher's logits for each transfer-set text, as distillation records.

    Applied to a PCollection of `(key, origin, text, label)`
    (`transfer_set.SelectTransferTexts`'s), it forms the teacher's batches
    (`TeacherBatches`), runs the teacher on them with `RunInference`
    (through a `KeyedModelHandler`, so that each batch's logits travel
    with its texts' keys, origins and labels) and returns two
    PCollections: the serialized `tf.train.Example` of each text
    (`tfnlp.data.distillation_schema.serialize_record`), and a single dict
    of counts: "{origin}_written", "{origin}_teacher_class_{i}" (the
    teacher's argmax) and "labelled_teacher_agrees" (labelled texts whose
    argmax is their gold label).

    Args:
        model_handler: the `ModelHandler` of the teacher (a
            `TeacherModelHandler`; any handler that takes a tuple of texts
            per element and gives a row of `num_classes` logits per text).
        num_classes: the number of logits per text.
        batch_size: the most texts of one teacher call.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> class LengthTeacher(ModelHandler):
    ...     def load_model(self):
    ...         return None
    ...     def run_inference(self, batch, model, inference_args=None):
    ...         return [PredictionResult(texts, [[len(text), 0.0] for text in texts])
    ...                 for texts in batch]
    >>> with beam.Pipeline() as pipeline:
    ...     records, counts = (pipeline | beam.Create([(b"k", "labelled", "ab", 0)])
    ...                        | LabelTransferSet(LengthTeacher(), num_classes=2,
    ...                                           batch_size=8))
    ...     _ = counts | beam.Map(lambda counts: print(counts["labelled_teacher_agrees"]))
    1

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Beam RunInference](https://beam.apache.org/documentation/ml/about-ml/)
    """

    def __init__(self, model_handler, num_classes, batch_size, label=None):
        super().__init__(label)
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}.")
        self.model_handler = model_handler
        self.num_classes = int(num_classes)
        self.batch_size = int(batch_size)

    def expand(self, texts):
        serialize = _SerializeRecords(self.num_classes)
        records = (
            texts
            | "Batches" >> TeacherBatches(self.batch_size)
            | "Teacher" >> RunInference(KeyedModelHandler(self.model_handler))
            | "EachText" >> beam.FlatMap(_each_text)
            | "Serialize" >> beam.ParDo(serialize).with_outputs(job.COUNTS_TAG, main="records")
        )
        counts = records[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts(serialize.COUNTER_NAMES))
        return records.records, counts

"""The teacher of a distillation transfer set: its export, checked before
the job, and its logits for every text, with Beam's `RunInference`.

- `TeacherExport` / `describe_teacher_export`: a classifier's SavedModel
  (the `--export_dir` of `trainer.finetune`, or `trainer.export`'s),
  checked on the driver from its `saved_model.pb` alone (no variables
  loaded): its `serving_default` must take a string `text` and give float32
  `logits` of `[batch, classes]`.
- `TeacherModelHandler`: the `RunInference` model handler that loads the
  export on each worker and calls `serving_default` on a batch of texts.
- `LabelTransferSet`: the transfer-set texts
  (`pipelines.transfer_set.SelectTransferTexts`'s) in, their serialized
  distillation records (`tfnlp.data.distillation_schema`) out, counting
  the records per origin, the teacher's predicted classes and its
  agreement with the gold labels.

Why not Beam's `TFModelHandlerTensor` (`apache_beam.ml.inference.
tensorflow_inference`): that module imports `tensorflow_hub`, which tfnlp
does not depend on, and its handler loads the model with
`tf.keras.models.load_model`, which under Keras 3 loads `.keras` files
only, not a SavedModel of `tf.Module` signatures. This handler subclasses
Beam's `ModelHandler` instead, with the same batching arguments, so
`RunInference` batches, shares the model between a worker's threads and
reports its metrics as it does for its own handlers.

Each text is its own call of the signature (one row): a classifier's
text signature cuts its batch to the longest text (`tfnlp.export.
bert_signatures.trim_to_longest`), and a float's last bits depend on the
shapes it was computed in, so a text batched with others could get other
bits than alone. Alone, a text's logits depend on the text alone, not on
which texts a runner happened to batch with it or how many, and the
shards are the same bytes whatever the number of workers.
"""

import dataclasses
import os

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import (KeyedModelHandler, ModelHandler, PredictionResult,
                                           RunInference)

from pipelines import job
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
    threads); `run_inference` calls `serving_default` on each text (str)
    of a batch alone, and returns a `PredictionResult` per text whose
    `inference` is its float32 logits (`[classes]`). `RunInference`
    batches exactly `batch_size` texts where a bundle has them (the
    handler's `min_batch_size` and `max_batch_size`).

    Args:
        saved_model_dir: the SavedModel's version directory
            (`TeacherExport.path`).
        batch_size: the texts `RunInference` hands `run_inference` at once.
        signature_name: the signature to call; it takes `text` (a string
            `[batch]`).
        output_name: its output of float32 `[batch, classes]`.

    Example:

    >>> handler = TeacherModelHandler("export/1", batch_size=32)
    >>> handler.batch_elements_kwargs()
    {'min_batch_size': 32, 'max_batch_size': 32}

    References:
        - [Beam RunInference](https://beam.apache.org/documentation/ml/about-ml/)
    """

    def __init__(self, saved_model_dir, batch_size, signature_name=SIGNATURE_NAME,
                 output_name=LOGITS_OUTPUT):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        super().__init__(min_batch_size=batch_size, max_batch_size=batch_size)
        self.saved_model_dir = saved_model_dir
        self.batch_size = int(batch_size)
        self.signature_name = signature_name
        self.output_name = output_name

    def load_model(self):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401 (the text signature's tokenizer ops)

        return tf.saved_model.load(self.saved_model_dir)

    def run_inference(self, batch, model, inference_args=None):
        import tensorflow as tf

        signature = model.signatures[self.signature_name]
        results = []
        for text in batch:
            outputs = signature(**{TEXT_INPUT: tf.constant([text])})
            results.append(PredictionResult(text, outputs[self.output_name].numpy()[0]))
        return results

    def get_num_bytes(self, batch):
        return sum(len(text.encode("utf-8")) for text in batch)

    def get_metrics_namespace(self):
        return "tfnlp_teacher"


def _teacher_input(row):
    """`(key, origin, text, label)` → `((key, origin, label), text)`: the
    keyed example of `KeyedModelHandler`, the key carried through."""
    key, origin, text, label = row
    return (key, origin, label), text


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
            raise RuntimeError(
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
    (`transfer_set.SelectTransferTexts`'s), it runs the teacher with
    `RunInference` (through a `KeyedModelHandler`, so that each text's
    logits travel with its own key, origin and label) and returns two
    PCollections: the serialized `tf.train.Example` of each text
    (`tfnlp.data.distillation_schema.serialize_record`), and a single dict
    of counts: "{origin}_written", "{origin}_teacher_class_{i}" (the
    teacher's argmax) and "labelled_teacher_agrees" (labelled texts whose
    argmax is their gold label).

    Args:
        model_handler: the `ModelHandler` of the teacher (a
            `TeacherModelHandler`; any handler whose `inference` is a row
            of `num_classes` logits per text).
        num_classes: the number of logits per text.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> class LengthTeacher(ModelHandler):
    ...     def load_model(self):
    ...         return None
    ...     def run_inference(self, batch, model, inference_args=None):
    ...         return [PredictionResult(text, [len(text), 0.0]) for text in batch]
    >>> with beam.Pipeline() as pipeline:
    ...     records, counts = (pipeline | beam.Create([(b"k", "labelled", "ab", 0)])
    ...                        | LabelTransferSet(LengthTeacher(), num_classes=2))
    ...     _ = counts | beam.Map(lambda counts: print(counts["labelled_teacher_agrees"]))
    1

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Beam RunInference](https://beam.apache.org/documentation/ml/about-ml/)
    """

    def __init__(self, model_handler, num_classes, label=None):
        super().__init__(label)
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}.")
        self.model_handler = model_handler
        self.num_classes = int(num_classes)

    def expand(self, texts):
        serialize = _SerializeRecords(self.num_classes)
        records = (
            texts
            | "KeyByRecord" >> beam.Map(_teacher_input)
            | "Teacher" >> RunInference(KeyedModelHandler(self.model_handler))
            | "Serialize" >> beam.ParDo(serialize).with_outputs(job.COUNTS_TAG, main="records")
        )
        counts = records[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts(serialize.COUNTER_NAMES))
        return records.records, counts

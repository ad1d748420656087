"""`export_saved_model`: a trained BERT model to a versioned SavedModel."""

import json
import logging
import os
import uuid

import tensorflow as tf

from tfnlp.data.file_names import LABELS_FILE
from tfnlp.export.bert_signatures import BertClassifierSignatures, signatures_for
from tfnlp.export.input_rules import EXTRA_ASSETS_DIRECTORY
from tfnlp.export.versions import next_version, version_dir

LOGGER = logging.getLogger(__name__)


def export_saved_model(model, export_dir, preprocessor=None, text_signatures=True,
                       **options):
    """Writes `model` as the next version `EXPORT_DIR/<version>/` of a SavedModel.

    The layout is TensorFlow Serving's: `saved_model.pb`, `variables/` and
    `assets/` (the WordPiece vocabulary, a tracked asset) in a directory
    named by the version number, one more than the newest already in
    `export_dir` (1 for the first). The version is written under a
    temporary name and renamed when complete, so a server watching
    `export_dir` never loads half an export.

    A classifier's version also holds `assets.extra/labels.json`, its label
    list (a JSON list of strings, class id = index; `read_export_labels`),
    for the programs that read its `logits` (`pipelines.distillation_data`).

    The signatures (see `tfnlp.export.bert_signatures` and `saved_model_cli
    show --all --dir EXPORT_DIR/<version>`) take raw text, tokenized in the
    graph by tensorflow-text ops, or token ids. The ids signatures use
    core TensorFlow ops only: TensorFlow Serving (and `saved_model_cli
    run`) runs them in a build without the tensorflow-text ops, since a
    session only instantiates the functions it runs. `tf.saved_model.load`
    in Python, however, loads every function and needs every op (`import
    tensorflow_text` first); for a Python host without tensorflow-text,
    `text_signatures=False` writes the ids signatures only.

    Args:
        model: a trained `BertEncoder`, `BertPretrainingModel` (encoder and
            fill-mask signatures), `BertClassifier`, `BertTokenClassifier`
            or `BertSpanExtractor`.
        export_dir: the base directory (local or any `tf.io.gfile` path).
        preprocessor: a `tfnlp.export.BertTextPreprocessor` (tokenizer and
            sequence length); required for text signatures and fill-mask.
        text_signatures: include the signatures on raw text.
        **options: passed to the signatures: `labels` (classifiers),
            `pooling` and `normalize` (encoders), `top_k` and `max_masks`
            (fill-mask).

    Returns:
        The directory of the new version.

    Example:

    >>> import tempfile
    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=1))
    >>> export_dir = tempfile.mkdtemp()
    >>> os.path.basename(export_saved_model(encoder, export_dir))
    '1'
    >>> os.path.basename(export_saved_model(encoder, export_dir))
    '2'
    """
    module = signatures_for(model, preprocessor, **options)
    signatures = module.signatures(text_signatures)
    assets = {} if preprocessor is None else {
        "vocabulary": preprocessor.tokenizer.vocabulary_asset}
    extra_files = None
    if isinstance(module, BertClassifierSignatures):
        extra_files = {LABELS_FILE: labels_file_bytes(module.labels)}
    final_dir = write_next_version(export_dir, signatures, assets, extra_files)
    LOGGER.info("Exported %s as %s (signatures %s).", type(model).__name__,
                final_dir, ", ".join(sorted(signatures)))
    return final_dir


def labels_file_bytes(labels):
    """The contents of a classifier export's `assets.extra/labels.json`:
    the labels as a JSON list, class id = index.

    Example:

    >>> labels_file_bytes(["negative", "positive"])
    b'["negative", "positive"]\\n'
    """
    return (json.dumps(list(labels), ensure_ascii=False) + "\n").encode("utf-8")


def read_export_labels(saved_model_dir):
    """The label list a classifier's export records, or None.

    Args:
        saved_model_dir: one version of an export (`EXPORT_DIR/<version>`).

    Returns:
        The labels (strings, class id = index) of its
        `assets.extra/labels.json`, or None when it has none (an export of
        another model, or one written before the file was).

    Raises:
        ValueError: the file is not a JSON list of strings.
    """
    path = os.path.join(saved_model_dir, EXTRA_ASSETS_DIRECTORY, LABELS_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "rb") as file:
        contents = file.read()
    try:
        labels = json.loads(contents)
    except ValueError:
        labels = None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise ValueError(
            f"{path} is not a JSON list of label strings; re-export the classifier, "
            "or remove the file and give the labels another way.")
    return labels


def write_next_version(export_dir, signatures, assets=None, extra_files=None):
    """Saves `signatures` as the next version of `export_dir`; returns its path.

    Written under a temporary name and renamed when complete, so a server
    watching `export_dir` never loads half an export. `assets` (name:
    `tf.saved_model.Asset`, or an object holding assets and resources such
    as a tokenizer) are tracked so that their files are copied;
    `extra_files` (name: bytes) go to the SavedModel's `assets.extra/`,
    TensorFlow Serving's folder for files beside the model.
    """
    root = trackable_root(signatures, assets)
    version = next_version(export_dir)
    final_dir = version_dir(export_dir, version)
    temporary_dir = os.path.join(export_dir, f".tmp-{version}-{uuid.uuid4().hex}")
    tf.io.gfile.makedirs(export_dir)
    try:
        tf.saved_model.save(root, temporary_dir, signatures=signatures)
        for name, contents in (extra_files or {}).items():
            extra_dir = os.path.join(temporary_dir, EXTRA_ASSETS_DIRECTORY)
            tf.io.gfile.makedirs(extra_dir)
            with tf.io.gfile.GFile(os.path.join(extra_dir, name), "wb") as file:
                file.write(contents)
        tf.io.gfile.rename(temporary_dir, final_dir)
    finally:
        if tf.io.gfile.exists(temporary_dir):
            tf.io.gfile.rmtree(temporary_dir)
    return final_dir


def trackable_root(signatures, assets=None):
    """The object `tf.saved_model.save` writes: the TensorFlow variables the
    signatures read and the assets (vocabularies), not the Keras objects.

    Saved as trackables, Keras 3 variables reach the SavedModel under other
    names than the ones the signatures read, and a TF1-style session
    (TensorFlow Serving, `saved_model_cli run`) then fails with "Could not
    find variable ...". Keras' own `ExportArchive` tracks the captured
    variables for the same reason.
    """
    variables = {}
    for function in signatures.values():
        for variable in function.variables:
            variables.setdefault(id(variable), variable)
    root = tf.Module()
    root.model_variables = list(variables.values())
    for name, asset in (assets or {}).items():
        setattr(root, name, asset)
    return root

"""The versions of one model, loaded from TensorFlow Serving's export layout.

`ModelStore` loads every version under `EXPORT_DIR/<version>/` with
`tf.saved_model.load` and nothing else: no Keras model classes and no tfnlp
layers are needed, only the ops the graphs use. `tensorflow_text` is imported
first when it is installed, so that the text signatures' tokenizer ops are
registered.

Each version exposes its signatures as `Signature` objects that run on numpy
arrays, and the store answers TensorFlow Serving's model status and metadata
requests; the metadata is the `SignatureDef` map of the SavedModel's
`serve` graph as TensorFlow Serving writes it (every signature, the
`__saved_model_init_op` included; tensor names as in the graph, e.g.
`serving_default_text:0`; `method_name`; `defaults`).
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from google.protobuf import json_format
from tensorflow.core.protobuf import saved_model_pb2

from tfnlp.export.input_rules import InputRules, read_input_rules
from tfnlp.export.versions import version_paths

try:  # Registers the ops of the text signatures (tokenizers).
    import tensorflow_text  # noqa: F401
except ImportError:
    pass  # Models without text ops load without it.

SERVE_TAG = "serve"


class ModelLoadError(Exception):
    """`model_dir` holds no version that can be served."""


class ServableNotFoundError(LookupError):
    """A request named a model or version that this server does not serve."""


class ModelRunError(Exception):
    """TensorFlow rejected the inputs while running a signature."""


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """The name, dtype and shape of one input or output of a signature.

    Args:
        key: the input or output name in the signature, e.g. "text".
        dtype: the `tf.DType` of its values.
        shape: a tuple of sizes with `None` for unknown sizes, or `None`
            when the rank is unknown.
    """

    key: str
    dtype: tf.DType
    shape: tuple | None

    @classmethod
    def from_spec(cls, key, spec):
        """Describes a `tf.TensorSpec` of a signature."""
        shape = None if spec.shape.rank is None else tuple(spec.shape.as_list())
        return cls(key=key, dtype=tf.as_dtype(spec.dtype), shape=shape)

    @property
    def numpy_dtype(self):
        """The numpy dtype of the values; `object` (bytes) for strings."""
        return np.dtype(object) if self.dtype == tf.string else np.dtype(self.dtype.as_numpy_dtype)


class Signature:
    """One signature of a loaded SavedModel, run on numpy arrays.

    Args:
        name: the signature's name, e.g. "serving_default".
        function: the concrete function from `loaded.signatures[name]`.
        rules: the `tfnlp.export.input_rules.InputRules` the export recorded
            for it (optional inputs and value ranges), if any.
    """

    def __init__(self, name, function, rules=None):
        self.name = name
        self.rules = rules or InputRules()
        self._function = function
        _, input_specs = function.structured_input_signature
        self.inputs = {key: TensorInfo.from_spec(key, spec)
                       for key, spec in sorted(input_specs.items())}
        self.outputs = {key: TensorInfo.from_spec(key, spec)
                        for key, spec in sorted(function.structured_outputs.items())}

    @property
    def batchable(self):
        """Whether requests can be merged: every input has a leading
        dimension of any size, or an unknown rank (such as the `text` of
        tfnlp's exports, `[batch]` or `[batch, 2]`: the batcher then merges
        only requests whose arrays have the same shape after the first
        dimension)."""
        return all(info.shape is None or (info.shape and info.shape[0] is None)
                   for info in self.inputs.values())

    def __call__(self, inputs):
        """Runs the signature.

        Args:
            inputs: a dict from every input key to a numpy array of its dtype.

        Returns:
            A dict from every output key to a numpy array.

        Raises:
            ModelRunError: TensorFlow rejected the inputs (the message
                names the signature and quotes TensorFlow's).
        """
        tensors = {key: tf.constant(value, dtype=self.inputs[key].dtype)
                   for key, value in inputs.items()}
        try:
            outputs = self._function(**tensors)
        except tf.errors.OpError as error:
            raise ModelRunError(
                f"Signature {self.name!r} failed on these inputs: "
                f"{type(error).__name__}: {error.message.strip().rstrip('.')}. The inputs have the "
                "signature's dtypes and shapes, so a value is one the model does not "
                "accept (e.g. an id outside the vocabulary, or a failed check of the "
                "model's); correct it and send the request again."
            ) from error
        return {key: tensor.numpy() for key, tensor in outputs.items()}


def read_signature_defs(path):
    """The `SignatureDef` map of the `serve` graph of the SavedModel at
    `path`, as TensorFlow Serving's metadata JSON writes it (proto field
    names, every field, 64-bit integers as strings)."""
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved_model.ParseFromString(file.read())
    graphs = [graph for graph in saved_model.meta_graphs
              if SERVE_TAG in graph.meta_info_def.tags] or saved_model.meta_graphs[:1]
    return {
        name: json_format.MessageToDict(
            signature_def, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True)
        for name, signature_def in sorted(graphs[0].signature_def.items())
    } if graphs else {}


def _read_if_exists(path):
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "rb") as file:
        return file.read()


class ModelVersion:
    """One version of the model: a loaded SavedModel and its signatures.

    Args:
        version: the version number (the directory's name).
        path: the SavedModel's directory, `EXPORT_DIR/<version>`.
    """

    def __init__(self, version, path):
        self.version = version
        self.path = path
        try:
            self.loaded = tf.saved_model.load(path)
        except Exception as error:
            raise ModelLoadError(
                f"Could not load version {version} of the model from {path}: "
                f"{type(error).__name__}: {error}. Expected a SavedModel written "
                "by tf.saved_model.save in EXPORT_DIR/<version>/ (saved_model.pb, "
                "variables/, assets/); re-export this version or remove its "
                "directory."
            ) from error
        try:
            rules = read_input_rules(path, _read_if_exists)
        except ValueError as error:
            raise ModelLoadError(f"Version {version} of the model: {error}") from error
        self.signatures = {name: Signature(name, function, rules.get(name))
                           for name, function in sorted(self.loaded.signatures.items())}
        self.signature_defs = read_signature_defs(path)
        if not self.signatures:
            raise ModelLoadError(
                f"The SavedModel at {path} has no signatures, so it has nothing "
                "to serve. Export it with tf.saved_model.save(module, path, "
                "signatures={'serving_default': ...})."
            )


class ModelStore:
    """Every version of one model, loaded at start; the newest is the default.

    Args:
        model_dir: the export directory, holding `<version>/saved_model.pb`.
        model_name: the name requests use (`/v1/models/<model_name>`);
            defaults to the base name of `model_dir`.

    Raises:
        ModelLoadError: `model_dir` has no versions, or one of them is not a
            SavedModel.
    """

    def __init__(self, model_dir, model_name=None):
        self.model_dir = str(model_dir)
        self.name = model_name or os.path.basename(os.path.normpath(self.model_dir))
        try:
            paths = version_paths(self.model_dir)
        except ValueError as error:
            raise ModelLoadError(str(error)) from None
        if not paths and os.path.exists(os.path.join(self.model_dir, "saved_model.pb")):
            raise ModelLoadError(
                f"{self.model_dir} is a single SavedModel, not an export "
                "directory of versions. Expected TensorFlow Serving's layout "
                "EXPORT_DIR/<version>/saved_model.pb: move it into a numbered "
                f"subdirectory (e.g. {os.path.join(self.model_dir, '1')}) or "
                "pass the directory that holds the numbered versions."
            )
        if not paths:
            raise ModelLoadError(
                f"No model versions found in {self.model_dir}. Expected TensorFlow "
                "Serving's layout EXPORT_DIR/<version>/saved_model.pb, e.g. "
                f"{os.path.join(self.model_dir, '1', 'saved_model.pb')}. Pass the "
                "export directory that holds the numbered versions, or export a "
                "model into it first."
            )
        self._versions = {number: ModelVersion(number, path)
                          for number, path in sorted(paths.items())}

    @property
    def versions(self):
        """The version numbers served, ascending."""
        return sorted(self._versions)

    def get(self, model_name, version=None):
        """The requested version of the model.

        Args:
            model_name: the model name from the request's path.
            version: a version number, or None for the newest.

        Raises:
            ServableNotFoundError: another model name, or a version not served.
        """
        if model_name != self.name:
            raise ServableNotFoundError(
                f"Model {model_name!r} is not served here; this server serves "
                f"model {self.name!r} (e.g. GET /v1/models/{self.name})."
            )
        if version is None:
            return self._versions[self.versions[-1]]
        if version not in self._versions:
            raise ServableNotFoundError(
                f"Version {version} of model {self.name!r} is not served; the "
                f"versions served are {self.versions}. Leave the version out of "
                "the path to use the newest."
            )
        return self._versions[version]

    def status(self, model_name, version=None):
        """TensorFlow Serving's model status JSON: every version, or one."""
        self.get(model_name, version)
        numbers = self.versions if version is None else [version]
        return {"model_version_status": [
            {"version": str(number), "state": "AVAILABLE",
             "status": {"error_code": "OK", "error_message": ""}}
            for number in reversed(numbers)
        ]}

    def metadata(self, model_name, version=None):
        """TensorFlow Serving's model metadata JSON for one version."""
        model_version = self.get(model_name, version)
        return {
            "model_spec": {"name": self.name, "signature_name": "",
                           "version": str(model_version.version)},
            "metadata": {"signature_def": {
                "signature_def": model_version.signature_defs}},
        }

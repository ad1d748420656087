"""`tf.train.Example` as a plain protobuf message, without TensorFlow.

The Beam jobs write `tf.train.Example` records in workers that do not load
TensorFlow (importing it costs about 650 MB of memory and seconds per
worker). This module declares the same messages as TensorFlow's
`tensorflow/core/example/{example,feature}.proto` (package `tensorflow`,
proto3, the same field numbers and packed encoding) with the `protobuf`
library, in a descriptor pool of its own so that it never clashes with
TensorFlow's when both are loaded. The wire format is the fact being
matched: the bytes are identical to TensorFlow's serialization of the same
example, and TensorFlow parses them as its own.

Example:

>>> example = Example()
>>> example.features.feature["ids"].int64_list.value.extend([101, 102])
>>> Example.FromString(example.SerializeToString()).features.feature["ids"]
int64_list {
  value: 101
  value: 102
}
<BLANKLINE>
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FIELD = descriptor_pb2.FieldDescriptorProto
_FILE_NAME = "tfnlp/tensorflow_example.proto"


def _add_field(message, name, number, field_type, label=_FIELD.LABEL_OPTIONAL,
               type_name=None, oneof_index=None, packed=False):
    field = message.field.add(name=name, number=number, type=field_type, label=label)
    if type_name:
        field.type_name = type_name
    if oneof_index is not None:
        field.oneof_index = oneof_index
    if packed:
        field.options.packed = True


def _file_descriptor():
    file = descriptor_pb2.FileDescriptorProto(
        name=_FILE_NAME, package="tensorflow", syntax="proto3"
    )
    for name, field_type in (
        ("BytesList", _FIELD.TYPE_BYTES),
        ("FloatList", _FIELD.TYPE_FLOAT),
        ("Int64List", _FIELD.TYPE_INT64),
    ):
        message = file.message_type.add(name=name)
        _add_field(message, "value", 1, field_type, _FIELD.LABEL_REPEATED,
                   packed=field_type != _FIELD.TYPE_BYTES)

    feature = file.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, name in enumerate(("bytes_list", "float_list", "int64_list"), 1):
        list_type = ".tensorflow." + {"bytes_list": "BytesList",
                                      "float_list": "FloatList",
                                      "int64_list": "Int64List"}[name]
        _add_field(feature, name, number, _FIELD.TYPE_MESSAGE,
                   type_name=list_type, oneof_index=0)

    features = file.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    _add_field(entry, "key", 1, _FIELD.TYPE_STRING)
    _add_field(entry, "value", 2, _FIELD.TYPE_MESSAGE, type_name=".tensorflow.Feature")
    _add_field(features, "feature", 1, _FIELD.TYPE_MESSAGE, _FIELD.LABEL_REPEATED,
               type_name=".tensorflow.Features.FeatureEntry")

    example = file.message_type.add(name="Example")
    _add_field(example, "features", 1, _FIELD.TYPE_MESSAGE,
               type_name=".tensorflow.Features")
    return file


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())


def _message_class(name):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"tensorflow.{name}"))


Example = _message_class("Example")
Features = _message_class("Features")
Feature = _message_class("Feature")
Int64List = _message_class("Int64List")
FloatList = _message_class("FloatList")
BytesList = _message_class("BytesList")

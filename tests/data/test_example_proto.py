"""tfnlp's TensorFlow-free `tf.train.Example` against TensorFlow's own."""

import subprocess
import sys

import tensorflow as tf

from tests.conftest import REPOSITORY
from tfnlp.data import example_proto


def test_bytes_equal_tensorflows_serialization_of_every_list_kind():
    ours = example_proto.Example()
    theirs = tf.train.Example()
    for example in (ours, theirs):
        feature = example.features.feature
        feature["ids"].int64_list.value.extend([0, 1, 300, 2**40, -5])
        feature["weights"].float_list.value.extend([1.0, 0.0, -2.5])
        feature["text"].bytes_list.value.extend([b"a", "é".encode(), b""])
        feature["empty"].int64_list.value.extend([])
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )
    assert tf.train.Example.FromString(ours.SerializeToString()) == theirs
    parsed = tf.io.parse_single_example(
        ours.SerializeToString(),
        {"ids": tf.io.FixedLenFeature([5], tf.int64),
         "weights": tf.io.FixedLenFeature([3], tf.float32)},
    )
    assert parsed["ids"].numpy().tolist() == [0, 1, 300, 2**40, -5]


def test_the_record_writers_import_no_tensorflow():
    """Beam workers that tokenize and write pretraining records must not load
    TensorFlow (about 650 MB a process)."""
    code = (
        "import sys\n"
        "import pipelines.pretraining_data, tfnlp.data.pretraining_schema\n"
        "from tfnlp.text import PlainBertTokenizer, load_vocabulary\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorflow', 'keras', 'tensorflow_text'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, check=True)

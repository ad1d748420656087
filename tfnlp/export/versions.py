"""TensorFlow Serving's versioned export layout: `EXPORT_DIR/<version>/`.

TensorFlow Serving (and `python -m tfnlp.serve`) watch a base directory
whose numeric subdirectories are versions of one model, each a complete
SavedModel; the largest number is the newest. This module knows that layout
and nothing else, so the server can use it without TensorFlow or Keras:
only `tf.io.gfile` is needed for remote file systems, and local paths work
with the standard library alone.
"""

import os


def _file_system(path):
    if "://" in str(path):
        import tensorflow as tf  # Remote file systems (gs://, s3://, hdfs://).

        return tf.io.gfile.listdir, tf.io.gfile.exists, tf.io.gfile.isdir
    return os.listdir, os.path.exists, os.path.isdir


def list_versions(export_dir):
    """The version numbers under `export_dir` that hold a SavedModel, ascending.

    A version is a subdirectory named by a non-negative integer with a
    `saved_model.pb` in it; other entries (temporary directories of an
    export in progress, `labels.json`, ...) are ignored. A missing
    `export_dir` has no versions.

    Example:

    >>> import tempfile
    >>> list_versions(tempfile.mkdtemp())
    []
    """
    listdir, exists, isdir = _file_system(export_dir)
    if not exists(export_dir):
        return []
    versions = []
    for name in listdir(export_dir):
        name = name.rstrip("/")
        if name.isdigit() and exists(os.path.join(export_dir, name, "saved_model.pb")):
            versions.append(int(name))
    return sorted(versions)


def latest_version(export_dir):
    """The newest version under `export_dir`, or None if it has none."""
    versions = list_versions(export_dir)
    return versions[-1] if versions else None


def next_version(export_dir):
    """The version number a new export into `export_dir` gets: one more than
    the newest (or than any numeric subdirectory, finished or not), 1 for
    the first."""
    listdir, exists, _ = _file_system(export_dir)
    taken = [0]
    if exists(export_dir):
        taken += [int(name.rstrip("/")) for name in listdir(export_dir)
                  if name.rstrip("/").isdigit()]
    return max(taken) + 1


def version_dir(export_dir, version):
    """`EXPORT_DIR/<version>`."""
    return os.path.join(export_dir, str(int(version)))

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


def version_paths(export_dir):
    """The versions under `export_dir` that hold a SavedModel: a dict from
    version number to its directory.

    A version is a subdirectory named by a non-negative integer, its number
    being the name's value (`00000123` is version 123, as in TensorFlow
    Serving), with a `saved_model.pb` in it; other entries (temporary
    directories of an export in progress, `labels.json`, ...) are ignored. A
    missing `export_dir` has no versions.

    Raises:
        ValueError: two directories name the same version (`1` and `001`).

    Example:

    >>> import tempfile
    >>> version_paths(tempfile.mkdtemp())
    {}
    """
    listdir, exists, _ = _file_system(export_dir)
    if not exists(export_dir):
        return {}
    paths = {}
    for name in sorted(name.rstrip("/") for name in listdir(export_dir)):
        path = os.path.join(export_dir, name)
        if not (name.isascii() and name.isdigit() and exists(os.path.join(path, "saved_model.pb"))):
            continue
        version = int(name)
        if version in paths:
            raise ValueError(
                f"{paths[version]} and {path} are both version {version} of the model "
                f"in {export_dir}. Remove or renumber one of them."
            )
        paths[version] = path
    return paths


def list_versions(export_dir):
    """The version numbers under `export_dir` that hold a SavedModel,
    ascending (see `version_paths`).

    Example:

    >>> import tempfile
    >>> list_versions(tempfile.mkdtemp())
    []
    """
    return sorted(version_paths(export_dir))


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
                  if name.rstrip("/").isascii() and name.rstrip("/").isdigit()]
    return max(taken) + 1


def version_dir(export_dir, version):
    """`EXPORT_DIR/<version>`, where a new export of `version` goes (an
    existing version may be zero-padded: see `version_paths`)."""
    return os.path.join(export_dir, str(int(version)))

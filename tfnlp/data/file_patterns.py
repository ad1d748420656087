"""Comma-separated globs of input files, matched the same way everywhere.

Every flag and argument that names input files (`--input_file`,
`--train_data`, a reader's `file_pattern`) takes one or more globs,
comma-separated or as a list. The Beam jobs match them with Beam's
filesystems and the trainers and readers with `tf.io.gfile`; both go
through `match_patterns` with their own `glob` function, so the rules and
the errors are the same. This module imports neither TensorFlow nor Beam.
"""


def split_patterns(value):
    """The globs of a flag's value.

    Args:
        value: a string of comma-separated globs ("a/*.txt,b/*.txt"),
            bytes, or a list of such strings.

    Returns:
        The non-empty globs, stripped of surrounding spaces, in order.

    Example:

    >>> split_patterns(" data/train-*, ,extra/*.tfrecord")
    ['data/train-*', 'extra/*.tfrecord']
    """
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        value = value.split(",")
    patterns = []
    for pattern in value:
        if isinstance(pattern, bytes):
            pattern = pattern.decode()
        pattern = str(pattern).strip()
        if pattern:
            patterns.append(pattern)
    return patterns


def match_patterns(value, glob, *, flag, expected, is_directory=None):
    """The sorted, de-duplicated files that the globs of `value` match.

    Every glob must match at least one file, so that a typo in one of
    several globs is not silently ignored.

    Args:
        value: the flag's value (see `split_patterns`).
        glob: `pattern -> paths`, e.g. `tf.io.gfile.glob`.
        flag: the flag or argument that gave the globs, for the errors
            ("--train_data").
        expected: what the files should be, for the errors ("the TFRecord
            shards of `python -m pipelines.translation_data`").
        is_directory: optional `path -> bool`; directories it names are
            left out of the matches.

    Returns:
        The matched paths, sorted.

    Raises:
        FileNotFoundError: no glob was given, or one glob matches no file;
            the message names the flag, the glob and what was expected.

    Example:

    >>> match_patterns("b*,a*", lambda pattern: [pattern.replace("*", "1")],
    ...                flag="--input_file", expected="text files")
    ['a1', 'b1']
    """
    patterns = split_patterns(value)
    if not patterns:
        raise FileNotFoundError(
            f"{flag} names no file; expected comma-separated globs of {expected}."
        )
    files = set()
    for pattern in patterns:
        matched = [path for path in glob(pattern)
                   if is_directory is None or not is_directory(path)]
        if not matched:
            raise FileNotFoundError(
                f"{flag}: the glob {pattern!r} matches no file; expected {expected}. "
                "Check the path and the glob (quote it so that the shell does not "
                f"expand it), or remove it from {flag}."
            )
        files.update(matched)
    return sorted(files)

"""`tfnlp.data.file_patterns`: the one way input globs are split and matched."""

import glob

import pytest

from tfnlp.data.file_patterns import match_patterns, split_patterns


def test_split_patterns_drops_blanks_and_spaces_and_keeps_order():
    assert split_patterns(" a/*.txt, b.txt,,c ") == ["a/*.txt", "b.txt", "c"]
    assert split_patterns(["x", " ", "y "]) == ["x", "y"]
    assert split_patterns(b"z,w") == ["z", "w"]
    assert split_patterns([b"v"]) == ["v"]


def test_matches_are_sorted_and_deduplicated(tmp_path):
    for name in ("b.txt", "a.txt", "c.log"):
        (tmp_path / name).write_text("x")
    files = match_patterns(f"{tmp_path}/*.txt,{tmp_path}/a*", _local_glob, flag="--input_file",
                           expected="text")
    assert files == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]


def test_every_glob_must_match_and_the_error_names_it(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    missing = f"{tmp_path}/typo-*.txt"
    with pytest.raises(FileNotFoundError) as error:
        match_patterns(f"{tmp_path}/*.txt,{missing}", _local_glob, flag="--train_data",
                       expected="the shards of `python -m pipelines.x`")
    message = str(error.value)
    assert repr(missing) in message and "--train_data" in message
    assert "python -m pipelines.x" in message


def test_no_glob_at_all_is_an_error():
    with pytest.raises(FileNotFoundError, match="--input_file names no file"):
        match_patterns(" , ", _local_glob, flag="--input_file", expected="text files")


def test_directories_are_left_out_when_asked(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    files = match_patterns(f"{tmp_path}/*", _local_glob, flag="--input_file", expected="text",
                           is_directory=lambda path: path.endswith("folder"))
    assert files == [str(tmp_path / "file")]
    with pytest.raises(FileNotFoundError):
        match_patterns(f"{tmp_path}/fold*", _local_glob, flag="--input_file", expected="text",
                       is_directory=lambda path: path.endswith("folder"))


def _local_glob(pattern):
    return glob.glob(pattern)

"""Tests of `pipelines.document_texts.ReadDocumentTexts`: whole documents,
line breaks kept, every line counted, on `beam.Create`-free tiny files."""

import gzip
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import BeamAssertException, assert_that, equal_to

from pipelines.document_texts import ReadDocumentTexts

PLAY = "ROMEO:\n  Hark!\n\n\nJULIET:\r\nAy me.\n"


def counts_equal(expected):
    """A matcher of the single counts dict: the names in `expected` have
    those values, every other name is zero."""
    def match(actual):
        if len(actual) != 1:
            raise BeamAssertException(f"Expected one dict of counts, got {actual}.")
        counts = actual[0]
        wrong = {name: counts.get(name, 0) for name in set(counts) | set(expected)
                 if counts.get(name, 0) != expected.get(name, 0)}
        if wrong:
            raise BeamAssertException(f"Counts {counts} differ from {expected} at {wrong}.")
    return match


def check(reader, texts, counts):
    with beam.Pipeline() as pipeline:
        read_texts, read_counts = pipeline | reader
        assert_that(read_texts, equal_to(texts), label="Texts")
        assert_that(read_counts, counts_equal(counts), label="Counts")


def test_a_file_is_one_document_with_its_exact_text(tmp_path):
    path = tmp_path / "play.txt"
    path.write_bytes(PLAY.encode())
    check(ReadDocumentTexts(str(path), "text", "file"), [PLAY],
          {"lines_read": 6, "lines_used": 6, "documents_read": 1})


@pytest.mark.parametrize("contents, lines", [
    (b"last line unended", 1),
    (b"a\n\nb", 3),
    (b"\n\na\n", 3),
])
def test_the_last_line_break_ends_a_line(tmp_path, contents, lines):
    path = tmp_path / "file.txt"
    path.write_bytes(contents)
    check(ReadDocumentTexts(str(path), "text", "file"), [contents.decode()],
          {"lines_read": lines, "lines_used": lines, "documents_read": 1})


@pytest.mark.parametrize("contents, lines", [(b"", 0), (b"\n", 1), (b"  \n\t\n\n", 3)])
def test_a_blank_file_is_no_document_and_its_lines_are_skipped(tmp_path, contents, lines):
    path = tmp_path / "blank.txt"
    path.write_bytes(contents)
    check(ReadDocumentTexts(str(path), "text", "file"), [],
          {"lines_read": lines, "lines_skipped_blank": lines})


def test_gzip_files_and_invalid_bytes(tmp_path):
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(PLAY.encode(), mtime=0))
    (tmp_path / "b.txt").write_bytes(b"caf\xc3\n\x00bad\xff\n")
    check(ReadDocumentTexts(str(tmp_path / "*"), "text", "file"),
          [PLAY, "caf\ufffd\n\x00bad\ufffd\n"],
          {"lines_read": 8, "lines_used": 8, "documents_read": 2,
           "lines_with_invalid_utf8": 2, "lines_with_nul": 1})


def test_blank_lines_separate_documents_whose_lines_stay(tmp_path):
    path = tmp_path / "play.txt"
    path.write_bytes((PLAY + "x" * 30 + "\n" + "Exeunt.\n").encode())
    check(ReadDocumentTexts(str(path), "text", "blank_line", max_line_bytes=20),
          ["ROMEO:\n  Hark!", "JULIET:\nAy me.\nExeunt."],
          {"lines_read": 8, "lines_used": 5, "lines_skipped_blank": 2,
           "lines_skipped_too_long": 1, "documents_read": 2})


def test_jsonl_records_are_documents(tmp_path):
    path = tmp_path / "records.jsonl"
    lines = [json.dumps({"text": PLAY}), "not json", json.dumps({"text": "  "}),
             json.dumps({"id": 3}), json.dumps({"text": "one\ntwo", "id": 4})]
    path.write_text("\n".join(lines) + "\n")
    check(ReadDocumentTexts(str(path), "jsonl"), [PLAY, "one\ntwo"],
          {"lines_read": 5, "lines_used": 2, "lines_skipped_bad_json": 1,
           "lines_skipped_blank": 1, "lines_skipped_missing_text": 1, "documents_read": 2})


def test_unknown_boundaries_and_missing_files_fail_before_the_pipeline(tmp_path):
    with pytest.raises(ValueError, match="document_boundary"):
        ReadDocumentTexts(str(tmp_path), "text", "paragraph")
    with pytest.raises(FileNotFoundError, match="matches no file"):
        ReadDocumentTexts(str(tmp_path / "missing*.txt"), "text", "file")

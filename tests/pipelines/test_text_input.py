"""Tests of `pipelines.text_input`: matching, decoding and line accounting."""

import gzip
import json

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from pipelines import job, text_input
from pipelines.beam_options import pipeline_options


def test_decode_line_repairs_and_flags():
    assert text_input.decode_line(b"caf\xc3\xa9") == ("café", False, False)
    assert text_input.decode_line(b"a\xffb") == ("a\ufffdb", True, False)
    assert text_input.decode_line(b"a\x00b\xc3") == ("a\x00b\ufffd", True, True)


def test_parse_jsonl_record_reasons():
    parse = text_input.parse_jsonl_record
    assert parse('{"id": 3, "text": "Hi"}') == ("Hi", None)
    assert parse('\ufeff{"text": "BOM first"}') == ("BOM first", None)
    assert parse('{"text": "raw\x00control"}') == ("raw\x00control", None)
    assert parse('{"text": "cut') == (None, "bad_json")
    assert parse("[1, 2]") == (None, "not_object")
    assert parse('{"id": 1}') == (None, "missing_text")
    assert parse('{"text": null}') == (None, "text_not_string")
    assert parse('{"text": ["a"]}') == (None, "text_not_string")


def test_repair_surrogates():
    assert text_input.repair_surrogates("fine é") == ("fine é", False)
    assert text_input.repair_surrogates("a\ud800b") == ("a\ufffdb", True)
    assert text_input.repair_surrogates(json.loads('"\\ud83d\\ude00"')) == ("😀", False)


def test_match_input_files(tmp_path):
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"")
    (tmp_path / "folder.txt").mkdir()
    files = text_input.match_input_files(
        [str(tmp_path / "*.txt"), str(tmp_path / "a.txt")]
    )
    assert files == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]


def test_pattern_matching_nothing_is_named(tmp_path):
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    missing = str(tmp_path / "nothing" / "*.txt")
    with pytest.raises(FileNotFoundError, match="nothing/\\*.txt' matches no file"):
        text_input.ReadTextLines([str(tmp_path / "a.txt"), missing])
    with pytest.raises(FileNotFoundError, match="--input_file names no file"):
        text_input.match_input_files([])
    with pytest.raises(ValueError, match="input_format"):
        text_input.ReadTextLines([str(tmp_path / "a.txt")], input_format="csv")


def run_reader(patterns, input_format, expected_texts, expected_counts):
    """Runs `ReadTextLines`, checks its two outputs, returns the counters."""
    pipeline = beam.Pipeline(options=pipeline_options([]))
    texts, counts = pipeline | text_input.ReadTextLines(patterns, input_format)
    assert_that(texts, equal_to(expected_texts), label="CheckTexts")
    assert_that(counts, equal_to([expected_counts]), label="CheckCounts")
    result = pipeline.run()
    result.wait_until_finish()
    return {
        counter.key.metric.name: counter.committed
        for counter in result.metrics().query(
            MetricsFilter().with_namespace(job.METRICS_NAMESPACE)
        )["counters"]
    }


def counts_of(**nonzero):
    counts = dict.fromkeys(text_input.COUNTER_NAMES, 0)
    counts.update(nonzero)
    return counts


def test_text_lines_are_read_and_accounted(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "mixed.txt").write_bytes(
        b"first line\r\n"
        b"\n"
        b"  \t \n"
        b"bad \xff byte\n"
        b"nul\x00here\n"
        b"no final newline"
    )
    long_line = "word " * (1024 * 1024 // 5 + 1)
    (tmp_path / "long.txt").write_text(long_line + "\nshort\n", encoding="utf-8")
    with gzip.open(tmp_path / "packed.txt.gz", "wb") as file:
        file.write(b"compressed line\n")
    expected = counts_of(
        lines_read=9,
        lines_used=7,
        lines_skipped_blank=2,
        lines_with_invalid_utf8=1,
        lines_with_nul=1,
    )
    expected_texts = [
        "first line",
        "bad \ufffd byte",
        "nul\x00here",
        "no final newline",
        long_line,
        "short",
        "compressed line",
    ]
    counters = run_reader([str(tmp_path / "*")], "text", expected_texts, expected)
    assert counters == {name: value for name, value in expected.items() if value}
    assert text_input.input_accounting(expected) == {
        "lines_read": 9,
        "lines_used": 7,
        "lines_skipped": {
            "blank": 2,
            "bad_json": 0,
            "not_object": 0,
            "missing_text": 0,
            "text_not_string": 0,
        },
        "lines_repaired": {"invalid_utf8": 1, "nul": 1},
    }


def test_jsonl_records_are_read_and_accounted(tmp_path):
    lines = [
        json.dumps({"id": "1", "text": "one"}),
        json.dumps({"text": "two", "extra": [1]}),
        json.dumps({"text": "   "}),
        "not json",
        json.dumps({"id": "5"}),
        json.dumps({"text": 5}),
        json.dumps("a string"),
        "",
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    data += b'{"text": "bad \xff byte"}\n'
    (tmp_path / "records.jsonl").write_bytes(data)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    expected = counts_of(
        lines_read=9,
        lines_used=3,
        lines_skipped_blank=2,
        lines_skipped_bad_json=1,
        lines_skipped_not_object=1,
        lines_skipped_missing_text=1,
        lines_skipped_text_not_string=1,
        lines_with_invalid_utf8=1,
    )
    run_reader(
        str(tmp_path / "*.jsonl"), "jsonl", ["bad \ufffd byte", "one", "two"], expected
    )


def test_documents_are_read_in_line_order_and_accounted(tmp_path):
    (tmp_path / "a.txt").write_bytes(
        b"First sentence.\nSecond \xff one.\n\n\n"
        + b"y" * 101 + b"\n"  # over max_line_bytes: skipped
        + b"Other document.\r\nnul\x00here\n"
    )
    (tmp_path / "b.txt").write_bytes(b"\n  \nLast file, no final newline")
    (tmp_path / "c.txt").write_bytes(b"")
    pipeline = beam.Pipeline(options=pipeline_options([]))
    documents, counts = pipeline | text_input.ReadDocuments(
        str(tmp_path / "*.txt"), "text", max_line_bytes=100
    )
    assert_that(documents, equal_to([
        ["First sentence.", "Second \ufffd one."],
        ["Other document.", "nul\x00here"],
        ["Last file, no final newline"],
    ]), label="CheckDocuments")
    assert_that(counts, equal_to([{
        "lines_read": 10,
        "lines_used": 5,
        "lines_skipped_blank": 4,
        "lines_skipped_too_long": 1,
        "lines_with_invalid_utf8": 1,
        "lines_with_nul": 1,
        "documents_read": 3,
    }]), label="CheckCounts")
    pipeline.run().wait_until_finish()


def test_jsonl_documents_are_split_into_sentences_and_accounted(tmp_path):
    (tmp_path / "docs.jsonl").write_text(
        json.dumps({"text": "One here. Two there!\nThree."}) + "\n"
        + json.dumps({"text": "Dr. who? yes."}) + "\n"
        + "{broken\n",
        encoding="utf-8",
    )
    pipeline = beam.Pipeline(options=pipeline_options([]))
    documents, counts = pipeline | text_input.ReadDocuments(
        str(tmp_path / "docs.jsonl"), "jsonl"
    )
    assert_that(documents, equal_to([
        ["One here.", "Two there!", "Three."],
        ["Dr. who? yes."],
    ]), label="CheckDocuments")
    assert_that(counts, equal_to([counts_of(
        lines_read=3, lines_used=2, lines_skipped_bad_json=1, documents_read=2
    )]), label="CheckCounts")
    pipeline.run().wait_until_finish()

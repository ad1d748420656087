"""The readers of labelled CSV, TSV and JSON Lines files: the rows kept, the
rows skipped and why, the columns, and the `--labels` list."""

import json

import pytest

from tfnlp.command_line import UsageError
from tfnlp.data.labelled_files import (
    TextColumns,
    discover_labels,
    read_classification,
    read_spans,
    read_token_classification,
    split_labels,
)


def test_csv_tsv_and_jsonl_give_the_same_examples(tmp_path):
    rows = [("a good film", "pos"), ("a dull one", "neg")]
    (tmp_path / "rows.csv").write_text(
        "text,label\n" + "".join(f"{text},{label}\n" for text, label in rows))
    (tmp_path / "rows.tsv").write_text(
        "text\tlabel\n" + "".join(f"{text}\t{label}\n" for text, label in rows))
    (tmp_path / "rows.jsonl").write_text(
        "".join(json.dumps({"text": text, "label": label}) + "\n" for text, label in rows))
    expected = [(text, "", label) for text, label in rows]
    for name in ("rows.csv", "rows.tsv", "rows.jsonl"):
        examples, report = read_classification(str(tmp_path / name))
        assert examples == expected, name
        assert (report.rows, report.kept, report.skipped_total) == (2, 2, 0)


def test_bad_rows_are_skipped_and_counted_by_reason(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([
        json.dumps({"text": "kept", "label": "pos"}),
        json.dumps({"text": "", "label": "pos"}),
        json.dumps({"text": "no label"}),
        json.dumps({"text": "other", "label": "neutral"}),
        "not json",
        json.dumps(["a", "list"]),
        "",
    ]) + "\n")
    examples, report = read_classification(str(path), labels=["neg", "pos"])
    assert examples == [("kept", "", "pos")]
    assert report.rows == 6 and report.kept == 1
    assert report.skipped == {"missing text": 1, "missing label": 1, "unknown label": 1,
                              "malformed JSON": 2}
    assert report.summary().startswith(f"{path}: read 6 rows, kept 1, skipped 5 (")
    assert report.to_dict()["skipped"]["malformed JSON"] == 2


def test_named_columns_and_text_a_text_b(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("sentence,gold\nfine,yes\n")
    columns = TextColumns(text="sentence", label="gold")
    assert read_classification(str(path), columns)[0] == [("fine", "", "yes")]
    with pytest.raises(UsageError, match="no column 'text'"):
        read_classification(str(path))
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("text_a\ttext_b\tlabel\nfirst\tsecond\t1\n")
    assert read_classification(str(pairs))[0] == [("first", "second", "1")]


def test_a_name_without_a_known_suffix_or_a_missing_file_is_an_error(tmp_path):
    unnamed = tmp_path / "rows.txt"
    unnamed.write_text("text,label\n")
    with pytest.raises(UsageError, match=r"\*\.csv"):
        read_classification(str(unnamed))
    with pytest.raises(FileNotFoundError):
        read_classification(str(tmp_path / "missing.csv"))


def test_token_and_span_rows(tmp_path):
    tags = tmp_path / "tags.jsonl"
    tags.write_text("\n".join(json.dumps(row) for row in [
        {"tokens": ["Paris", "is"], "tags": ["LOC", "O"]},
        {"tokens": ["one"], "tags": ["O", "O"]},
        {"tokens": ["Rome"], "tags": ["CITY"]},
    ]) + "\n")
    examples, report = read_token_classification(str(tags), ["LOC", "O"])
    assert examples == [(["Paris", "is"], ["LOC", "O"])]
    assert report.skipped == {"tags not one per token": 1, "unknown tag": 1}
    spans = tmp_path / "spans.jsonl"
    context = "the cat sat"
    spans.write_text("\n".join(json.dumps(row) for row in [
        {"context": context, "question": "who?", "answer_start": 4, "answer_text": "cat"},
        {"context": context, "question": "who?", "answer_start": 0, "answer_text": "cat"},
    ]) + "\n")
    examples, report = read_spans(str(spans))
    assert examples == [(context, "who?", 4, "cat")]
    assert report.skipped == {"answer not at answer_start": 1}


def test_labels_flag_and_discovered_labels():
    assert split_labels(" neg, pos ,") == ["neg", "pos"]
    with pytest.raises(UsageError, match="names a label twice"):
        split_labels("pos,neg,pos")
    assert discover_labels(["pos", "neg", "pos"]) == ["neg", "pos"]

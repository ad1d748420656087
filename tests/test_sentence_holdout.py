"""`tools.sentence_holdout`: held-out sentences take their phrases out of
training."""

import hashlib

import pytest

from tfnlp.command_line import run_main
from tools import sentence_holdout

ROWS = [
    {"label": "1", "sentence": "a gorgeous , witty , seductive movie ."},
    {"label": "1", "sentence": "a gorgeous , witty , seductive movie"},
    {"label": "1", "sentence": "witty"},
    {"label": "0", "sentence": "the plot is nothing but boilerplate clichés from start to finish ."},
    {"label": "0", "sentence": "nothing but boilerplate clichés"},
    {"label": "0", "sentence": "wit"},
]


def test_phrases_of_a_held_out_sentence_leave_training_and_all_rows_are_counted():
    train, heldout, dropped = sentence_holdout.split_rows(ROWS, "sentence", fraction=0.999,
                                                          min_words=6)
    # Both sentences are held out (nearly all of them are); every phrase
    # inside one is dropped, but "wit", inside a word only, is kept.
    assert [row["sentence"] for row in heldout] == [ROWS[0]["sentence"], ROWS[3]["sentence"]]
    assert [row["sentence"] for row in train] == ["wit"]
    assert dropped == 3
    assert len(train) + len(heldout) + dropped == len(ROWS)


def test_a_sentence_is_a_longest_text_and_the_split_is_by_its_hash():
    assert sentence_holdout.find_sentences([row["sentence"] for row in ROWS], 6) == [
        ROWS[3]["sentence"], ROWS[0]["sentence"]]
    train, heldout, dropped = sentence_holdout.split_rows(ROWS, "sentence", fraction=0.001,
                                                          min_words=6)
    assert (heldout, dropped) == ([], 0) and train == ROWS


def test_a_long_text_of_few_words_does_not_end_the_search_for_sentences():
    # By characters the longest text, but of 2 words: the sentences after it
    # are still found, whatever order a set gives texts of the same length.
    texts = ["incomprehensibly overlong", "a b c d", "e f g h"]
    assert sentence_holdout.find_sentences(texts, 3) == ["a b c d", "e f g h"]



def test_a_text_of_exactly_min_words_words_is_a_sentence():
    texts = ["a b c", "d e", "f g h i"]
    assert sentence_holdout.find_sentences(texts, 3) == ["f g h i", "a b c"]
    assert sentence_holdout.find_sentences(texts, 4) == ["f g h i"]


def test_a_sentence_whose_hash_bucket_equals_the_fraction_stays_in_training():
    # Held out when its bucket (MD5 mod 10,000) is below fraction * 10,000.
    def bucket(text):
        return int(hashlib.md5(text.encode("utf-8")).hexdigest(), 16) % 10_000

    text = next(text for text in (f"sentence number {index}" for index in range(100))
                if 0 < bucket(text) and bucket(text) / 10_000 * 10_000 == bucket(text))
    at = bucket(text) / 10_000
    assert not sentence_holdout.held_out(text, at)
    assert sentence_holdout.held_out(text, (bucket(text) + 1) / 10_000)

def test_the_command_writes_both_files_with_the_header(tmp_path, capsys):
    source = tmp_path / "train.tsv"
    source.write_text("label\tsentence\n" + "".join(
        f"{row['label']}\t{row['sentence']}\n" for row in ROWS))
    assert sentence_holdout.main([
        f"--input={source}", f"--train_output={tmp_path / 'kept.tsv'}",
        f"--heldout_output={tmp_path / 'heldout.tsv'}", "--fraction=0.999",
        "--min_words=6"]) == 0
    assert (tmp_path / "kept.tsv").read_text() == "label\tsentence\n0\twit\n"
    assert (tmp_path / "heldout.tsv").read_text().count("\n") == 3
    assert "2 held-out sentences, 1 training rows, 3 rows dropped" in capsys.readouterr().out


def test_a_missing_input_is_one_line_and_status_2(tmp_path, capsys):
    arguments = [f"--input={tmp_path / 'no.tsv'}", f"--train_output={tmp_path / 'a.tsv'}",
                 f"--heldout_output={tmp_path / 'b.tsv'}"]
    with pytest.raises(SystemExit) as stop:
        run_main(sentence_holdout.main, arguments)
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(f"error: --input={tmp_path / 'no.tsv'} does not exist; expected a TSV "
                         "file with a header row. Check the path.")

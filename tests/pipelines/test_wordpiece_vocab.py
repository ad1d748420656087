"""End-to-end tests of the Beam vocabulary job, `pipelines.wordpiece_vocab`.

Each test runs the real job in-process. The main sample is the first 500
lines of WikiText-2 (test split) with `--vocab_size=1000` and
`--max_input_words=2000`: tensorflow-text's learner is pure Python and takes
about a minute on the whole file, a few seconds on this sample.

The tests run on the job's default runner (Beam's in-process direct runner,
see `pipelines.beam_options`); `test_runners.py` runs the job on
Beam's portable runner. The job's composite transform,
`LearnWordPieceVocabulary`, is also tested alone on `beam.Create` input.
"""

import collections
import json

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.testing.util import assert_that, equal_to
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
)

from pipelines import wordpiece_learner, wordpiece_vocab
from pipelines.beam_options import pipeline_options
from tests.text.reference_bert_tokenizer import ReferenceBertTokenizer, wordpiece_split
from tfnlp.text import SPECIAL_TOKENS, BertTokenizer, load_vocabulary

SAMPLE_LINES = 500
VOCAB_SIZE = 1000
SAMPLE_ARGUMENTS = [f"--vocab_size={VOCAB_SIZE}", "--max_input_words=2000"]


def run_job(input_file, output_file, *arguments):
    """Runs the job in-process."""
    return wordpiece_vocab.main(
        [f"--input_file={input_file}", f"--output_file={output_file}", *arguments]
    )


def line_count(data):
    """Lines as Beam reads them: a last line without "\\n" counts too."""
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


@pytest.fixture(scope="module")
def sample_file(shared_data_dir, tmp_path_factory):
    source = shared_data_dir / "mono" / "wikitext-2-test.txt"
    with open(source, "rb") as file:
        lines = [next(file) for _ in range(SAMPLE_LINES)]
    path = tmp_path_factory.mktemp("sample") / "wikitext.txt"
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="module")
def uncased_run(sample_file, tmp_path_factory):
    output = tmp_path_factory.mktemp("uncased") / "vocab.txt"
    stats = run_job(sample_file, output, *SAMPLE_ARGUMENTS)
    return stats, output


def test_uncased_vocabulary_format(uncased_run):
    _, output = uncased_run
    lines = output.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == ""
    tokens = lines[:-1]
    assert tokens == load_vocabulary(output)
    assert tokens[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert tokens.index("[PAD]") == 0
    assert len(tokens) <= VOCAB_SIZE
    assert len(set(tokens)) == len(tokens)
    assert all(token and token == token.strip() for token in tokens)
    learned = tokens[len(SPECIAL_TOKENS) :]
    assert "the" in learned and "##s" in learned
    assert all(token == token.lower() for token in learned)


def test_bert_tokenizer_uses_the_vocabulary(uncased_run, sample_file):
    stats, output = uncased_run
    tokenizer = BertTokenizer(output, lower_case=True)
    assert (
        tokenizer.pad_id,
        tokenizer.unk_id,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.mask_id,
    ) == (0, 1, 2, 3, 4)
    lines = sample_file.read_text(encoding="utf-8").splitlines()
    ids = tokenizer.tokenize(tf.constant(lines)).flat_values.numpy()
    unknown_share = float((ids == tokenizer.unk_id).mean())
    assert unknown_share < 0.005
    # The job measured the same corpus-level [UNK] share, word by word.
    assert stats["word_pieces"] == len(ids)
    assert stats["unknown_word_pieces"] == int((ids == tokenizer.unk_id).sum())
    assert stats["unk_share"] == pytest.approx(unknown_share)
    # Same ids as the original FullTokenizer (the vocabulary contract).
    reference = ReferenceBertTokenizer(output, lower_case=True)
    for line in lines[:100]:
        assert tokenizer.tokenize(tf.constant(line)).numpy().tolist() == (
            reference.tokenize_to_ids(line)
        )


def test_stats_file(uncased_run, sample_file):
    stats, output = uncased_run
    stats_path = output.with_name(output.name + ".stats.json")
    assert json.loads(stats_path.read_text(encoding="utf-8")) == stats
    lines = line_count(sample_file.read_bytes())
    accounting = stats["input"]
    assert accounting["lines_read"] == lines == SAMPLE_LINES
    assert accounting["lines_used"] + sum(accounting["lines_skipped"].values()) == lines
    assert accounting["lines_repaired"] == {"invalid_utf8": 0, "nul": 0}
    parameters = stats["parameters"]
    assert parameters["input_file"] == str(sample_file)
    assert parameters["input_files_matched"] == 1
    assert parameters["output_file"] == str(output)
    assert parameters["vocab_size"] == VOCAB_SIZE
    assert parameters["max_input_words"] == 2000
    assert parameters["lower_case"] is True
    assert parameters["input_format"] == "text"
    assert parameters["reserved_tokens"] == list(SPECIAL_TOKENS)
    assert parameters["beam_arguments"] == []
    assert stats["vocabulary_size"] == len(load_vocabulary(output))
    assert stats["words_given_to_learner"] == 2000
    assert stats["unique_words"] > 2000
    words = ReferenceBertTokenizer(output).basic_tokenize(
        sample_file.read_text("utf-8")
    )
    assert stats["words_counted"] == len(words)
    assert stats["unique_words"] == len(set(words))
    assert stats["words_over_200_characters"] == 0
    assert stats["warnings"] == []


def test_cased_vocabulary_keeps_capitals(uncased_run, sample_file, tmp_path):
    _, uncased_output = uncased_run
    output = tmp_path / "cased.txt"
    stats = run_job(sample_file, output, *SAMPLE_ARGUMENTS, "--no-lower_case")
    assert stats["parameters"]["lower_case"] is False
    cased = load_vocabulary(output)
    uncased = load_vocabulary(uncased_output)
    assert cased[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert "The" in cased and "The" not in uncased
    assert any(token[0].isupper() for token in cased[len(SPECIAL_TOKENS) :])
    tokenizer = BertTokenizer(output, lower_case=False)
    ids = tokenizer.tokenize(tf.constant(["The Boat Race"])).flat_values.numpy()
    assert tokenizer.unk_id not in ids


def test_jsonl_input_counts_skipped_lines(tmp_path):
    records = [
        json.dumps({"id": "a", "text": "Hello world, hello Beam."}),
        '{"text": "broken',
        json.dumps({"id": "b"}),
        json.dumps({"text": 7}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"text": "Hello again \ud800 world"}),
    ]
    input_file = tmp_path / "corpus.jsonl"
    input_file.write_text("\n".join(records) + "\n", encoding="utf-8")
    output = tmp_path / "vocab.txt"
    stats = run_job(
        input_file,
        output,
        "--vocab_size=60",
        "--input_format=jsonl",
        "--reserved_tokens=[unused0], [unused1]",
    )
    assert stats["input"] == {
        "lines_read": 7,
        "lines_used": 2,
        "lines_skipped": {
            "bad_json": 1,
            "blank": 1,
            "missing_text": 1,
            "not_object": 1,
            "text_not_string": 1,
        },
        "lines_repaired": {"invalid_utf8": 1, "nul": 0},
    }
    # hello world , hello beam . hello again world
    assert stats["words_counted"] == 9
    tokens = load_vocabulary(output)
    assert tokens[:7] == [*SPECIAL_TOKENS, "[unused0]", "[unused1]"]
    assert "h" in tokens and "##o" in tokens
    assert stats["parameters"]["reserved_tokens"] == tokens[:7]
    assert stats["parameters"]["beam_arguments"] == []


def test_pattern_matching_nothing_fails_before_running(tmp_path):
    existing = tmp_path / "a.txt"
    existing.write_text("some text\n", encoding="utf-8")
    missing = str(tmp_path / "missing-*.txt")
    with pytest.raises(FileNotFoundError, match="missing-\\*.txt.*matches no file"):
        run_job(f"{existing},{missing}", tmp_path / "vocab.txt", "--vocab_size=100")
    assert not (tmp_path / "vocab.txt").exists()


def test_input_without_words_is_a_clear_error(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_bytes(b"\n  \n")
    output = tmp_path / "vocab.txt"
    with pytest.raises(ValueError, match="holds no word: 2 lines read, 0 used"):
        run_job(tmp_path / "*.txt", output, "--vocab_size=100")
    assert load_vocabulary(output) == list(SPECIAL_TOKENS)
    stats = json.loads((tmp_path / "vocab.txt.stats.json").read_text("utf-8"))
    assert stats["parameters"]["input_files_matched"] == 2
    assert stats["input"]["lines_skipped"]["blank"] == 2
    assert stats["words_counted"] == 0
    assert stats["unk_share"] == 0.0
    assert stats["warnings"]


def test_bad_bytes_and_huge_lines_are_counted_not_fatal(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "bad.txt").write_bytes(
        b"caf\xc3\xa9 ol\xff\xfe\xc3\xa9\n"  # invalid UTF-8: "ol" and "é" join
        b"nu\x00ll bytes\r\n"  # NUL is dropped: 'null'
        b"   \n"
        b"last line without a line end"
    )
    words_line = b"alpha beta gamma delta " * (1024 * 1024 // 23 + 1)
    (tmp_path / "huge.txt").write_bytes(
        words_line + b"\n" + b"x" * (1024 * 1024) + b"\n"
    )
    output = tmp_path / "vocab.txt"
    stats = run_job(
        f"{tmp_path / 'empty.txt'},{tmp_path / 'bad.txt'},{tmp_path / 'huge.txt'}",
        output,
        "--vocab_size=100",
        "--min_token_count=1",
    )
    assert stats["input"] == {
        "lines_read": 6,
        "lines_used": 5,
        "lines_skipped": {
            "bad_json": 0,
            "blank": 1,
            "missing_text": 0,
            "not_object": 0,
            "text_not_string": 0,
        },
        "lines_repaired": {"invalid_utf8": 1, "nul": 1},
    }
    assert stats["parameters"]["input_files_matched"] == 3
    alphabet_words = 4 * (1024 * 1024 // 23 + 1)
    # cafe ole; null bytes; last line without a line end; the words; one 1 MB word.
    assert stats["words_counted"] == 2 + 2 + 6 + alphabet_words + 1
    assert stats["words_over_200_characters"] == 1
    assert stats["unknown_word_pieces"] >= 1
    tokens = load_vocabulary(output)
    assert "alpha" in tokens
    tokenizer = BertTokenizer(output)
    ids = tokenizer.tokenize(tf.constant(["null ole cafe alpha"])).flat_values.numpy()
    assert tokenizer.unk_id not in ids


def test_ranking_key_orders_by_count_then_word():
    word_counts = [
        ("b", 5),
        ("a", 5),
        ("ab", 5),
        ("abc", 5),
        ("é", 5),
        ("z", 9),
        ("zz", 1),
    ]
    keys = [wordpiece_learner.ranking_key(pair) for pair in word_counts]
    ranked = [
        wordpiece_learner.word_from_ranking_key(key) for key in sorted(keys, reverse=True)
    ]
    assert ranked == sorted(word_counts, key=lambda pair: (-pair[1], pair[0]))
    assert ranked[:3] == [("z", 9), ("a", 5), ("ab", 5)]


def test_cut_vocabulary_keeps_the_alphabet():
    tokens = [*SPECIAL_TOKENS, "a", "b", "the", "##s", "ab", "##b", "##a"]
    cut = wordpiece_learner.cut_vocabulary(tokens, 10, len(SPECIAL_TOKENS))
    assert cut == [*SPECIAL_TOKENS, "a", "b", "##s", "##b", "##a"]
    assert wordpiece_learner.cut_vocabulary(tokens, 8, 5) == [
        *SPECIAL_TOKENS,
        "a",
        "b",
        "##s",
    ]
    assert wordpiece_learner.cut_vocabulary(tokens, 20, 5) == tokens


def test_flags_and_beam_options_are_separated():
    flags, beam_arguments = wordpiece_vocab.parse_arguments(
        [
            "--input_file=a.txt,b/*.txt",
            "--output_file=gs://bucket/vocab.txt",
            "--vocab_size=30000",
            "--no-lower_case",
            "--reserved_tokens=[unused0],[unused1]",
            "--runner=DataflowRunner",
            "--max_num_workers",
            "8",
        ]
    )
    assert flags.lower_case is False
    assert flags.reserved_tokens == ["[unused0]", "[unused1]"]
    assert flags.input_format == "text"
    assert beam_arguments == ["--runner=DataflowRunner", "--max_num_workers", "8"]
    required = ["--input_file=a", "--output_file=b"]
    for bad in (
        ["--vocab_size=5"],
        ["--vocab_size=100", "--reserved_tokens=[MASK]"],
        ["--vocab_size=100", "--reserved_tokens=x,x"],
        ["--vocab_size=100", "--input_format=csv"],
    ):
        with pytest.raises(SystemExit):
            wordpiece_vocab.parse_arguments(required + bad)


def test_learn_word_piece_vocabulary_transform_on_created_lines(shared_data_dir):
    """The composite transform alone, on `beam.Create` input: the words are
    split as the original BasicTokenizer splits them, the most frequent go
    to tensorflow-text's learner in rank order, and the statistics count
    the pieces of the original greedy WordPiece split."""
    lines = [
        "Hello world, hello Beam.",
        "Hello again, world!",
        "The Café sat.",
        "   ",
        "über alles",
    ]
    options = wordpiece_learner.VocabularyOptions(
        vocab_size=40,
        reserved_tokens=("[unused0]",),
        max_input_words=5,
        min_token_count=1,
    )
    splitter = ReferenceBertTokenizer(shared_data_dir / "vocab/bert-base-uncased-vocab.txt")
    words = collections.Counter(
        word for line in lines for word in splitter.basic_tokenize(line)
    )
    top_words = sorted(words.items(), key=lambda pair: (-pair[1], pair[0]))[:5]
    assert top_words == [("hello", 3), (",", 2), (".", 2), ("world", 2), ("!", 1)]
    learned = learner.learn(
        top_words,
        vocab_size=40,
        reserved_tokens=[*SPECIAL_TOKENS, "[unused0]"],
        upper_thresh=10_000_000,
        lower_thresh=1,
        num_iterations=4,
        max_input_tokens=5,
        max_token_length=50,
        max_unique_chars=1000,
        slack_ratio=0.05,
        include_joiner_token=True,
        joiner="##",
    )
    assert len(learned) <= 40  # so the job cuts nothing
    pieces = {word: wordpiece_split(word, set(learned)) for word in words}
    word_pieces = sum(count * len(pieces[word]) for word, count in words.items())
    unknown = sum(
        count * pieces[word].count("[UNK]") for word, count in words.items()
    )
    # Only the top five words' letters are learned: beam, again, the, cafe,
    # sat, uber and alles (lower-cased, accents stripped) are one [UNK] each.
    assert "hello" in learned and "world" in learned
    assert unknown == 7 and pieces["cafe"] == ["[UNK]"]
    expected_statistics = {
        "words_counted": sum(words.values()),
        "unique_words": len(words),
        "words_over_200_characters": 0,
        "words_given_to_learner": 5,
        "learned_vocabulary_size": len(learned),
        "vocabulary_size": len(learned),
        "word_pieces": word_pieces,
        "unknown_word_pieces": unknown,
        "unk_share": unknown / word_pieces,
    }

    pipeline = beam.Pipeline(options=pipeline_options([]))
    tokens, statistics = (
        pipeline
        | beam.Create(lines)
        | wordpiece_vocab.LearnWordPieceVocabulary(options)
    )
    assert_that(tokens, equal_to([learned]), label="CheckTokens")
    assert_that(statistics, equal_to([expected_statistics]), label="CheckStatistics")
    pipeline.run().wait_until_finish()


def test_absl_and_earlier_spellings_of_lower_case():
    required = ["--input_file=a", "--output_file=b", "--vocab_size=100"]
    for spelling, expected in (
        ([], True),
        (["--lower_case"], True),
        (["--lower_case=false"], False),
        (["--lower_case=True"], True),
        (["--nolower_case"], False),
        (["--no-lower_case"], False),
    ):
        flags, beam_arguments = wordpiece_vocab.parse_arguments(required + spelling)
        assert flags.lower_case is expected, spelling
        assert beam_arguments == []

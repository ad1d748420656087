"""The Beam jobs' command lines on a user's mistakes: an argument that is
neither the job's flag nor a Beam option, an unknown runner, a setting a
library refuses during the run, and an empty output. Each exits with
status 2 and one line on stderr; the argument mistakes are refused before
any work, so the output directory is never made.

Each job's `main` runs in this process through `run_main`, as its
`__main__` block runs it; the runs that start a pipeline take tiny inputs.
"""

import importlib
import logging
import os

import pytest

from pipelines import (distillation_data, lm_data, pretraining_data, text_input,
                       translation_data, wordpiece_vocab)
from tfnlp import command_line
from tfnlp.command_line import run_main
from tfnlp.text.vocabulary import SPECIAL_TOKENS

# Per job: its module, its required flags (formatted with `paths`), one of
# its flags to misspell, and the function that splits its command line.
JOBS = {
    "wordpiece-vocab": ("pipelines.wordpiece_vocab",
                        ["--input_file={text}", "--output_file={output}/vocab.txt",
                         "--vocab_size=100"],
                        "--max_token_length", wordpiece_vocab.parse_arguments),
    "pretraining-data": ("pipelines.pretraining_data",
                         ["--input_file={text}", "--vocab_file={text}",
                          "--output_dir={output}"],
                         "--max_seq_length", pretraining_data.parse_arguments),
    "translation-data": ("pipelines.translation_data",
                         ["--source_file={text}", "--target_file={text}",
                          "--output_dir={output}"],
                         "--max_length", translation_data.parse_arguments),
    "lm-data": ("pipelines.lm_data", ["--input_file={text}", "--output_dir={output}"],
                "--sequence_length", lm_data.parse_arguments),
    "distillation-data": ("pipelines.distillation_data",
                          ["--labelled_file={text}", "--teacher_export={text}",
                           "--output_dir={output}"],
                          "--teacher_batch_size", distillation_data.parse_arguments),
}
# Runner options as Beam's own documentation writes them, each form once.
BEAM_ARGUMENTS = [
    "--runner=DataflowRunner", "--project=P", "--temp_location=gs://b/tmp",
    "--region", "europe-west1", "--save_main_session",
    "--experiments=a", "--experiments=b",
    "--direct_num_workers=2", "--direct_running_mode=multi_processing",
    "--flink_master=HOST:8081", "--environment_type=DOCKER",
]


@pytest.fixture(autouse=True)
def without_verbose_environment(monkeypatch):
    monkeypatch.delenv(command_line.VERBOSE_ENVIRONMENT_VARIABLE, raising=False)


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "text.txt").write_text("A sentence.\nAnother one.\n", encoding="utf-8")
    return {"text": str(tmp_path / "text.txt"), "output": str(tmp_path / "out")}


def misspelt(flag):
    """`flag` with its last two letters swapped: --max_seq_lenght."""
    return flag[:-2] + flag[-1] + flag[-2]


def run_job(name, arguments, paths):
    """Runs the job `name` with its required flags and `arguments`."""
    module, required, _, _ = JOBS[name]
    argv = [argument.format(**paths) for argument in [*required, *arguments]]
    return run_main(importlib.import_module(module).main, argv)


def refusal(name, arguments, paths, capsys):
    """The one line that the job `name` exits with (status 2)."""
    with pytest.raises(SystemExit) as exit_info:
        run_job(name, arguments, paths)
    stderr = capsys.readouterr().err
    assert exit_info.value.code == 2, stderr
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr, stderr
    return stderr


@pytest.mark.parametrize("name", JOBS)
@pytest.mark.parametrize("case", ["job flag", "Beam option", "value", "runner"])
def test_an_unknown_argument_is_refused_before_any_work(name, case, paths, capsys):
    flag = JOBS[name][2]
    argument, *expected = {
        "job flag": (f"{misspelt(flag)}=64", f"did you mean {flag}?"),
        "Beam option": ("--direct_num_worker=2", "did you mean --direct_num_workers?"),
        "value": ("64", "'64': a value without its flag"),
        "runner": ("--runner=DuskRunner", "DirectRunner, ", "FlinkRunner, ",
                   "SparkRunner, ", "--runner=dask runs on a Dask cluster (which needs "
                   "pip install \"apache-beam[dask]\")"),
    }[case]
    line = refusal(name, [argument], paths, capsys)
    assert all(part in line for part in [argument, *expected]), line
    assert not os.path.exists(paths["output"])


@pytest.mark.parametrize("name", JOBS)
def test_beam_options_pass_through_unchanged(name, paths):
    _, required, _, parse_arguments = JOBS[name]
    argv = [argument.format(**paths) for argument in required]
    _, beam_arguments = parse_arguments([*argv, *BEAM_ARGUMENTS])
    assert beam_arguments == BEAM_ARGUMENTS


def test_a_setting_the_library_refuses_ends_in_one_line(paths, capsys):
    # SentencePiece cannot learn 8,000 pieces from two lines; it says how many.
    line = refusal("translation-data", ["--shared_vocab"], paths, capsys)
    assert "SentencePiece cannot learn the shared unigram model of 8000 pieces" in line
    assert "Vocabulary size too high (8000). Please set it to a value <= " in line
    assert "; give --vocab_size=" in line and "[while running" not in line


def test_no_training_record_is_an_error_naming_the_flag(paths, capsys):
    line = refusal("lm-data", [], paths, capsys)
    assert line.endswith(
        "error: wrote no training record: the train split's 25 tokens (from 1 document) "
        "are fewer than --sequence_length=256 + 1; give more text or a shorter "
        "--sequence_length\n")


def test_an_empty_validation_split_is_a_last_warning(tmp_path, paths, caplog):
    (tmp_path / "long.txt").write_text("abcdefghij" * 10, encoding="utf-8")
    (tmp_path / "short.txt").write_text("abc", encoding="utf-8")
    paths["text"] = str(tmp_path / "long.txt")
    with caplog.at_level(logging.INFO):
        stats = run_job("lm-data", ["--sequence_length=16",
                                    f"--validation_file={tmp_path / 'short.txt'}"], paths)
    assert stats["train"]["records"] == 6 and stats["validation"]["records"] == 0
    last = caplog.records[-1]
    assert last.levelno == logging.WARNING and last.getMessage().startswith(
        "wrote no validation record: the validation split's 4 tokens")


def empty_outputs():
    """`(output_problems, stats, expected error)` of each job whose empty
    output a tiny run cannot make (lm-data's is made above), built as the
    job builds its stats."""
    yield (pretraining_data.output_problems, pretraining_data.stats_from_counts(
        {"lines_read": 2, "lines_skipped_blank": 2},
        {"max_seq_length": 128, "random_seed": 1}),
        "wrote no instance: 0 of 0 documents used, from 0 of 2 lines read; check "
        "--input_file and --input_format")
    yield (translation_data.output_problems, translation_data.stats_from_counts(
        {"pairs_read": 3, "pairs_dropped_too_long": 2, "pairs_dropped_length_ratio": 1},
        {"max_length": 8}, vocabulary={}, shards={}),
        "wrote no pair: 3 pairs read, all dropped (too_long 2, length_ratio 1); raise "
        "--max_length, or raise --max_length_ratio (0 turns it off)")
    words = wordpiece_vocab.word_statistics(
        {"tokens": list(SPECIAL_TOKENS), "learned_size": 5, "words_used": 3}, 3, 0, 3,
        (3, 3))
    yield (wordpiece_vocab.output_problems, wordpiece_vocab.build_stats(
        words, {"output_file": "vocab.txt", "reserved_tokens": list(SPECIAL_TOKENS),
                "max_token_length": 2, "max_unique_characters": 1000},
        dict.fromkeys(text_input.COUNTER_NAMES, 0) | {"lines_read": 1, "lines_used": 1}),
        "Learned no token from 3 words: each is longer than --max_token_length=2")
    yield (distillation_data.output_problems, {
        "records_written": 0, "unlabelled": None,
        "labelled": {"rows_read": 2, "rows_skipped": {"empty text": 1}, "rows_excluded": 1,
                     "rows_repeated": 0}},
        "wrote no record: the 2 labelled rows gave no text (skipped 1, excluded 1, "
        "repeated 0)")


@pytest.mark.parametrize("output_problems, stats, expected", list(empty_outputs()),
                         ids=["pretraining-data", "translation-data", "wordpiece-vocab",
                              "distillation-data"])
def test_an_empty_output_is_an_error_that_says_what_to_change(output_problems, stats,
                                                              expected):
    error, warnings = output_problems(stats)
    assert error.startswith(expected) and not warnings


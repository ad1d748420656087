"""Every command line on a user's mistakes (issue 14): a missing or unreadable
input, an output that cannot be written, a bad flag value, a text file given
as TFRecords. Each exits with status 2 and at most two lines on stderr that
name the flag, without a traceback unless `--verbose` asks for one.

Most cases call `run_main(module.main, argv)` in this process; the
`__main__` blocks run in this process too (`runpy.run_path`), and two
command lines that start without TensorFlow run as real processes, a job
and the load generator (a process of each entry point would add a minute
of TensorFlow imports to the suite).
"""

import functools
import importlib
import os
import re
import runpy
import subprocess
import sys

import pytest

from pipelines import job, text_input
from tests.conftest import REPOSITORY
from tfnlp import command_line
from tfnlp.command_line import UsageError, run_main
from trainer import distribution, runtime

# What TensorFlow's C++ runtime and Beam print when imported on a machine
# without a GPU or without Beam's GCP extras, whatever the command line does.
IMPORT_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\)|[IWEF]\d{4} "
    r"|WARNING:root:apitools not found)"
)

# (entry point, flag named in the error, arguments): the arguments are
# formatted with the `paths` fixture.
CASES = [
    ("pipelines.wordpiece_vocab", "--input_file",
     ["--input_file={missing}/*.txt", "--output_file={output}/vocab.txt", "--vocab_size=100"]),
    ("pipelines.wordpiece_vocab", "--output_file",
     ["--input_file={text}", "--output_file={file}/vocab.txt", "--vocab_size=100"]),
    ("pipelines.wordpiece_vocab", "--output_file",
     ["--input_file={text}", "--output_file={directory}", "--vocab_size=100"]),
    ("pipelines.wordpiece_vocab", "--vocab_size",
     ["--input_file={text}", "--output_file={output}/vocab.txt", "--vocab_size=-5"]),
    ("pipelines.pretraining_data", "--input_file",
     ["--input_file={missing}", "--vocab_file={vocab}", "--output_dir={output}"]),
    ("pipelines.pretraining_data", "--vocab_file",
     ["--input_file={text}", "--vocab_file={missing}", "--output_dir={output}"]),
    ("pipelines.pretraining_data", "--vocab_file",
     ["--input_file={text}", "--vocab_file={directory}", "--output_dir={output}"]),
    ("pipelines.pretraining_data", "--output_dir",
     ["--input_file={text}", "--vocab_file={vocab}", "--output_dir={file}/out"]),
    ("pipelines.pretraining_data", "--dupe_factor",
     ["--input_file={text}", "--vocab_file={vocab}", "--output_dir={output}",
      "--dupe_factor=0"]),
    ("pipelines.translation_data", "--source_file",
     ["--source_file={missing}", "--target_file={text}", "--output_dir={output}"]),
    ("pipelines.translation_data", "--vocab_file",
     ["--source_file={text}", "--target_file={text}", "--output_dir={output}",
      "--vocab_file={missing}", "--shared_vocab"]),
    ("pipelines.translation_data", "--output_dir",
     ["--source_file={text}", "--target_file={text}", "--output_dir={file}/out"]),
    ("pipelines.translation_data", "--max_length",
     ["--source_file={text}", "--target_file={text}", "--output_dir={output}",
      "--max_length=1"]),
    ("pipelines.lm_data", "--input_file",
     ["--input_file={missing}", "--output_dir={output}"]),
    ("pipelines.lm_data", "--validation_file",
     ["--input_file={text}", "--validation_file={missing}*", "--output_dir={output}"]),
    ("pipelines.lm_data", "--vocab_file",
     ["--input_file={text}", "--tokenizer=sentencepiece", "--vocab_file={missing}",
      "--output_dir={output}"]),
    ("pipelines.lm_data", "--vocab_file",
     ["--input_file={text}", "--tokenizer=sentencepiece", "--vocab_file={text}",
      "--output_dir={output}"]),
    ("pipelines.lm_data", "--output_dir",
     ["--input_file={text}", "--output_dir={file}/out"]),
    ("pipelines.lm_data", "--sequence_length",
     ["--input_file={text}", "--output_dir={output}", "--sequence_length=0"]),
    ("pipelines.distillation_data", "--labelled_file",
     ["--labelled_file={missing}", "--teacher_export={directory}", "--output_dir={output}"]),
    ("pipelines.distillation_data", "--teacher_export",
     ["--labelled_file={text}", "--teacher_export={directory}", "--output_dir={output}"]),
    ("trainer.pretrain", "--train_data",
     ["--train_data={missing}*", "--model_dir={output}", "--global_batch_size=2",
      "--train_steps=1", "--warmup_steps=0"]),
    ("trainer.pretrain", "--train_data",
     ["--train_data={text}", "--model_dir={output}", "--global_batch_size=2",
      "--train_steps=1", "--warmup_steps=0"]),
    ("trainer.pretrain", "--model_dir",
     ["--train_data={empty_records}", "--model_dir={file}/run", "--global_batch_size=2",
      "--train_steps=1", "--warmup_steps=0"]),
    ("trainer.pretrain", "--vocab_file",
     ["--train_data={empty_records}", "--model_dir={output}", "--global_batch_size=2",
      "--train_steps=1", "--warmup_steps=0", "--vocab_file={missing}"]),
    ("trainer.pretrain", "--train_steps",
     ["--train_data={empty_records}", "--model_dir={output}", "--global_batch_size=2",
      "--train_steps=-1"]),
    ("trainer.finetune", "--train_data",
     ["--task=classification", "--train_data={missing}", "--vocab_file={vocab}",
      "--model_dir={output}", "--config=tiny"]),
    ("trainer.finetune", "--train_data",
     ["--task=classification", "--train_data={directory}", "--vocab_file={vocab}",
      "--model_dir={output}", "--config=tiny"]),
    ("trainer.finetune", "--init_checkpoint",
     ["--task=classification", "--train_data={text}", "--vocab_file={vocab}",
      "--model_dir={output}", "--init_checkpoint={missing}/ckpt-3"]),
    ("trainer.finetune", "--model_dir",
     ["--task=classification", "--train_data={text}", "--vocab_file={vocab}",
      "--model_dir={file}/run", "--config=tiny"]),
    ("trainer.finetune", "--max_seq_length",
     ["--task=classification", "--train_data={text}", "--vocab_file={vocab}",
      "--model_dir={output}", "--config=tiny", "--max_seq_length=2"]),
    ("trainer.translate", "--train_data",
     ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"]),
    ("trainer.translate", "--train_data",
     ["--train_data={text}", "--model_dir={output}", "--train_steps=1"]),
    ("trainer.translate", "--config",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--config=no_such_preset"]),
    ("trainer.translate", "--export_dir",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--export_dir={file}/export"]),
    ("trainer.translate", "--max_length",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--max_length=0"]),
    ("trainer.lm", "--train_data",
     ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"]),
    ("trainer.lm", "--config",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--config=no_such_preset"]),
    ("trainer.lm", "--sample_top_p",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--sample_top_p=0"]),
    ("trainer.distill", "--train_data",
     ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"]),
    ("trainer.distill", "--eval_data",
     ["--train_data={empty_records}", "--eval_data={missing}", "--model_dir={output}",
      "--train_steps=1"]),
    ("trainer.distill", "--teacher",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--student=bert"]),
    ("trainer.distill", "--alpha",
     ["--train_data={empty_records}", "--model_dir={output}", "--train_steps=1",
      "--alpha=2"]),
    ("trainer.translate_text", "--model_dir", ["--model_dir={missing}"]),
    ("trainer.translate_text", "--input_file",
     ["--model_dir={directory}", "--input_file={missing}"]),
    ("trainer.translate_text", "--input_file",
     ["--model_dir={directory}", "--input_file={directory}"]),
    ("trainer.translate_text", "--output_file",
     ["--model_dir={directory}", "--input_file={text}", "--output_file={file}/out.txt"]),
    ("trainer.translate_text", "--batch_size", ["--model_dir={directory}", "--batch_size=0"]),
    ("trainer.export", "--model_dir", ["--model_dir={missing}", "--export_dir={output}"]),
    ("trainer.export", "--export_dir", ["--model_dir={directory}", "--export_dir={file}/x"]),
    ("trainer.export", "--max_seq_length",
     ["--model_dir={directory}", "--export_dir={output}", "--max_seq_length=0"]),
    ("trainer.average_checkpoints", "--model_dir", ["--model_dir={missing}"]),
    ("trainer.average_checkpoints", "--model_dir", ["--model_dir={directory}"]),
    ("trainer.average_checkpoints", "--output",
     ["--model_dir={directory}", "--output={file}/ckpt-1"]),
    ("trainer.average_checkpoints", "--num_checkpoints",
     ["--model_dir={directory}", "--num_checkpoints=0"]),
    ("tfnlp.serve.__main__", "--model_dir", ["--model_dir={missing}"]),
    ("tfnlp.serve.__main__", "--model_dir", ["--model_dir={directory}"]),
    ("tfnlp.serve.__main__", "--port", ["--model_dir={directory}", "--port=-1"]),
    ("tfnlp.serve.__main__", "--max_batch_size",
     ["--model_dir={directory}", "--max_batch_size=0"]),
    ("tfnlp.serve.__main__", "--max_instances_per_request",
     ["--model_dir={directory}", "--max_instances_per_request=0"]),
    ("tfnlp.serve.__main__", "--request_timeout",
     ["--model_dir={directory}", "--request_timeout=0"]),
    ("tfnlp.serve.load_test", "--url", ["--url=ftp://localhost/"]),
    ("tfnlp.serve.load_test", "--requests", ["--url=http://localhost/", "--requests=0"]),
    ("tfnlp.serve.load_test", "--body", ["--url=http://localhost/", "--body={{not json"]),
]
ENTRY_POINTS = sorted({module for module, _, _ in CASES})


@pytest.fixture(autouse=True)
def without_verbose_environment(monkeypatch):
    monkeypatch.delenv(command_line.VERBOSE_ENVIRONMENT_VARIABLE, raising=False)


@pytest.fixture(scope="module")
def paths(tmp_path_factory, shared_data_dir):
    """The paths the cases name: `missing` does not exist, `file` is a regular
    file (so nothing can be created under it), `directory` an empty one."""
    root = tmp_path_factory.mktemp("command_lines")
    (root / "text.txt").write_text("A sentence.\nAnother one.\n", encoding="utf-8")
    (root / "file").write_text("a regular file\n", encoding="utf-8")
    (root / "empty.tfrecord").write_bytes(b"")
    (root / "directory").mkdir()
    return {
        "missing": str(root / "missing"),
        "text": str(root / "text.txt"),
        "file": str(root / "file"),
        "directory": str(root / "directory"),
        "empty_records": str(root / "empty.tfrecord"),
        "output": str(root / "output"),
        "vocab": str(shared_data_dir / "vocab" / "bert-base-uncased-vocab.txt"),
    }


def error_lines(stderr):
    """The non-empty lines of `stderr`, without the import noise."""
    return [line for line in stderr.splitlines() if line.strip() and not IMPORT_NOISE.match(line)]


def assert_reported(status, stderr, flag):
    lines = error_lines(stderr)
    assert status == 2, stderr
    assert 1 <= len(lines) <= 2, stderr
    assert flag in lines[-1], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("module, flag, arguments", CASES,
                         ids=[f"{module}:{flag}" for module, flag, _ in CASES])
def test_a_mistake_exits_2_with_one_line_naming_the_flag(module, flag, arguments, paths,
                                                         capsys):
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exit_info:
        run_main(main, [argument.format(**paths) for argument in arguments])
    assert_reported(exit_info.value.code, capsys.readouterr().err, flag)


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_each_main_block_goes_through_run_main(module, paths, monkeypatch, capsys):
    # The job's logging set-up would replace pytest's handlers.
    monkeypatch.setattr(job, "configure_command_line_logging", lambda: None)
    _, flag, arguments = next(case for case in CASES if case[0] == module)
    monkeypatch.setattr(sys, "argv", [module, *(argument.format(**paths)
                                                for argument in arguments)])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(REPOSITORY / f"{module.replace('.', '/')}.py"), run_name="__main__")
    assert_reported(exit_info.value.code, capsys.readouterr().err, flag)


@pytest.mark.parametrize("module", [
    "pipelines.translation_data",  # A Beam job: pipelines.job.command_line_main.
    "tfnlp.serve.load_test",
])
def test_the_process_exits_2_with_one_line(module, paths):
    _, flag, arguments = next(case for case in CASES if case[0] == module)
    environment = dict(os.environ, PYTHONPATH=str(REPOSITORY), TF_CPP_MIN_LOG_LEVEL="2",
                       CUDA_VISIBLE_DEVICES="")
    completed = subprocess.run(
        [sys.executable, "-m", module, *(argument.format(**paths) for argument in arguments)],
        cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=120,
    )
    assert_reported(completed.returncode, completed.stderr, flag)


@pytest.mark.parametrize("verbose_flag", [True, False])
def test_verbose_prints_the_traceback_first(verbose_flag, paths, capsys, monkeypatch):
    arguments = [f"--model_dir={paths['missing']}"]
    if verbose_flag:
        arguments.append("--verbose")
    else:
        monkeypatch.setenv(command_line.VERBOSE_ENVIRONMENT_VARIABLE, "1")
    main = importlib.import_module("trainer.average_checkpoints").main
    with pytest.raises(SystemExit) as exit_info:
        run_main(main, arguments)
    stderr = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert stderr.startswith("Traceback (most recent call last):")
    assert "in check_input_directory" in stderr
    assert stderr.splitlines()[-1].startswith(
        "python -m trainer.average_checkpoints: error: --model_dir=")


def test_a_bug_keeps_its_traceback():
    def main(argv):
        return {}["no such key"]

    with pytest.raises(KeyError):
        run_main(main, [])
    assert run_main(lambda argv: argv, ["--flag"]) == ["--flag"]


def test_errors_without_a_message_of_ours_point_to_verbose(capsys):
    def main(argv):
        open(os.path.join(argv[0], "missing.txt"))

    with pytest.raises(SystemExit):
        run_main(main, ["/no/such/directory"])
    assert capsys.readouterr().err == (
        f"{command_line.program_name(main)}: error: No such file or directory: "
        "/no/such/directory/missing.txt (run with --verbose for the traceback)\n")


def test_output_checks_create_the_directory_and_leave_nothing_in_it(tmp_path):
    output = tmp_path / "new" / "a" / "b"
    command_line.check_output_directory("--output_dir", str(output))
    assert output.is_dir()
    assert list(output.iterdir()) == []  # The probe file is gone.
    vocab = tmp_path / "other" / "vocab.txt"
    command_line.check_output_file("--output_file", str(vocab))
    assert list(vocab.parent.iterdir()) == []  # The folder, without the file or a probe.


def test_the_file_check_leaves_an_existing_file_as_it_was(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"[PAD]\n[UNK]\n")
    command_line.check_output_file("--output_file", str(vocab))
    assert vocab.read_bytes() == b"[PAD]\n[UNK]\n"
    assert list(tmp_path.iterdir()) == [vocab]


def test_an_existing_file_that_cannot_be_opened_is_named(tmp_path, monkeypatch):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n", encoding="utf-8")

    def read_only(path, mode="r", *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    # Root may write any file: refuse the opening the way a read-only file would.
    monkeypatch.setattr(command_line, "open", read_only, raising=False)
    with pytest.raises(UsageError, match=re.escape(
            f"--output_file={vocab} cannot be written: opening the existing file failed "
            "(Permission denied)")):
        command_line.check_output_file("--output_file", str(vocab))


# Paths that no process can create or write in, root included (os.access says
# yes to root for /proc and /sys): (path, what the message says).
UNWRITABLE_OUTPUTS = [
    ("/proc/tfnlp-check/out", "cannot be created: making the directory /proc/tfnlp-check "
                              "failed (No such file or directory)"),
    ("/proc", "cannot be written: creating a file in /proc failed"),
    ("/sys/tfnlp-check", "cannot be created: making the directory /sys/tfnlp-check failed"),
]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("path, expected", UNWRITABLE_OUTPUTS)
def test_an_output_no_one_can_write_is_one_line_naming_flag_path_and_reason(path, expected):
    with pytest.raises(UsageError) as error:
        command_line.check_output_directory("--output_dir", path)
    message = str(error.value)
    assert message.startswith(f"--output_dir={path} {expected}"), message
    assert "Pick a writable location" in message
    assert "\n" not in message
    with pytest.raises(UsageError, match=re.escape(f"--output_file={path}/vocab.txt cannot be")):
        command_line.check_output_file("--output_file", f"{path}/vocab.txt")


def test_an_output_under_a_regular_file_names_the_file(paths):
    for check, flag in ((command_line.check_output_directory, "--output_dir"),
                        (command_line.check_output_file, "--output_file")):
        with pytest.raises(UsageError, match=re.escape(
                f"{flag}={paths['file']}/x/y cannot be created: {paths['file']} is a file, "
                "not a directory")):
            check(flag, os.path.join(paths["file"], "x", "y"))
    with pytest.raises(UsageError, match="is a file; expected a directory"):
        command_line.check_output_directory("--output_dir", paths["file"])
    with pytest.raises(UsageError, match="is empty"):
        command_line.check_output_file("--output_file", "")


def test_remote_outputs_are_left_to_their_file_system(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command_line.check_output_directory("--output_dir", "gs://bucket/not/checked")
    command_line.check_output_file("--output_file", "gs://bucket/vocab.txt")
    assert list(tmp_path.iterdir()) == []


def test_unreadable_inputs_are_named(paths, monkeypatch):
    # Root reads anything: deny access the way a file's permissions would.
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(UsageError, match="--vocab_file=.* cannot be read"):
        command_line.check_input_file("--vocab_file", paths["text"], "a vocabulary")
    with pytest.raises(PermissionError, match="text.txt of --source_file cannot be read"):
        text_input.match_input_files(paths["text"], flag="--source_file")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("module, flag, arguments", [
    ("pipelines.wordpiece_vocab", "--output_file",
     ["--input_file={text}", "--output_file=/proc/tfnlp-check/vocab.txt", "--vocab_size=100"]),
    ("pipelines.pretraining_data", "--output_dir",
     ["--input_file={text}", "--vocab_file={vocab}", "--output_dir=/proc/tfnlp-check/out"]),
    ("pipelines.lm_data", "--output_dir",
     ["--input_file={text}", "--output_dir=/proc/tfnlp-check/out"]),
])
def test_a_job_whose_output_cannot_be_created_exits_2_before_it_runs(
        module, flag, arguments, tmp_path, monkeypatch, capsys):
    text, vocab = tmp_path / "text.txt", tmp_path / "vocab.txt"
    text.write_text("A sentence.\nAnother one.\n", encoding="utf-8")
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n", encoding="utf-8")

    def run_job(*args, **kwargs):
        raise AssertionError("the job ran: its output was not checked before")

    monkeypatch.setattr(job, "run_job", run_job)
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exit_info:
        run_main(main, [argument.format(text=text, vocab=vocab) for argument in arguments])
    stderr = capsys.readouterr().err
    assert_reported(exit_info.value.code, stderr, flag)
    assert error_lines(stderr) == [
        f"python -m {module}: error: {flag}=/proc/tfnlp-check/"
        f"{'vocab.txt' if flag == '--output_file' else 'out'} cannot be created: making the "
        "directory /proc/tfnlp-check failed (No such file or directory). Pick a writable "
        "location, or create the directory first."]


@pytest.mark.parametrize("check, flag", [
    (functools.partial(runtime.check_global_batch_size, 10, 1, 4), "--global_batch_size"),
    (functools.partial(distribution.get_strategy, "multi_worker"), "--strategy"),
])
def test_mistakes_found_once_training_starts_exit_2_too(check, flag, monkeypatch, capsys):
    # Flags that only the run can judge (the replicas, the cluster).
    monkeypatch.delenv("TF_CONFIG", raising=False)

    def main(argv):
        check()

    with pytest.raises(SystemExit) as exit_info:
        run_main(main, [])
    assert_reported(exit_info.value.code, capsys.readouterr().err, flag)

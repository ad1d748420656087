"""Package attributes imported on first use (PEP 562).

The Beam jobs import pieces of tfnlp that need no TensorFlow (the record
schema, the plain-Python tokenizer) in workers that should not load it:
TensorFlow and Keras cost about 650 MB and seconds per process. So the
packages whose modules load TensorFlow name their public attributes here
and import each module only when the attribute is first read;
`from tfnlp.text import BertTokenizer` and `tfnlp.layers.MultiHeadAttention`
work as with eager imports.
"""

import importlib


def lazy_attributes(package, attributes):
    """`__getattr__` and `__dir__` for `package` (a module's `__name__`).

    Args:
        package: the package's name, e.g. "tfnlp.text".
        attributes: a dict from attribute name to the module (relative to
            `package`) that defines it; a module name that equals the
            attribute name stands for the submodule itself.

    Returns:
        The pair `(__getattr__, __dir__)` to assign in the package.
    """

    def __getattr__(name):
        module_name = attributes.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}.{module_name}")
        return module if module_name == name else getattr(module, name)

    def __dir__():
        return sorted(attributes)

    return __getattr__, __dir__

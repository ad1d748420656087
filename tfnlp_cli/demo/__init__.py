"""The main job, `tfnlp demo` (`python -m tfnlp_cli.demo`, run by `make
demo`): the product path from raw text to a served model, each stage one of
the product's entry points.

- `tfnlp_cli.demo.masked_lm` (the default): masked-word prediction with BERT
  on Tiny Shakespeare, which is in the repository (`demo/data`).
- `tfnlp_cli.demo.translation` (`--data_dir=DIR`): English→German
  translation on Multi30k in DIR/mt, which is not.

`tfnlp_cli.demo.__main__` holds both demos' flags and picks one.
"""

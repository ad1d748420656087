"""The `tfnlp` command, above the library, the Beam jobs and the trainers.

- `commands`: the subcommand table and `main`, the console script `tfnlp`;
- `demo`: the main job (`make demo`, `tfnlp demo`), from raw text to a
  served model, each stage one of the product's entry points.

`tfnlp` (the library) imports nothing from here.
"""

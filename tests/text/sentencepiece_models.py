"""SentencePiece models and Multi30k lines for the tests.

`multi30k_job_run` runs `pipelines.translation_data --shared_vocab` (8,000
pieces) on Multi30k's train split once per test process, so the tokenizer
tests and the job's tests share the model the job learned
(`multi30k_shared_model`).
"""

import atexit
import functools
import io
import shutil
import tempfile
import time

import sentencepiece

from pipelines import translation_data

LANGUAGES = ("en", "de")


def multi30k_lines(data_dir, split, language):
    """The lines of `mt/{split}.{language}`, split at "\\n" only (as the job
    reads them)."""
    with open(f"{data_dir}/mt/{split}.{language}", encoding="utf-8", newline="") as file:
        text = file.read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


@functools.lru_cache(maxsize=None)
def multi30k_job_run(data_dir):
    """`(stats, output_dir, seconds)` of the job on Multi30k train with
    `--shared_vocab` and the defaults (about 10 s); the output folder is
    deleted when the process ends."""
    output = tempfile.mkdtemp(prefix="tfnlp-multi30k-")
    atexit.register(shutil.rmtree, output, ignore_errors=True)
    start = time.monotonic()
    stats = translation_data.main([
        f"--source_file={data_dir}/mt/train.en", f"--target_file={data_dir}/mt/train.de",
        f"--output_dir={output}", "--shared_vocab",
    ])
    return stats, output, time.monotonic() - start


def multi30k_shared_model(data_dir):
    """The model (bytes) that the job learned in `multi30k_job_run`."""
    _, output, _ = multi30k_job_run(data_dir)
    with open(f"{output}/sentencepiece.model", "rb") as file:
        return file.read()


def train_model(sentences, **trainer_arguments):
    """A model learned with SentencePiece's own defaults overridden by
    `trainer_arguments` (for models the job would not learn)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, minloglevel=2,
        **trainer_arguments)
    return model.getvalue()

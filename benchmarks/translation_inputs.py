"""The Multi30k En-De inputs of the translation benchmarks: the text files in
../shared/data/mt and the shards that `python -m pipelines.translation_data
--shared_vocab` makes from them.

    with shards_directory(flags.data_dir, flags.source_file, flags.target_file,
                          prefix="translation_training_") as data_dir:
        files = sorted(glob.glob(os.path.join(data_dir, "translation-*")))

Relative paths are resolved from the repository root.
"""

import contextlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile

from benchmarks.reporting import REPOSITORY_ROOT, from_root
from tfnlp.data.file_names import SENTENCEPIECE_MODEL

TRAIN_SOURCE = "../shared/data/mt/train.en"
TRAIN_TARGET = "../shared/data/mt/train.de"
VALIDATION_SOURCE = "../shared/data/mt/val.en"
VALIDATION_TARGET = "../shared/data/mt/val.de"
SHARD_PATTERN = "translation-*"


def add_data_flags(parser):
    """`--data_dir` (the pipeline's output, made when not given) and the
    training text it is made from."""
    parser.add_argument("--data_dir", default=None,
                        help="output of pipelines.translation_data --shared_vocab "
                             "(default: run it into a temporary directory)")
    parser.add_argument("--source_file", default=TRAIN_SOURCE)
    parser.add_argument("--target_file", default=TRAIN_TARGET)


def first_lines(path, count, output):
    """Copies the first `count` lines of `path` to `output`; returns `output`."""
    with open(path, encoding="utf-8") as source, open(output, "w", encoding="utf-8") as target:
        target.writelines(itertools.islice(source, count))
    return output


def make_shards(output_dir, source_file, target_file, pairs=0, vocab_size=None,
                vocab_file=None, num_shards=None):
    """Runs `python -m pipelines.translation_data --shared_vocab` on aligned
    text (about 10 s for Multi30k's 29,000 training pairs).

    Args:
        output_dir: where the shards (and the learned SentencePiece model,
            `SENTENCEPIECE_MODEL`, unless `vocab_file` is given) go.
        source_file, target_file: the aligned text.
        pairs: only the first `pairs` lines of each (0: all).
        vocab_size: the pieces of the learned model (None: the job's default).
        vocab_file: a SentencePiece model to tokenize with instead of
            learning one.
        num_shards: the TFRecord files (None: the job's default).

    Returns:
        `output_dir`.
    """
    source_file, target_file = from_root(source_file), from_root(target_file)
    with tempfile.TemporaryDirectory(prefix="translation_text_") as text_dir:
        if pairs:
            source_file = first_lines(source_file, pairs, os.path.join(text_dir, "source.txt"))
            target_file = first_lines(target_file, pairs, os.path.join(text_dir, "target.txt"))
        command = [sys.executable, "-m", "pipelines.translation_data",
                   f"--source_file={source_file}", f"--target_file={target_file}",
                   f"--output_dir={output_dir}", "--shared_vocab"]
        if vocab_size:
            command.append(f"--vocab_size={vocab_size}")
        if vocab_file:
            command.append(f"--vocab_file={vocab_file}")
        if num_shards:
            command.append(f"--num_shards={num_shards}")
        job = subprocess.run(command, cwd=REPOSITORY_ROOT, capture_output=True, text=True)
    if job.returncode:
        raise RuntimeError(f"{' '.join(command[1:])} failed:\n{job.stderr[-3000:]}")
    return output_dir


@contextlib.contextmanager
def shards_directory(data_dir, source_file, target_file, vocab_size=None,
                     prefix="translation_shards_"):
    """`data_dir` (from the repository root) when given, else a temporary
    directory of shards made by `make_shards` and removed on exit."""
    if data_dir:
        yield from_root(data_dir)
        return
    temporary = tempfile.mkdtemp(prefix=prefix)
    try:
        yield make_shards(temporary, source_file, target_file, vocab_size=vocab_size)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)

"""The Beam jobs on Beam's portable runner and on a Dask cluster give the
default runner's output.

The portable runner submits a pipeline through Beam's Job API, the API that
the Flink, Spark and Dataflow runners share. Here it talks to Beam's local
job service (`python -m apache_beam.runners.portability.local_job_service_main`,
started for this module on a free port of localhost and stopped at the end,
whatever happens), and the SDK workers run in the test process
(`--environment_type=LOOPBACK`). So the pipelines go through the portable
pipeline proto, artifact staging and the Fn API, as on a cluster. The Dask
runner (`--runner=dask`) runs them on a local dask.distributed cluster of
two worker processes (`conftest.dask_scheduler`).

What must match the default runner (Beam's in-process direct runner):

- the vocabulary job: the vocabulary file's bytes, and the stats (all but
  the recorded Beam arguments);
- the pretraining-data job with `--num_shards`: the bytes of every shard
  file, and the stats (all but the recorded Beam arguments);
- the language-model job (a learned SentencePiece model, a validation
  split, several packing buckets): the bytes of every file it writes, and
  the stats (all but the recorded Beam arguments and paths).
"""

import json
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from pipelines import lm_data, pretraining_data, wordpiece_vocab
from tests.pipelines.conftest import dask_arguments

SAMPLE_LINES = 300
START_TIMEOUT_SECONDS = 60


@pytest.fixture(scope="module")
def job_endpoint(tmp_path_factory):
    """The address of a local Beam job service, stopped after the module."""
    folder = tmp_path_factory.mktemp("job_service")
    port_file = folder / "port"
    log_path = folder / "job_service.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "apache_beam.runners.portability.local_job_service_main",
                "--port=0",
                f"--port_file={port_file}",
                f"--staging_dir={folder / 'staging'}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    "The local job service did not start (exit code "
                    f"{process.poll()}):\n{log_path.read_text(errors='replace')}"
                )
            time.sleep(0.1)
        yield f"localhost:{port_file.read_text().strip()}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def portable_arguments(job_endpoint):
    return [
        "--runner=PortableRunner",
        f"--job_endpoint={job_endpoint}",
        "--environment_type=LOOPBACK",
    ]


def other_runners(job_endpoint, dask_scheduler):
    """`(name, Beam arguments)` of the runners compared with the default."""
    return (("portable", portable_arguments(job_endpoint)),
            ("dask", dask_arguments(dask_scheduler)))


def without_beam_arguments(stats):
    parameters = dict(stats["parameters"])
    del parameters["beam_arguments"]
    return {**stats, "parameters": parameters}


def without_output(stats, flag):
    """The stats without the Beam arguments and the output flag `flag`."""
    stats = without_beam_arguments(stats)
    stats["parameters"].pop(flag)
    return stats


def first_lines(path, count):
    with open(path, "rb") as file:
        return b"".join(file.readline() for _ in range(count))


def test_vocabulary_job_gives_the_same_bytes(shared_data_dir, tmp_path, job_endpoint,
                                               dask_scheduler):
    corpus = tmp_path / "wikitext.txt"
    corpus.write_bytes(first_lines(shared_data_dir / "mono/wikitext-2-test.txt", SAMPLE_LINES))
    stats = {}
    for runner, beam_arguments in (("default", []),
                                   *other_runners(job_endpoint, dask_scheduler)):
        stats[runner] = wordpiece_vocab.main([
            f"--input_file={corpus}",
            f"--output_file={tmp_path / runner / 'vocab.txt'}",
            "--vocab_size=500",
            "--max_input_words=2000",
            *beam_arguments,
        ])
    default_vocabulary = (tmp_path / "default" / "vocab.txt").read_bytes()
    assert default_vocabulary.count(b"\n") > 300
    for runner, beam_arguments in other_runners(job_endpoint, dask_scheduler):
        assert (tmp_path / runner / "vocab.txt").read_bytes() == default_vocabulary, runner
        assert stats[runner]["parameters"]["beam_arguments"] == beam_arguments
        assert (without_output(stats[runner], "output_file")
                == without_output(stats["default"], "output_file")), runner


def test_pretraining_data_job_gives_the_same_bytes(shared_data_dir, tmp_path, job_endpoint,
                                                    dask_scheduler):
    corpus = tmp_path / "gutenberg.txt"
    corpus.write_bytes(first_lines(shared_data_dir / "mono/gutenberg-16-books.txt", SAMPLE_LINES))
    records, shards, stats = {}, {}, {}
    for runner, beam_arguments in (("default", []),
                                   *other_runners(job_endpoint, dask_scheduler)):
        output = tmp_path / runner
        stats[runner] = pretraining_data.main([
            f"--input_file={corpus}",
            f"--vocab_file={shared_data_dir / 'vocab/bert-base-uncased-vocab.txt'}",
            f"--output_dir={output}",
            "--dupe_factor=2",
            "--num_shards=2",
            # A small pool, so that the documents spread over several buckets.
            "--random_pool_tokens=3000",
            *beam_arguments,
        ])
        shards[runner] = {path.name: path.read_bytes()
                          for path in sorted(output.glob("pretraining-*"))}
        records[runner] = [
            record.numpy()
            for path in sorted(output.glob("pretraining-*"))
            for record in tf.data.TFRecordDataset(str(path))
        ]
    assert sorted(shards["default"]) == [
        "pretraining-00000-of-00002.tfrecord",
        "pretraining-00001-of-00002.tfrecord",
    ]
    assert len(records["default"]) == stats["default"]["instances"] > 100
    for runner in ("portable", "dask"):
        assert shards[runner] == shards["default"], runner
        assert (without_output(stats[runner], "output_dir")
                == without_output(stats["default"], "output_dir")), runner


def test_lm_data_job_gives_the_same_bytes(shared_data_dir, tmp_path, job_endpoint,
                                           dask_scheduler):
    corpus = tmp_path / "shakespeare.txt"
    corpus.write_bytes(first_lines(shared_data_dir / "lm/tinyshakespeare-train.txt",
                                   SAMPLE_LINES))
    files, stats = {}, {}
    for runner, beam_arguments in (("default", []),
                                   *other_runners(job_endpoint, dask_scheduler)):
        output = tmp_path / runner
        result = lm_data.main([
            f"--input_file={corpus}",
            f"--output_dir={output}",
            "--tokenizer=sentencepiece",
            "--vocab_size=400",
            "--validation_fraction=0.2",
            "--sequence_length=32",
            # A small bucket, so that the documents spread over several streams.
            "--packing_bucket_tokens=500",
            "--num_shards=2",
            *beam_arguments,
        ])
        files[runner] = {path.name: path.read_bytes() for path in sorted(output.iterdir())
                         if path.name != "stats.json"}
        stats[runner] = json.loads(json.dumps(without_beam_arguments(result))
                                   .replace(str(output), "DIR"))
    assert sorted(files["default"]) == [
        "sentencepiece.model", "sentencepiece.vocab", "tokenizer.json",
        "train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord",
        "validation-00000-of-00001.tfrecord"]
    assert stats["default"]["train"]["buckets"] > 3
    assert stats["default"]["validation"]["records"] > 10
    for runner in ("portable", "dask"):
        assert files[runner] == files["default"], runner
        assert stats[runner] == stats["default"], runner

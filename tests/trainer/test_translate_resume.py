"""`python -m trainer.translate` killed with SIGKILL and run again resumes
like an uninterrupted run (the input iterator is in the checkpoints)."""

import os
import signal
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.trainer import helpers
from tests.translation_helpers import multi30k_translation_data, trainer_flags


@pytest.fixture(scope="module")
def data(tmp_path_factory, shared_data_dir):
    return multi30k_translation_data(tmp_path_factory.mktemp("multi30k"), shared_data_dir,
                                     train_pairs=240, eval_pairs=8)


def test_resumes_after_sigkill_like_an_uninterrupted_run(data, tmp_path):
    killed, whole = str(tmp_path / "killed"), str(tmp_path / "whole")
    settings = dict(train_steps=20, checkpoint_every_steps=4, log_every_steps=10)
    arguments = trainer_flags(data, killed, **settings)
    process = helpers.start(arguments, module="trainer.translate")
    deadline = time.monotonic() + 180
    while tf.train.latest_checkpoint(killed) is None and process.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    restored = int(tf.train.latest_checkpoint(killed).rsplit("-", 1)[1])
    assert restored < 20, "the run ended before it could be killed; raise train_steps"
    # Only the killed run needs a process of its own.
    output = helpers.run_here(arguments, module="trainer.translate")
    assert f"resuming from step {restored}." in output
    helpers.run_here(trainer_flags(data, whole, **settings), module="trainer.translate")
    resumed, uninterrupted = helpers.train_log(killed), helpers.train_log(whole)
    assert resumed[-1]["step"] == 20
    np.testing.assert_allclose(resumed[-1]["loss"], uninterrupted[-1]["loss"], rtol=1e-5)

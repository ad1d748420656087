"""The main job (`make demo`) on a few hundred real Multi30k pairs."""

import json
import os

import pytest

from demo.__main__ import main


def test_demo_trains_decodes_with_cache_and_reloads(tmp_path, shared_data_dir):
    summary = main([
        f"--data_dir={shared_data_dir}", f"--output_dir={tmp_path}",
        "--train_pairs=300", "--eval_pairs=8", "--epochs=2", "--batch_size=32",
        "--vocab_size=400",
    ])
    assert summary["cached_decoding_matches_full"]
    assert summary["reloaded_model_matches"]
    assert summary["loss_per_epoch"][1] < summary["loss_per_epoch"][0]
    assert json.loads((tmp_path / "summary.json").read_text())["train_pairs"] == 300
    assert os.listdir(tmp_path / "tensorboard")


def test_demo_without_the_data_says_where_to_point_it(tmp_path):
    with pytest.raises(SystemExit, match="--data_dir"):
        main([f"--data_dir={tmp_path}", f"--output_dir={tmp_path}"])

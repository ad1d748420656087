"""`python -m examples.reverse_sequence` on a tiny budget: the outputs it
promises (the full run's figures are in docs/TRANSLATION.md)."""

import json

import numpy as np
import pytest

from examples import reverse_sequence


def test_writes_results_for_each_variant_and_the_alignment_png(tmp_path, capsys):
    results = reverse_sequence.main([
        f"--output_dir={tmp_path}", "--variants=none,bahdanau", "--train_steps=15",
        "--batch_size=16", "--hidden_dim=16", "--test_sequences=20",
        "--plot_variant=bahdanau",
    ])
    written = json.loads((tmp_path / "results.json").read_text())
    assert written == results and sorted(written) == ["bahdanau", "none"]
    assert all(0.0 <= value <= 1.0 for value in written.values())
    assert (tmp_path / "alignment_bahdanau.png").read_bytes()[:4] == b"\x89PNG"
    table = capsys.readouterr().out
    assert "variant" in table and "bahdanau" in table and "none" in table


def test_the_task_is_the_reversed_sequence_with_eos():
    sequences = reverse_sequence.random_sequences(3, seed=1)
    assert sequences.shape == (3, 20)
    assert sequences.min() >= 4 and sequences.max() < 20
    inputs, targets = reverse_sequence.model_inputs(sequences)
    np.testing.assert_array_equal(targets[:, :20], sequences[:, ::-1])
    assert (targets[:, 20] == 3).all() and (inputs["encoder_token_ids"][:, 20] == 3).all()
    np.testing.assert_array_equal(inputs["decoder_token_ids"][:, 1:], targets[:, :20])
    assert (inputs["decoder_token_ids"][:, 0] == 2).all()


def test_an_unknown_variant_is_refused_with_the_choices(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        reverse_sequence.main([f"--output_dir={tmp_path}", "--variants=none,luong"])
    assert exit_info.value.code == 2
    assert "unknown luong; choose from none, luong_dot" in capsys.readouterr().err

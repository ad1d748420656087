import numpy as np
import pytest

from tfnlp.visualization import alignment_figure, alignment_image


def test_the_tokens_label_the_axes_and_the_png_is_written(tmp_path):
    weights = np.eye(4, dtype="float32")[::-1]
    figure = alignment_figure(weights, ["▁A", "▁dog", "▁runs", "</s>"],
                              ["</s>", "läuft", "▁Hund", "▁Ein"], title="sentence 0")
    axes = figure.axes[0]
    assert [label.get_text() for label in axes.get_xticklabels()] == [
        "▁A", "▁dog", "▁runs", "</s>"]
    assert [label.get_text() for label in axes.get_yticklabels()] == [
        "</s>", "läuft", "▁Hund", "▁Ein"]
    figure.savefig(tmp_path / "alignment.png")
    assert (tmp_path / "alignment.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_image_is_brightest_where_the_weights_are():
    weights = np.zeros((6, 6), "float32")
    weights[np.arange(6), np.arange(6)[::-1]] = 1.0  # the anti-diagonal
    image = alignment_image(weights, list("abcdef"), list("fedcba"))
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    # viridis: 1.0 is yellow (bright red and green), 0.0 dark purple.
    yellow = (image[:, :, 0] > 200) & (image[:, :, 1] > 200) & (image[:, :, 2] < 100)
    rows, columns = np.nonzero(yellow)
    assert len(rows) > 0
    # Yellow cells run from the top right to the bottom left (and the colour
    # bar's top, at the far right, is excluded by the column bound).
    plot = columns < image.shape[1] * 0.75
    slope = np.polyfit(columns[plot], rows[plot], 1)[0]
    assert slope < 0


def test_shapes_that_do_not_match_the_tokens_are_refused():
    with pytest.raises(ValueError, match="need 2 target tokens and 3 source tokens"):
        alignment_figure(np.zeros((2, 3)), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="must be \\(target_length, source_length\\)"):
        alignment_figure(np.zeros((1, 2, 3)), ["a"], ["x"])

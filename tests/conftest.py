"""Fixtures shared by the whole suite."""

import os
import pathlib

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def shared_data_dir():
    """The real text beside the checkout (`../shared/data`), or $TFNLP_DATA_DIR."""
    path = pathlib.Path(
        os.environ.get("TFNLP_DATA_DIR", REPOSITORY.parent / "shared" / "data")
    )
    if not (path / "README.md").exists():
        pytest.fail(
            f"The shared real data is not at {path}. Tests read it from "
            "../shared/data beside the checkout; set TFNLP_DATA_DIR to its "
            "folder if it lives elsewhere."
        )
    return path

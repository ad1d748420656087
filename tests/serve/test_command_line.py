"""`python -m tfnlp.serve` as a user runs it, and what it imports."""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import types

import pytest

from tests.conftest import REPOSITORY
from tests.serve.client import call
from tfnlp.command_line import UsageError
from tfnlp.serve.__main__ import main

SERVING_LINE = re.compile(r"Serving model (\S+) versions (\[[\d, ]*\]) at http://127\.0\.0\.1:(\d+)")
ENVIRONMENT = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(REPOSITORY)}


def read_lines(stream, lines):
    for line in stream:
        lines.put(line)


def test_server_subprocess_serves_and_logs_each_request(toy_export_dir):
    process = subprocess.Popen(
        [sys.executable, "-m", "tfnlp.serve", f"--model_dir={toy_export_dir}",
         "--model_name=toy", "--port=0"],
        cwd=REPOSITORY, env=ENVIRONMENT, stderr=subprocess.PIPE, text=True,
    )
    lines = queue.Queue()
    threading.Thread(target=read_lines, args=(process.stderr, lines), daemon=True).start()
    try:
        match = None
        while match is None:
            match = SERVING_LINE.search(lines.get(timeout=90))
        assert match.group(1, 2) == ("toy", "[1, 2]")
        server = types.SimpleNamespace(port=int(match.group(3)))
        assert call(server, "POST", "/v1/models/toy/versions/1:predict",
                    {"signature_name": "length", "instances": ["four"]}) == (
            200, {"predictions": [4]})
        status, body = call(server, "POST", "/v1/models/toy:predict", {"instances": [1]})
        assert status == 400 and "where text" in body["error"]
        # Each line is written after its response, by the request's own
        # thread: the second request's line can come first.
        access_lines = "\n".join(lines.get(timeout=30).rstrip() for _ in range(2))
        assert re.search(r"POST /v1/models/toy/versions/1:predict 200 \d+\.\d ms$",
                         access_lines, re.MULTILINE)
        assert re.search(r"POST /v1/models/toy:predict 400 \d+\.\d ms$",
                         access_lines, re.MULTILINE)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0  # SIGTERM stops it cleanly.


def test_startup_errors_exit_with_what_was_expected(tmp_path, capsys):
    with pytest.raises(UsageError, match=r"No model versions.*EXPORT_DIR/<version>/saved_model\.pb"):
        main([f"--model_dir={tmp_path}"])
    with pytest.raises(SystemExit):
        main([f"--model_dir={tmp_path}", "--max_batch_size=0"])
    assert "--max_batch_size must be at least 1" in capsys.readouterr().err


SYS_MODULES_CHECK = """
import json, sys
import tensorflow, tensorflow_text  # Their own imports are not the server's.
before = set(sys.modules)
from tfnlp.serve import batching, http_server, load_test, model_store, rest_api
store = model_store.ModelStore(sys.argv[1])
outputs = store.get("toy").signatures["length"]({"text": [b"abc"]})
new = sorted(set(sys.modules) - before)
print(json.dumps({
    "length": outputs["length"].tolist(),
    "new_keras": [name for name in new if name.split(".")[0] in ("keras", "keras_hub", "tf_keras")],
    "tfnlp": sorted(name for name in sys.modules if name.startswith("tfnlp")),
}))
"""


def test_server_loads_models_without_keras_or_tfnlp_model_code(toy_export_dir):
    # TensorFlow 2.21 itself imports parts of Keras when Keras is installed
    # (and tensorflow_text subclasses tf.keras.layers.Layer), so the check is
    # that the server and loading a model add no Keras module of their own.
    result = subprocess.run(
        [sys.executable, "-c", SYS_MODULES_CHECK, str(toy_export_dir)],
        cwd=REPOSITORY, env=ENVIRONMENT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["length"] == [3 + 1000]
    assert report["new_keras"] == []
    subpackages = {name.split(".")[1] for name in report["tfnlp"] if "." in name}
    assert not subpackages & {"models", "layers", "text"}, report["tfnlp"]
    assert "tfnlp.serve.model_store" in report["tfnlp"]

"""Runs signatures of exported SavedModels in a process without tfnlp.

    python tests/export/saved_model_runner.py REQUEST.json RESULT.json

is what a serving host does: it imports `tensorflow` and, when the request
says `"text_ops": true`, `tensorflow_text` (to register its ops), loads each
SavedModel with `tf.saved_model.load`, calls the named signatures and writes
their outputs as JSON lists. It never imports tfnlp (run as a script, the
repository is not on `sys.path`) and fails if anything did.

REQUEST.json: `{"text_ops": bool, "calls": [{"export_dir": ..., "signature":
..., "inputs": {name: [dtype, nested list]}}]}`; RESULT.json: `{"results":
[{output: nested list}], "modules": [imported top-level packages]}`.
"""

import json
import sys

import tensorflow as tf


def _decoded(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    return value


def main(request_path, result_path):
    with open(request_path) as file:
        request = json.load(file)
    if request["text_ops"]:
        import tensorflow_text  # noqa: F401  (registers the tensorflow-text ops)
    loaded = {}
    results = []
    for call in request["calls"]:
        if call["export_dir"] not in loaded:
            loaded[call["export_dir"]] = tf.saved_model.load(call["export_dir"])
        function = loaded[call["export_dir"]].signatures[call["signature"]]
        inputs = {name: tf.constant(values, dtype=dtype)
                  for name, (dtype, values) in call["inputs"].items()}
        outputs = function(**inputs)
        results.append({name: _decoded(value.numpy().tolist()) for name, value in outputs.items()})
    packages = sorted({name.split(".")[0] for name in sys.modules})
    with open(result_path, "w") as file:
        json.dump({"results": results, "modules": packages}, file)
    if "tfnlp" in packages:
        sys.exit("tfnlp was imported while serving the exports.")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Shared helpers of the export tests: running exports in a new process."""

import json
import os
import subprocess
import sys

from tests.conftest import REPOSITORY

RUNNER = REPOSITORY / "tests" / "export" / "saved_model_runner.py"
SAVED_MODEL_CLI_WITH_TEXT_OPS = (
    "import sys, tensorflow_text; "
    "from tensorflow.python.tools.saved_model_cli import main; "
    "sys.argv[0] = 'saved_model_cli'; sys.exit(main())"
)


def _clean_environment():
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    environment["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return environment


def run_in_new_process(tmp_path, calls, text_ops=True):
    """Runs `calls` (see saved_model_runner.py) in a new Python process that
    imports only TensorFlow (and tensorflow-text if `text_ops`); returns
    `(results, imported top-level packages)`."""
    request = tmp_path / "request.json"
    result = tmp_path / "result.json"
    request.write_text(json.dumps({"text_ops": text_ops, "calls": calls}))
    completed = subprocess.run(
        [sys.executable, str(RUNNER), str(request), str(result)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=_clean_environment(),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    loaded = json.loads(result.read_text())
    return loaded["results"], loaded["modules"]


def saved_model_cli(*arguments, text_ops=True):
    """Runs TensorFlow's `saved_model_cli` (after importing tensorflow_text
    if `text_ops`, as a TensorFlow Serving build with those ops would);
    returns its standard output."""
    if text_ops:
        command = [sys.executable, "-c", SAVED_MODEL_CLI_WITH_TEXT_OPS, *arguments]
    else:
        command = [os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300,
                               env=_clean_environment(), cwd="/")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def saved_op_types(directory):
    """The op types of every graph and function of the SavedModel in
    `directory` (the functions' own names left out)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(directory, "saved_model.pb"), "rb") as file:
        saved_model.ParseFromString(file.read())
    op_types, function_names = set(), set()
    for meta_graph in saved_model.meta_graphs:
        op_types |= {node.op for node in meta_graph.graph_def.node}
        for function in meta_graph.graph_def.library.function:
            function_names.add(function.signature.name)
            op_types |= {node.op for node in function.node_def}
    return op_types - function_names



def constant_language_model(tokenizer, favoured, max_sequence_length):
    """A tiny `GPTCausalLM` of `tokenizer`'s vocabulary whose next-token
    logits are the same after any tokens: those of `favoured` (`{id or
    character: logit}`), -30 for the end-of-document id, 0 for the others.
    Its final layer norm outputs the first unit vector, and the first
    column of its tied token embedding holds the logits."""
    import numpy as np
    import tensorflow as tf

    from tfnlp.models import GPTCausalLM

    logits = np.zeros(tokenizer.vocabulary_size, "float32")
    logits[tokenizer.end_of_document_id] = -30.0
    for token, logit in favoured.items():
        if isinstance(token, str):
            token = tokenizer.tokenize(tf.constant([token])).numpy()[0][0]
        logits[token] = logit
    model = GPTCausalLM.from_preset("tiny", vocabulary_size=len(logits),
                                    max_sequence_length=max_sequence_length)
    model(np.zeros((1, 2), "int32"))
    backbone = model.backbone
    unit = np.zeros(backbone.hidden_dim, "float32")
    unit[0] = 1.0
    backbone.layer_norm.gamma.assign(np.zeros_like(unit))
    backbone.layer_norm.beta.assign(unit)
    embeddings = backbone.token_embedding.embeddings.numpy()
    embeddings[:, 0] = logits
    backbone.token_embedding.embeddings.assign(embeddings)
    return model

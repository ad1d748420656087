"""Signatures as `tfnlp.serve.rest_api` reads them, without a SavedModel:
the toy model's (`SIGNATURES`, checked against the exported toy model in
tests/serve/test_rest_api.py) and some it lacks (`OTHER_SIGNATURES`)."""

import types

import numpy as np

from tests.serve.toy_models import CAP_RULES
from tfnlp.export.input_rules import InputRules


def plain_signature(name, rules=None, **inputs):
    """A signature as `rest_api` reads it: its name, its input rules
    (`tfnlp.export.input_rules.InputRules`) and, for each input (in key
    order, as `model_store.Signature` has them), the key, the dtype's name,
    the numpy dtype and the shape that `model_store.TensorInfo` gives."""
    return types.SimpleNamespace(name=name, rules=rules or InputRules(), inputs={
        key: types.SimpleNamespace(
            key=key,
            dtype=types.SimpleNamespace(name=dtype_name),
            numpy_dtype=np.dtype(object if dtype_name == "string" else dtype_name),
            shape=shape,
        )
        for key, (dtype_name, shape) in sorted(inputs.items())
    })


# The inputs of the toy model's signatures (tests/serve/toy_models.py).
SIGNATURES = {
    "serving_default": plain_signature("serving_default", text=("string", (None,))),
    "length": plain_signature("length", text=("string", (None,))),
    "weighted_sum": plain_signature(
        "weighted_sum", ids=("int32", (None, None)), scale=("float32", (None,))),
    "total_length": plain_signature("total_length", text=("string", (None,))),
    "capped_sum": plain_signature(
        "capped_sum", rules=CAP_RULES, ids=("int32", (None, None)), cap=("int32", (None,))),
}


# Signatures the toy model lacks, for the other dtypes and shapes.
OTHER_SIGNATURES = {
    "flags": plain_signature("flags", flag=("bool", (None,))),
    "complex": plain_signature("complex", z=("complex64", (None,))),
    "pairs": plain_signature("pairs", pair=("int32", (None, 2))),
    "any_rank": plain_signature("any_rank", x=("float32", None)),
}

"""Reading Hugging Face checkpoint directories, for every family's converter.

A Hugging Face checkpoint directory holds `config.json` and the weights as
`model.safetensors`, or as shards listed by `model.safetensors.index.json`.
The tensors are read with `safetensors`' numpy API, so PyTorch is not
needed. What is particular to a family (the names of its tensors, their
layouts, its config keys) is in its own converter module
(`tfnlp/models/bert/huggingface.py`, `tfnlp/models/gpt/huggingface.py`);
what they share is here: finding and reading the files, making tensor
names canonical without letting two tensors take one name, and checking
that a checkpoint holds exactly the tensors a model needs.
"""

import json
import os

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX_FILE = "model.safetensors.index.json"


def is_huggingface_directory(path):
    """Whether `path` is a directory with Hugging Face safetensors weights."""
    return os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, name)) for name in (WEIGHTS_FILE, WEIGHTS_INDEX_FILE)
    )


def read_config(path, family):
    """The dict of `path/config.json`; `family` ("BERT", "GPT-2") names the
    checkpoint in the error when the file is missing."""
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(
            f"No {CONFIG_FILE} in {path}. A Hugging Face {family} checkpoint "
            f"directory holds {CONFIG_FILE} and {WEIGHTS_FILE}."
        )
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    if not isinstance(config, dict):
        raise ValueError(
            f"{config_path} must hold a JSON object (a Hugging Face config); it "
            f"holds a {type(config).__name__}."
        )
    return config


def read_safetensors(path):
    """Every tensor of the checkpoint directory `path`, name -> numpy array.

    Reads `model.safetensors`, or every shard that
    `model.safetensors.index.json` lists. bfloat16 tensors load as
    `ml_dtypes.bfloat16` arrays.

    Raises:
        FileNotFoundError: if the directory has neither file (a
            PyTorch-only `pytorch_model.bin` is not read).
        ValueError: if numpy cannot hold a tensor's dtype.
    """
    try:
        # Registers bfloat16 with numpy, so bfloat16 checkpoints load
        # (ml_dtypes comes with TensorFlow, JAX and Keras).
        import ml_dtypes  # noqa: F401
    except ImportError:  # pragma: no cover
        pass
    single_file = os.path.join(path, WEIGHTS_FILE)
    index_file = os.path.join(path, WEIGHTS_INDEX_FILE)
    if os.path.isfile(single_file):
        return _load_safetensors_file(single_file)
    if os.path.isfile(index_file):
        with open(index_file, encoding="utf-8") as file:
            shards = sorted(set(json.load(file)["weight_map"].values()))
        tensors = {}
        for shard in shards:
            tensors.update(_load_safetensors_file(os.path.join(path, shard)))
        return tensors
    present = sorted(os.listdir(path))
    raise FileNotFoundError(
        f"No {WEIGHTS_FILE} (or {WEIGHTS_INDEX_FILE}) in {path}; it holds "
        f"{present}. Only safetensors weights are read (no PyTorch); convert "
        "a pytorch_model.bin with the `safetensors` or `transformers` tools."
    )


def _load_safetensors_file(file_path):
    from safetensors.numpy import load_file

    try:
        return load_file(file_path)
    except TypeError as error:
        raise ValueError(
            f"numpy cannot hold the tensors of {file_path} ({error}). "
            "Install ml_dtypes for bfloat16, or convert the checkpoint to "
            "float32."
        ) from error


def canonical_tensors(tensors, canonical_name, source, is_ignored=None):
    """`tensors` keyed by `canonical_name(name)`, without those whose
    canonical name `is_ignored` (buffers that are not weights).

    Raises:
        ValueError: if two stored names have the same canonical name.
    """
    canonical, sources = {}, {}
    for name, tensor in tensors.items():
        key = canonical_name(name)
        if is_ignored is not None and is_ignored(key):
            continue
        if key in sources:
            raise ValueError(
                f"The checkpoint in {source} has both {sources[key]!r} and "
                f"{name!r}, which name the same tensor {key!r}. Keep one."
            )
        sources[key] = name
        canonical[key] = tensor
    return canonical


def listing(names, limit=20):
    """`names` sorted and comma-separated, the first `limit` of them."""
    names = sorted(names)
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def check_tensor_names(tensors, expected, source, model_name, description):
    """Raises unless `tensors` has exactly the names in `expected`.

    Args:
        tensors: canonical name -> tensor, as read.
        expected: the canonical names the model needs.
        source: where the tensors come from, for the message.
        model_name: what holds them ("a BertEncoder"), for the message.
        description: what the checkpoint should be ("the tensors of a
            Hugging Face BertModel ..."), for the message.

    Raises:
        ValueError: listing the unknown and the missing tensors.
    """
    unknown = set(tensors) - set(expected)
    missing = set(expected) - set(tensors)
    if not unknown and not missing:
        return
    problems = []
    if unknown:
        problems.append(f"tensors {model_name} does not have: {listing(unknown)}")
    if missing:
        problems.append(f"missing tensors: {listing(missing)}")
    raise ValueError(
        f"{source} does not hold {model_name}'s weights; " + "; ".join(problems)
        + f". Expected {description}."
    )


def check_tensor_shape(name, tensor, expected_shape, source, owner):
    """Raises unless `tensor` (stored as `name`) has `expected_shape`, the
    shape `owner` ("the encoder's config") needs."""
    if tuple(tensor.shape) != tuple(expected_shape):
        raise ValueError(
            f"{source}: tensor {name!r} has shape {tuple(tensor.shape)}, but {owner} "
            f"needs {tuple(expected_shape)} for it. The config.json does not match the "
            "weights."
        )

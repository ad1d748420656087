"""The config of tfnlp's subclassed models, shared by every family.

`keras.Model.get_config` of a subclassed model holds only its name and
trainability, and a functional model's config is its graph, which the
families' constructors cannot take. So each model writes its own constructor
arguments and adds the common keys with `model_config`; `model_from_config`
undoes that, including nested Keras objects (a head's encoder). The
argument checks that every family's classification heads share are here
too.
"""

import keras


def model_config(model, **arguments):
    """`arguments` (the model's constructor arguments), then its name,
    trainability and serialized dtype policy."""
    return {
        **arguments,
        "name": model.name,
        "trainable": model.trainable,
        "dtype": keras.dtype_policies.serialize(model.dtype_policy),
    }


def model_from_config(cls, config, nested=()):
    """Builds `cls` from a `model_config` dict; the keys in `nested` hold
    serialized Keras objects and are deserialized first."""
    config = dict(config)
    for key in nested:
        config[key] = keras.saving.deserialize_keras_object(config[key])
    if isinstance(config.get("dtype"), dict):
        config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
    return cls(**config)


def check_num_classes(num_classes, model_name):
    """Raises unless `num_classes` is a positive int."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(
            f"{model_name}: `num_classes` must be a positive integer (the "
            f"number of labels). Received: {num_classes!r}."
        )


def check_dropout(dropout, model_name):
    """Raises unless `dropout` is a rate in [0, 1)."""
    if (
        isinstance(dropout, bool)
        or not isinstance(dropout, (int, float))
        or not 0.0 <= dropout < 1.0
    ):
        raise ValueError(
            f"{model_name}: `dropout` must be a rate in [0, 1). "
            f"Received: {dropout!r}."
        )

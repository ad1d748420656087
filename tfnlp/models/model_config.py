"""The config of tfnlp's subclassed models, shared by every family.

`keras.Model.get_config` of a subclassed model holds only its name and
trainability, and a functional model's config is its graph, which the
families' constructors cannot take. So each model writes its own constructor
arguments and adds the common keys with `model_config`; `model_from_config`
undoes that, including nested Keras objects (a head's encoder).
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

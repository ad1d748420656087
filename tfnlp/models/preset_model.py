"""What tfnlp's subclassed models share: named presets, a config made of
their constructor arguments, and sublayers kept one attribute each.

Every family names its presets in a module-level dict, `name -> dict of
constructor (or config) arguments`, and looks a name up with
`preset_arguments`; `PresetModel` is the base of the subclassed models
(the seq2seq models, the GPT family), whose `from_preset`, `get_config` and
`from_config` it holds.
"""

import inspect

import keras

from tfnlp.models.model_config import model_config, model_from_config


def preset_arguments(presets, name, owner, overrides=None):
    """The arguments of preset `name`, with `overrides` applied.

    Args:
        presets: the family's dict `name -> dict of arguments`.
        name: the preset's name.
        owner: what the presets are for ("TransformerSeq2Seq", "BERT"), for
            the error message.
        overrides: a dict of arguments that replace or add to the preset's.

    Returns:
        A new dict: the preset's arguments updated with `overrides`.

    Raises:
        ValueError: for a name that is not a preset, listing the presets.

    Example:

    >>> presets = {"tiny": {"num_layers": 2, "hidden_dim": 64}}
    >>> preset_arguments(presets, "tiny", "Example", {"hidden_dim": 32})
    {'num_layers': 2, 'hidden_dim': 32}
    """
    if not presets:
        raise ValueError(
            f"{owner} has no presets; build it from its constructor arguments."
        )
    if name not in presets:
        raise ValueError(
            f"Unknown {owner} preset {name!r}; the presets are {', '.join(presets)}. "
            "Pick one of them, or build the model from its constructor arguments."
        )
    return {**presets[name], **(overrides or {})}


def constructor_argument_names(cls):
    """The names of `cls.__init__`'s arguments, without `self`, `dtype` and
    `**kwargs` (`model_config` writes the dtype policy itself)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return [
        parameter.name
        for parameter in parameters
        if parameter.name not in ("self", "dtype")
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    ]


class PresetModel(keras.Model):
    """Base of tfnlp's subclassed models: presets, config and sublayers.

    A subclass keeps each constructor argument as an attribute of the same
    name (the Keras convention), so `get_config` is those attributes (with
    the name, trainability and dtype policy of `model_config`) and
    `from_config` calls the constructor with them. Arguments that are Keras
    objects (a backbone) are named in `nested_arguments` and serialized.
    `presets` is the family's dict of named presets, which `from_preset`
    reads.

    Sublayers in a Python list are wrapped in a `TrackedList`, which
    `tf.train.Checkpoint` does not see, so a model whose variables must be
    in the trainer's checkpoints keeps a stack of blocks one attribute each:
    `set_layer_stack("decoder_block", blocks)` sets `decoder_block_0`,
    `decoder_block_1`, ..., and `layer_stack("decoder_block")` lists them.

    Not a model to use by itself. Subclasses set `presets` (and, when they
    need them, `nested_arguments` and `from_arguments`).

    Example:

    >>> import keras
    >>> class Scale(PresetModel):
    ...     presets = {"double": {"factor": 2.0}}
    ...     def __init__(self, factor=1.0, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.factor = factor
    ...     def call(self, inputs):
    ...         return inputs * self.factor
    >>> model = Scale.from_preset("double")
    >>> model.get_config()["factor"]
    2.0
    >>> Scale.from_config(model.get_config()).factor
    2.0

    References:
        - [Keras: Making new layers and models via subclassing](
          https://keras.io/guides/making_new_layers_and_models_via_subclassing/)
          (the `get_config` / `from_config` contract)
    """

    #: The family's presets: name -> dict of constructor arguments.
    presets = {}
    #: Constructor arguments that hold Keras objects (serialized in the config).
    nested_arguments = ()

    @classmethod
    def from_preset(cls, name, **overrides):
        """The model of preset `name` (a key of `cls.presets`); `overrides`
        change any of its arguments or add others."""
        return cls.from_arguments(**preset_arguments(cls.presets, name, cls.__name__, overrides))

    @classmethod
    def from_arguments(cls, **arguments):
        """The model of a preset's arguments: `cls(**arguments)`. A model
        built around a backbone overrides this to build the backbone."""
        return cls(**arguments)

    def get_config(self):
        arguments = {}
        for name in constructor_argument_names(type(self)):
            value = getattr(self, name)
            if name in self.nested_arguments:
                value = keras.saving.serialize_keras_object(value)
            arguments[name] = value
        return model_config(self, **arguments)

    @classmethod
    def from_config(cls, config):
        return model_from_config(cls, config, nested=cls.nested_arguments)

    def set_layer_stack(self, prefix, layers):
        """Keeps `layers` as the attributes `{prefix}_0`, `{prefix}_1`, ..."""
        for index, layer in enumerate(layers):
            setattr(self, f"{prefix}_{index}", layer)

    def layer_stack(self, prefix):
        """The layers `set_layer_stack(prefix, ...)` kept, first to last."""
        layers = []
        while hasattr(self, f"{prefix}_{len(layers)}"):
            layers.append(getattr(self, f"{prefix}_{len(layers)}"))
        return layers

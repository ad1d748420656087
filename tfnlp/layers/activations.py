"""Activation names accepted by the feed-forward networks of tfnlp blocks.

Any name `keras.activations.get` knows is accepted. Two names are pinned down
because BERT-family checkpoints depend on the difference:

- `"gelu"`: the exact GELU, x * Phi(x) with the Gaussian CDF computed by erf,
  as the original BERT and Hugging Face's `hidden_act="gelu"` use.
- `"gelu_approximate"`: the tanh approximation of Hendrycks & Gimpel (2016),
  Hugging Face's `"gelu_new"` / `"gelu_pytorch_tanh"`.

and one is added: `"relu_squared"`, relu(x)², Primer's (So et al., 2021)
and the modded-nanogpt speedrun's.
"""

import keras


def exact_gelu(x):
    return keras.activations.gelu(x, approximate=False)


def approximate_gelu(x):
    return keras.activations.gelu(x, approximate=True)


def relu_squared(x):
    return keras.ops.square(keras.activations.relu(x))


_NAMED_ACTIVATIONS = {"gelu": exact_gelu, "gelu_approximate": approximate_gelu,
                      "relu_squared": relu_squared}


def get_activation(name):
    """Returns the activation function for `name` (a plain string).

    Raises:
        ValueError: if Keras does not know the name either.
    """
    if not isinstance(name, str):
        raise ValueError(
            "`activation` must be a string such as 'relu', 'gelu' or "
            f"'gelu_approximate', so that the layer config stays plain JSON. "
            f"Received: {name!r}."
        )
    if name in _NAMED_ACTIVATIONS:
        return _NAMED_ACTIVATIONS[name]
    try:
        return keras.activations.get(name)
    except ValueError as error:
        raise ValueError(
            f"Unknown activation {name!r}. Use 'gelu' (exact, erf), "
            "'gelu_approximate' (tanh) or any name keras.activations.get "
            f"accepts, such as 'relu'. Keras said: {error}"
        ) from None

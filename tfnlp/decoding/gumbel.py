"""Gumbel noise from a counter-based hash: the same draws on every backend.

Sampling draws the next token as `argmax(logits + Gumbel noise)` (the
Gumbel-max trick). The noise of token `v` at step `index` of a row is a
function of the row's key, `index` and `v` only: two rounds of the
`lowbias32` integer hash (the hash of `tfnlp.layers.dropout`), written with
`keras.ops` int32 arithmetic. So a row's draws do not depend on the other
rows of its batch, nor on the token's rank among the candidates, and they
are the same bits on TensorFlow (eager or XLA-compiled) and JAX, whose
stateless generators otherwise differ. In a SavedModel the hash is a few
stock integer ops.

A row's key is a hash of its two seed words and a stream number (which of
the samples of its example it is), computed once per call.
"""

from keras import ops

# The hash is Dropout's: one integer mixer for the whole package.
from tfnlp.layers.dropout import _lowbias32 as lowbias32

# 2**32 / golden ratio, as int32: offsets a word before it is hashed, so
# that 0 does not hash to 0.
_GOLDEN_RATIO = 0x9E3779B9 - (1 << 32)
# Uniform draws keep 23 bits: (bits + 0.5) / 2**23 is exact in float32 and
# strictly inside (0, 1), so -log(-log(u)) is finite.
_UNIFORM_BITS = 23


def combine(key, word):
    """A hash of two int32 tensors (broadcast), one-to-one in each of them.

    For a fixed `word` distinct keys give distinct results, and for a fixed
    `key` distinct words do.
    """
    word = ops.cast(word, "int32") + _GOLDEN_RATIO
    return lowbias32(ops.bitwise_xor(ops.cast(key, "int32"), lowbias32(word)))


def row_keys(seeds, streams):
    """int32 `(rows,)`: the key of each row from its seed and stream.

    Args:
        seeds: integer `(rows, 2)`, each row's two seed words (taken modulo
            2**32).
        streams: integer `(rows,)`, each row's stream number.
    """
    seeds = ops.cast(seeds, "int32")
    return combine(combine(seeds[:, 0], seeds[:, 1]), streams)


def gumbel_noise(keys, index, token_ids):
    """float32 Gumbel(0, 1) noise for the tokens `token_ids` of each row.

    Args:
        keys: int32 `(rows,)` from `row_keys`.
        index: int32 scalar, the decoding step (position of the fed token).
        token_ids: int32 `(rows, n)` (or `(1, n)`, broadcast), the tokens to
            draw noise for; a token's noise does not depend on `n` or on
            its column.

    Returns:
        float32 of the broadcast shape of `token_ids` and `(rows, 1)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> keys = row_keys(np.array([[7, 0], [7, 0]]), np.array([0, 1]))
    >>> noise = ops.convert_to_numpy(gumbel_noise(keys, 3, np.array([[4, 2], [4, 2]])))
    >>> bool(noise[0, 0] != noise[1, 0])  # streams differ
    True
    >>> swapped = ops.convert_to_numpy(gumbel_noise(keys, 3, np.array([[2, 4], [2, 4]])))
    >>> bool(np.all(swapped[:, ::-1] == noise))  # a token's noise, wherever it stands
    True

    References:
        - [Maddison, Tarlow and Minka, 2014. A* Sampling](
          https://arxiv.org/abs/1411.0030) (the Gumbel-max trick)
        - [Salmon et al., 2011. Parallel Random Numbers: As Easy as 1, 2,
          3](https://doi.org/10.1145/2063384.2063405) (counter-based
          generators)
    """
    step_keys = combine(keys, index)
    second_keys = lowbias32(step_keys + _GOLDEN_RATIO)
    first_round = lowbias32(ops.cast(token_ids, "int32") + step_keys[:, None])
    bits = lowbias32(ops.bitwise_xor(first_round, second_keys[:, None]))
    bits = ops.bitwise_and(bits, (1 << _UNIFORM_BITS) - 1)
    uniform = (ops.cast(bits, "float32") + 0.5) * (1.0 / (1 << _UNIFORM_BITS))
    return -ops.log(-ops.log(uniform))

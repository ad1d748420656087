"""Dropout with a counter-based hash generator, cheap under XLA on CPU.

`keras.layers.Dropout` draws its mask with the backend's stateless RNG. On
TensorFlow that is `tf.random.stateless_uniform` with the "auto_select"
algorithm, which XLA on CPU lowers to a `rng-bit-generator` call that it
cannot fuse or vectorise: in a jit-compiled BERT training step on CPU the
dropout masks took about a quarter of the encoder's time (more than its
matmuls in the feed-forward layers). Here each element's random bits are a
hash of its flat index and the layer's seed, written with `keras.ops`
integer arithmetic, which XLA fuses into the elementwise multiply (and
which runs the same on every backend).
"""

import keras
from keras import ops

# Multipliers of the `lowbias32` integer hash (C. Wellons, "Hash function
# prospector"), as two's-complement int32 so that only int32 arithmetic is
# needed (JAX has no uint64 by default, and int32 products wrap around on
# every backend).
_MULTIPLIER_1 = 0x7FEB352D
_MULTIPLIER_2 = 0x846CA68B - (1 << 32)
_GOLDEN_RATIO = 0x9E3779B9 - (1 << 32)
_RANDOM_BITS = 31


def _logical_right_shift(x, bits):
    """`x >>> bits` for int32 `x` (the backends shift signed ints arithmetically)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def _lowbias32(x):
    """A bijective int32 -> int32 hash with good avalanche (lowbias32)."""
    x = ops.bitwise_xor(x, _logical_right_shift(x, 16))
    x = ops.multiply(x, ops.cast(_MULTIPLIER_1, "int32"))
    x = ops.bitwise_xor(x, _logical_right_shift(x, 15))
    x = ops.multiply(x, ops.cast(_MULTIPLIER_2, "int32"))
    return ops.bitwise_xor(x, _logical_right_shift(x, 16))


def hash_random_bits(shape, seed):
    """31 pseudo-random bits (a non-negative int32) per element of `shape`.

    Element `i` (in row-major order) gets `h(h(i + k0) ^ k1)` with `h` the
    `lowbias32` hash and `(k0, k1)` hashes of the two seed words, so every
    seed gives an unrelated sequence. A counter-based generator, like Philox,
    but of two hash rounds instead of ten cipher rounds: ample for dropout
    masks, not meant for statistics that need a vetted generator.

    Args:
        shape: the output shape (ints, or scalar tensors for dynamic sizes).
        seed: a `(2,)` integer tensor, as `keras.random.SeedGenerator.next()`
            returns it.
    """
    seed = ops.cast(seed, "int32")
    key_0 = _lowbias32(seed[0])
    key_1 = _lowbias32(ops.bitwise_xor(seed[1], ops.cast(_GOLDEN_RATIO, "int32")))
    size = 1
    for dim in shape:
        size = size * dim
    index = ops.reshape(ops.arange(size, dtype="int32"), shape)
    bits = _lowbias32(ops.bitwise_xor(_lowbias32(index + key_0), key_1))
    return ops.bitwise_and(bits, (1 << _RANDOM_BITS) - 1)


def hash_dropout(inputs, rate, seed, noise_shape=None):
    """Zeroes each element with probability `rate`, scales the rest by 1 / (1 - rate).

    The drop probability is `round(rate * 2**31) / 2**31`, `rate` up to
    float rounding. `noise_shape` (ints, None for the input's size) shares
    one draw along its axes of size 1, as in `keras.random.dropout`.
    """
    shape = ops.shape(inputs)
    if noise_shape is not None:
        shape = tuple(
            size if noise is None else noise for size, noise in zip(shape, noise_shape)
        )
    threshold = int(round(rate * (1 << _RANDOM_BITS)))
    keep = ops.greater_equal(hash_random_bits(shape, seed), threshold)
    scale = ops.cast(1.0 / (1.0 - rate), inputs.dtype)
    return ops.where(keep, inputs * scale, ops.zeros_like(inputs))


@keras.saving.register_keras_serializable(package="tfnlp")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with the hash generator of `hash_dropout`.

    The same arguments, config, seed generator (and so the same variables)
    as Keras' layer; only how the mask is drawn differs. Under XLA on CPU
    this is several times cheaper than the backend's stateless RNG.

    Args:
        rate: the fraction of the inputs to drop, in `[0, 1]`; the kept ones
            are scaled by `1 / (1 - rate)`.
        noise_shape: the shape of the mask, broadcast to the inputs (for
            example `(batch, 1, features)` to drop the same features at
            every time step); None for the inputs' shape.
        seed: the seed of the layer's `keras.random.SeedGenerator`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> import numpy as np
    >>> layer = Dropout(0.5, seed=1)
    >>> outputs = keras.ops.convert_to_numpy(layer(np.ones((2, 8)), training=True))
    >>> sorted(set(outputs.ravel().tolist()))
    [0.0, 2.0]
    >>> keras.ops.convert_to_numpy(layer(np.ones((1, 3)))).tolist()
    [[1.0, 1.0, 1.0]]

    References:
        - [Srivastava et al., 2014. Dropout: A Simple Way to Prevent Neural
          Networks from Overfitting](https://jmlr.org/papers/v15/srivastava14a.html)
        - [Salmon et al., 2011. Parallel Random Numbers: As Easy as 1, 2,
          3](https://doi.org/10.1145/2063384.2063405) (counter-based
          generators)
    """

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            if self.rate >= 1:
                return ops.zeros_like(inputs)
            return hash_dropout(
                inputs,
                self.rate,
                self.seed_generator.next(),
                noise_shape=self.noise_shape,
            )
        return inputs

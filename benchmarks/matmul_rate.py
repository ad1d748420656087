"""The matmul rate a machine reaches: the denominator of model FLOPs
utilisation (MFU) in the training benchmarks."""

import time

import keras
import numpy as np


def matmul_flops_per_second(dtype, size=2048, repeats=10):
    """The best rate of a jit-compiled size x size matmul in this backend."""
    a = keras.ops.convert_to_tensor(np.random.rand(size, size), dtype=dtype)
    b = keras.ops.convert_to_tensor(np.random.rand(size, size), dtype=dtype)
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        matmul = jax.jit(lambda x, y: x @ y)
        finish = lambda result: result.block_until_ready()  # noqa: E731
    else:
        import tensorflow as tf

        matmul = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
        finish = lambda result: result.numpy()  # noqa: E731
    finish(matmul(a, b))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        finish(matmul(a, b))
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best

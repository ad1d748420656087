"""Decoding for every generative model: greedy search, beam search, sampling.

Every decoder drives a model through one step function,
`step_fn(token_ids, cache, index) -> (logits, cache)`, and returns
`{"ids", "lengths", "scores"}`; see `tfnlp.decoding.contract`. The loops are
`keras.ops` while loops with static shapes: they compile with XLA, export to
SavedModels of stock TensorFlow ops and run on the JAX backend.
"""

from tfnlp.decoding.beam_search import BeamSearch
from tfnlp.decoding.cache import reorder_cache, tile_cache
from tfnlp.decoding.contract import Decoder
from tfnlp.decoding.greedy_search import GreedySearch
from tfnlp.decoding.length_penalty import LENGTH_PENALTIES, length_penalty
from tfnlp.decoding.sampling import RandomSampling
from tfnlp.decoding.serialization import deserialize, get, serialize

__all__ = [
    "BeamSearch",
    "Decoder",
    "GreedySearch",
    "LENGTH_PENALTIES",
    "RandomSampling",
    "deserialize",
    "get",
    "length_penalty",
    "reorder_cache",
    "serialize",
    "tile_cache",
]

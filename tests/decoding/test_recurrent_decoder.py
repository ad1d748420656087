"""A Keras LSTM decoder whose recurrent state is the cache."""

import keras
import numpy as np

from tests.decoding.references import penalty
from tfnlp.decoding import BeamSearch

VOCABULARY, UNITS, END = 7, 8, 1


def test_beam_search_reorders_the_recurrent_state():
    keras.utils.set_random_seed(0)
    embedding = keras.layers.Embedding(VOCABULARY, UNITS)
    cell = keras.layers.LSTMCell(UNITS)
    output = keras.layers.Dense(
        VOCABULARY, kernel_initializer=keras.initializers.RandomNormal(stddev=2.0)
    )

    def step_fn(token_ids, cache, index):
        hidden, (state, memory) = cell(embedding(token_ids), [cache["state"], cache["memory"]])
        logits = output(hidden + cache["source"])
        return logits, {"state": state, "memory": memory, "source": cache["source"]}

    rng = np.random.default_rng(0)
    batch = 3
    cache = {"state": np.zeros((batch, UNITS), "float32"),
             "memory": np.zeros((batch, UNITS), "float32"),
             "source": rng.normal(size=(batch, UNITS)).astype("float32")}
    start_ids = np.array([0, 2, 3], np.int32)
    decoder = BeamSearch(3, "gnmt", 0.6, num_return_sequences=3)
    result = {name: np.asarray(value)
              for name, value in decoder(step_fn, cache, start_ids, END, 8).items()}

    # Rescore each hypothesis on its own, without beams, with the full history.
    for example in range(batch):
        for rank in range(3):
            length = int(result["lengths"][example, rank])
            tokens = [int(start_ids[example])] + list(result["ids"][example, rank, :length])
            single = {name: value[example:example + 1] for name, value in cache.items()}
            log_prob = 0.0
            for position in range(length):
                logits, single = step_fn(np.array([tokens[position]], np.int32), single, position)
                log_prob += float(keras.ops.log_softmax(logits)[0, tokens[position + 1]])
            np.testing.assert_allclose(result["scores"][example, rank],
                                       log_prob / penalty(length, "gnmt", 0.6), rtol=1e-4)
    assert len({tuple(row[0]) for row in result["ids"]}) == batch

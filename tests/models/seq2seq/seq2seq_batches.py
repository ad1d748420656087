"""Random source/target batches for the seq2seq model tests."""

import numpy as np

from tests.layer_test_helpers import to_numpy
from tfnlp.models import decoder_inputs


def random_batch(vocabulary_size, source_lengths=(6, 3, 1), target_lengths=(5, 2, 4), length=7,
                 seed=0):
    """Random sources and targets ending with EOS (3), 0-padded, as model
    inputs (the targets shifted behind BOS)."""
    rng = np.random.default_rng(seed)
    rows = []
    for lengths in (source_lengths, target_lengths):
        ids = rng.integers(4, vocabulary_size, size=(len(lengths), length)).astype("int32")
        for row, real in enumerate(lengths):
            ids[row, real - 1] = 3
            ids[row, real:] = 0
        rows.append(ids)
    source, targets = rows
    return {"encoder_token_ids": source, "decoder_token_ids": to_numpy(decoder_inputs(targets))}

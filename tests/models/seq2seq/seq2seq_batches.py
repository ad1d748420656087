"""Random source/target batches for the seq2seq model tests, and greedy
decoding written out with teacher-forced passes."""

import numpy as np

from tests.layer_test_helpers import to_numpy
from tfnlp.data.translation_schema import BOS_ID, EOS_ID
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


def teacher_forced_greedy(model, sources, max_length):
    """Greedy translations of `sources` without a decoding loop or cache:
    each step runs the model on the whole prefix so far (`BOS_ID` first),
    teacher-forced, and appends the most probable token (the lowest id on
    ties), until `EOS_ID` or `max_length` tokens. Returns int32
    `(batch, max_length)` ids, 0 after `EOS_ID`."""
    batch_size = len(sources)
    prefix = np.full((batch_size, 1), BOS_ID, np.int32)
    finished = np.zeros(batch_size, bool)
    for _ in range(max_length):
        logits = to_numpy(model({"encoder_token_ids": sources, "decoder_token_ids": prefix}))
        tokens = np.where(finished, 0, logits[:, -1].argmax(-1)).astype(np.int32)
        finished |= tokens == EOS_ID
        prefix = np.concatenate([prefix, tokens[:, None]], axis=1)
    return prefix[:, 1:]

"""Plain-Python references of greedy search, beam search and exhaustive search.

Written from the definitions, independently of `tfnlp.decoding`: lists of
hypotheses, sorted with Python's stable sort. Each takes
`log_probs(prefix) -> numpy float32 (vocabulary,)`, the model's next-token
log-probabilities after `prefix` (the start token or prompt first), and
`start`, a start token or a prompt (a list of tokens), and returns a list of
`(score, tokens)` pairs, best first, `tokens` the generated ones only
(without the start token or prompt, which are neither scored nor counted).
"""

import itertools
import math

import numpy as np


def penalty(length, kind, alpha):
    if kind == "none" or alpha == 0:
        return np.float32(1.0)
    if kind == "gnmt":
        return np.float32(((5.0 + length) / 6.0) ** alpha)
    return np.float32(length ** alpha)


def as_prefix(start):
    """A start token (int) or a prompt (list) as a list of tokens."""
    return [int(start)] if np.ndim(start) == 0 else [int(token) for token in start]


def penalize_repetitions(logits, prefix, penalty):
    """CTRL's repetition penalty: the logits of the tokens in `prefix`
    divided by `penalty` when positive, multiplied by it otherwise."""
    logits = np.array(logits, dtype=np.float32)
    penalty = np.float32(penalty)
    for token in set(prefix):
        if 0 <= token < len(logits):
            value = logits[token]
            logits[token] = value / penalty if value > 0 else value * penalty
    return logits


def allowed(prefix, log_probs, end_id, min_length, ngram_size, prompt_length=1):
    """`log_probs` with end_id before `min_length` and repeated n-grams at -inf."""
    log_probs = np.array(log_probs, dtype=np.float32)
    generated = len(prefix) - prompt_length
    if generated < min_length:
        log_probs[end_id] = -np.inf
    if ngram_size:
        seen = {tuple(prefix[i:i + ngram_size]) for i in range(len(prefix) - ngram_size + 1)}
        context = tuple(prefix[len(prefix) - ngram_size + 1:]) if ngram_size > 1 else ()
        for token in range(len(log_probs)):
            if context + (token,) in seen:
                log_probs[token] = -np.inf
    return log_probs


def greedy_search(log_probs, start, end_id, max_length, min_length=0, ngram_size=0):
    prefix, score = as_prefix(start), np.float32(0.0)
    prompt_length = len(prefix)
    while len(prefix) - prompt_length < max_length:
        scores = allowed(prefix, log_probs(prefix), end_id, min_length, ngram_size, prompt_length)
        token = int(np.argmax(scores))  # first maximum
        score = np.float32(score + scores[token])
        prefix.append(token)
        if token == end_id:
            break
    return [(score, prefix[prompt_length:])]


def beam_search(log_probs, start, end_id, max_length, beam_size, num_return, kind="none",
                alpha=0.0, min_length=0, ngram_size=0):
    """Beam search as documented by `tfnlp.decoding.BeamSearch`, without early stopping.

    Each step keeps the 2 * beam_size best extensions (by log-probability,
    ties to the earlier beam then the lower token); those ending with end_id
    (or all of them at max_length) are finished, scored once by
    log-probability / penalty(length); the beam_size best others stay alive.
    """
    alive = [(np.float32(0.0), as_prefix(start))]
    prompt_length = len(alive[0][1])
    finished = []
    for step in range(max_length):
        candidates = []
        for score, prefix in alive:
            scores = allowed(prefix, log_probs(prefix), end_id, min_length, ngram_size,
                             prompt_length)
            for token, token_score in enumerate(scores):
                candidates.append((np.float32(score + token_score), prefix + [token]))
        candidates = [c for c in candidates if c[0] > -np.inf]
        candidates.sort(key=lambda c: -c[0])
        best = candidates[: 2 * beam_size]
        last = step + 1 == max_length
        for score, prefix in best:
            if prefix[-1] == end_id or last:
                length = len(prefix) - prompt_length
                finished.append((np.float32(score / penalty(length, kind, alpha)),
                                 prefix[prompt_length:]))
        finished.sort(key=lambda f: -f[0])
        finished = finished[:num_return]
        alive = [c for c in best if c[1][-1] != end_id][:beam_size]
        if not alive:
            break
    return finished


def exhaustive_search(log_probs, start_id, end_id, max_length, num_return, kind="none", alpha=0.0,
                      min_length=0, vocabulary_size=None):
    """The best `num_return` of every sequence ending with end_id or of max_length tokens."""
    results = []
    for length in range(1, max_length + 1):
        for tokens in itertools.product(range(vocabulary_size), repeat=length):
            tokens = list(tokens)
            if end_id in tokens[:-1] or (tokens[-1] != end_id and length < max_length):
                continue
            prefix, score = [start_id], 0.0
            for token in tokens:
                score += float(allowed(prefix, log_probs(prefix), end_id, min_length, 0)[token])
                prefix.append(token)
            if score > -math.inf:
                results.append((score / float(penalty(length, kind, alpha)), tokens))
    results.sort(key=lambda r: -r[0])
    return results[:num_return]


def assert_result_matches(result, references, atol=1e-5):
    """`result` (numpy dict of a decoder) holds `references` (one list per example)."""
    ids, lengths, scores = result["ids"], result["lengths"], result["scores"]
    assert len(references) == ids.shape[0]
    for example, hypotheses in enumerate(references):
        for rank, (score, tokens) in enumerate(hypotheses):
            where = f"example {example}, hypothesis {rank}"
            assert lengths[example, rank] == len(tokens), where
            np.testing.assert_array_equal(ids[example, rank, : len(tokens)], tokens, err_msg=where)
            assert not ids[example, rank, len(tokens):].any(), where
            np.testing.assert_allclose(scores[example, rank], score, atol=atol, rtol=atol,
                                       err_msg=where)
        for rank in range(len(hypotheses), ids.shape[1]):
            assert scores[example, rank] == -np.inf and lengths[example, rank] == 0

"""BERT pretraining instances (sentence pairs with masked tokens), in plain Python.

Turns tokenized documents into the training instances of BERT's masked
language modelling (MLM) and next sentence prediction (NSP) tasks, with the
algorithm of google-research/bert's `create_pretraining_data.py`. It works
on token ids, uses only the standard library and runs once per document
inside Beam workers (`pipelines.pretraining_data`), so the per-document
work is kept small and no token list is copied more often than needed.
"""

import dataclasses
import hashlib
import struct

MASK = "mask"
RANDOM = "random"
UNCHANGED = "unchanged"
REPLACEMENT_KINDS = (MASK, RANDOM, UNCHANGED)

# How many random documents are tried for a random next segment before the
# last one drawn is kept, even if it is the current document.
RANDOM_DOCUMENT_TRIES = 10


@dataclasses.dataclass(frozen=True)
class InstanceConfig:
    """The vocabulary's ids and the options of instance creation.

    Attributes:
        cls_id, sep_id, mask_id: ids of [CLS], [SEP] and [MASK].
        vocab_size: random replacements are drawn from `range(vocab_size)`,
            the whole vocabulary as in the original (special tokens
            included).
        continuation_ids: ids of the "##" pieces, which continue the word
            before them (used with `do_whole_word_mask`).
        max_seq_length: the longest instance, [CLS] and both [SEP] included.
        max_predictions_per_seq: the most masked positions per instance.
        masked_lm_prob: the share of an instance's tokens (specials
            included) to predict, before the `max_predictions_per_seq` cap.
        short_seq_prob: the probability that a document gets a random,
            shorter target length.
        do_whole_word_mask: mask whole words rather than single pieces.
        dynamic_masking: make no masking here (the `masked_lm_*` fields stay
            empty and `input_ids` unmasked); the reader masks each epoch.
    """

    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    continuation_ids: frozenset
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False
    dynamic_masking: bool = False

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise ValueError(
                f"max_seq_length must be at least 5 ([CLS], [SEP], [SEP] and "
                f"one token per segment), got {self.max_seq_length}."
            )
        if self.vocab_size < 1:
            raise ValueError(f"vocab_size must be positive, got {self.vocab_size}.")
        if self.max_predictions_per_seq < 1:
            raise ValueError(
                "max_predictions_per_seq must be positive, got "
                f"{self.max_predictions_per_seq}."
            )
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise ValueError(
                f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}."
            )
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(
                f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}."
            )
        if not isinstance(self.continuation_ids, frozenset):
            object.__setattr__(
                self, "continuation_ids", frozenset(self.continuation_ids)
            )


@dataclasses.dataclass
class TrainingInstance:
    """One pretraining example, unpadded.

    Attributes:
        input_ids: `[CLS] A [SEP] B [SEP]`, after masking.
        segment_ids: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`.
        masked_lm_positions: the masked positions, ascending.
        masked_lm_ids: the original ids at those positions.
        is_random_next: whether B comes from a random place (NSP label 1).
        truncated: whether `truncate_seq_pair` removed tokens.
        replacements: how many positions became [MASK] ("mask"), a random id
            ("random") or kept their id ("unchanged").
    """

    input_ids: list
    segment_ids: list
    masked_lm_positions: list
    masked_lm_ids: list
    is_random_next: bool
    truncated: bool
    replacements: dict


def config_from_vocabulary(tokens, **options):
    """An `InstanceConfig` from a vocabulary's tokens (the id is the index).

    Args:
        tokens: the vocabulary, one token per id, such as
            `BertTokenizer.vocabulary`; it must hold [CLS], [SEP] and [MASK].
        **options: the other `InstanceConfig` fields (`max_seq_length`,
            `masked_lm_prob`, ...).

    Returns:
        The config, with `continuation_ids` the ids of the tokens that start
        with "##".
    """
    tokens = list(tokens)
    special_ids = {}
    for token in ("[CLS]", "[SEP]", "[MASK]"):
        try:
            special_ids[token] = tokens.index(token)
        except ValueError:
            raise ValueError(f"The vocabulary has no {token} token.") from None
    return InstanceConfig(
        cls_id=special_ids["[CLS]"],
        sep_id=special_ids["[SEP]"],
        mask_id=special_ids["[MASK]"],
        vocab_size=len(tokens),
        continuation_ids=frozenset(
            token_id for token_id, token in enumerate(tokens) if token.startswith("##")
        ),
        **options,
    )


def document_key(document):
    """A content key of a document: the SHA-256 digest of its token ids.

    Each sentence is encoded as its length and its ids, all as little-endian
    signed 64-bit integers, so the key depends on the ids and the sentence
    boundaries only: the same content gets the same key in any file, at any
    position and on any machine.

    Args:
        document: a list of sentences, each a list of token ids.

    Returns:
        32 bytes.
    """
    digest = hashlib.sha256()
    for sentence in document:
        digest.update(struct.pack(f"<q{len(sentence)}q", len(sentence), *sentence))
    return digest.digest()


def document_seed(seed, document_key, dupe_index):
    """The seed of a document's `random.Random` for one dupe pass.

    Why a generator per document: the original drives one
    `random.Random(seed)` through the whole corpus in file order, so every
    instance depends on every document read before it. A Beam job processes
    documents in no fixed order, on any number of workers, so each document
    and dupe pass gets its own generator seeded by `document_seed(seed,
    document_key(document), dupe_index)`. The key is a hash of the
    document's content, so the instances of a document depend only on the
    seed, its content, the dupe pass and the corpus that random next
    segments are drawn from (given in a fixed order), never on processing
    order, file names or position. Identical documents get identical
    instances.

    Args:
        seed: the job's seed (any integer).
        document_key: the document's key, bytes (see `document_key`).
        dupe_index: which pass over the corpus (0 to dupe_factor - 1).

    Returns:
        An integer in [0, 2**64): the first 8 bytes (big-endian) of the
        SHA-256 of the seed and dupe index in decimal, NUL-separated, then
        the key. It depends only on its arguments, so not on processing
        order, the runner or the Python process (unlike `hash`).
    """
    payload = b"tfnlp-pretraining-instance\x00%d\x00%d\x00" % (seed, dupe_index)
    digest = hashlib.sha256(payload + bytes(document_key)).digest()
    return int.from_bytes(digest[:8], "big")


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims two segments, in place, to at most `max_num_tokens` together.

    As in the original, while the pair is too long, the longer segment (B
    when they are equally long) loses its first token if `rng.random() <
    0.5`, else its last one: one draw per removed token. The removals are
    counted first and made with one slice deletion per end.

    Args:
        tokens_a, tokens_b: lists of ids, changed in place.
        max_num_tokens: the most tokens the two may hold together.
        rng: a `random.Random`.

    Returns:
        Whether any token was removed.
    """
    length_a = len(tokens_a)
    length_b = len(tokens_b)
    if length_a + length_b <= max_num_tokens:
        return False
    front_a = back_a = front_b = back_b = 0
    while length_a + length_b > max_num_tokens:
        if length_a > length_b:
            if rng.random() < 0.5:
                front_a += 1
            else:
                back_a += 1
            length_a -= 1
        else:
            if rng.random() < 0.5:
                front_b += 1
            else:
                back_b += 1
            length_b -= 1
    _trim(tokens_a, front_a, back_a)
    _trim(tokens_b, front_b, back_b)
    return True


def _trim(tokens, front, back):
    if back:
        del tokens[len(tokens) - back :]
    if front:
        del tokens[:front]


def create_masked_lm_predictions(token_ids, rng, config):
    """Masks an instance for the masked LM task, as the original does.

    It masks `min(max_predictions_per_seq, max(1, round(length *
    masked_lm_prob)))` positions other than [CLS] and [SEP], chosen in a
    random order (with `do_whole_word_mask`, whole words: a "##" piece goes
    with the piece before it, and a word that would exceed the number is
    skipped). Each chosen position becomes [MASK] with probability 0.8,
    keeps its token with probability 0.1, or becomes a uniformly random
    vocabulary id with probability 0.1 (which may happen to be the original
    id).

    The one deliberate difference from the original: with
    `do_whole_word_mask`, the original draws the [MASK] / unchanged /
    random decision separately for every piece of a chosen word, so a word
    can come out half masked. Here the decision is drawn once per word and
    applied to all its pieces; with a random replacement each piece still
    gets its own random id. For a one-piece word the draws are the
    original's.

    Args:
        token_ids: the instance's ids, `[CLS] A [SEP] B [SEP]`; it is
            changed in place (no copy) and returned.
        rng: a `random.Random`.
        config: an `InstanceConfig`.

    Returns:
        `(token_ids, positions, labels, replacements)`: the masked ids, the
        masked positions in ascending order, the original ids there, and the
        counts {"mask": n, "random": n, "unchanged": n}. A random
        replacement that draws the original id still counts as "random".
    """
    num_to_predict = min(
        config.max_predictions_per_seq,
        max(1, int(round(len(token_ids) * config.masked_lm_prob))),
    )
    cls_id = config.cls_id
    sep_id = config.sep_id
    candidates = [
        position
        for position, token_id in enumerate(token_ids)
        if token_id != cls_id and token_id != sep_id
    ]
    if config.do_whole_word_mask:
        words = _whole_words(candidates, token_ids, config.continuation_ids)
        rng.shuffle(words)
        words = _words_that_fit(words, num_to_predict)
        positions = sorted(position for word in words for position in word)
    else:
        # Shuffling every candidate and taking the first `num_to_predict`
        # (the original) picks a uniformly random subset; `sample` picks the
        # same distribution with `num_to_predict` draws instead of one per
        # candidate.
        chosen = rng.sample(candidates, min(num_to_predict, len(candidates)))
        words = zip(chosen)  # Words of one position each.
        positions = sorted(chosen)
    labels = [token_ids[position] for position in positions]
    masked = []
    randomized = 0
    for word in words:
        # One decision per word (per piece in the original, see the module
        # docstring); for a one-piece word the draws are the original's.
        if rng.random() < 0.8:
            masked += word
        elif rng.random() < 0.5:
            continue
        else:
            for position in word:
                token_ids[position] = rng.randint(0, config.vocab_size - 1)
            randomized += len(word)
    mask_id = config.mask_id
    for position in masked:
        token_ids[position] = mask_id
    replacements = {
        MASK: len(masked),
        RANDOM: randomized,
        UNCHANGED: len(positions) - len(masked) - randomized,
    }
    return token_ids, positions, labels, replacements


def _whole_words(candidates, token_ids, continuation_ids):
    """The candidate positions grouped into words: a "##" piece joins the
    word before it, as in the original even across a [SEP] (after a front
    truncation of B)."""
    words = []
    for position in candidates:
        if words and token_ids[position] in continuation_ids:
            words[-1].append(position)
        else:
            words.append([position])
    return words


def _words_that_fit(words, num_to_predict):
    """The words, in order, that the original masks: it stops at
    `num_to_predict` positions and skips a word that would exceed it. (It
    also skips a word whose positions are already covered; these words
    partition the candidates, so that never happens.)"""
    chosen = []
    covered = 0
    for word in words:
        if covered >= num_to_predict:
            break
        if covered + len(word) > num_to_predict:
            continue
        chosen.append(word)
        covered += len(word)
    return chosen


def create_instances_from_document(documents, document_index, rng, config):
    """The training instances of one document, as the original makes them.

    1. The target length is `max_seq_length - 3` tokens (room for [CLS] and
       two [SEP]), except that with probability `short_seq_prob` the whole
       document gets a random target in `[2, max_seq_length - 3]`, to
       expose the model to short inputs. The draw is made once per document
       (per dupe pass), not once per instance, as in the original.
    2. Sentences are collected into a chunk until the chunk reaches the
       target length or the document ends. A random number of the chunk's
       first sentences (at least one) forms segment A.
    3. If the chunk holds one sentence, or with probability 1/2, segment B
       is a "random next": sentences from a random position of a random
       other document (ten tries to avoid the same document; after that the
       last pick is kept, so a one-document corpus takes B from itself),
       enough to fill the target, and the chunk's unused sentences are put
       back to be read again. Otherwise segment B is the rest of the chunk
       ("actual next").
    4. `truncate_seq_pair` trims the longer segment, from the front or the
       back with probability 1/2 each, until both fit in
       `max_seq_length - 3` tokens.
    5. The instance is `[CLS] A [SEP] B [SEP]` with segment ids 0 for
       `[CLS] A [SEP]` and 1 for `B [SEP]`, and
       `create_masked_lm_predictions` masks it; the masked positions are
       returned in ascending order with their original ids.

    The random calls (`random.Random.random`, `randint` and `shuffle`) are
    made in exactly the original's number and order, so the same
    `random.Random` state follows the same random stream as the original
    and gives the same instances for one document, with one exception made
    for speed: without whole-word masking the masked positions are drawn
    with `random.sample`, which gives the same distribution (a uniformly
    random subset of the candidates) with far fewer draws than shuffling
    every candidate. With `do_whole_word_mask` and no "##" pieces, the
    stream is the original's. With `dynamic_masking`, masking is left to
    the reader (which masks again each epoch), no masking draws are made
    here, and the stream differs from the original from the second
    instance on.

    Args:
        documents: the corpus that random next segments are drawn from, a
            sequence of documents in a fixed order; a document is a list of
            sentences and a sentence a non-empty list of token ids. Every
            document that can be drawn must be non-empty.
        document_index: the index of the document to make instances of.
        rng: a `random.Random`, for example seeded with `document_seed`.
        config: an `InstanceConfig`.

    Returns:
        A list of `TrainingInstance`s, in document order (empty for a
        document without sentences).
    """
    return list(generate_instances_from_document(documents, document_index, rng, config))


def generate_instances_from_document(documents, document_index, rng, config):
    """`create_instances_from_document`, one instance at a time.

    The same instances from the same random draws, made as they are asked
    for: a caller that writes each one out before asking for the next
    holds one instance at a time, not a whole document's.

    Args:
        documents, document_index, rng, config: as for
            `create_instances_from_document`.

    Yields:
        The document's `TrainingInstance`s, in document order.
    """
    document = documents[document_index]
    max_num_tokens = config.max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < config.short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    cls_id = config.cls_id
    sep_id = config.sep_id
    last_document_index = len(documents) - 1
    chunk = []
    chunk_length = 0
    i = 0
    while i < len(document):
        sentence = document[i]
        chunk.append(sentence)
        chunk_length += len(sentence)
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            # `chunk` is never empty here: a sentence was just appended.
            a_end = 1
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
            tokens_a = []
            for part in chunk[:a_end]:
                tokens_a.extend(part)

            tokens_b = []
            if len(chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                for _ in range(RANDOM_DOCUMENT_TRIES):
                    random_document_index = rng.randint(0, last_document_index)
                    if random_document_index != document_index:
                        break
                random_document = documents[random_document_index]
                if not random_document:
                    raise ValueError(
                        f"Document {random_document_index} of the corpus is "
                        "empty; remove empty documents before making instances."
                    )
                random_start = rng.randint(0, len(random_document) - 1)
                for j in range(random_start, len(random_document)):
                    tokens_b.extend(random_document[j])
                    if len(tokens_b) >= target_b_length:
                        break
                # Put the chunk's unused sentences back, to be read again.
                i -= len(chunk) - a_end
            else:
                is_random_next = False
                for part in chunk[a_end:]:
                    tokens_b.extend(part)

            truncated = truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            assert tokens_a, "segment A is empty after truncation"
            assert tokens_b, "segment B is empty after truncation"

            input_ids = [cls_id]
            input_ids.extend(tokens_a)
            input_ids.append(sep_id)
            input_ids.extend(tokens_b)
            input_ids.append(sep_id)
            segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)

            if config.dynamic_masking:
                positions, labels = [], []
                replacements = {MASK: 0, RANDOM: 0, UNCHANGED: 0}
            else:
                input_ids, positions, labels, replacements = (
                    create_masked_lm_predictions(input_ids, rng, config)
                )
            yield TrainingInstance(
                input_ids=input_ids,
                segment_ids=segment_ids,
                masked_lm_positions=positions,
                masked_lm_ids=labels,
                is_random_next=is_random_next,
                truncated=truncated,
                replacements=replacements,
            )
            chunk = []
            chunk_length = 0
        i += 1

"""Learning a SentencePiece model inside a Beam pipeline, reproducibly.

`LearnSentencePieceModel` turns a PCollection of sentences into a
serialized SentencePiece model (the bytes of a `.model` file) with the
special ids of `tfnlp.data.translation_schema`, byte fallback and `nmt_nfkc`
normalization (`SentencePieceOptions`); the rest of the module samples,
trains, loads and describes such models.
"""

import dataclasses
import hashlib
import re

import apache_beam as beam
import sentencepiece

from pipelines.user_errors import UserError
from tfnlp.data import translation_schema

MODEL_TYPES = ("unigram", "bpe")
NORMALIZATION = "nmt_nfkc"
SPECIAL_IDS = {
    "pad_id": translation_schema.PAD_ID,
    "unk_id": translation_schema.UNK_ID,
    "bos_id": translation_schema.BOS_ID,
    "eos_id": translation_schema.EOS_ID,
}


@dataclasses.dataclass(frozen=True)
class SentencePieceOptions:
    """What `LearnSentencePieceModel` learns.

    The model has the special ids of `tfnlp.data.translation_schema` (PAD 0,
    UNK 1, BOS 2, EOS 3) and `byte_fallback`: a character outside the
    pieces becomes its UTF-8 bytes (pieces <0x00> to <0xFF>) instead of
    UNK, so every text survives the round trip. With
    `character_coverage=1.0` (the default, right for languages with small
    alphabets; 0.9995 suits Chinese or Japanese) every character of the
    sample is a piece.

    Normalization is SentencePiece's `nmt_nfkc` (stored in the model and
    applied by every tokenizer of it, Python or TensorFlow): Unicode NFKC
    (so full-width letters become ASCII and ligatures split, "ﬁ" -> "fi"),
    plus the NMT rules that drop control characters (and U+FFFD, zero-width
    spaces and byte-order marks) and map the various Unicode spaces and
    tabs to a plain space; leading, trailing and repeated spaces are
    removed. Detokenized text is the normalized text: on Multi30k only the
    131 of 60,028 lines with double or trailing spaces change.

    References:
        - [Kudo & Richardson, 2018. SentencePiece: A simple and language
          independent subword tokenizer and detokenizer for Neural Text
          Processing](https://arxiv.org/abs/1808.06226)
        - [Kudo, 2018. Subword Regularization: Improving Neural Network
          Translation Models with Multiple Subword Candidates](
          https://arxiv.org/abs/1804.10959) (the unigram model)
        - [Sennrich et al., 2016. Neural Machine Translation of Rare Words
          with Subword Units](https://arxiv.org/abs/1508.07909) (BPE)

    Attributes:
        vocab_size: the number of pieces, the 4 special ones and the 256
            byte pieces included.
        model_type: "unigram" (Kudo 2018; the default) or "bpe".
        character_coverage: the share of the sample's characters that
            become pieces (1.0: all of them).
        normalization_rule_name: SentencePiece's normalization, "nmt_nfkc"
            by default (see above); "identity" keeps the text
            as it is (what a language model of raw text wants).
        remove_extra_whitespaces: remove leading, trailing and repeated
            spaces (SentencePiece's default); False keeps every space, so
            that, with "identity", detokenized text is the text.
    """

    vocab_size: int = 8000
    model_type: str = "unigram"
    character_coverage: float = 1.0
    normalization_rule_name: str = NORMALIZATION
    remove_extra_whitespaces: bool = True

    def __post_init__(self):
        if self.model_type not in MODEL_TYPES:
            raise ValueError(
                f"model_type must be one of {MODEL_TYPES}, not {self.model_type!r}."
            )
        if self.vocab_size <= 4 + 256:
            raise ValueError(
                f"vocab_size={self.vocab_size} leaves no room for learned pieces "
                "after the 4 special pieces and the 256 byte pieces; ask for more "
                "than 260 (8000 is a good size for a corpus like Multi30k)."
            )
        if not 0 < self.character_coverage <= 1:
            raise ValueError(
                f"character_coverage must be in (0, 1], got {self.character_coverage}."
            )

    def trainer_arguments(self):
        """The keyword arguments of `sentencepiece.SentencePieceTrainer.train`."""
        return {
            "model_type": self.model_type,
            "vocab_size": self.vocab_size,
            "character_coverage": self.character_coverage,
            "normalization_rule_name": self.normalization_rule_name,
            "byte_fallback": True,
            **SPECIAL_IDS,
            # Determinism: one thread; every sentence given is read, in the
            # order given (SentencePiece samples and shuffles only when
            # input_sentence_size > 0).
            "num_threads": 1,
            "input_sentence_size": 0,
            "shuffle_input_sentence": False,
            # Only warnings and errors on stderr.
            "minloglevel": 2,
            # Given only when not SentencePiece's default, so that the
            # models learned with the default keep their bytes.
            **({} if self.remove_extra_whitespaces else {"remove_extra_whitespaces": False}),
        }


def sample_key(sentence):
    """The key that orders sentences for sampling: `(hash, sentence)`.

    Args:
        sentence: a str.

    Returns:
        The first 8 bytes of the SHA-256 of its UTF-8 bytes as an int, and
        the sentence itself (which breaks ties, and is the value).
    """
    digest = hashlib.sha256(sentence.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big"), sentence


def train_sentencepiece(sentences, options, name="a"):
    """Learns a SentencePiece model from `sentences`, in the order given.

    The trainer runs with one thread, reading every sentence given
    (`input_sentence_size=0`, so SentencePiece's own random sampling and
    shuffling never run). The unigram and BPE trainers are deterministic
    otherwise, so the same sample gives the same model bytes
    (`tests/pipelines/test_translation_data.py` checks it across runs and
    worker counts). Learning from Multi30k's 58,000 sentences at 8,000
    pieces takes about 3 s; a million sentences, a few minutes and a few GB
    of memory on that worker.

    Args:
        sentences: an iterable of str (blank ones are ignored by the
            trainer).
        options: a `SentencePieceOptions`.
        name: which model, in an error ("the source").

    Returns:
        The serialized model (the bytes of a `.model` file).

    Raises:
        UserError: SentencePiece could not learn the model (no sentence,
            or a `vocab_size` the sentences cannot give); the message says
            which flag to change (`trainer_error_message`).
    """
    sentences = list(sentences)
    if not sentences:
        raise UserError(
            "No sentence to learn a SentencePiece model from: every input line was "
            "blank or malformed. Check the input files and --input_format."
        )
    writer = _BytesWriter()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=writer,
            **options.trainer_arguments())
    except RuntimeError as error:
        raise UserError(
            trainer_error_message(error, options, len(sentences), name)) from error
    return writer.contents


def trainer_error_message(error, options, sentence_count, name="a"):
    """What to tell the user when SentencePiece's trainer refuses to learn.

    Args:
        error: the trainer's `RuntimeError`.
        options: the `SentencePieceOptions` it was given.
        sentence_count: the sentences it was given.
        name: which model ("the source").

    Returns:
        The trainer's own reason, without its source location, and the
        flags to change, with the bound it names ("give --vocab_size=2406
        or less, or more text").
    """
    reason = _TRAINER_LOCATION.sub("", " ".join(str(error).split()))
    too_high = re.search(r"<= (\d+)", reason)
    too_low = re.search(r"smaller than required_chars\. \d+ vs (\d+)", reason)
    if too_high:
        change = (f"give --vocab_size={too_high.group(1)} or less, or more text (it learns "
                  "from --vocab_sample_size sentences at most)")
    elif too_low:
        change = (f"give --vocab_size={too_low.group(1)} or more, or a lower "
                  "--character_coverage")
    else:
        change = "change --vocab_size or --model_type, or give more text"
    return (f"SentencePiece cannot learn {name} {options.model_type} model of "
            f"{options.vocab_size} pieces from {sentence_count} sentences: "
            f"{reason.rstrip('.')}; {change}.")


# The trainer's "INTERNAL: src/trainer_interface.cc(744) [(check)] " prefix.
_TRAINER_LOCATION = re.compile(r"^[A-Z_]+: \S+\(\d+\) \[[^\]]*\] ")


class _BytesWriter:
    """The file-like `model_writer` the trainer writes the model to."""

    contents = b""

    def write(self, contents):
        self.contents += contents


def load_processor(model_proto, name="the model"):
    """A `sentencepiece.SentencePieceProcessor` of a serialized model,
    checked for the special ids of the translation records.

    Args:
        model_proto: the bytes of a `.model` file.
        name: what to call the model in errors (e.g. its path).

    Returns:
        The processor.

    Raises:
        ValueError: the bytes are not a SentencePiece model, or its special
            ids are not PAD 0, UNK 1, BOS 2, EOS 3.
    """
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model_proto)
    except (RuntimeError, OSError) as error:
        raise ValueError(
            f"{name} is not a SentencePiece model ({error}). Give the .model file "
            "that spm_train or sentencepiece.SentencePieceTrainer wrote."
        ) from error
    actual = {
        "pad_id": processor.pad_id(),
        "unk_id": processor.unk_id(),
        "bos_id": processor.bos_id(),
        "eos_id": processor.eos_id(),
    }
    if actual != SPECIAL_IDS:
        raise ValueError(
            f"{name} has the special ids {actual}, but translation records need "
            f"{SPECIAL_IDS} (id 0 is padding). Learn a model with those ids, e.g. "
            "sentencepiece.SentencePieceTrainer.train(..., pad_id=0, unk_id=1, "
            "bos_id=2, eos_id=3, byte_fallback=True), or let "
            "pipelines.translation_data learn one (leave out --vocab_file)."
        )
    return processor


def vocab_file_bytes(model_proto):
    """The `.vocab` file of a model, as SentencePiece's trainer writes it.

    Args:
        model_proto: the serialized model.

    Returns:
        UTF-8 bytes, one "piece<TAB>score" line per id (the score printed
        with 6 significant digits, as C++ streams print it).
    """
    processor = sentencepiece.SentencePieceProcessor(model_proto=model_proto)
    return "".join(
        f"{processor.id_to_piece(index)}\t{processor.get_score(index):g}\n"
        for index in range(processor.get_piece_size())
    ).encode("utf-8")


class SampleSentences(beam.PTransform):
    """Keeps the `sample_size` non-blank sentences of smallest `sample_key`.

    Every non-blank sentence gets a key from a hash of its text, and Beam's
    `Top.Smallest` combiner keeps the `sample_size` sentences with the
    smallest keys: a uniform sample of the corpus (duplicates included, so
    frequent sentences weigh as they do in the corpus) that depends on the
    text alone, never on the runner, the number of workers or the order of
    arrival. The combiner holds at most `sample_size` sentences per worker;
    the driver never sees the corpus.

    Applied to a PCollection of sentences (str), it returns a single-element
    PCollection: the list of sampled sentences in key order (all of them
    when there are fewer than `sample_size`).

    Args:
        sample_size: the largest number of sentences kept.
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (pipeline | beam.Create(["a", "b", " ", "c", "d"])
    ...          | SampleSentences(2) | beam.Map(lambda s: print(len(s))))
    2
    """

    def __init__(self, sample_size, label=None):
        super().__init__(label)
        if sample_size < 1:
            raise ValueError(f"sample_size must be at least 1, got {sample_size}.")
        self.sample_size = sample_size

    def expand(self, sentences):
        return (
            sentences
            | "NonBlank" >> beam.Filter(lambda sentence: bool(sentence.strip()))
            | "Key" >> beam.Map(sample_key)
            | "Smallest" >> beam.combiners.Top.Smallest(self.sample_size)
            | "Sentences" >> beam.Map(lambda keyed: [sentence for _, sentence in keyed])
        )


class LearnSentencePieceModel(beam.PTransform):
    """Learns a SentencePiece model from a deterministic sample of sentences.

    Applied to a PCollection of sentences (str), it returns two
    single-element PCollections: the serialized model (bytes) and the
    number of sentences it was learned from: `SampleSentences` samples, and
    one worker runs `train_sentencepiece` on the sample, in key order (both
    say why the model is reproducible, and what it costs).

    Args:
        options: a `SentencePieceOptions`.
        sample_size: the most sentences to learn from (`SampleSentences`).
        name: which model, in an error ("the source").
        label: an optional label for the transform.

    Example:

    >>> import apache_beam as beam, sentencepiece
    >>> sentences = [f"sentence number {i} with words" for i in range(300)]
    >>> with beam.Pipeline() as pipeline:
    ...     model, used = (pipeline | beam.Create(sentences)
    ...                    | LearnSentencePieceModel(SentencePieceOptions(vocab_size=300), 1000))
    ...     _ = model | beam.Map(lambda proto: print(
    ...         sentencepiece.SentencePieceProcessor(model_proto=proto).get_piece_size()))
    300

    References:
        - [Kudo & Richardson, 2018. SentencePiece](https://arxiv.org/abs/1808.06226)
        - [Kudo, 2018. Subword Regularization](https://arxiv.org/abs/1804.10959)
    """

    def __init__(self, options, sample_size, name="a", label=None):
        super().__init__(label)
        self.options = options
        self.sample_size = sample_size
        self.name = name

    def expand(self, sentences):
        sample = sentences | "SampleSentences" >> SampleSentences(self.sample_size)
        model = sample | "TrainSentencePiece" >> beam.Map(
            train_sentencepiece, self.options, self.name)
        used = sample | "SampleSize" >> beam.Map(len)
        return model, used

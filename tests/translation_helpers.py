"""Translation data shared by the tests of the trainer and of the server:
the first Multi30k en→de pairs through `pipelines.translation_data`, with a
small joint SentencePiece model, a tiny model configuration, and the flags
of a tiny trainer run on them; a word-by-word dictionary task that a small
model learns in a few dozen steps (so that its BLEU is far from zero), and
the check that an export scores the BLEU its run logged."""

import json
import os
import random

import sacrebleu
import sentencepiece
import tensorflow as tf

from pipelines import translation_data
from tests.text.sentencepiece_models import multi30k_lines, train_model

# A 1+1-layer model of width 32: the sizes, not the presets, are under test.
TINY_SIZES = {"num_encoder_layers": 1, "num_decoder_layers": 1, "hidden_dim": 32,
              "num_heads": 2, "intermediate_dim": 64}


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def multi30k_translation_data(root, data_dir, train_pairs, eval_pairs, vocab_size=400):
    """Runs the job on the first Multi30k pairs, as a test fixture would.

    The first `train_pairs` training pairs are written as shards under
    `root/train/` with a joint SentencePiece model of `vocab_size` pieces
    learned from them (`--shared_vocab`); the first `eval_pairs` validation
    pairs as shards under `root/val/`, tokenized with that model.

    Args:
        root: a `pathlib.Path` of an empty directory.
        data_dir: the shared data folder (holding `mt/`).
        train_pairs: how many training pairs to use.
        eval_pairs: how many validation pairs to use.
        vocab_size: the SentencePiece model's pieces.

    Returns:
        A dict: `"train"` and `"val"` (shard globs), `"vocab_file"` (the
        SentencePiece model), `"config"` (a JSON file of `TINY_SIZES`),
        `"val_sources"` and `"val_references"` (the raw validation lines).
    """
    lines = {(split, language): multi30k_lines(data_dir, split, language)
             for split in ("train", "val") for language in ("en", "de")}
    return translation_job_data(
        root,
        list(zip(lines["train", "en"][:train_pairs], lines["train", "de"][:train_pairs])),
        list(zip(lines["val", "en"][:eval_pairs], lines["val", "de"][:eval_pairs])),
        vocab_size=vocab_size)


def translation_job_data(root, train_pairs, eval_pairs, vocab_size=400, sizes=None,
                         model_type="unigram"):
    """Runs `pipelines.translation_data` on `(source, target)` pairs.

    The training pairs are written as two shards under `root/train/` with a
    joint SentencePiece model of `vocab_size` pieces (of `model_type`)
    learned from them; the validation pairs as one shard under `root/val/`,
    tokenized with that model.

    Returns:
        The dict of `multi30k_translation_data`; `"config"` holds `sizes`
        (default `TINY_SIZES`).
    """
    files = {}
    for split, pairs in (("train", train_pairs), ("val", eval_pairs)):
        for side, language in enumerate(("en", "de")):
            files[split, language] = write_lines(root / f"{split}.{language}",
                                                 [pair[side] for pair in pairs])
    translation_data.main([
        f"--source_file={files['train', 'en']}", f"--target_file={files['train', 'de']}",
        f"--output_dir={root / 'train'}", "--shared_vocab", f"--vocab_size={vocab_size}",
        f"--model_type={model_type}", "--num_shards=2",
    ])
    model_file = str(root / "train" / "sentencepiece.model")
    translation_data.main([
        f"--source_file={files['val', 'en']}", f"--target_file={files['val', 'de']}",
        f"--output_dir={root / 'val'}", "--shared_vocab", f"--vocab_file={model_file}",
        "--num_shards=1",
    ])
    config = root / "sizes.json"
    config.write_text(json.dumps(TINY_SIZES if sizes is None else sizes))
    return {
        "train": str(root / "train" / "translation-*"),
        "val": str(root / "val" / "translation-*"),
        "vocab_file": model_file,
        "config": str(config),
        "val_sources": [source for source, _ in eval_pairs],
        "val_references": [target for _, target in eval_pairs],
    }


# The dictionary task: sentences of one frame, translated word by word.
# Each slot's English words and their German translations.
DICTIONARY_SLOTS = (
    (("a", "ein"),),
    (("red", "roter"), ("big", "großer"), ("small", "kleiner"), ("black", "schwarzer")),
    (("dog", "Hund"), ("man", "Mann"), ("boy", "Junge"), ("horse", "Hengst")),
    (("runs", "läuft"), ("sits", "sitzt"), ("sleeps", "schläft")),
    (("on", "auf"), ("near", "neben")),
    (("the", "dem"),),
    (("grass", "Rasen"), ("street", "Weg"), ("beach", "Strand")),
    ((".", "."),),
)
# The model the dictionary task trains: 1+1 layers of width 64 (twice
# TINY_SIZES' width: it learns the task in about 40 steps).
DICTIONARY_SIZES = {"num_encoder_layers": 1, "num_decoder_layers": 1, "hidden_dim": 64,
                    "num_heads": 4, "intermediate_dim": 128}


def dictionary_pairs(count, seed):
    """`count` random `(English, German)` sentences of `DICTIONARY_SLOTS`."""
    generator = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [generator.choice(slot) for slot in DICTIONARY_SLOTS]
        pairs.append((" ".join(english for english, _ in words),
                      " ".join(german for _, german in words)))
    return pairs


def dictionary_word_model(path):
    """Writes a word-level SentencePiece model of `DICTIONARY_SLOTS`' words
    (each also lower-cased), with the records' special ids, to `path` (a
    `pathlib.Path`); returns its name. Each word is one piece, so a test
    can write the ids of any sentence of these words without the job."""
    words = {word for slot in DICTIONARY_SLOTS for pair in slot for word in pair}
    sentences = sorted(words | {word.lower() for word in words})
    path.write_bytes(train_model(sentences, model_type="word", vocab_size=len(sentences) + 4,
                                 pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                                 hard_vocab_limit=False))
    return str(path)


def dictionary_translation_data(root, train_pairs, eval_pairs):
    """The dictionary task through the job: `train_pairs` and `eval_pairs`
    random sentences (drawn with different seeds; of the 288 sentences of
    the frame, many are in both), a 400-piece joint BPE model (whole words
    for the most part), and a config of `DICTIONARY_SIZES`; the dict of
    `multi30k_translation_data`."""
    return translation_job_data(root, dictionary_pairs(train_pairs, seed=0),
                                dictionary_pairs(eval_pairs, seed=1), vocab_size=400,
                                sizes=DICTIONARY_SIZES, model_type="bpe")


def trainer_flags(data, model_dir, *extra, **overrides):
    """The `trainer.translate` flags of a tiny, fast, deterministic run on
    `multi30k_translation_data`'s shards (`overrides` change any flag)."""
    values = {
        "train_data": data["train"],
        "model_dir": model_dir,
        "config": data["config"],
        "train_steps": 6,
        "warmup_steps": 2,
        "learning_rate": 3e-3,
        "dropout": 0.0,
        "max_tokens_per_batch": 512,
        "max_length": 64,
        "log_every_steps": 1,
        "checkpoint_every_steps": 3,
        "eval_every_steps": 0,
        "beam_size": 2,
        "sample_sentences": 2,
    }
    values.update(overrides)
    return [f"--{name}={value}" for name, value in values.items()] + list(extra)


def corpus_figures(hypotheses, references):
    """sacreBLEU's corpus BLEU (cased and lower-cased) and chrF, computed here."""
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "bleu_lowercase": sacrebleu.corpus_bleu(hypotheses, [references],
                                                lowercase=True).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
    }


def read_json(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def evaluations(model_dir):
    """The records of `model_dir/eval_log.jsonl`."""
    with open(os.path.join(model_dir, "eval_log.jsonl"), encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def assert_export_scores_the_best_bleu(model_dir, export_dir, data, best_is_not_the_last=True):
    """The export (the best checkpoint) translates the raw validation
    sources in one batch; sacreBLEU against the raw references gives the
    BLEU, lower-cased BLEU and chrF that the trainer logged for that
    checkpoint, decoded in its own batches from the records.

    The comparison can see the likely mistakes; each differs from the logged
    figures by more than 0.01 (10^7 times the tolerance): the translations
    and references swapped (in BLEU or in chrF: swapped BLEU is the same
    when the two sides have the same length, chrF weighs recall above
    precision), the translations as SentencePiece pieces; and, with
    `best_is_not_the_last`, the BLEU of the last evaluation (which an export
    of the latest model instead of the best would score).
    """
    best = read_json(os.path.join(model_dir, "best", "best.json"))
    served = tf.saved_model.load(os.path.join(export_dir, "1"))
    outputs = served.signatures["serving_default"](inputs=tf.constant(data["val_sources"]))
    translations = [text.decode("utf-8") for text in outputs["translations"].numpy()]
    references = data["val_references"]
    figures = corpus_figures(translations, references)
    # The same strings through the same sacreBLEU calls: the figures agree
    # exactly (measured: a difference of 0.0); 1e-9 allows for summation order.
    for name, figure in figures.items():
        assert abs(figure - best[name]) < 1e-9, (name, figure, best)
    pieces = sentencepiece.SentencePieceProcessor(model_file=data["vocab_file"]).encode(
        translations, out_type=str)
    swapped = corpus_figures(references, translations)
    assert max(abs(swapped[name] - best[name]) for name in ("bleu", "chrf")) > 0.01, (
        swapped, best)
    mistakes = {
        "pieces": sacrebleu.corpus_bleu([" ".join(row) for row in pieces],
                                        [references]).score,
    }
    if best_is_not_the_last:
        last = evaluations(model_dir)[-1]
        assert last["step"] != best["step"], (last, best)
        mistakes["latest"] = last["bleu"]
    for mistake, figure in mistakes.items():
        assert abs(figure - best["bleu"]) > 0.01, (mistake, figure, best)
    assert outputs["scores"].shape == (len(data["val_sources"]),)
    return translations

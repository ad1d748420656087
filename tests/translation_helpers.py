"""Translation data shared by the tests of the trainer and of the server:
the first Multi30k en→de pairs through `pipelines.translation_data`, with a
small joint SentencePiece model, a tiny model configuration, and the flags
of a tiny trainer run on them."""

import json
import os

import sacrebleu
import tensorflow as tf

from pipelines import translation_data
from tests.text.sentencepiece_models import multi30k_lines

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
    files = {}
    for split, count in (("train", train_pairs), ("val", eval_pairs)):
        for language in ("en", "de"):
            files[split, language] = write_lines(root / f"{split}.{language}",
                                                 lines[split, language][:count])
    translation_data.main([
        f"--source_file={files['train', 'en']}", f"--target_file={files['train', 'de']}",
        f"--output_dir={root / 'train'}", "--shared_vocab", f"--vocab_size={vocab_size}",
        "--num_shards=2",
    ])
    model_file = str(root / "train" / "sentencepiece.model")
    translation_data.main([
        f"--source_file={files['val', 'en']}", f"--target_file={files['val', 'de']}",
        f"--output_dir={root / 'val'}", "--shared_vocab", f"--vocab_file={model_file}",
        "--num_shards=1",
    ])
    config = root / "tiny.json"
    config.write_text(json.dumps(TINY_SIZES))
    return {
        "train": str(root / "train" / "translation-*"),
        "val": str(root / "val" / "translation-*"),
        "vocab_file": model_file,
        "config": str(config),
        "val_sources": lines["val", "en"][:eval_pairs],
        "val_references": lines["val", "de"][:eval_pairs],
    }


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


def assert_export_scores_the_best_bleu(model_dir, export_dir, data):
    """The export (the best checkpoint) translates the raw validation
    sources in one batch; sacreBLEU against the raw references gives the
    BLEU the trainer logged for that checkpoint, decoded in its own batches
    from the records."""
    with open(os.path.join(model_dir, "best", "best.json"), encoding="utf-8") as file:
        best = json.load(file)
    served = tf.saved_model.load(os.path.join(export_dir, "1"))
    outputs = served.signatures["serving_default"](inputs=tf.constant(data["val_sources"]))
    translations = [text.decode("utf-8") for text in outputs["translations"].numpy()]
    score = sacrebleu.corpus_bleu(translations, [data["val_references"]]).score
    assert abs(score - best["bleu"]) < 1e-9, (score, best)
    assert outputs["scores"].shape == (len(data["val_sources"]),)

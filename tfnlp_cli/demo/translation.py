"""English→German translation on Multi30k through the product path.

Each stage is the product's own entry point, run in this process with the
arguments its command line would take:

1. `pipelines.translation_data` (Beam) learns one SentencePiece model for
   both languages (`--shared_vocab`) from the training slice and writes it
   as subword-id records; the validation slice is tokenized with that model;
2. `trainer.translate` trains a `tfnlp.models.TransformerSeq2Seq`, evaluates
   it on the validation records (BLEU, chrF) and exports the best checkpoint
   as a text-in/text-out SavedModel (`--export_dir`);
3. the exported SavedModel's `serving_default` translates the raw validation
   sentences; sacreBLEU scores them (cased, detokenized, 13a) against the raw
   references, and one sentence's cross-attention shows which source piece
   each generated piece attended to.
"""

import json
import os
import shutil
import time

import numpy as np
import sacrebleu
import tensorflow as tf

from pipelines import translation_data
from tfnlp.export.versions import latest_version, version_dir
from tfnlp.models import decoder_inputs
from tfnlp.models.seq2seq import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS
from tfnlp.text import SentencePieceTokenizer
from trainer import translate
from trainer.run_files import CONFIG_FILE, read_json
from trainer.tasks.translation import load_translation_model

SOURCE, TARGET = "en", "de"
# The demo's model: the "tiny" preset's width with half its layers, so that
# a few hundred steps train in minutes on two CPU cores.
DEMO_MODEL = {"num_encoder_layers": 2, "num_decoder_layers": 2, "hidden_dim": 128,
              "num_heads": 4, "intermediate_dim": 256}
# The stages' directories under --output_dir; each run starts them afresh.
STAGE_DIRECTORIES = ("data", "run", "export")
TRANSLATION_BATCH_SIZE = 64


def read_lines(path, count):
    """The first `count` lines of a Multi30k file, without their newlines."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} is missing. The demo reads the Multi30k files of the "
            "shared data folder; pass --data_dir=DIR where DIR/mt/ holds "
            "train.de, train.en, val.de and val.en."
        )
    with open(path, encoding="utf-8", newline="") as file:
        return [line.rstrip("\n") for _, line in zip(range(count), file)]


def load_multi30k(data_dir, train_pairs, eval_pairs):
    """`{"train": (english, german), "val": (english, german)}` lines: the
    first `train_pairs` training and `eval_pairs` validation pairs."""
    counts = {"train": train_pairs, "val": eval_pairs}
    return {
        split: tuple(
            read_lines(os.path.join(data_dir, "mt", f"{split}.{language}"), counts[split])
            for language in (SOURCE, TARGET)
        )
        for split in ("train", "val")
    }


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write("".join(line + "\n" for line in lines))
    return path


def prepare_data(data, data_dir, vocab_size):
    """Runs `pipelines.translation_data` on the training slice (learning the
    joint SentencePiece model) and on the validation slice (with that model).

    Returns:
        `{"train": glob, "val": glob, "vocab_file": path, "stats": stats of
        the training run}`.
    """
    files = {}
    for split, (english, german) in data.items():
        files[split] = [write_lines(os.path.join(data_dir, f"{split}.{language}"), lines)
                        for language, lines in ((SOURCE, english), (TARGET, german))]
    train_dir, val_dir = os.path.join(data_dir, "train"), os.path.join(data_dir, "val")
    stats = translation_data.main([
        f"--source_file={files['train'][0]}", f"--target_file={files['train'][1]}",
        f"--output_dir={train_dir}", "--shared_vocab", f"--vocab_size={vocab_size}",
        "--num_shards=2",
    ])
    vocab_file = os.path.join(train_dir, "sentencepiece.model")
    translation_data.main([
        f"--source_file={files['val'][0]}", f"--target_file={files['val'][1]}",
        f"--output_dir={val_dir}", "--shared_vocab", f"--vocab_file={vocab_file}",
        "--num_shards=1",
    ])
    return {"train": os.path.join(train_dir, "translation-*"),
            "val": os.path.join(val_dir, "translation-*"),
            "vocab_file": vocab_file, "stats": stats}


def trainer_flags(args, config, paths, model_dir, export_dir):
    """The command line of `trainer.translate` for the demo's settings
    (`config`: a preset name or a JSON file of model sizes)."""
    return [
        f"--train_data={paths['train']}",
        f"--eval_data={paths['val']}",
        f"--model_dir={model_dir}",
        f"--export_dir={export_dir}",
        f"--config={config}",
        f"--train_steps={args.train_steps}",
        f"--warmup_steps={max(1, args.train_steps // 10)}",
        f"--learning_rate={args.learning_rate}",
        "--learning_rate_schedule=linear",
        f"--max_tokens_per_batch={args.max_tokens_per_batch}",
        f"--dropout={args.dropout}",
        f"--beam_size={args.beam_size}",
        f"--seed={args.seed}",
        f"--log_every_steps={max(1, args.train_steps // 10)}",
        f"--checkpoint_every_steps={args.train_steps}",
        "--eval_every_steps=0",  # Once, at the end.
        "--sample_sentences=2",
    ]


def read_jsonl(path):
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def translate_sentences(signatures, sentences):
    """The `serving_default` translations of `sentences`, in batches."""
    translations = []
    for start in range(0, len(sentences), TRANSLATION_BATCH_SIZE):
        batch = tf.constant(sentences[start : start + TRANSLATION_BATCH_SIZE])
        outputs = signatures["serving_default"](inputs=batch)
        translations += [text.decode("utf-8") for text in outputs["translations"].numpy()]
    return translations


def alignment(model, tokenizer, signatures, sentence):
    """Which source piece each generated piece of `sentence`'s translation
    attended to most: the cross-attention of the last decoder layer,
    averaged over heads, in a teacher-forced pass over the exported model's
    own output ids (the same weights: the export is of this checkpoint).

    Returns:
        `{"source_pieces", "target_pieces", "attended"}` (the source piece of
        each target piece) and `weights`, a (target, source) numpy array
        whose rows sum to 1.
    """
    source = tokenizer.tokenize(tf.constant([sentence]), add_eos=True).to_tensor()
    output = signatures["translate_ids"](source_ids=tf.cast(source, tf.int32))
    length = int(output["lengths"][0])
    target = output["ids"][:, :length]
    weights = model.cross_attention({
        ENCODER_TOKEN_IDS: source, DECODER_TOKEN_IDS: decoder_inputs(target)})[-1]
    weights = np.asarray(weights)[0].mean(axis=0)  # (target, source)

    def pieces(ids):
        return [piece.decode("utf-8") for piece in tokenizer.id_to_piece(ids).numpy()]

    source_pieces = pieces(source[0])
    target_pieces = pieces(target[0])
    attended = [source_pieces[index] for index in weights.argmax(axis=1)]
    return {"source_pieces": source_pieces, "target_pieces": target_pieces,
            "attended": attended, "weights": weights}


class Stopwatch:
    """Seconds per stage: `lap(name)` ends the stage begun at the last lap."""

    def __init__(self):
        self.laps = {}
        self._last = time.monotonic()

    def lap(self, name):
        now = time.monotonic()
        self.laps[name] = round(now - self._last, 1)
        self._last = now


def start_afresh(output_dir):
    """Removes the stage directories of an earlier run of the demo, so that
    the trainer does not resume it and the export is version 1."""
    for name in STAGE_DIRECTORIES:
        path = os.path.join(output_dir, name)
        if os.path.exists(path):
            print(f"Removing {path} of an earlier run.")
            shutil.rmtree(path)
        os.makedirs(path)


def model_summary(run_config):
    """The class and constructor arguments of a run's `config.json` (the
    model as Keras serializes it)."""
    return {"class": run_config["class_name"], **run_config["config"]}


def run(data, args):
    """Runs the three stages on `data` (see `load_multi30k`) as `args` say;
    returns the summary."""
    start_afresh(args.output_dir)
    clock = Stopwatch()
    paths = prepare_data(data, os.path.join(args.output_dir, "data"), args.vocab_size)
    stats = paths["stats"]
    print(f"\nMulti30k {SOURCE}→{TARGET}: {stats['pairs_kept']} training pairs kept of "
          f"{stats['pairs_read']}, {stats['source']['mean_length']:.1f} {SOURCE} and "
          f"{stats['target']['mean_length']:.1f} {TARGET} pieces per sentence "
          f"(EOS included), joint SentencePiece vocabulary of {args.vocab_size}.\n")

    model_dir = os.path.join(args.output_dir, "run")
    export_dir = os.path.join(args.output_dir, "export")
    config = args.config
    if config == "demo":
        config = write_lines(os.path.join(args.output_dir, "data", "demo_model.json"),
                             [json.dumps(DEMO_MODEL)])
    clock.lap("data")
    translate.main(trainer_flags(args, config, paths, model_dir, export_dir))
    clock.lap("training, evaluation and export")
    train_log = read_jsonl(os.path.join(model_dir, "train_log.jsonl"))
    evaluation = read_jsonl(os.path.join(model_dir, "eval_log.jsonl"))[-1]

    version = version_dir(export_dir, latest_version(export_dir))
    signatures = tf.saved_model.load(version).signatures
    sources, references = data["val"]
    translations = translate_sentences(signatures, list(sources))
    hypothesis_file = write_lines(os.path.join(args.output_dir, f"val.hyp.{TARGET}"),
                                  translations)
    clock.lap("translation")
    bleu = sacrebleu.BLEU()
    score = bleu.corpus_score(translations, [list(references)])

    print(f"\nTranslations by the exported SavedModel ({version}):")
    for row in range(min(args.samples, len(sources))):
        print(f"  {SOURCE}:  {sources[row]}\n  ref: {references[row]}\n"
              f"  out: {translations[row]}\n")
    print(f"BLEU on {len(sources)} validation sentences against the raw references "
          f"(sacreBLEU {bleu.get_signature()}): {score.score:.2f}")
    print(f"(The trainer's evaluation, against the references' normalized form: "
          f"BLEU {evaluation['bleu']:.2f}, chrF {evaluation['chrf']:.2f}.)")

    tokenizer = SentencePieceTokenizer(model_file=paths["vocab_file"])
    aligned = alignment(load_translation_model(model_dir), tokenizer, signatures, sources[0])
    clock.lap("alignment")
    print("\nCross-attention of the last decoder layer (mean over heads): each "
          f"generated piece ← the {SOURCE} piece it attended to most")
    print(f"  {SOURCE}:  {sources[0]}\n  out: {translations[0]}")
    print("  " + " ".join(f"{target}←{source}" for target, source in
                          zip(aligned["target_pieces"], aligned["attended"])))
    return {
        "direction": f"{SOURCE}→{TARGET}",
        "train_pairs": len(data["train"][0]),
        "eval_pairs": len(sources),
        "pairs_kept": stats["pairs_kept"],
        "vocabulary_size": tokenizer.vocabulary_size,
        "model": model_summary(read_json(os.path.join(model_dir, CONFIG_FILE))),
        "train_steps": train_log[-1]["step"],
        "loss": {"first": round(train_log[0]["loss"], 4), "last": round(train_log[-1]["loss"], 4)},
        "trainer_evaluation": {name: evaluation[name] for name in ("step", "bleu", "chrf")},
        "bleu": round(score.score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "hypothesis_file": hypothesis_file,
        "export": version,
        "samples": [{SOURCE: sources[row], "reference": references[row],
                     "translation": translations[row]}
                    for row in range(min(args.samples, len(sources)))],
        "alignment": {key: aligned[key] for key in ("source_pieces", "target_pieces",
                                                    "attended")},
        "stage_seconds": clock.laps,
    }


"""English→German translation on Multi30k, from raw text to a served model.

    python -m demo --data_dir=../shared/data --output_dir=demo_output

Runs the product path on a slice of Multi30k: `pipelines.translation_data`
(a joint SentencePiece vocabulary and subword-id records), `trainer.translate`
(a small Transformer, evaluated with BLEU, exported as a SavedModel), then
translates validation sentences through the export and scores them with
sacreBLEU against the raw references. Writes into `--output_dir`:

- `data/`: the slices, the records, the SentencePiece model and the job's
  `stats.json`;
- `run/`: the trainer's checkpoints, logs and TensorBoard events;
- `export/1/`: the text-in/text-out SavedModel (serve it with
  `python -m tfnlp.serve --model_dir=OUTPUT_DIR/export`);
- `val.hyp.de`: the validation translations, one per line;
- `summary.json`: the settings, losses, BLEU, samples and an alignment.
"""

import argparse
import json
import logging
import os
import sys
import time

from demo import translation


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m demo", description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--data_dir", default="../shared/data",
                        help="Folder holding mt/train.{de,en} and mt/val.{de,en}.")
    parser.add_argument("--output_dir", default="demo_output")
    parser.add_argument("--train_pairs", type=int, default=10000,
                        help="The first N training pairs are used.")
    parser.add_argument("--eval_pairs", type=int, default=200,
                        help="The first N validation pairs: evaluated and scored.")
    parser.add_argument("--vocab_size", type=int, default=4000,
                        help="Pieces of the joint SentencePiece model.")
    parser.add_argument("--config", default="demo",
                        help="'demo' (a 2+2-layer model of width 128), a "
                             "TransformerSeq2Seq preset (tiny, small, base) or a JSON "
                             "file of its sizes.")
    parser.add_argument("--train_steps", type=int, default=450)
    parser.add_argument("--max_tokens_per_batch", type=int, default=2048,
                        help="Tokens (padded, the longer side) per training batch.")
    parser.add_argument("--learning_rate", type=float, default=2e-3,
                        help="Peak learning rate, reached after a warmup of a tenth of "
                             "the steps, then decayed linearly to 0.")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--beam_size", type=int, default=4,
                        help="Beam width of evaluation and of the export; 1 is greedy.")
    parser.add_argument("--samples", type=int, default=3,
                        help="Validation translations printed with their references.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("train_pairs", "eval_pairs", "vocab_size", "train_steps",
                 "max_tokens_per_batch", "beam_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, not {getattr(args, name)}.")
    return args


def main(argv=None):
    """Runs the demo; returns the summary (also written to summary.json).

    Raises:
        SystemExit: the Multi30k files are not under `--data_dir`.
    """
    args = parse_args(argv)
    started = time.time()
    try:
        data = translation.load_multi30k(args.data_dir, args.train_pairs, args.eval_pairs)
    except FileNotFoundError as error:
        sys.exit(f"demo: {error}")
    os.makedirs(args.output_dir, exist_ok=True)
    summary = translation.run(data, args)
    summary["seconds"] = round(time.time() - started, 1)
    path = os.path.join(args.output_dir, "summary.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2, ensure_ascii=False)
    print(f"\nWrote {path}, the SavedModel {summary['export']} and the run in "
          f"{os.path.join(args.output_dir, 'run')} ({summary['seconds']} s).")
    return summary


def configure_logging():
    """The stages' progress lines (the trainer's every tenth of the run) on
    stderr; Beam's, absl's and TensorFlow's only from warnings up."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in ("apache_beam", "absl", "tensorflow"):
        logging.getLogger(name).setLevel(logging.WARNING)


if __name__ == "__main__":
    configure_logging()
    main()

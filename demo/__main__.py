"""Trains and decodes a small Transformer translator built from tfnlp.layers.

    python -m demo --data_dir=../shared/data --output_dir=demo_output

Learns a WordPiece vocabulary per language with the Beam job
`pipelines.wordpiece_vocab` (`output_dir/vocab.{de,en}.txt` and their
stats), tokenizes in `tf.data` with `tfnlp.text.BertTokenizer`, and writes
`output_dir/tensorboard/` (training curves), `output_dir/model.keras` and
`output_dir/summary.json`; prints sample translations with the German piece
each English piece attended to most.
"""

import argparse
import json
import os
import sys
import time

from demo import translation


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default="../shared/data",
                        help="folder holding mt/train.{de,en} and mt/val.{de,en}")
    parser.add_argument("--output_dir", default="demo_output")
    parser.add_argument("--train_pairs", type=int, default=10000)
    parser.add_argument("--eval_pairs", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--vocab_size", type=int, default=4000,
                        help="WordPiece vocabulary size for each language")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    started = time.time()
    try:
        data = translation.load_multi30k(
            args.data_dir, args.train_pairs, args.eval_pairs
        )
    except FileNotFoundError as error:
        sys.exit(f"demo: {error}")
    os.makedirs(args.output_dir, exist_ok=True)
    summary = translation.run(data, args)
    summary["seconds"] = round(time.time() - started, 1)
    path = os.path.join(args.output_dir, "summary.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2, ensure_ascii=False)
    print(f"\nWrote {path}, {args.output_dir}/model.keras and TensorBoard logs "
          f"in {args.output_dir}/tensorboard ({summary['seconds']} s).")
    return summary


if __name__ == "__main__":
    main()

"""The main job (`make demo`): the product path from raw text to a served model.

    python -m tfnlp_cli.demo [--output_dir=demo_output] [options]
    python -m tfnlp_cli.demo --data_dir=DIR [--output_dir=demo_output] [options]

Without `--data_dir` (the default), masked-word prediction on Tiny
Shakespeare, which is in the repository (`demo/data`): a WordPiece
vocabulary and BERT pretraining records (Beam), a small BERT trained,
exported with its fill-mask signature and served over TensorFlow Serving's
REST API, and the served model's masked-word accuracy on held-out lines
(`tfnlp_cli.demo.masked_lm`, where its output folder is described).

With `--data_dir=DIR`, English→German translation on Multi30k (DIR/mt:
train.{en,de}, val.{en,de}), which is not in the repository: a joint
SentencePiece model and subword records (Beam), a small Transformer trained
and exported, and the export's translations of validation sentences scored
with sacreBLEU (`tfnlp_cli.demo.translation`). It writes into `--output_dir`:

- `data/`: the slices, the records, the SentencePiece model and the job's
  `stats.json`;
- `run/`: the trainer's checkpoints, logs and TensorBoard events;
- `export/1/`: the text-in/text-out SavedModel (serve it with
  `python -m tfnlp.serve --model_dir=OUTPUT_DIR/export`);
- `val.hyp.de`: the validation translations, one per line;
- `summary.json`: the settings, losses, BLEU, samples and an alignment.

Each parser is built here, and a demo's module (which loads TensorFlow) is
imported once its flags are read, so `--help` answers at once.
"""

import json
import logging
import os
import sys
import time

from tfnlp.command_line import ArgumentParser
from tfnlp.quiet_start import import_quietly

DATA_DIR_FLAG = "--data_dir"


def positive_integer_flags(parser, args, names):
    """Exits through `parser.error` unless each flag in `names` is at least 1."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, not {getattr(args, name)}.")


def masked_lm_parser():
    """The parser of the default demo's flags (`tfnlp_cli.demo.masked_lm`)."""
    parser = ArgumentParser(
        prog="python -m tfnlp_cli.demo",
        description="Masked-word prediction on Tiny Shakespeare (in the repository), from "
                    "raw text to a served BERT: vocabulary, pretraining data, training, "
                    "export, serving.",
        allow_abbrev=False)
    parser.epilog = (f"{parser.prog} {DATA_DIR_FLAG}=DIR runs the translation demo on "
                     f"Multi30k in DIR/mt instead; {parser.prog} {DATA_DIR_FLAG}=DIR --help "
                     "lists its flags.")
    parser.add_argument("--output_dir", default="demo_output",
                        help="Where each stage's folder and summary.json go.")
    parser.add_argument("--max_lines", type=int, default=0,
                        help="Read only the first N lines of the corpus (0: all 35,525), "
                             "for a quick run.")
    parser.add_argument("--heldout_percent", type=float, default=3.0,
                        help="The share of the corpus's lines, at its end, held out for the "
                             "masked-word check (from the next speech that starts there).")
    parser.add_argument("--passage_lines", type=int, default=8,
                        help="Consecutive speeches are grouped into training documents of "
                             "at least this many lines.")
    parser.add_argument("--vocab_size", type=int, default=4000,
                        help="The most WordPiece tokens learned.")
    parser.add_argument("--min_token_count", type=int, default=4,
                        help="The vocabulary learner's lowest count for a piece; lower "
                             "gives more whole words on a small corpus.")
    # Measured on this corpus, with the same 2,048 tokens a step: sequences
    # of 32 tokens reach a masked-LM accuracy of 24% in 1,500 steps of 64;
    # sequences of 64 tokens, in steps of 32, are at 16% after 3,000.
    parser.add_argument("--max_seq_length", type=int, default=32,
                        help="Tokens per pretraining sequence (two or three lines), and "
                             "the export's.")
    parser.add_argument("--masked_lm_prob", type=float, default=0.15,
                        help="The share of each sequence's tokens masked.")
    parser.add_argument("--dupe_factor", type=int, default=5,
                        help="How many times each passage is used, masked anew.")
    parser.add_argument("--config", default="demo",
                        help="'demo' (the tiny preset's 2 layers of width 128, with larger "
                             "initial weights), a BertConfig preset (tiny, mini, small, "
                             "base, large) or a BertConfig JSON file.")
    parser.add_argument("--train_steps", type=int, default=2000,
                        help="Pretraining steps, of --batch_size sequences each.")
    parser.add_argument("--batch_size", type=int, default=64,
                        help="Sequences per training step.")
    parser.add_argument("--learning_rate", type=float, default=3e-3,
                        help="Peak learning rate, after a warmup of a tenth of the steps, "
                             "then decayed linearly to 0.")
    parser.add_argument("--examples_shown", type=int, default=5,
                        help="Held-out lines sent one by one and printed with their answers "
                             "(every held-out line is scored).")
    parser.add_argument("--port", type=int, default=0,
                        help="The server's port on 127.0.0.1 (0: a free one).")
    parser.add_argument("--seed", type=int, default=0,
                        help="Seeds the pretraining data, the training and the masked words.")
    return parser


def parse_masked_lm_args(argv):
    """The default demo's flags, checked."""
    parser = masked_lm_parser()
    args = parser.parse_args(argv)
    positive_integer_flags(parser, args, ("passage_lines", "vocab_size", "min_token_count",
                                          "dupe_factor", "train_steps", "batch_size"))
    if args.max_lines < 0:
        parser.error(f"--max_lines must be 0 (all) or more, not {args.max_lines}.")
    if args.max_seq_length < 8:
        parser.error(f"--max_seq_length must be at least 8, not {args.max_seq_length}.")
    if not 0 < args.masked_lm_prob < 1:
        parser.error(f"--masked_lm_prob must be between 0 and 1, not {args.masked_lm_prob}.")
    if not 0 < args.heldout_percent < 100:
        parser.error(f"--heldout_percent must be between 0 and 100, not {args.heldout_percent}.")
    if args.examples_shown < 0 or not 0 <= args.port <= 65535:
        parser.error("--examples_shown must be 0 or more, and --port between 0 and 65535.")
    if args.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, not {args.learning_rate}.")
    return args


def translation_parser():
    """The parser of the translation demo's flags (`tfnlp_cli.demo.translation`)."""
    parser = ArgumentParser(
        prog="python -m tfnlp_cli.demo",
        description="English→German translation on Multi30k, from raw text to a served model.",
        allow_abbrev=False)
    parser.add_argument(DATA_DIR_FLAG, required=True,
                        help="Folder holding mt/train.{de,en} and mt/val.{de,en}.")
    parser.add_argument("--output_dir", default="demo_output",
                        help="Where each stage's folder, the translations and summary.json "
                             "go.")
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
    parser.add_argument("--train_steps", type=int, default=450,
                        help="Training steps, of --max_tokens_per_batch tokens each.")
    parser.add_argument("--max_tokens_per_batch", type=int, default=2048,
                        help="Tokens (padded, the longer side) per training batch.")
    parser.add_argument("--learning_rate", type=float, default=2e-3,
                        help="Peak learning rate, reached after a warmup of a tenth of "
                             "the steps, then decayed linearly to 0.")
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="Dropout of the embeddings, attention and sublayers.")
    parser.add_argument("--beam_size", type=int, default=4,
                        help="Beam width of evaluation and of the export; 1 is greedy.")
    parser.add_argument("--samples", type=int, default=3,
                        help="Validation translations printed with their references.")
    parser.add_argument("--seed", type=int, default=0,
                        help="Seeds the initial weights, dropout and the data order.")
    return parser


def parse_translation_args(argv):
    """The translation demo's flags, checked."""
    parser = translation_parser()
    args = parser.parse_args(argv)
    positive_integer_flags(parser, args, ("train_pairs", "eval_pairs", "vocab_size",
                                          "train_steps", "max_tokens_per_batch", "beam_size"))
    return args


def wants_translation(argv):
    """Whether the command line names a data folder (the translation demo)."""
    return any(argument == DATA_DIR_FLAG or argument.startswith(DATA_DIR_FLAG + "=")
               for argument in argv)


def run_translation(args):
    """Runs the translation demo; returns its summary (also in summary.json).

    Raises:
        SystemExit: the Multi30k files are not under `--data_dir`.
    """
    import_quietly(("tensorflow", "apache_beam"))
    from tfnlp_cli.demo import translation  # Loads TensorFlow.

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


def run_masked_lm(args):
    """Runs the default demo; returns its summary (also in summary.json).

    Raises:
        SystemExit: a stage failed; the message names it (`demo: stage
            "training" failed: ...`) and the earlier stages' folders stay.
    """
    import_quietly(("tensorflow", "apache_beam"))
    from tfnlp_cli.demo import masked_lm  # Loads TensorFlow.

    try:
        return masked_lm.run(args)
    except masked_lm.StageFailed as error:
        sys.exit(f"demo: {error}\nThe folders of the stages before it are in "
                 f"{os.path.abspath(args.output_dir)} (summary.json says what they did).")


def main(argv=None):
    """Runs the demo that the command line asks for; returns its summary.

    Args:
        argv: the arguments without the program name (`sys.argv[1:]` when
            None). With `--data_dir`, the translation demo; without, the
            masked-word demo on the embedded text.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if wants_translation(argv):
        return run_translation(parse_translation_args(argv))
    return run_masked_lm(parse_masked_lm_args(argv))


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

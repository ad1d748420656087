"""Holds out whole sentences of a phrase-level classification file, with
every phrase inside them, for choosing a recipe or a checkpoint off dev.

SST-2's training file holds every phrase of each sentence's parse tree, so
a slice of its rows is no fair held-out set: most of a held-out phrase was
trained on as parts of the same sentence. This tool finds the sentences
(phrases of at least `--min_words` words that lie inside no longer phrase),
holds out `--fraction` of them, chosen by a hash of their text (the same
split on every run and machine), and drops from training every phrase
found, word for word, inside a held-out sentence:

    python -m tools.sentence_holdout --input=../shared/data/cls/sst2-train.tsv \\
        --train_output=sst2-train-sentences.tsv --heldout_output=sst2-heldout.tsv

Both outputs keep the input's header and columns. The counts go to stdout.
"""

import csv
import hashlib
import sys

from tfnlp.command_line import ArgumentParser, check_input_file, check_output_file, run_main


def find_sentences(texts, min_words):
    """The texts of at least `min_words` words that lie inside no longer
    text, longest first (then in text order)."""
    sentences = []
    long_enough = [text for text in set(texts) if len(text.split()) >= min_words]
    for text in sorted(long_enough, key=lambda text: (-len(text), text)):
        if not any(text in sentence for sentence in sentences):
            sentences.append(text)
    return sentences


def held_out(sentence, fraction):
    """Whether `sentence` is in the held-out `fraction` (by its MD5 hash)."""
    digest = int(hashlib.md5(sentence.encode("utf-8")).hexdigest(), 16)
    return digest % 10_000 < fraction * 10_000


def split_rows(rows, text_column, fraction=0.1, min_words=8):
    """`(train_rows, heldout_rows, dropped)`: the held-out sentences' rows,
    and the other rows but those whose text lies inside a held-out
    sentence (`dropped` of them)."""
    sentences = [sentence for sentence in find_sentences([row[text_column] for row in rows],
                                                         min_words)
                 if held_out(sentence, fraction)]
    held = set(sentences)
    padded = [f" {sentence} " for sentence in sentences]
    train, heldout, dropped = [], [], 0
    for row in rows:
        text = row[text_column]
        if text in held:
            heldout.append(row)
        elif any(f" {text} " in sentence for sentence in padded):
            dropped += 1
        else:
            train.append(row)
    return train, heldout, dropped


def read_tsv(path):
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file, delimiter="\t", quoting=csv.QUOTE_NONE)
        return reader.fieldnames, list(reader)


def write_tsv(path, columns, rows):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, columns, delimiter="\t", quoting=csv.QUOTE_NONE,
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None):
    parser = ArgumentParser(prog="python -m tools.sentence_holdout",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True,
                        help="A TSV file with a header row, e.g. SST-2's train.tsv.")
    parser.add_argument("--train_output", required=True,
                        help="The TSV file of the rows that stay for training.")
    parser.add_argument("--heldout_output", required=True,
                        help="The TSV file of the held-out sentences' rows.")
    parser.add_argument("--text_column", default="sentence",
                        help="The column of the texts.")
    parser.add_argument("--fraction", type=float, default=0.1,
                        help="The share of the sentences held out.")
    parser.add_argument("--min_words", type=int, default=8,
                        help="A sentence has at least this many words.")
    flags = parser.parse_args(argv)
    if not 0 < flags.fraction < 1:
        parser.error(f"--fraction must be between 0 and 1, got {flags.fraction}.")
    check_input_file("--input", flags.input, "a TSV file with a header row")
    check_output_file("--train_output", flags.train_output)
    check_output_file("--heldout_output", flags.heldout_output)
    columns, rows = read_tsv(flags.input)
    if flags.text_column not in (columns or []):
        parser.error(f"{flags.input} has no column {flags.text_column!r} (its columns: "
                     f"{', '.join(columns or [])}); name one with --text_column.")
    train, heldout, dropped = split_rows(rows, flags.text_column, flags.fraction,
                                         flags.min_words)
    write_tsv(flags.train_output, columns, train)
    write_tsv(flags.heldout_output, columns, heldout)
    print(f"{len(rows)} rows: {len(heldout)} held-out sentences, {len(train)} training rows, "
          f"{dropped} rows dropped as phrases of held-out sentences.")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))

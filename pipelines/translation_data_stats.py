"""The stats of `python -m pipelines.translation_data`: `DIR/stats.json`.

`stats_from_counts` turns the job's summed counts (`ReadTranslationPairs`'s
and `TokenizeTranslationPairs`'s) into the stats dict: every parameter;
pairs read, kept and dropped by reason (`DROP_REASONS`), with
`pairs_read == pairs_kept + sum(pairs_dropped.values())` checked (a
`RuntimeError` is a bug in the job); per side the length histogram, mean
length, [UNK] share and byte-fallback share of the kept pairs
(`side_statistics`); the vocabularies (`vocabulary_entry`,
`model_description`: files, sizes, SHA-256, sample sizes); the shards and
the records written; and the warnings. `summary_line` is the line
`job.run_job` logs at the end; `output_problems`, its error when no pair
is kept.
"""

import hashlib
import math

from pipelines import job, sentencepiece_model, translation_pairs
from pipelines.translation_records import LENGTH_BIN, SIDES, TOKENIZE_DROP_REASONS

DROP_REASONS = (*translation_pairs.READ_DROP_REASONS, *TOKENIZE_DROP_REASONS)


def side_statistics(counts, side, max_length):
    """One side's statistics over the kept pairs.

    Args:
        counts: the job's summed counts.
        side: "source" or "target".
        max_length: the job's `--max_length` (sizes the histogram).

    Returns:
        A dict: "ids" (subword ids, without EOS), "mean_length" (ids per
        pair, EOS included, like the records), "length_histogram" (kept
        pairs by length, EOS included, in bins of 8: "0001-0008", ...),
        "unk_share" and "byte_fallback_share" (of the subword ids),
        "pairs_with_unk" and "pairs_with_byte_fallback".
    """
    get = lambda name: counts.get(f"{side}_{name}", 0)  # noqa: E731
    kept = counts.get("pairs_kept", 0)
    return {
        "ids": get("ids"),
        "mean_length": job.share(get("ids") + kept, kept),
        "length_histogram": {
            f"{b * LENGTH_BIN + 1:04d}-{(b + 1) * LENGTH_BIN:04d}": get(f"length_bin_{b}")
            for b in range(math.ceil(max_length / LENGTH_BIN))
        },
        "unk_share": job.share(get("unk_ids"), get("ids")),
        "byte_fallback_share": job.share(get("byte_ids"), get("ids")),
        "pairs_with_unk": get("pairs_with_unk"),
        "pairs_with_byte_fallback": get("pairs_with_byte_fallback"),
    }



def model_description(model_proto, model_file, vocab_file):
    """A vocabulary's entry in stats.json: its files, size and SHA-256."""
    processor = sentencepiece_model.load_processor(model_proto, model_file)
    return {
        "model_file": model_file,
        "vocab_file": vocab_file,
        "size": processor.get_piece_size(),
        "sha256": hashlib.sha256(model_proto).hexdigest(),
    }



def vocabulary_entry(source_model, target_model, shared, learned, files,
                     sample_sentences):
    """The stats' "vocabulary": whether shared and learned, the sentences
    each learned model saw, and per side `model_description`'s dict.

    Args:
        source_model, target_model: the serialized models.
        shared: one model for both sides.
        learned: the job learned the model(s).
        files: `{side: (model_file, vocab_file)}`.
        sample_sentences: `{name: sentences learned from}` per learned
            model ("shared", or "source" and "target").
    """
    return {
        "shared": shared,
        "learned": learned,
        "sample_sentences": sample_sentences,
        **{side: model_description(model, *files[side])
           for side, model in zip(SIDES, (source_model, target_model))},
    }


def _warnings(read, kept, dropped, unknown, max_length):
    warnings = []
    if not kept:
        warnings.append("No pair was kept: the shards are empty. See pairs_dropped.")
    if unknown:
        warnings.append(
            f"{unknown} of the kept ids are [UNK]: the model lacks byte fallback "
            "(or the pieces for some characters); learn one with the job, which "
            "uses byte_fallback=True, to keep every character."
        )
    if read and dropped["too_long"] > 0.05 * read:
        warnings.append(
            f"{dropped['too_long'] / read:.1%} of the pairs are longer than "
            f"--max_length={max_length}; raise it to keep them."
        )
    return warnings


def stats_from_counts(counts, parameters, vocabulary, shards):
    """The stats.json dict.

    Args:
        counts: the job's summed counts (`ReadTranslationPairs`'s and
            `TokenizeTranslationPairs`'s).
        parameters: the job's parameters (every flag and "beam_arguments");
            its "max_length" sizes the histograms.
        vocabulary: the "vocabulary" entry: "shared", "learned",
            "sample_sentences" (per learned model) and per side
            `model_description`'s dict.
        shards: the "shards" entry: "files" (the shard-name pattern),
            "num_shards", "gzip".

    Returns:
        The dict with the keys "parameters", "pairs_read", "pairs_kept",
        "pairs_dropped" (by reason, every reason present),
        "pairs_dropped_total", "pairs_with_invalid_utf8", "records_written",
        "source" and "target" (`side_statistics`), "unk_share" and
        "byte_fallback_share" (both sides together), "vocabulary", "shards"
        and "warnings".

    Raises:
        RuntimeError: the pairs read are not the pairs kept plus the pairs
            dropped (a bug in the job).
    """
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    dropped = {reason: get(f"pairs_dropped_{reason}") for reason in DROP_REASONS}
    read, kept = get("pairs_read"), get("pairs_kept")
    if read != kept + sum(dropped.values()):
        raise RuntimeError(
            f"Pairs are unaccounted for: {read} read, {kept} kept, dropped {dropped}."
        )
    sides = {side: side_statistics(counts, side, parameters["max_length"])
             for side in SIDES}
    ids = sum(get(f"{side}_ids") for side in SIDES)
    unknown = sum(get(f"{side}_unk_ids") for side in SIDES)
    return {
        "parameters": parameters,
        "pairs_read": read,
        "pairs_kept": kept,
        "pairs_dropped": dropped,
        "pairs_dropped_total": sum(dropped.values()),
        "pairs_with_invalid_utf8": get("pairs_with_invalid_utf8"),
        "records_written": kept,
        **sides,
        "unk_share": job.share(unknown, ids),
        "byte_fallback_share": job.share(sum(get(f"{side}_byte_ids") for side in SIDES), ids),
        "vocabulary": vocabulary,
        "shards": shards,
        "warnings": _warnings(read, kept, dropped, unknown, parameters["max_length"]),
    }



# What to change when every pair is dropped, by the reasons they were.
DROP_REMEDIES = {
    "too_long": "raise --max_length",
    "length_ratio": "raise --max_length_ratio (0 turns it off)",
}
INPUT_REMEDY = "check the input files, --input_format and the field flags"


def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no pair kept is an error that
    names the reasons the pairs were dropped and the flags to change."""
    if stats["pairs_kept"]:
        return None, []
    dropped = {reason: count for reason, count in stats["pairs_dropped"].items() if count}
    remedies = dict.fromkeys(DROP_REMEDIES.get(reason, INPUT_REMEDY) for reason in dropped)
    reasons = ", ".join(f"{reason} {count}" for reason, count in dropped.items())
    return (f"wrote no pair: {stats['pairs_read']} pairs read"
            + (f", all dropped ({reasons}); " if dropped else "; ")
            + ", or ".join(remedies or [INPUT_REMEDY])), []


def summary_line(stats, seconds):
    """The line `job.run_job` logs: pairs written, read and dropped (by
    reason), mean lengths, vocabulary sizes and byte-fallback share."""
    dropped = ", ".join(f"{reason} {count}" for reason, count in
                        stats["pairs_dropped"].items() if count)
    return (
        f"Wrote {stats['records_written']} pairs of {stats['pairs_read']} read "
        f"(dropped: {dropped or 'none'}) to {stats['shards']['files']} in "
        f"{seconds:.1f} s; mean lengths {stats['source']['mean_length']:.1f} / "
        f"{stats['target']['mean_length']:.1f} ids, vocabulary "
        f"{stats['vocabulary']['source']['size']} / "
        f"{stats['vocabulary']['target']['size']}, byte-fallback share "
        f"{stats['byte_fallback_share']:.4%}."
    )

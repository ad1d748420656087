"""The stats of `python -m pipelines.lm_data`: every input line and token accounted for.

`stats_from_counts` turns the job's summed counts into `DIR/stats.json`
and checks, raising `RuntimeError` (a bug in the job) when one fails:

- lines, per input (`--input_file`, `--validation_file`):
  `read == used + sum(skipped.values())`;
- documents: `read == train.documents + validation.documents +
  sum(skipped.values())`;
- tokens, per split, with `L = sequence_length` (`pipelines.lm_packing`):
  `tokens == records * L + unpredicted_first_tokens + dropped_tail_tokens`,
  where `tokens` counts every document's ids and its end-of-document id,
  `records * L` are the predicted ids, `unpredicted_first_tokens` the
  first id of each packed stream that yields a record (read, never
  predicted) and `dropped_tail_tokens` the ids after a stream's last
  record (or a whole stream shorter than one record); and the ids packed
  equal the ids tokenized.
"""

from pipelines import job, lm_documents

LINE_SKIP_REASONS = ("blank", "too_long", "bad_json", "not_object", "missing_text",
                     "text_not_string")
VALIDATION_FILE_PREFIX = "validation_file_"
ACCOUNTING = ("tokens == records * sequence_length + unpredicted_first_tokens + "
              "dropped_tail_tokens")


def line_statistics(counts, prefix=""):
    """The lines of one input: read, used, skipped by reason, repaired.

    Raises:
        RuntimeError: the lines read are not the lines used plus skipped.
    """
    get = lambda name: counts.get(prefix + name, 0)  # noqa: E731
    lines = {
        "read": get("lines_read"),
        "used": get("lines_used"),
        "skipped": {reason: get(f"lines_skipped_{reason}") for reason in LINE_SKIP_REASONS},
        "repaired": {"invalid_utf8": get("lines_with_invalid_utf8"),
                     "nul": get("lines_with_nul")},
    }
    if lines["read"] != lines["used"] + sum(lines["skipped"].values()):
        raise RuntimeError(f"Input lines are unaccounted for: {lines}.")
    return lines


def split_statistics(counts, split, sequence_length):
    """One split's documents, tokens, characters and records.

    Raises:
        RuntimeError: the split's tokens do not add up (see the module
            docstring).
    """
    get = lambda name: counts.get(f"{split}_{name}", 0)  # noqa: E731
    records = get("records")
    predicted = records * sequence_length
    statistics = {
        "documents": get("documents"),
        "tokens": get("tokens"),
        "end_of_document_tokens": get("end_of_document_tokens"),
        "characters": get("characters"),
        "unknown_tokens": get("unknown_tokens"),
        "unknown_share": job.share(get("unknown_tokens"), get("tokens")),
        "buckets": get("buckets"),
        "records": records,
        "predicted_tokens": predicted,
        "predicted_characters": get("predicted_characters"),
        "characters_per_predicted_token": job.share(get("predicted_characters"), predicted),
        "unpredicted_first_tokens": get("unpredicted_first_tokens"),
        "dropped_tail_tokens": get("dropped_tail_tokens"),
        "dropped_tail_share": job.share(get("dropped_tail_tokens"), get("tokens")),
    }
    accounted = predicted + get("unpredicted_first_tokens") + get("dropped_tail_tokens")
    if not statistics["tokens"] == get("packed_tokens") == accounted:
        raise RuntimeError(
            f"The {split} tokens are unaccounted for: {statistics['tokens']} tokenized, "
            f"{get('packed_tokens')} packed, but {ACCOUNTING} gives {accounted} "
            f"(sequence_length {sequence_length}): {statistics}."
        )
    return statistics


def _warnings(statistics, parameters, has_validation):
    warnings = []
    if not has_validation:
        warnings.append("No validation split: pass --validation_fraction or "
                        "--validation_file to measure held-out loss.")
    for split in lm_documents.SPLITS if has_validation else ("train",):
        split_stats = statistics[split]
        if not split_stats["records"]:
            warnings.append(
                f"The {split} split has no record: it holds {split_stats['tokens']} ids, "
                f"fewer than one record of --sequence_length + 1 = "
                f"{parameters['sequence_length'] + 1} per bucket.")
        if split_stats["dropped_tail_share"] > 0.01:
            warnings.append(
                f"{split_stats['dropped_tail_share']:.1%} of the {split} ids are dropped "
                "stream tails; raise --packing_bucket_tokens for fewer, longer streams.")
        if split_stats["unknown_tokens"]:
            warnings.append(
                f"{split_stats['unknown_share']:.4%} of the {split} ids are unknown "
                "(characters or pieces the vocabulary lacks).")
    return warnings


def stats_from_counts(counts, parameters, vocabulary, shards):
    """The stats.json dict.

    Args:
        counts: the job's summed counts: the input reader's (unprefixed),
            the validation files' reader's (prefixed "validation_file_"),
            and each split's tokenizing and packing counts (prefixed
            "train_" and "validation_").
        parameters: every flag and "beam_arguments"; "sequence_length",
            "validation_file" and "validation_fraction" are read.
        vocabulary: the "vocabulary" entry (kind, file, size, SHA-256,
            whether learned and how).
        shards: `{split: {"files": glob, "num_shards": n}}` for the splits
            written.

    Returns:
        The dict with "parameters", "lines" ("input_file",
        "validation_file" or None), "documents", "train" and "validation"
        (`split_statistics`, and their "shards"), "accounting" (the
        identity checked), "vocabulary" and "warnings".

    Raises:
        RuntimeError: something is unaccounted for (see the module
            docstring).
    """
    counts = dict(counts)
    get = lambda name: counts.get(name, 0)  # noqa: E731
    length = parameters["sequence_length"]
    has_validation_files = bool(parameters.get("validation_file"))
    has_validation = has_validation_files or bool(parameters.get("validation_fraction"))
    splits = {split: split_statistics(counts, split, length) for split in lm_documents.SPLITS}
    for split, files in shards.items():
        splits[split]["shards"] = files
    read = get("documents_read") + get(VALIDATION_FILE_PREFIX + "documents_read")
    documents = {
        "read": read,
        "skipped": {"empty": sum(get(f"{split}_documents_skipped_empty")
                                 for split in lm_documents.SPLITS)},
        **{split: splits[split]["documents"] for split in lm_documents.SPLITS},
    }
    if read != sum(splits[split]["documents"] for split in lm_documents.SPLITS) + sum(
            documents["skipped"].values()):
        raise RuntimeError(f"Documents are unaccounted for: {documents}.")
    statistics = {
        "parameters": parameters,
        "lines": {
            "input_file": line_statistics(counts),
            "validation_file": (line_statistics(counts, VALIDATION_FILE_PREFIX)
                                if has_validation_files else None),
        },
        "documents": documents,
        **splits,
        "accounting": ACCOUNTING,
        "vocabulary": vocabulary,
    }
    statistics["warnings"] = _warnings(statistics, parameters, has_validation)
    return statistics


def summary_line(stats, seconds):
    """The line `job.run_job` logs: records, tokens and characters per split."""
    parts = []
    for split in lm_documents.SPLITS:
        split_stats = stats[split]
        if split_stats["documents"] or split == "train":
            parts.append(
                f"{split}: {split_stats['records']} records from {split_stats['documents']} "
                f"documents, {split_stats['tokens']} tokens ({split_stats['dropped_tail_tokens']} "
                f"dropped), {split_stats['characters_per_predicted_token']:.2f} characters "
                "per token")
    return (f"Wrote {stats['parameters']['output_dir']} in {seconds:.1f} s; "
            f"{'; '.join(parts)}; vocabulary {stats['vocabulary']['size']} "
            f"({stats['vocabulary']['kind']}).")


def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no training record is an
    error; no validation record, where a validation split was asked for, a
    warning (a small split may hold less than one record)."""
    parameters = stats["parameters"]
    error = None
    if not stats["train"]["records"]:
        error = (f"wrote no training record: {_too_few_tokens(stats, 'train')}; give more "
                 "text or a shorter --sequence_length")
    warnings = []
    asked = parameters.get("validation_file") or parameters.get("validation_fraction")
    if asked and not stats["validation"]["records"]:
        more = ("more --validation_file text" if parameters.get("validation_file")
                else "a larger --validation_fraction")
        warnings.append(
            f"wrote no validation record: {_too_few_tokens(stats, 'validation')}; give "
            f"{more} or a shorter --sequence_length")
    return error, warnings


def _too_few_tokens(stats, split):
    """Why a split made no record: its tokens, too few for one."""
    split_stats, length = stats[split], stats["parameters"]["sequence_length"]
    documents = split_stats["documents"]
    tokens = (f"the {split} split's {split_stats['tokens']} tokens (from {documents} "
              f"document{'' if documents == 1 else 's'})")
    if split_stats["buckets"] > 1:
        return (f"{tokens}, packed in {split_stats['buckets']} streams of about "
                "--packing_bucket_tokens, fill no window of --sequence_length="
                f"{length} + 1 ids")
    return f"{tokens} are fewer than --sequence_length={length} + 1"


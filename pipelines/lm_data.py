"""Causal language-model training data (packed fixed-length windows) with Apache Beam.

    python -m pipelines.lm_data --input_file=GLOB --output_dir=DIR \\
      [--validation_fraction=0.1 | --validation_file=GLOB] \\
      [--tokenizer=character|sentencepiece|wordpiece] [--sequence_length=256]

Tiny Shakespeare at the character level, as nanoGPT's `shakespeare_char`:

    python -m pipelines.lm_data --input_file=train.txt --validation_file=val.txt \\
      --document_boundary=file --tokenizer=character --output_dir=data/shakespeare

`build_pipeline` says what the job does and writes; the flags are in
`lm_data_flags`, the stats in `lm_data_stats`.
"""

import logging
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import (document_texts, job, lm_data_flags, lm_data_stats, lm_documents,
                       lm_packing, lm_tokenizers, sentencepiece_model, text_input)
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name
from tfnlp.command_line import check_input_file, check_output_directory, usage_errors
from tfnlp.data import file_names
from tfnlp.text.vocabulary import load_vocabulary

LOGGER = logging.getLogger(__name__)
SHARD_PREFIXES = {
    "train": file_names.LANGUAGE_MODEL_TRAIN_PREFIX,
    "validation": file_names.LANGUAGE_MODEL_VALIDATION_PREFIX,
}


def _prefixed(counts, prefix):
    return {prefix + name: value for name, value in counts.items()}


def _vocabulary_entry(spec, units, learned, settings):
    """The stats' "vocabulary": the descriptor's fields and how it was made."""
    descriptor = lm_tokenizers.descriptor(spec, lm_tokenizers.TOKENIZER_FILES[spec.kind])
    return {
        "kind": descriptor.kind,
        "file": descriptor.file,
        "size": descriptor.vocabulary_size,
        "sha256": descriptor.sha256,
        "end_of_document_id": descriptor.end_of_document_id,
        "unknown_id": descriptor.unknown_id,
        "pad_id": descriptor.pad_id,
        "learned": learned,
        "learned_from": units if learned else None,
        **settings,
    }


def _shards_entry(output_dir, split, num_shards, gzip):
    suffix = ".tfrecord.gz" if gzip else ".tfrecord"
    prefix = os.path.join(output_dir, SHARD_PREFIXES[split])
    return {"files": shard_file_name(prefix, 0, num_shards, suffix).replace(
        "-00000-of-", "-?????-of-"), "num_shards": num_shards, "gzip": gzip}


def build_pipeline(pipeline, read_input, output_dir, *, tokenizer_options, sequence_length,
                   packing_bucket_tokens, read_validation=None, validation_fraction=0.0,
                   num_shards=lm_data_flags.DEFAULT_NUM_SHARDS, num_validation_shards=1,
                   gzip=False, parameters=None, vocabulary_settings=None):
    """Adds the whole job to `pipeline`.

    1. Read documents whole, their line breaks kept
       (`document_texts.ReadDocumentTexts`: blank-line-separated blocks,
       whole files, or jsonl records), every line counted.
    2. Key each document by the SHA-256 of its text and split off
       validation (`lm_documents.SplitDocuments`: `validation_fraction` of
       the key space), or read `--validation_file` as the validation split.
    3. Learn the tokenizer from the training split only
       (`lm_tokenizers.LearnTokenizer`): every character seen
       (`--min_character_count`), or a SentencePiece BPE/unigram model
       (identity normalization, spaces kept, byte fallback, so detokenized
       text is the text and "\\n" survives as a byte piece) from a
       deterministic sample of lines; or take `--vocab_file` (a
       SentencePiece model, or a WordPiece vocabulary).
    4. Tokenize each document in the workers with the plain-Python
       tokenizer (no TensorFlow; the ids of the in-graph `tfnlp.text`
       tokenizer), append the end-of-document id
       (`lm_documents.TokenizeLanguageModelDocuments`).
    5. Pack (`lm_packing.PackLanguageModelRecords`): documents spread over
       `ceil(tokens / packing_bucket_tokens)` buckets by key, each bucket
       one stream in key order, cut into windows of `sequence_length + 1`
       ids overlapping by one.
    6. Write the records (`tfnlp.data.language_model_schema`) with
       `WriteShardedTFRecords`, the tokenizer's file and descriptor, and
       the stats.

    It writes, through Beam's filesystems:

    - `DIR/train-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with `gzip`) and,
      with a validation split, `DIR/validation-SSSSS-of-NNNNN.tfrecord`:
      `token_ids` (int64, `sequence_length + 1`) and `character_count`;
    - the tokenizer's file: `DIR/characters.txt`, `DIR/sentencepiece.model`
      (and `.vocab`, learned) or `DIR/vocab.txt`; and `DIR/tokenizer.json`
      (`tfnlp.text.tokenizer_descriptor`), which
      `tfnlp.text.load_language_model_tokenizer(DIR)` reads;
    - `DIR/stats.json` (`lm_data_stats`): every parameter; lines read, used
      and skipped by reason; documents read, per split, skipped; per split
      the documents, tokens, characters, unknown share, records, predicted
      tokens and characters, unpredicted first tokens and dropped tail
      tokens, with `tokens == records * sequence_length +
      unpredicted_first_tokens + dropped_tail_tokens` checked; the
      vocabulary (kind, size, SHA-256).

    Determinism: keys, splits, buckets, the stream's order, the learned
    vocabulary or model and the shards depend on the input text alone, so
    every file is byte-identical whatever the runner or the number of
    workers. Scale: files of blank-line documents and jsonl are read in
    parallel (a `--document_boundary=file` file is one document, held whole
    by one worker); a worker packs one bucket (about
    `packing_bucket_tokens` ids); a shard is sorted in one worker's memory.

    Args:
        pipeline: a `beam.Pipeline`.
        read_input: the `document_texts.ReadDocumentTexts` of `--input_file`.
        output_dir: where the shards, the tokenizer and stats.json go.
        tokenizer_options: the `lm_tokenizers.TokenizerOptions`.
        sequence_length: each record holds `sequence_length + 1` ids.
        packing_bucket_tokens: about how many ids one stream holds.
        read_validation: the `ReadDocumentTexts` of `--validation_file`, or
            None to split the input by `validation_fraction`.
        validation_fraction: the share of the input's documents held out.
        num_shards, num_validation_shards: the TFRecord files per split.
        gzip: write gzip-compressed shards.
        parameters: the job's parameters, recorded in stats.json (at least
            "sequence_length", "validation_file", "validation_fraction").
        vocabulary_settings: how the vocabulary was asked for, recorded in
            its stats entry.
    """
    texts, counts = pipeline | "ReadInput" >> read_input
    all_counts = [counts]
    if read_validation is None:
        train, validation = texts | "SplitDocuments" >> lm_documents.SplitDocuments(
            validation_fraction)
    else:
        train = texts | "KeyTrain" >> beam.Map(lm_documents.keyed)
        validation_texts, validation_counts = pipeline | "ReadValidation" >> read_validation
        validation = validation_texts | "KeyValidation" >> beam.Map(lm_documents.keyed)
        all_counts.append(validation_counts | "PrefixValidationCounts" >> beam.Map(
            _prefixed, lm_data_stats.VALIDATION_FILE_PREFIX))
    spec, units = (train | "TrainTexts" >> beam.Values()
                   | "Tokenizer" >> lm_tokenizers.LearnTokenizer(tokenizer_options))
    _ = spec | "WriteTokenizer" >> beam.Map(lm_tokenizers.write_tokenizer, output_dir)

    has_validation = read_validation is not None or validation_fraction > 0
    shards = {"train": num_shards, "validation": num_validation_shards}
    for split, documents in (("train", train), ("validation", validation)):
        label = split.capitalize()
        tokenized, tokenize_counts = documents | f"Tokenize{label}" >> (
            lm_documents.TokenizeLanguageModelDocuments(spec, split))
        records, pack_counts = tokenized | f"Pack{label}" >> (
            lm_packing.PackLanguageModelRecords(sequence_length, packing_bucket_tokens, split))
        all_counts += [tokenize_counts, pack_counts]
        if split == "train" or has_validation:
            _ = records | f"Write{label}" >> WriteShardedTFRecords(
                os.path.join(output_dir, SHARD_PREFIXES[split]), shards[split], gzip)
    vocabulary = spec | "DescribeVocabulary" >> beam.Map(
        _vocabulary_entry, units=beam.pvalue.AsSingleton(units),
        learned=tokenizer_options.given is None, settings=vocabulary_settings or {})
    shard_entries = {split: _shards_entry(output_dir, split, count, gzip)
                     for split, count in shards.items() if split == "train" or has_validation}
    _ = (
        all_counts
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        | "Stats" >> beam.Map(
            lm_data_stats.stats_from_counts,
            parameters or {"sequence_length": sequence_length,
                           "validation_file": read_validation is not None,
                           "validation_fraction": validation_fraction},
            vocabulary=beam.pvalue.AsSingleton(vocabulary), shards=shard_entries)
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, file_names.STATS_FILE))
    )


def given_tokenizer(kind, path, lower_case):
    """The `TokenizerSpec` of `--vocab_file`, checked before the job.

    Raises:
        ValueError: the file is not a SentencePiece model with the special
            ids PAD 0, UNK 1, BOS 2, EOS 3, or not a WordPiece vocabulary
            with [UNK] and [SEP].
    """
    contents = job.read_file(path)
    if kind == "wordpiece":
        spec = lm_tokenizers.TokenizerSpec("wordpiece", contents, lower_case,
                                           tuple(load_vocabulary(path)))
    else:
        spec = lm_tokenizers.TokenizerSpec("sentencepiece", contents)
    try:
        lm_tokenizers.document_tokenizer(spec)
    except ValueError as error:
        raise ValueError(f"--vocab_file={path}: {error}") from None
    return spec


def tokenizer_options(flags):
    """The `lm_tokenizers.TokenizerOptions` of the flags; the given file is
    read and checked here, before the job."""
    if flags.vocab_file:
        return lm_tokenizers.TokenizerOptions(
            flags.tokenizer, given=given_tokenizer(flags.tokenizer, flags.vocab_file,
                                                   flags.lower_case))
    return lm_tokenizers.TokenizerOptions(
        flags.tokenizer,
        min_character_count=flags.min_character_count,
        sentencepiece=sentencepiece_model.SentencePieceOptions(
            vocab_size=flags.vocab_size, model_type=flags.model_type,
            character_coverage=flags.character_coverage, normalization_rule_name="identity",
            remove_extra_whitespaces=False) if flags.tokenizer == "sentencepiece" else None,
        sample_size=flags.vocab_sample_size,
    )


def vocabulary_settings(flags):
    """The flags that shaped the vocabulary, for its stats entry."""
    if flags.tokenizer == "character":
        return {"min_character_count": flags.min_character_count}
    if flags.tokenizer == "wordpiece":
        return {"vocab_file": flags.vocab_file, "lower_case": flags.lower_case}
    if flags.vocab_file:
        return {"vocab_file": flags.vocab_file}
    return {"model_type": flags.model_type, "vocab_size": flags.vocab_size,
            "character_coverage": flags.character_coverage, "normalization": "identity",
            "vocab_sample_size": flags.vocab_sample_size}


def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        UsageError (a ValueError): `--vocab_file` cannot be read or is not
            a valid model or vocabulary, a SentencePiece learning flag is
            out of range, or `--output_dir` cannot be written (all before
            anything is written or run); SentencePiece cannot learn the
            model (during the run), or no training record is written
            (after it).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = lm_data_flags.parse_arguments(argv)
    text_input.match_input_files(flags.input_file, flag="--input_file")
    if flags.validation_file:
        text_input.match_input_files(flags.validation_file, flag="--validation_file")
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "a SentencePiece model (.model)" if flags.tokenizer == "sentencepiece"
                         else "a WordPiece vocabulary, one token a line")
    with usage_errors(ValueError):
        options = tokenizer_options(flags)
        read_input = document_texts.ReadDocumentTexts(
            flags.input_file, flags.input_format, flags.document_boundary, flags.max_line_bytes)
        read_validation = document_texts.ReadDocumentTexts(
            flags.validation_file, flags.input_format, flags.document_boundary,
            flags.max_line_bytes) if flags.validation_file else None
    check_output_directory("--output_dir", flags.output_dir)
    parameters = {**vars(flags), "beam_arguments": list(beam_arguments)}
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, read_input, flags.output_dir,
            tokenizer_options=options,
            sequence_length=flags.sequence_length,
            packing_bucket_tokens=flags.packing_bucket_tokens,
            read_validation=read_validation,
            validation_fraction=flags.validation_fraction,
            num_shards=flags.num_shards,
            num_validation_shards=flags.num_validation_shards,
            gzip=flags.gzip,
            parameters=parameters,
            vocabulary_settings=vocabulary_settings(flags),
        ),
        beam_arguments,
        name="lm-data",
        stats_file=os.path.join(flags.output_dir, file_names.STATS_FILE),
        summary_line=lm_data_stats.summary_line,
        logger=LOGGER,
        output_problems=lm_data_stats.output_problems,
    )


if __name__ == "__main__":
    job.command_line_main("pipelines.lm_data")

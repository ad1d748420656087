"""Translation training data (subword-id pairs) with Apache Beam.

    python -m pipelines.translation_data --source_file=GLOB \\
      --target_file=GLOB --output_dir=DIR [--shared_vocab] [--vocab_file=MODEL]
    python -m pipelines.translation_data --input_format=tsv|jsonl \\
      --input_file=GLOB --output_dir=DIR ...

`build_pipeline` says what the job reads, drops and writes; the flags are
in `translation_data_flags`, the stats in `translation_data_stats`.
"""

import logging
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import (job, sentencepiece_model, text_input, translation_data_flags,
                       translation_data_stats, translation_pairs)
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name
from pipelines.translation_records import SIDES, TokenizeTranslationPairs
from tfnlp.command_line import check_input_file, check_output_directory, usage_errors
from tfnlp.data.file_names import (
    SENTENCEPIECE_MODEL,
    STATS_FILE,
    TRANSLATION_SHARD_PREFIX,
)

LOGGER = logging.getLogger(__name__)
SHARD_PREFIX = TRANSLATION_SHARD_PREFIX
SHARED_MODEL_NAME = os.path.splitext(SENTENCEPIECE_MODEL)[0]


def model_paths(output_dir, shared_vocab):
    """Where the learned models go: `{side: (model_file, vocab_file)}`."""
    names = dict.fromkeys(SIDES, SHARED_MODEL_NAME) if shared_vocab else {
        side: side for side in SIDES}
    return {
        side: (os.path.join(output_dir, f"{name}.model"),
               os.path.join(output_dir, f"{name}.vocab"))
        for side, name in names.items()
    }


def learn_models(pairs, files, shared_vocab, options, sample_size):
    """Adds the learning of the model(s) and the writing of their files.

    Args:
        pairs: the PCollection of `(source, target)` pairs.
        files: `model_paths`'s dict.
        shared_vocab: learn one model over both sides' sentences, else one
            per side.
        options: the `sentencepiece_model.SentencePieceOptions`.
        sample_size: the most sentences each model learns from.

    Returns:
        `(source_model, target_model, sample_sizes)`: the single-element
        PCollections of the serialized models (the same one when shared),
        and `{name: PCollection of the sample size}` ("shared", or "source"
        and "target").
    """
    if shared_vocab:
        sentences = (
            (pairs | "SourceSentences" >> beam.Keys(),
             pairs | "TargetSentences" >> beam.Values())
            | "BothSides" >> beam.Flatten()
        )
        learned = {"shared": sentences | "LearnSharedModel" >> (
            sentencepiece_model.LearnSentencePieceModel(
                options, sample_size, name="the shared"))}
    else:
        learned = {
            side: pairs | f"{side.capitalize()}Sentences" >> select()
            | f"Learn{side.capitalize()}Model" >> (
                sentencepiece_model.LearnSentencePieceModel(
                    options, sample_size, name=f"the {side}"))
            for side, select in (("source", beam.Keys), ("target", beam.Values))
        }
    for name, (model, _) in learned.items():
        model_file, vocab_file = files["source" if name == "shared" else name]
        label = name.capitalize()
        _ = model | f"Write{label}Model" >> beam.Map(job.write_file, model_file)
        _ = (model | f"{label}VocabBytes" >> beam.Map(sentencepiece_model.vocab_file_bytes)
             | f"Write{label}Vocab" >> beam.Map(job.write_file, vocab_file))
    models = [model for model, _ in learned.values()]
    return models[0], models[-1], {name: used for name, (_, used) in learned.items()}


def _create_models(pipeline, models, shared_vocab):
    """The single-element PCollections of the given models' bytes: the
    source's and the target's (the same one when shared)."""
    source_model = pipeline | "SourceModel" >> beam.Create([models["source"]])
    target_model = (source_model if shared_vocab else
                    pipeline | "TargetModel" >> beam.Create([models["target"]]))
    return source_model, target_model


def _describe_vocabulary(pipeline, source_model, target_model, sample_sizes, files,
                         shared_vocab, learned):
    """The single-element PCollection of the stats' "vocabulary"
    (`translation_data_stats.vocabulary_entry`)."""
    sample_sentences = [
        used | f"NameSampleSize{name.capitalize()}" >> beam.Map(lambda n, name=name: (name, n))
        for name, used in sample_sizes.items()
    ] or [pipeline | "NoSample" >> beam.Create([])]
    return source_model | "DescribeVocabulary" >> beam.Map(
        translation_data_stats.vocabulary_entry,
        target_model=beam.pvalue.AsSingleton(target_model),
        shared=shared_vocab,
        learned=learned,
        files=files,
        sample_sentences=beam.pvalue.AsDict(
            sample_sentences | "SampleSizes" >> beam.Flatten()),
    )


def _shards_entry(prefix, num_shards, gzip):
    """The stats' "shards": the shard-name pattern, the count, gzip."""
    suffix = ".tfrecord.gz" if gzip else ".tfrecord"
    return {
        "files": shard_file_name(prefix, 0, num_shards, suffix).replace(
            "-00000-of-", "-?????-of-"),
        "num_shards": num_shards,
        "gzip": gzip,
    }


def build_pipeline(pipeline, read_pairs, output_dir, *, shared_vocab,
                   sentencepiece_options=None, vocab_sample_size=1_000_000,
                   models=None, model_files=None, max_length=128,
                   max_length_ratio=9.0, dedupe=False,
                   num_shards=translation_data_flags.DEFAULT_NUM_SHARDS,
                   gzip=False, parameters=None):
    """Adds the whole job to `pipeline`.

    Input (`pipelines.translation_pairs`): line-aligned files (the default;
    the sorted files of `--source_file` and `--target_file` are paired one
    to one, and each pair must have the same number of lines, which is
    checked before the job runs), or one pair a line as `source<TAB>target`
    (`tsv`) or as a JSON object (`jsonl`). `.gz` and `.bz2` files are
    decompressed.

    Tokenization is SentencePiece (`pipelines.sentencepiece_model`),
    reversible: SentencePiece's `nmt_nfkc` normalization (NFKC, control
    characters dropped, spaces collapsed), then unigram (default) or BPE
    pieces, with byte fallback so that any character survives as its UTF-8
    bytes. Without given `models` the job learns them itself, in the same
    pipeline, from a deterministic sample of `vocab_sample_size` sentences;
    `shared_vocab` learns one model over both languages (what a Transformer
    with shared source, target and output embeddings needs; recommended for
    related languages such as English-German), otherwise one per side. The
    ids are those of `tfnlp.text.SentencePieceTokenizer` with the same model
    (which the trainer uses in-graph), with the special ids PAD 0, UNK 1,
    BOS 2, EOS 3.

    It writes, through Beam's filesystems (gs:// and the like work):

    - `DIR/translation-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with
      `gzip`): one `tf.train.Example` per kept pair, in the schema of
      `tfnlp.data.translation_schema` (`inputs` and `targets`, each the
      subword ids followed by EOS);
    - the learned model(s): `DIR/sentencepiece.model` with `shared_vocab`,
      else `DIR/source.model` and `DIR/target.model`, each with its `.vocab`
      (one "piece<TAB>score" line per id, as SentencePiece writes it). With
      given `models` nothing is learned or copied;
    - `DIR/stats.json` (see `translation_data_stats`): every parameter;
      pairs read, kept and dropped by reason (`pairs_read == pairs_kept +
      sum(pairs_dropped.values())`, checked); per side the length
      histogram, mean length, [UNK] share and byte-fallback share of the
      kept pairs; the vocabularies (files, sizes, SHA-256, sample sizes);
      the shards and the records written. The counts are also Beam metrics
      (namespace "tfnlp").

    Pairs are dropped, in this order, when: a tsv/jsonl line is blank or
    malformed (see `pipelines.translation_pairs`); either side is empty
    after normalization ("empty"); either side has more than `max_length`
    ids, EOS included ("too_long"); the longer side has more than
    `max_length_ratio` times the subword ids of the shorter
    ("length_ratio", as Moses' clean-corpus-n.perl does on words, default
    9; 0 turns it off); with `dedupe`, the pair's record equals an earlier
    one ("duplicate": the same ids on both sides, that is the same
    normalized text; one is kept).

    How it scales: aligned files are read one file pair per worker,
    streaming (split a huge corpus into aligned parts to read it in
    parallel); tsv and jsonl files are split across workers. The model is
    learned on one worker from at most `vocab_sample_size` sentences, chosen
    by Beam's `Top` combiner, so the driver never reads the corpus (only,
    for aligned input, a newline count of each file before the job;
    `--nocheck_line_counts` skips it). Tokenizing runs on every worker with
    the Python `sentencepiece` package (the model arrives as a side input;
    workers load no TensorFlow). `dedupe` groups records by their bytes.
    Each shard is sorted in one worker's memory, so choose `num_shards` for
    shards of at most a few hundred MB: the default, 16, suits corpora up
    to tens of millions of pairs (WMT14 En-De's 4.5M pairs make shards of
    about 50 MB).

    Determinism: the sample, the model (one trainer thread, fixed input
    order), the ids and the shards (`pipelines.sharded_tfrecords`) depend on
    the input text alone, so the model and the shard files are
    byte-identical whatever the runner or the number of workers.

    Args:
        pipeline: a `beam.Pipeline`.
        read_pairs: the `translation_pairs.ReadTranslationPairs` of the input.
        output_dir: where the shards, the learned models and stats.json go.
        shared_vocab: one model for both sides.
        sentencepiece_options: the `sentencepiece_model.SentencePieceOptions`
            to learn with (when `models` is None).
        vocab_sample_size: the most sentences each model learns from.
        models: None to learn the model(s), else `{"source": bytes,
            "target": bytes}`, the serialized models to use.
        model_files: with `models`, `{side: path}` of the given models (for
            the stats).
        max_length, max_length_ratio, dedupe: `TokenizeTranslationPairs`'s.
        num_shards: the number of shards (`WriteShardedTFRecords`).
        gzip: write gzip-compressed shards.
        parameters: the job's parameters, recorded in stats.json.
    """
    pairs, read_counts = pipeline | "ReadPairs" >> read_pairs
    if models is None:
        files = model_paths(output_dir, shared_vocab)
        source_model, target_model, sample_sizes = learn_models(
            pairs, files, shared_vocab, sentencepiece_options, vocab_sample_size)
    else:
        files = {side: (model_files[side], None) for side in SIDES}
        source_model, target_model = _create_models(pipeline, models, shared_vocab)
        sample_sizes = {}

    records, record_counts = pairs | "TokenizePairs" >> TokenizeTranslationPairs(
        source_model, target_model, max_length, max_length_ratio, dedupe)
    prefix = os.path.join(output_dir, SHARD_PREFIX)
    _ = records | "WriteShards" >> WriteShardedTFRecords(prefix, num_shards, gzip)

    vocabulary = _describe_vocabulary(pipeline, source_model, target_model, sample_sizes,
                                      files, shared_vocab, learned=models is None)
    _ = (
        (read_counts, record_counts)
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        | "Stats" >> beam.Map(
            translation_data_stats.stats_from_counts,
            parameters or {"max_length": max_length},
            vocabulary=beam.pvalue.AsSingleton(vocabulary),
            shards=_shards_entry(prefix, num_shards, gzip))
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, STATS_FILE))
    )


def check_input_paths(flags):
    """Checks, before the job, that each input glob matches and that each
    `--vocab_file` can be read.

    Raises:
        FileNotFoundError: an input glob matches no file.
        UsageError: a `--vocab_file` cannot be read.
    """
    for name in ("source_file", "target_file", "input_file"):
        if getattr(flags, name):
            text_input.match_input_files(getattr(flags, name), flag=f"--{name}")
    for path in flags.vocab_file or ():
        check_input_file("--vocab_file", path, "a SentencePiece model (.model)")


def read_given_models(vocab_files, shared_vocab):
    """The models of `--vocab_file`, read and checked before the job.

    Args:
        vocab_files: the paths, one with `shared_vocab`, else the source's
            and the target's.
        shared_vocab: one model for both sides.

    Returns:
        `(models, model_files)`: `{side: the model's bytes}` and
        `{side: path}`.

    Raises:
        ValueError: a model is not a SentencePiece model with the special
            ids PAD 0, UNK 1, BOS 2, EOS 3.
    """
    paths = vocab_files * 2 if shared_vocab else vocab_files
    model_files = dict(zip(SIDES, paths))
    models = {}
    for side, path in model_files.items():
        models[side] = job.read_file(path)
        sentencepiece_model.load_processor(models[side], f"--vocab_file {path}")
    return models, model_files


def job_parameters(flags, beam_arguments):
    """The job's parameters, as the stats record them: every flag (the
    learning flags None with given models), the normalization, the shard
    prefix and the Beam options."""
    return {
        **vars(flags),
        # The learning flags do not apply to given models.
        **(dict.fromkeys(("vocab_size", "model_type", "character_coverage",
                          "vocab_sample_size")) if flags.vocab_file else {}),
        "normalization": None if flags.vocab_file else sentencepiece_model.NORMALIZATION,
        "shard_prefix": SHARD_PREFIX,
        "beam_arguments": list(beam_arguments),
    }


def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        UsageError (a ValueError): a `--vocab_file` cannot be read, or
            `--output_dir` cannot be written; aligned files differ in
            number or line count, or a `--vocab_file` is not a
            SentencePiece model with the special ids PAD 0, UNK 1, BOS 2,
            EOS 3, or --vocab_size or --character_coverage is out of range
            (all before anything is written or run).
        UsageError: SentencePiece cannot learn the model (during the
            run), or no pair is kept (after it).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = translation_data_flags.parse_arguments(argv)
    check_input_paths(flags)
    models = model_files = options = None
    with usage_errors(ValueError):
        read_pairs = translation_pairs.ReadTranslationPairs(
            input_format=flags.input_format,
            source_file=flags.source_file,
            target_file=flags.target_file,
            input_file=flags.input_file,
            source_field=flags.source_field,
            target_field=flags.target_field,
            check_line_counts=flags.check_line_counts,
        )
        if flags.vocab_file:
            models, model_files = read_given_models(flags.vocab_file, flags.shared_vocab)
        else:
            options = sentencepiece_model.SentencePieceOptions(
                vocab_size=flags.vocab_size,
                model_type=flags.model_type,
                character_coverage=flags.character_coverage,
            )
    check_output_directory("--output_dir", flags.output_dir)
    parameters = job_parameters(flags, beam_arguments)
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, read_pairs, flags.output_dir,
            shared_vocab=flags.shared_vocab,
            sentencepiece_options=options,
            vocab_sample_size=flags.vocab_sample_size,
            models=models,
            model_files=model_files,
            max_length=flags.max_length,
            max_length_ratio=flags.max_length_ratio,
            dedupe=flags.dedupe,
            num_shards=flags.num_shards,
            gzip=flags.gzip,
            parameters=parameters,
        ),
        beam_arguments,
        name="translation-data",
        stats_file=os.path.join(flags.output_dir, STATS_FILE),
        summary_line=translation_data_stats.summary_line,
        logger=LOGGER,
        output_problems=translation_data_stats.output_problems,
    )


if __name__ == "__main__":
    job.command_line_main("pipelines.translation_data")

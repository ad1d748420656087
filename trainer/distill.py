"""Knowledge distillation: a small student classifier trained on a BERT
teacher's logits, on `tf.distribute`.

    python -m trainer.distill --train_data='TRANSFER/train-*' \\
        --eval_data=dev.tsv --model_dir=RUN --student=bilstm \\
        --word_vectors=glove.840B.300d.txt --loss=mse --train_steps=20000

It reads the transfer set of `python -m pipelines.distillation_data` and
trains the student on the shared loop of `trainer.training_loop`; `run`
says what it trains and writes.
"""

import logging
import os

import numpy as np
import tensorflow as tf

from tfnlp.command_line import UsageError, run_main
from tfnlp.data import distillation_dataset, distillation_num_classes
from tfnlp.export import BertTextPreprocessor
from tfnlp.models import BertClassifier
from tfnlp.text import BertTokenizer, WordTokenizer, align_word_vectors
from trainer import length_buckets, optimization, runtime
from trainer.bert_models import check_inputs_fit
from trainer.checkpoints import BestCheckpoint, latest_step, read_run_config
from trainer.distill_flags import (
    DATA_WRITER,
    DEFAULT_SEQUENCE_LENGTH,
    TEACHER_VECTORS,
    TEACHER_WORD_VECTORS,
    check_paths,
    parse_flags,
)
from trainer.distillation_inputs import (
    StudentInputs,
    dev_dataset_function,
    dev_steps,
    label_list,
    read_dev_set,
    word_vocabulary,
)
from trainer.distillation_models import (
    distilled_bert_classifier,
    export_student,
    run_config,
    serving_record,
    teacher_output_word_vectors,
    teacher_word_vectors,
)
from trainer.export import load_trained_model
from trainer.model_registry import model_family
from trainer.run_flags import match_data_files
from trainer.tasks.distillation import DistillationTask
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.distill")

# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "accuracy"), ("eval", "teacher_agreement"), ("eval", "loss"),
    ("train", "loss"), ("train", "teacher_agreement"),
)
# Texts per batch when the teacher labels the dev set.
TEACHER_BATCH = 64
# The packed length of one word for --word_vectors=teacher_output: [CLS], up
# to 14 WordPieces, [SEP] (longer words are cut).
WORD_SEQUENCE_LENGTH = 16


def run(flags):
    """Trains as the flags say; returns the final step's loss.

    It reads the transfer set (texts with the teacher's logits, a gold label
    where there is one; `tfnlp.data.distillation_dataset`), tokenizes it for
    the student (`trainer.distillation_inputs`) and trains the student with
    `trainer.tasks.DistillationTask`:

    - `--objective=distill`: the teacher term on every record, `--loss=kl`
      (Hinton et al.'s `T² · KL` at `--temperature`) or `--loss=mse` (the
      logits' squared difference, Tang et al.), weighted by `--alpha`, plus
      `1 - alpha` times the cross-entropy with the gold labels of the
      records that have one;
    - `--objective=labels`: the baseline, the same student trained on the
      labelled records' gold labels alone (the teacher's logits are never
      read), so that distillation can be compared with it.

    The students (`trainer.distillation_models`) are `bilstm_student`'s and
    `bert_student`'s. With `--eval_data` (a labelled dev file) every
    evaluation reports the accuracy against its gold labels and, when
    `--teacher` is a classifier, the agreement with the teacher's
    predictions on it (`dev_set_with_teacher`); the checkpoint of the best
    accuracy is kept.

    Writes into `--model_dir` what every trainer on the shared loop writes
    (`trainer.runtime`): resumable `ckpt-STEP` checkpoints, TensorBoard logs
    and the HParams in `tensorboard/`, `train_log.jsonl`, `eval_log.jsonl`,
    `best/`; `config.json` (the student serialized by Keras) and
    `serving.json` (its kind, labels, vocabulary and sequence length, for
    `trainer.export`). With `--export_dir`, the next version of a
    SavedModel whose `serving_default` takes raw text and returns `label`,
    `class_id`, `probabilities` and `logits`, as a BERT classifier's export
    does, so `python -m tfnlp.serve` serves it unchanged.

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural Network](
          https://arxiv.org/abs/1503.02531)
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108)
    """
    description = (f"Distillation ({flags.objective}, {flags.student} student)"
                   if flags.objective == "distill" else
                   f"Training on the gold labels alone ({flags.student} student)")
    return runtime.train_run(flags, lambda run: build_training(flags, run), description)


def load_teacher(path):
    """The teacher model and its serving record (vocabulary, lower-casing,
    sequence length, labels), from a `trainer.finetune` run or a Hugging
    Face BERT directory."""
    teacher, record = load_trained_model(path)
    if not record.get("vocab_file"):
        raise UsageError(
            f"--teacher={path} records no WordPiece vocabulary (no vocab_file in its "
            "serving.json, no vocab.txt): the BERT student reads the teacher's.")
    LOGGER.info("Teacher: %s of %s.", type(teacher).__name__, path)
    return teacher, record


def teacher_tokenizer(record):
    """The teacher's `BertTokenizer`, as its run's serving record gives it
    (lower-cased unless the record says otherwise)."""
    return BertTokenizer(record["vocab_file"], lower_case=record.get("lower_case", True))


def teacher_dev_logits(teacher, record, texts):
    """The teacher's float32 logits `(texts, classes)` on the dev texts,
    tokenized as the teacher's run recorded."""
    preprocessor = BertTextPreprocessor(
        teacher_tokenizer(record), record.get("sequence_length", DEFAULT_SEQUENCE_LENGTH))
    logits = [teacher(preprocessor(tf.constant(texts[start:start + TEACHER_BATCH])),
                      training=False)
              for start in range(0, len(texts), TEACHER_BATCH)]
    return np.concatenate([np.asarray(part, np.float32) for part in logits])


def word_embeddings(flags, vocabulary, teacher=None, teacher_record=None):
    """The BiLSTM's constructor arguments of `--word_vectors`: the matrix
    aligned with `vocabulary` and its size (none without the flag), from a
    file (word2vec or GloVe; the counts of words found and missing are
    logged) or from the teacher: `teacher` (the mean of its WordPiece
    embeddings of each word) or `teacher_output` (its sentence vector of
    each word alone). A resumed run takes the embeddings from its checkpoint and
    the size from its config.json instead of reading the file again."""
    if not flags.word_vectors:
        return {}
    if latest_step(flags.model_dir):
        config = read_run_config(flags.model_dir, "trainer.distill")
        LOGGER.info("Resuming: the embeddings come from the checkpoint, not from %s.",
                    flags.word_vectors)
        return {"embedding_dim": config["config"]["embedding_dim"]}
    if flags.word_vectors in TEACHER_VECTORS:
        tokenizer = teacher_tokenizer(teacher_record)
        if flags.word_vectors == TEACHER_WORD_VECTORS:
            vectors = teacher_word_vectors(teacher, tokenizer, vocabulary)
            source = "the mean of the teacher's WordPiece embeddings"
        else:
            vectors = teacher_output_word_vectors(
                teacher, BertTextPreprocessor(tokenizer, WORD_SEQUENCE_LENGTH), vocabulary)
            source = "the teacher's sentence vector of the word alone"
        LOGGER.info("Word vectors: %s, for each of the %d words (%d dimensions).", source,
                    len(vocabulary), vectors.shape[1])
        return {"embedding_weights": vectors, "embedding_dim": int(vectors.shape[1])}
    alignment = align_word_vectors(
        flags.word_vectors, vocabulary, padding_ids=(0,), seed=flags.seed,
        format=flags.word_vectors_format, dimension=flags.embedding_dim)
    LOGGER.info("Word vectors of %s: %d words found, %d by their lower-case form, %d "
                "missing (random vectors), of %d.", flags.word_vectors,
                alignment.found_exact, alignment.found_lowercase, alignment.missing,
                len(vocabulary) - alignment.padding)
    return {"embedding_weights": alignment.embeddings,
            "embedding_dim": int(alignment.embeddings.shape[1])}


def bilstm_student(flags, run, train_files, num_classes, origins, teacher=None,
                   teacher_record=None):
    """The BiLSTM student (Tang et al.), its `WordTokenizer` (its sequence
    length in words) and the vocabulary file of the serving record.

    A `tfnlp.models.BiLSTMClassifier` on words (`tfnlp.text.WordTokenizer`:
    lower-cased, punctuation split off); its vocabulary is the
    `--max_vocabulary_size` most frequent words of the training texts (seen
    at least `--min_word_count` times), then the words of
    `--extra_vocabulary_file` they lack, written to
    `MODEL_DIR/vocabulary.txt`; `--word_vectors` (word2vec or GloVe, or the
    teacher's: `word_embeddings`) start its embeddings. Sizes: `--config`
    (a preset, or a JSON file) and the size flags.
    """
    path, _ = word_vocabulary(run, train_files, num_classes, origins,
                              flags.max_vocabulary_size, flags.min_word_count,
                              flags.extra_vocabulary_file)
    sequence_length = flags.max_seq_length or DEFAULT_SEQUENCE_LENGTH
    tokenizer = WordTokenizer(path, sequence_length=sequence_length)
    family = model_family("bilstm")
    arguments = {**family.flag_arguments(flags),
                 **word_embeddings(flags, tokenizer.vocabulary, teacher, teacher_record)}
    model = family.build(flags.config, vocabulary_size=tokenizer.vocabulary_size,
                         num_classes=num_classes, **arguments)
    vocab_file = os.path.join(flags.model_dir, os.path.basename(path))
    return model, tokenizer, vocab_file


def bert_student(flags, teacher, record, num_classes):
    """The BERT student initialised from `teacher`, the teacher's
    `BertTokenizer` and the student's sequence length.

    DistilBERT's: a `BertClassifier` of `--student_layers` layers of the
    `--teacher`'s config (a `trainer.finetune` run or a Hugging Face BERT
    directory), its embeddings, layers (the last of each group of teacher
    layers: 1, 3, 5 of 6), pooler and classification layer copied from the
    teacher; the teacher's WordPiece vocabulary and lower-casing.
    """
    source = getattr(teacher, "encoder", teacher)
    layers = flags.student_layers or max(1, source.config.num_layers // 2)
    student, indices = distilled_bert_classifier(
        teacher, layers, num_classes, dropout=0.1 if flags.dropout is None else flags.dropout)
    LOGGER.info("BERT student: %d layers, initialised from the teacher's layers %s (of %d).",
                layers, indices, source.config.num_layers)
    tokenizer = teacher_tokenizer(record)
    sequence_length = (flags.max_seq_length or record.get("sequence_length")
                       or DEFAULT_SEQUENCE_LENGTH)
    check_inputs_fit(student.config, record["vocab_file"], tokenizer.vocab_size,
                     sequence_length)
    return student, tokenizer, sequence_length


def dev_set_with_teacher(flags, labels, teacher, teacher_record):
    """The dev set of `--eval_data`, with the teacher's logits when the
    teacher is a classifier of the same classes (its accuracy logged)."""
    dev_set = read_dev_set(flags.eval_data, flags.text_column, flags.label_column, labels)
    if isinstance(teacher, BertClassifier) and teacher.num_classes == len(labels):
        dev_set.teacher_logits = teacher_dev_logits(teacher, teacher_record, dev_set.texts)
        accuracy = float(np.mean(np.argmax(dev_set.teacher_logits, -1) == dev_set.labels))
        LOGGER.info("The teacher's accuracy on the %d dev examples: %.4f.",
                    len(dev_set.texts), accuracy)
    elif teacher is not None:
        LOGGER.info("The teacher is no classifier of %d classes: no agreement is reported.",
                    len(labels))
    return dev_set


def build_training(flags, run):
    """The student, optimizer, task, data, evaluation and export of a
    distillation run (`runtime.TrainingParts`), in the strategy's scope."""
    runtime.check_global_batch_size(flags.global_batch_size, run.replicas,
                                    flags.gradient_accumulation_steps)
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    num_classes = distillation_num_classes(train_files)
    labels = label_list(flags.labels_file, train_files, num_classes)
    origins = "labelled" if flags.objective == "labels" else None
    teacher, teacher_record = load_teacher(flags.teacher) if flags.teacher else (None, {})

    if flags.student == "bert":
        model, tokenizer, sequence_length = bert_student(flags, teacher, teacher_record,
                                                         num_classes)
        vocab_file, lower_case = teacher_record["vocab_file"], tokenizer.lower_case
        model_settings = {**model.config.to_dict(), "num_classes": num_classes}
    else:
        model, tokenizer, vocab_file = bilstm_student(flags, run, train_files, num_classes,
                                                      origins, teacher, teacher_record)
        sequence_length, lower_case = tokenizer.sequence_length, True
        model_settings = model.get_config()
    widths = (length_buckets.bucket_widths(flags.bucket_boundaries, sequence_length)
              if flags.bucket_boundaries.strip() and flags.strategy != "tpu" else None)
    inputs = StudentInputs(tokenizer, sequence_length, widths)
    record = serving_record(flags.student, labels, sequence_length, lower_case, vocab_file)
    optimizer = optimization.optimizer_from_flags(flags, model,
                                                  schedule=flags.learning_rate_schedule)
    optimizer.build(model.trainable_variables)
    best = BestCheckpoint(flags.model_dir, "accuracy", higher_is_better=True, chief=run.chief)
    best_model = tf.train.Checkpoint(model=model)
    dev_set = (dev_set_with_teacher(flags, labels, teacher, teacher_record)
               if flags.eval_data else None)

    def dataset_function(seed):
        def dataset_fn(input_context):
            records = distillation_dataset(
                train_files, batch_size=None, num_classes=num_classes, origins=origins,
                shuffle=True, shuffle_buffer=flags.shuffle_buffer, seed=seed, repeat=True,
                input_context=input_context)
            return inputs.training_batches(
                records, input_context.get_per_replica_batch_size(flags.global_batch_size),
                with_teacher_logits=flags.objective == "distill")

        return dataset_fn

    def evaluator(loop, writers, step):
        dataset = run.strategy.distribute_datasets_from_function(
            dev_dataset_function(dev_set, inputs, flags.global_batch_size))
        steps = dev_steps(len(dev_set.texts), flags.global_batch_size, run.replicas)

        def evaluate_dev_set():
            values = evaluate(loop, iter(dataset), steps)
            best.update(int(step.numpy()), values, best_model)
            return values

        return evaluate_dev_set

    def export(run):
        if best.path():
            best_model.read(best.path()).assert_consumed()
        runtime.export_at_end(run, export_student, model, flags.export_dir, record=record)

    return runtime.TrainingParts(
        model=model,
        optimizer=optimizer,
        task=DistillationTask(model, inputs.feature_names, objective=flags.objective,
                              loss=flags.loss, temperature=flags.temperature,
                              alpha=flags.alpha),
        dataset_function=dataset_function,
        config=run_config(model),
        serving_record=record,
        model_settings=model_settings,
        hparams_metrics=HPARAMS_METRICS,
        evaluator=evaluator if dev_set is not None else None,
        export=export,
    )


main = runtime.main_function(__name__, parse_flags, check_paths, run)


if __name__ == "__main__":
    run_main(main)

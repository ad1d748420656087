"""What every training entry point does around its training.

`train_run` is the run skeleton: it starts the run (dtype policy,
strategy, model_dir, seed), lets the entry point build its model, optimizer
and task in the strategy's scope (`TrainingParts`), writes the run's files,
restores the checkpoints, runs the shared loop of `trainer.training_loop`
with the run's logs and evaluation, and exports at the end. An entry point
(`trainer.pretrain`, `trainer.translate`) fills it with what is particular
to its family; `main_function` gives it the common `main`.
"""

import dataclasses
import logging
import os
import sys

import keras
import tensorflow as tf

from tfnlp.command_line import UsageError, verbose_requested
from trainer import distribution, optimization, run_files, summaries
from trainer.checkpoints import Checkpoints, latest_step
from trainer.training_loop import LoopSchedule, TrainingLoop, train

LOGGER = logging.getLogger(__name__)

# The --mixed_precision choices: Keras' "mixed_<dtype>" policies.
MIXED_PRECISION = ("bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class Run:
    """The process's place in a training job.

    Attributes:
        strategy: the `tf.distribute.Strategy`.
        model_dir: the run's directory (`trainer.run_files`).
        chief: whether this process writes the run's files.
        task_id: this worker's index in a multi-worker cluster (0 otherwise).
    """

    strategy: tf.distribute.Strategy
    model_dir: str
    chief: bool
    task_id: int
    default_strategy: bool = True

    @property
    def replicas(self):
        return self.strategy.num_replicas_in_sync


def configure_logging():
    """INFO log lines with time, level and logger on stderr (the trainers'
    command lines). TensorFlow's and absl's own INFO lines (a SavedModel's
    assets written, its inputs renamed) show only with `--verbose`; their
    warnings and errors always do."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose_requested():
        for name in ("tensorflow", "absl"):
            logging.getLogger(name).setLevel(logging.WARNING)


def start_run(model_dir, strategy_name="default", tpu="", mixed_precision=None, seed=0):
    """Starts a run: the global dtype policy (`mixed_precision`:
    "bfloat16", "float16" or None), the strategy of `--strategy`, the
    model_dir, and the Keras seed of the initial weights and dropout."""
    if mixed_precision:
        keras.mixed_precision.set_global_policy(f"mixed_{mixed_precision}")
    strategy = distribution.get_strategy(strategy_name, tpu)
    _, task_id = distribution.task_of(strategy)
    tf.io.gfile.makedirs(model_dir)
    keras.utils.set_random_seed(seed)
    return Run(strategy, model_dir, distribution.is_chief(strategy), task_id,
               default_strategy=(strategy_name == "default"))


def check_global_batch_size(global_batch_size, replicas, accumulation_steps=1):
    """Raises UsageError unless the global batch splits evenly over the
    replicas and, on each, into `accumulation_steps` micro-batches."""
    divisor = replicas * accumulation_steps
    if global_batch_size % divisor:
        accumulation = (f" times --gradient_accumulation_steps ({accumulation_steps}) = "
                        f"{divisor}" if accumulation_steps > 1 else "")
        raise UsageError(
            f"--global_batch_size={global_batch_size} must be divisible by the number of "
            f"replicas ({replicas}){accumulation}."
        )


def export_at_end(run, export, model, export_dir, **options):
    """Exports the trained model at the end of training; returns the path.

    Every worker of a multi-worker cluster must export (saving runs
    collective ops); only the chief writes to `export_dir`, the others to a
    scratch directory in the model_dir.

    Args:
        run: the `Run`.
        export: the function `(model, export_dir, **options) -> path` of the
            model family (`trainer.bert_models.export_trained_model` for BERT).
        model: the trained model.
        export_dir: the base directory of the versioned exports.
        options: passed on to `export`.
    """
    if not run.chief:
        export_dir = run_files.worker_directory(run.model_dir, run_files.WORKER_EXPORT,
                                                run.task_id)
    path = export(model, export_dir, **options)
    if run.chief:
        LOGGER.info("Exported the model to %s.", path)
    return path


def write_run_files(run, config, serving_record, flags):
    """Writes the run's `flags.yaml` (the parsed `flags`), `config.json`
    (`config`, a JSON-serializable dict) and `serving.json` (on the chief
    only)."""
    if run.chief:
        run_files.write_flags(run.model_dir, flags)
        run_files.write_json(os.path.join(run.model_dir, run_files.CONFIG_FILE), config)
        run_files.write_serving_record(run.model_dir, serving_record)


def step_variable():
    """The int64 training step, counted once however many replicas (create
    it in the strategy's scope)."""
    return tf.Variable(0, dtype=tf.int64, trainable=False, name="step",
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def training_state(run, dataset_function, seed, keep, **tracked):
    """The training iterator and the run's `Checkpoints`, restored.

    The iterator of one device is saved in the checkpoints, so a resumed run
    goes on with the next batch. Distributed iterators cannot be saved: a
    resumed distributed run reads the data in a new order instead, seeded
    with the restored step, rather than the first batches again.

    Args:
        run: the `Run`.
        dataset_function: `seed -> (input_context -> tf.data.Dataset)`, for
            `distribute_datasets_from_function`.
        seed: the data seed of `--seed`.
        keep: how many checkpoints to keep.
        tracked: what the checkpoints hold besides the iterator: the model,
            optimizer and `step` (a `step_variable`), built already.

    Returns:
        `(train_iterator, checkpoints, step)`: `step` is the restored step
        (0 when there was no checkpoint).
    """
    saved_iterator = run.replicas == 1 and run.default_strategy
    data_seed = seed if saved_iterator else seed + latest_step(run.model_dir)
    train_iterator = iter(run.strategy.distribute_datasets_from_function(
        dataset_function(data_seed)))
    if saved_iterator:
        tracked["train_iterator"] = train_iterator
    checkpoints = Checkpoints(tf.train.Checkpoint(**tracked), run.model_dir, tracked["step"],
                              keep=keep, chief=run.chief, task_id=run.task_id)
    return train_iterator, checkpoints, checkpoints.restore_latest()


@dataclasses.dataclass
class TrainingParts:
    """What an entry point gives the run skeleton (`train_run`).

    Attributes:
        model: the Keras model, built in the strategy's scope with every
            variable created (so that checkpoints restore into it).
        optimizer: its optimizer, built on the model's variables.
        task: the `trainer.training_loop.TrainingTask` of the model.
        dataset_function: `seed -> (input_context -> tf.data.Dataset)`, the
            training data for `distribute_datasets_from_function`.
        config: the model's config for `config.json` (a JSON dict).
        serving_record: what `trainer.export` needs besides the checkpoints
            (`serving.json`).
        model_settings: the model's settings shown as `model/NAME` in the
            HParams tab (numbers, strings and booleans).
        hparams_metrics: the `(run, scalar name)` pairs the HParams tab
            compares runs by (`trainer.summaries.write_hparams`).
        evaluator: None, or `(loop, writers, step) -> (() -> metrics)`, given
            the `TrainingLoop`, the run's `SummaryWriters` and the step
            variable: the evaluation run at `--eval_every_steps` and at
            the end.
        samples: None, or `(writers, step)`: pictures and sample text
            written every `images_every_steps`.
        images_every_steps: steps between `samples` calls (0: none).
        export: None, or `run -> None`, called on every worker at the end
            when `--export_dir` is given (see `export_at_end`).
        loop_flags: None, or the loop's settings (`loop_schedule`'s flags,
            `--keep_checkpoints`, `--clip_norm`, ...) where the command line
            does not give them as they are (fine-tuning counts epochs);
            None: the flags themselves.
    """

    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    task: object
    dataset_function: object
    config: dict
    serving_record: dict
    model_settings: dict
    hparams_metrics: tuple = ()
    evaluator: object = None
    samples: object = None
    images_every_steps: int = 0
    export: object = None
    loop_flags: object = None


def train_run(flags, build, description):
    """Runs a training job as the flags say; returns the last step's loss.

    Args:
        flags: the parsed flags, with those of `trainer.run_flags`
            (distribution, loop training and output flags, `--model_dir`,
            `--seed`, `--train_steps`, `--export_dir`).
        build: `run -> TrainingParts`, called in the strategy's scope.
        description: what is trained, for the first log line ("BERT
            pretraining").
    """
    run = start_run(flags.model_dir, flags.strategy, flags.tpu, flags.mixed_precision,
                    flags.seed)
    with run.strategy.scope():
        parts = build(run)
        step = step_variable()
    write_run_files(run, parts.config, parts.serving_record, flags)
    LOGGER.info("%s with %s on %d replica(s): %s (%s parameters).", description,
                type(run.strategy).__name__, run.replicas, flags.config,
                f"{parts.model.count_params():,}")
    settings = parts.loop_flags or flags
    train_iterator, checkpoints, current_step = training_state(
        run, parts.dataset_function, flags.seed, settings.keep_checkpoints,
        model=parts.model, optimizer=parts.optimizer, step=step,
    )
    loop = TrainingLoop(
        run.strategy, parts.task, parts.optimizer,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        clip_norm=settings.clip_norm, jit_compile=settings.jit_compile,
    )
    logs = summaries.RunLogs(flags.model_dir, run.chief, settings.profile_steps)
    try:
        logs.writers.hparams(hparams(flags, parts.model_settings, run), parts.hparams_metrics)
        evaluator = parts.evaluator(loop, logs.writers, step) if parts.evaluator else None
        loss = train(loop, train_iterator, checkpoints, logs, loop_schedule(settings, parts),
                     optimization.learning_rate_schedule(parts.optimizer), current_step,
                     evaluator=evaluator, samples=parts.samples)
        # The model ends training with the averaged weights, if any; the
        # checkpoints keep the trained ones (and the averages, in the optimizer).
        optimization.keep_averaged_weights(parts.optimizer)
        if flags.export_dir and parts.export is not None:
            parts.export(run)
    finally:
        logs.close()
        checkpoints.close()
    LOGGER.info("Training finished at step %d.", int(step.numpy()))
    return loss


def loop_schedule(flags, parts):
    """The `LoopSchedule` of the loop flags."""
    return LoopSchedule(
        train_steps=flags.train_steps,
        log_every_steps=flags.log_every_steps,
        checkpoint_every_steps=flags.checkpoint_every_steps,
        eval_every_steps=flags.eval_every_steps,
        stop_time_seconds=flags.stop_time_hours * 3600,
        progress_every_seconds=flags.progress_every_seconds,
        images_every_steps=parts.images_every_steps if parts.samples else 0,
    )


def hparams(flags, model_settings, run):
    """The HParams tab's values: every flag, the model's settings
    (`model/NAME`) and the number of replicas."""
    values = {f"model/{name}": value for name, value in model_settings.items()
              if isinstance(value, (bool, int, float, str))}
    values.update(vars(flags))
    values["replicas"] = run.replicas
    return values


def main_function(module_name, parse_flags, check_paths, run):
    """The `main(argv=None)` of a training entry point: logging set up, the
    flags parsed and their paths checked before `run(flags)`.

    Args:
        module_name: the entry point's `__name__`; `run_main` names the
            program after it ("python -m trainer.pretrain").
        parse_flags, check_paths, run: the entry point's functions.
    """

    def main(argv=None):
        configure_logging()
        flags = parse_flags(argv)
        check_paths(flags)
        return run(flags)

    main.__module__ = module_name
    return main

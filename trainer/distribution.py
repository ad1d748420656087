"""The `tf.distribute` strategy of a training job, chosen by name."""

import json
import os

import tensorflow as tf

from tfnlp.command_line import UsageError

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def get_strategy(name, tpu=None):
    """The `tf.distribute.Strategy` for `--strategy=name`.

    Args:
        name: "default" (`tf.distribute.get_strategy()`: one device, no
            distribution), "mirrored" (`MirroredStrategy` over this
            machine's GPUs, or its logical CPUs when there is no GPU),
            "multi_worker" (`MultiWorkerMirroredStrategy`; the cluster comes
            from the `TF_CONFIG` environment variable) or "tpu"
            (`TPUStrategy` on the TPU at `tpu`).
        tpu: for "tpu", the TPU's name or grpc address (`--tpu`); "" or
            None for a TPU VM's local TPU.

    Raises:
        ValueError: an unknown name, or "multi_worker" without a TF_CONFIG.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = None
        if not tf.config.list_logical_devices("GPU"):
            # MirroredStrategy takes GPUs only by default; without GPUs use
            # every logical CPU (one by default; tests make more).
            devices = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=devices)
    if name == "multi_worker":
        if not os.environ.get("TF_CONFIG"):
            raise UsageError(
                "--strategy=multi_worker needs the cluster in the TF_CONFIG "
                "environment variable, for example TF_CONFIG='{\"cluster\": "
                "{\"worker\": [\"host1:port\", \"host2:port\"]}, \"task\": "
                "{\"type\": \"worker\", \"index\": 0}}', set on every worker."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise UsageError(
        f"Unknown --strategy={name!r}. Choose one of: {', '.join(STRATEGIES)}."
    )


def task_of(strategy):
    """`(task_type, task_id)` of this process; `(None, 0)` outside a cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or isinstance(
        strategy, tf.distribute.TPUStrategy
    ):
        return None, 0
    return resolver.task_type, resolver.task_id or 0


def is_chief(strategy):
    """Whether this process writes the job's files (logs, summaries, exports).

    Every process is the chief except in a multi-worker cluster, where the
    chief is the "chief" task or, without one, worker 0 (the
    `MultiWorkerMirroredStrategy` convention).
    """
    task_type, task_id = task_of(strategy)
    if task_type is None:
        return True
    if task_type == "chief":
        return True
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return task_type == "worker" and task_id == 0 and "chief" not in cluster

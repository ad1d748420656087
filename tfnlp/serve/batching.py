"""Merges concurrent predict requests into batches, like TensorFlow Serving's
`--enable_batching`.

One call on 16 rows costs little more than one call on one row, so requests
that arrive together for the same signature are concatenated along their
leading (batch) dimension, run once, and the outputs split back by rows. A
batch closes when it holds `max_batch_size` rows or `batch_timeout_micros`
after its first request arrived, whichever comes first.

Only requests whose inputs have the same shapes apart from the leading
dimension can be concatenated, so each queue holds one such shape (and one
signature of one version). The request that opens a queue runs its first
batch in its caller's thread, so a lone request costs no hand-over between
threads; the requests still waiting when that batch ends are run by a worker
thread until the queue is empty, which closes it. A request of more than
`max_batch_size` rows is split into batches of `max_batch_size` rows, run
one after the other (the last, smaller one can merge with other requests),
so that no call, and no call's activations, is larger than `max_batch_size`
rows, whatever a client sends. When a merged call fails, or returns an
output that is not one row per input row, the requests of that batch are run
one by one, so that each gets its own answer or its own error.
"""

import collections
import concurrent.futures
import dataclasses
import threading
import time

import numpy as np


@dataclasses.dataclass
class _Request:
    inputs: dict
    rows: int
    future: concurrent.futures.Future = dataclasses.field(
        default_factory=concurrent.futures.Future
    )


class _Queue:
    """The waiting requests for one function and one shape of inputs."""

    def __init__(self, function, lock):
        self.function = function
        self.pending = collections.deque()
        self.arrived = threading.Condition(lock)


class Batcher:
    """Runs functions on dicts of arrays, merging concurrent calls.

    Args:
        max_batch_size: the most rows in one merged call.
        batch_timeout_micros: the longest a request waits for others to
            join its batch, in microseconds.

    Example:

    >>> import numpy as np
    >>> batcher = Batcher(max_batch_size=16, batch_timeout_micros=1000)
    >>> double = lambda inputs: {"y": inputs["x"] * 2}
    >>> batcher.run("double", double, {"x": np.array([1, 2])})
    [(slice(0, 2, None), {'y': array([2, 4])})]
    """

    def __init__(self, max_batch_size=16, batch_timeout_micros=2000):
        self.max_batch_size = max_batch_size
        self.batch_timeout_seconds = batch_timeout_micros / 1e6
        self._lock = threading.Lock()
        self._queues = {}

    def run(self, queue_key, function, inputs):
        """Runs `function` on `inputs` in batches of at most `max_batch_size`
        rows, possibly merged with concurrent calls.

        Args:
            queue_key: a hashable name for `function`, e.g. (version,
                signature name); calls are only merged under the same key.
            function: a callable from a dict of arrays to a dict of arrays
                that accepts any size of the leading dimension.
            inputs: a dict from input name to numpy array.

        Returns:
            A list of `(rows, outputs)`, one per batch in order: `rows` is
            the slice of the leading dimension of `inputs` the batch ran on
            (`slice(None)`, all, when the inputs have no common leading
            dimension) and `outputs` the dict of output arrays of its call.

        Raises:
            Whatever `function` raises.
        """
        rows = leading_size(inputs)
        if rows is None:
            return [(slice(None), function(inputs))]
        results = []
        for start in range(0, rows, self.max_batch_size):
            batch = slice(start, min(start + self.max_batch_size, rows))
            batch_inputs = {name: array[batch] for name, array in inputs.items()}
            results.append((batch, self._run_merged(queue_key, function, batch_inputs)))
        return results

    def _run_merged(self, queue_key, function, inputs):
        """`function(inputs)` for at most `max_batch_size` rows, merged with
        concurrent calls when they fit beside it."""
        rows = leading_size(inputs)
        if rows == self.max_batch_size:
            return function(inputs)
        request = _Request(inputs, rows)
        key = (queue_key, tuple((name, array.shape[1:], array.dtype.str)
                                for name, array in sorted(inputs.items())))
        with self._lock:
            # An open queue has a thread taking batches off it until it closes.
            queue = self._queues.get(key)
            leads = queue is None
            if leads:
                queue = self._queues[key] = _Queue(function, self._lock)
            queue.pending.append(request)
            queue.arrived.notify()
        if leads:
            self._lead(key, queue)
        return request.future.result()

    def _lead(self, key, queue):
        """Runs the first batch of a new queue (its caller's request comes
        first in it) in the caller's thread, then hands the requests left,
        if any, to a worker thread, or closes the queue."""
        try:
            _run_batch(queue.function, self._next_batch(key, queue))
        finally:
            with self._lock:
                left = bool(queue.pending)
                if not left:
                    del self._queues[key]
            if left:
                threading.Thread(target=self._work, args=(key, queue), daemon=True,
                                 name=f"batcher-{key[0]}").start()

    def _work(self, key, queue):
        """Runs the batches of one queue until it is empty."""
        while batch := self._next_batch(key, queue):
            _run_batch(queue.function, batch)

    def _next_batch(self, key, queue):
        """Takes the next batch off `queue`; an empty one ends the worker."""
        with self._lock:
            if not queue.pending:
                del self._queues[key]
                return []
            batch = [queue.pending.popleft()]
            rows = batch[0].rows
            deadline = time.monotonic() + self.batch_timeout_seconds
            while rows < self.max_batch_size:
                if queue.pending:
                    if rows + queue.pending[0].rows > self.max_batch_size:
                        break
                    batch.append(queue.pending.popleft())
                    rows += batch[-1].rows
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                queue.arrived.wait(remaining)
            return batch


def leading_size(inputs):
    """The common leading dimension of a dict of arrays, or None if they
    have none."""
    sizes = {array.shape[0] if array.ndim else None for array in inputs.values()}
    return sizes.pop() if len(sizes) == 1 else None


def _run_batch(function, batch):
    if len(batch) > 1:
        try:
            merged = {name: np.concatenate([request.inputs[name] for request in batch])
                      for name in batch[0].inputs}
            parts = _split_rows(function(merged), [request.rows for request in batch])
        except Exception:  # Re-run one by one: only the bad request fails.
            parts = None
        if parts is not None:
            for request, outputs in zip(batch, parts):
                request.future.set_result(outputs)
            return
    for request in batch:
        try:
            request.future.set_result(function(request.inputs))
        except Exception as error:
            request.future.set_exception(error)


def _split_rows(outputs, sizes):
    """Splits merged outputs by rows, or None if an output is not by rows."""
    total = sum(sizes)
    if any(array.ndim == 0 or array.shape[0] != total for array in outputs.values()):
        return None
    boundaries = np.cumsum(sizes)[:-1]
    split = {name: np.split(array, boundaries) for name, array in outputs.items()}
    return [{name: parts[index] for name, parts in split.items()}
            for index in range(len(sizes))]

import threading
import time

import numpy as np
import pytest

from tfnlp.serve.batching import Batcher


class CountingFunction:
    """Doubles `x`; counts its calls and the rows of each; fails on negative
    values like a model's assertion would."""

    def __init__(self, output_rows=None):
        self.batch_sizes = []
        self._lock = threading.Lock()
        self._output_rows = output_rows

    def __call__(self, inputs):
        with self._lock:
            self.batch_sizes.append(len(inputs["x"]))
        if (inputs["x"] < 0).any():
            raise ValueError("x must be non-negative")
        outputs = {"y": inputs["x"] * 2}
        if self._output_rows == "scalar":
            outputs["total"] = inputs["x"].sum()
        return outputs


def run_once(batcher, queue_key, function, inputs):
    """The outputs of a request that runs as one batch."""
    (_, outputs), = batcher.run(queue_key, function, inputs)
    return outputs


def run_concurrently(batcher, function, values):
    """Runs one single-row request per value from its own thread; returns
    each request's outputs or exception, in order."""
    results = [None] * len(values)
    start = threading.Barrier(len(values))

    def send(index):
        start.wait()
        try:
            results[index] = run_once(batcher, "double", function, {"x": np.array([[values[index]]])})
        except Exception as error:
            results[index] = error

    threads = [threading.Thread(target=send, args=(index,), daemon=True)
               for index in range(len(values))]
    for thread in threads:
        thread.start()
    join_all(threads)
    return results


def join_all(threads, seconds=10):
    """Waits for the threads, `seconds` in all: a request the batcher never
    answers leaves its result None and fails the test, rather than hanging
    it (the threads are daemons, so they do not keep the process alive)."""
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


def test_concurrent_requests_are_merged_and_split_back():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=200_000)
    results = run_concurrently(batcher, function, list(range(16)))
    assert [result["y"].tolist() for result in results] == [[[2 * value]] for value in range(16)]
    assert len(function.batch_sizes) < 16
    assert max(function.batch_sizes) > 1
    assert sum(function.batch_sizes) == 16


def test_batches_hold_at_most_max_batch_size_rows():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=4, batch_timeout_micros=200_000)
    results = run_concurrently(batcher, function, list(range(12)))
    assert [result["y"].item() for result in results] == [2 * value for value in range(12)]
    assert max(function.batch_sizes) <= 4


def test_an_error_in_a_merged_batch_fails_only_its_request():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=200_000)
    results = run_concurrently(batcher, function, [1, 2, -3, 4])
    assert isinstance(results[2], ValueError)
    assert [results[index]["y"].item() for index in (0, 1, 3)] == [2, 4, 8]


def test_outputs_not_by_rows_fall_back_to_one_call_per_request():
    function = CountingFunction(output_rows="scalar")
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=200_000)
    results = run_concurrently(batcher, function, [1, 2, 3])
    assert [result["total"].item() for result in results] == [1, 2, 3]
    assert function.batch_sizes.count(1) == 3


def send_together(batcher, function, inputs_per_request):
    """Sends each request from its own thread at the same moment; returns
    the results in order."""
    results = [None] * len(inputs_per_request)
    start = threading.Barrier(len(inputs_per_request))

    def send(index):
        start.wait()
        results[index] = run_once(batcher, "double", function, inputs_per_request[index])

    threads = [threading.Thread(target=send, args=(index,), daemon=True)
               for index in range(len(inputs_per_request))]
    for thread in threads:
        thread.start()
    join_all(threads)
    return results


class MeetingFunction(CountingFunction):
    """Doubles `x`, but each call first waits until `parties` calls are
    running at the same time: only requests in separate queues (separate
    worker threads) can meet; requests of one queue run one after the other
    and time out."""

    def __init__(self, parties):
        super().__init__()
        self._meeting = threading.Barrier(parties, timeout=5)

    def __call__(self, inputs):
        self._meeting.wait()
        return super().__call__(inputs)


def test_requests_of_different_shapes_are_not_merged():
    # Merging a (1, 1) and a (1, 2) request fails to concatenate, and the
    # fallback then runs them one by one, so equal outputs alone would not
    # show whether they were queued together: each call waits for the other.
    function = MeetingFunction(parties=2)
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=100_000)
    results = send_together(batcher, function, [{"x": np.ones((1, 1))}, {"x": np.ones((1, 2))}])
    assert [result["y"].shape for result in results] == [(1, 1), (1, 2)]
    assert function.batch_sizes == [1, 1]


def test_requests_of_different_dtypes_are_not_merged():
    # Concatenating int32 with float32 would give float64 to both.
    function = MeetingFunction(parties=2)
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=100_000)
    results = send_together(batcher, function, [
        {"x": np.array([[3]], np.int32)}, {"x": np.array([[1.5]], np.float32)}])
    assert [result["y"].dtype for result in results] == [np.int32, np.float32]
    assert [result["y"].item() for result in results] == [6, 3.0]
    assert function.batch_sizes == [1, 1]


def test_requests_of_the_same_shape_and_dtype_share_a_queue():
    # The counterpart of the two tests above: same key, one merged call.
    function = CountingFunction()
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=300_000)
    results = send_together(batcher, function, [
        {"x": np.array([[3]], np.int32)}, {"x": np.array([[4]], np.int32)}])
    assert [result["y"].dtype for result in results] == [np.int32, np.int32]
    assert function.batch_sizes == [2]


def test_a_request_over_max_batch_size_runs_in_batches_of_max_batch_size():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=2, batch_timeout_micros=0)
    results = batcher.run("double", function, {"x": np.arange(5)})
    assert [(rows, outputs["y"].tolist()) for rows, outputs in results] == [
        (slice(0, 2), [0, 2]), (slice(2, 4), [4, 6]), (slice(4, 5), [8])]
    assert function.batch_sizes == [2, 2, 1]


@pytest.mark.parametrize("rows, batch_sizes", [(3, [3]), (4, [4]), (5, [4, 1])],
                         ids=["3_rows", "4_rows", "5_rows"])
def test_a_request_of_max_batch_size_rows_runs_as_one_batch_and_one_row_more_as_two(
        rows, batch_sizes):
    function = CountingFunction()
    batcher = Batcher(max_batch_size=4, batch_timeout_micros=0)
    results = batcher.run("double", function, {"x": np.arange(rows)})
    assert function.batch_sizes == batch_sizes
    assert [outputs["y"].tolist() for _, outputs in results] == [
        [2 * value for value in range(start, start + size)]
        for start, size in zip(np.cumsum([0] + batch_sizes[:-1]), batch_sizes)]


def test_an_error_in_any_batch_of_a_request_reaches_the_caller():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=2, batch_timeout_micros=0)
    with pytest.raises(ValueError, match="non-negative"):
        batcher.run("double", function, {"x": np.array([1, 2, -3])})
    with pytest.raises(ValueError, match="non-negative"):
        run_once(batcher, "double", function, {"x": np.array([-1])})


class RecordingFunction:
    """Records the shapes of the inputs of each call and returns `outputs(inputs)`."""

    def __init__(self, outputs):
        self.calls = []
        self._lock = threading.Lock()
        self._outputs = outputs

    def __call__(self, inputs):
        with self._lock:
            self.calls.append({name: array.shape for name, array in sorted(inputs.items())})
        return self._outputs(inputs)


def send_one_after_another(batcher, function, inputs_per_request, gap_seconds=0.1):
    """Sends each request from its own thread, `gap_seconds` after the one
    before, so they join the queue in order; returns the results in order
    (None for a request still unanswered after 10 seconds)."""
    results = [None] * len(inputs_per_request)

    def send(index):
        results[index] = run_once(batcher, "ordered", function, inputs_per_request[index])

    threads = []
    for index in range(len(inputs_per_request)):
        threads.append(threading.Thread(target=send, args=(index,), daemon=True))
        threads[-1].start()
        time.sleep(gap_seconds)
    join_all(threads)
    return results


def test_inputs_without_a_common_leading_dimension_run_alone_and_unmerged():
    # A scalar input has no leading dimension, and inputs of 1 and 2 rows
    # have no common one: such requests cannot be split back by rows.
    function = RecordingFunction(lambda inputs: {"y": inputs["a"] * 2})
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=300_000)
    assert run_once(batcher, "scalar", function, {"a": np.array(4)})["y"].item() == 8
    uneven = {"a": np.array([1]), "b": np.array([1, 2])}
    results = send_together(batcher, function, [uneven, uneven])
    assert [result["y"].tolist() for result in results] == [[2], [2]]
    assert function.calls == [{"a": ()}] + [{"a": (1,), "b": (2,)}] * 2


def test_a_request_of_max_batch_size_rows_runs_at_once_beside_a_running_batch():
    # Each call waits until another is running: the two-row request is not
    # queued behind the one-row request's batch (same queue key), it runs
    # in its caller's thread at the same time.
    function = MeetingFunction(parties=2)
    batcher = Batcher(max_batch_size=2, batch_timeout_micros=0)
    results = send_together(batcher, function, [{"x": np.ones((1, 1))}, {"x": np.ones((2, 1))}])
    assert [result["y"].tolist() for result in results] == [[[2.0]], [[2.0], [2.0]]]
    assert sorted(function.batch_sizes) == [1, 2]


def test_a_lone_request_is_run_once_even_when_its_output_is_not_by_rows():
    function = CountingFunction(output_rows="scalar")
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=0)
    assert run_once(batcher, "double", function, {"x": np.array([[5]])})["total"].item() == 5
    with pytest.raises(ValueError, match="non-negative"):
        run_once(batcher, "double", function, {"x": np.array([[-5]])})
    assert function.batch_sizes == [1, 1]


def test_one_dimensional_outputs_are_split_by_rows():
    # Two rows fill the batch, so it runs as soon as both have arrived.
    function = CountingFunction()
    batcher = Batcher(max_batch_size=2, batch_timeout_micros=1_000_000)
    results = send_together(batcher, function, [{"x": np.array([3])}, {"x": np.array([4])}])
    assert [result["y"].tolist() for result in results] == [[6], [8]]
    assert function.batch_sizes == [2]


def test_an_output_with_other_rows_than_the_batch_falls_back_to_one_call_per_request():
    # "first" has one row whatever the batch: it cannot be split by rows, so
    # each request is run again alone and gets its own first row.
    function = RecordingFunction(lambda inputs: {"first": inputs["x"][:1]})
    batcher = Batcher(max_batch_size=2, batch_timeout_micros=1_000_000)
    results = send_together(batcher, function, [{"x": np.array([[3]])}, {"x": np.array([[4]])}])
    assert sorted(result["first"].tolist() for result in results) == [[[3]], [[4]]]
    assert sorted(call["x"] for call in function.calls) == [(1, 1), (1, 1), (2, 1)]


def test_a_batch_closes_as_soon_as_it_holds_max_batch_size_rows():
    # Rows 1, 1 and 2 fill a batch of 4 exactly: it runs at once, long
    # before the 5-second timeout, as one call.
    function = CountingFunction()
    batcher = Batcher(max_batch_size=4, batch_timeout_micros=5_000_000)
    start = time.monotonic()
    results = send_one_after_another(batcher, function, [
        {"x": np.array([[1]])}, {"x": np.array([[2]])}, {"x": np.array([[3], [4]])}])
    assert time.monotonic() - start < 2
    assert [result["y"].tolist() for result in results] == [[[2]], [[4]], [[6], [8]]]
    assert function.batch_sizes == [4]


def test_a_request_that_would_overflow_the_batch_waits_for_the_next_one():
    function = CountingFunction()
    batcher = Batcher(max_batch_size=4, batch_timeout_micros=300_000)
    results = send_one_after_another(batcher, function, [
        {"x": np.array([[1], [2], [3]])}, {"x": np.array([[4], [5]])}])
    assert [result["y"].tolist() for result in results] == [[[2], [4], [6]], [[8], [10]]]
    assert sorted(function.batch_sizes) == [2, 3]


def test_a_queue_that_emptied_serves_later_requests():
    # The worker of a queue ends when the queue is empty; a later request
    # of the same key gets a new queue and worker.
    function = CountingFunction()
    batcher = Batcher(max_batch_size=16, batch_timeout_micros=0)
    first = send_one_after_another(batcher, function, [{"x": np.array([[1]])}], gap_seconds=0.2)
    second = send_one_after_another(batcher, function, [{"x": np.array([[2]])}])
    assert [result["y"].item() for result in first + second] == [2, 4]


def test_a_lone_request_runs_in_its_callers_thread():
    # No hand-over to a worker thread and back: a batch-1 request's latency
    # is its call's.
    threads = []

    def record_thread(inputs):
        threads.append(threading.current_thread())
        return {"y": inputs["x"]}

    batcher = Batcher(max_batch_size=16, batch_timeout_micros=0)
    for value in (1, 2):
        assert run_once(batcher, "same", record_thread, {"x": np.array([[value]])})["y"].item() == value
    assert threads == [threading.current_thread()] * 2


def test_the_batch_timeout_is_given_in_microseconds():
    assert Batcher(batch_timeout_micros=250_000).batch_timeout_seconds == 0.25

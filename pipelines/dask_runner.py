"""Beam's Dask runner, with what it leaves out for a multi-output job.

`--runner=dask` runs a job on a dask.distributed cluster
(`--dask_client_address=tcp://HOST:PORT`; without it, a local cluster in
this process). Written because Beam 2.77's `DaskRunner` keys each Dask bag
by the transform that made it, not by its output (a `with_outputs`
consumer gets every tag's elements), collects a bundle's outputs before
`finish_bundle` runs (what it emits is lost), computes only the last
transform's bag (every other sink never runs) and computes a side input
inside each task that reads it (which fails once a DoFn holds TensorFlow
objects). `DaskRunner` here keys the bags by PCollection, keeps what
`finish_bundle` emits, computes side inputs first on the cluster (keeping
the outputs of the ParDo they come from, which the rest of the pipeline
reuses) and then every bag that no transform reads, and splits a
`Reshuffle`'s input into partitions for every worker thread. It reports
no metrics, as Beam's.
"""

import logging

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.pipeline import PipelineVisitor
from apache_beam.runners.common import (
    DoFnContext,
    DoFnInvoker,
    DoFnSignature,
    Receiver,
    _OutputHandler,
)
from apache_beam.runners.dask import dask_runner, overrides, transform_evaluator
from apache_beam.runners.runner import PipelineState
from apache_beam.transforms.core import DoFn


# Elements of a `beam.Create` per Dask partition when no --dask_npartitions
# or --dask_partition_size is given (Beam's default).
CREATE_PARTITION_SIZE = 128


class _TaggedReceiver(Receiver):
    """Receives a DoFn's outputs of one tag (None: the main output) as
    `(tag, value)` pairs."""

    def __init__(self, tag, outputs):
        self.tag = tag
        self.outputs = outputs

    def receive(self, windowed_value):
        self.outputs.append((self.tag, windowed_value.value))


class _Receivers(dict):
    """A receiver for each tag, made on first use, all into `outputs`."""

    def __init__(self):
        super().__init__()
        self.outputs = []

    def __missing__(self, tag):
        self[tag] = _TaggedReceiver(tag, self.outputs)
        return self[tag]


def _run_bundle(items, transform, window_fn, side_inputs):
    """A ParDo over one Dask partition as one bundle: its `(tag, value)`
    outputs, those of `finish_bundle` included."""
    receivers = _Receivers()
    args, kwargs = transform.raw_side_inputs
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(transform.fn),
        _OutputHandler(window_fn=window_fn, main_receivers=receivers[None],
                       tagged_receivers=receivers, per_element_output_counter=None,
                       output_batch_converter=None, process_yields_batches=False,
                       process_batch_yields_elements=False),
        context=DoFnContext(transform.label, state=None), side_inputs=side_inputs,
        input_args=list(args), input_kwargs=kwargs, user_state_context=None,
        bundle_finalizer_param=DoFn.BundleFinalizerParam())
    invoker.invoke_setup()
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(transform_evaluator.get_windowed_value(item, window_fn))
    invoker.invoke_finish_bundle()
    invoker.invoke_teardown()
    return receivers.outputs


class _ValuesOf:
    """Keeps the values of `tag` from a partition of `(tag, value)` pairs."""

    def __init__(self, tag):
        self.tag = tag

    def __call__(self, pairs):
        return [value for tag, value in pairs if tag == self.tag]


class DaskRunner(dask_runner.DaskRunner):
    """Beam's `DaskRunner`, each PCollection its own bag and every sink run.

    Args: none; the pipeline's `DaskOptions` (`--dask_client_address`,
    `--dask_npartitions`, ...) configure the client as for Beam's runner.

    Example:

    >>> issubclass(DaskRunner, beam.runners.PipelineRunner)
    True

    References:
        - [Beam's Dask runner](https://beam.apache.org/releases/pydoc/current/
          apache_beam.runners.dask.dask_runner.html)
    """

    def run_pipeline(self, pipeline, options):
        import dask.distributed

        # A local cluster's scheduler and workers log every start and stop.
        logging.getLogger("distributed").setLevel(logging.WARNING)
        dask_options = options.view_as(dask_runner.DaskOptions).get_all_options(
            drop_default=True, current_only=True)
        bag_kwargs = dask_runner.DaskOptions._extract_bag_kwargs(dask_options)
        if not bag_kwargs:  # Beam's default, without its warning at every Create.
            bag_kwargs = {"partition_size": CREATE_PARTITION_SIZE}
        client = dask.distributed.Client(**dask_options)
        pipeline.replace_all(overrides.dask_overrides())
        origins = _SideInputOrigins()
        pipeline.visit(origins)
        visitor = _BagsByCollection(client, bag_kwargs, origins.par_dos)
        pipeline.visit(visitor)
        futures = client.compute(visitor.unread_bags())
        return _Result(client, futures)


class _Result(dask_runner.DaskRunnerResult):
    """Beam's result of a Dask run, whose client is closed once the run ends
    (left open, it tries to reconnect to a cluster that has stopped)."""

    def wait_until_finish(self, duration=None):
        try:
            return super().wait_until_finish(duration)
        finally:
            if self.state in (PipelineState.DONE, PipelineState.FAILED):
                self.client.close()


class _SideInputOrigins(PipelineVisitor):
    """Finds the ParDos of several outputs that side inputs come from (the
    nearest upstream of each; a job's counts are such a second output).
    Their outputs are persisted when computed for the side input, so that
    the rest of the pipeline reuses them rather than run the ParDo again
    for its other outputs."""

    def __init__(self):
        self.origins = {}
        self.par_dos = set()

    def visit_transform(self, transform_node):
        for side_input in transform_node.side_inputs:
            if self.origins.get(side_input.pvalue) is not None:
                self.par_dos.add(self.origins[side_input.pvalue])
        origin = next((self.origins[value] for value in transform_node.inputs
                       if self.origins.get(value) is not None), None)
        outputs = transform_node.outputs
        if type(transform_node.transform) is beam.ParDo and len(outputs) > 1:
            origin = transform_node
        for collection in outputs.values():
            self.origins[collection] = origin


class _BagsByCollection(PipelineVisitor):
    """Translates each primitive transform into Dask bags, one per output
    PCollection."""

    def __init__(self, client, bag_kwargs, persisted_par_dos):
        self.client = client
        self.bag_kwargs = bag_kwargs
        self.persisted_par_dos = persisted_par_dos
        self.bags = {}
        self.read = set()

    def visit_transform(self, transform_node):
        side_inputs = [self._side_input(side_input) for side_input in transform_node.side_inputs]
        inputs = [self.bags.get(value) for value in transform_node.inputs
                  if not isinstance(value, pvalue.PBegin)]
        self.read.update(value for value in transform_node.inputs
                         if not isinstance(value, pvalue.PBegin))
        outputs = transform_node.outputs
        transform = transform_node.transform
        if type(transform) is beam.ParDo:  # Not its subclasses: Beam's runner passes them.
            pairs = self._par_do(transform_node, inputs[0], side_inputs)
            if transform_node in self.persisted_par_dos:
                pairs = self.client.persist(pairs)
            for tag, collection in outputs.items():
                self.bags[collection] = pairs.map_partitions(_ValuesOf(tag))
            return
        if isinstance(transform, overrides._Reshuffle):
            bag = self._reshuffle(inputs[0])
            for collection in outputs.values():
                self.bags[collection] = bag
            return
        op_class = transform_evaluator.TRANSLATIONS.get(type(transform),
                                                        transform_evaluator.NoOp)
        op = op_class(transform_node, bag_kwargs=self.bag_kwargs)
        if op_class is transform_evaluator.Flatten:
            bag = op.apply(inputs)
        else:
            bag = op.apply(inputs[0] if inputs else None, side_inputs or None)
        for collection in outputs.values():
            self.bags[collection] = bag

    def _reshuffle(self, bag):
        """`Reshuffle` spreads its input over every worker thread (twice as
        many partitions), where Beam's runner passes it on unchanged: a job
        that reads one file would otherwise run on one worker."""
        threads = sum(self.client.nthreads().values())
        return bag.repartition(npartitions=max(bag.npartitions, 2 * threads))

    def _side_input(self, side_input):
        """The side input's values, computed on the cluster now: a task
        cannot compute a bag itself (its graph holds DoFns set up on a
        worker). Its bag is persisted, so the rest of the pipeline reuses
        what was computed."""
        collection = side_input.pvalue
        self.read.add(collection)
        self.bags[collection] = self.client.persist(self.bags[collection])
        values = self.client.compute(self.bags[collection]).result()
        window_fn = side_input._window_mapping_fn
        return transform_evaluator.SideInputMap(
            type(side_input), side_input._view_options(),
            [transform_evaluator.get_windowed_value(value, window_fn) for value in values])

    @staticmethod
    def _par_do(transform_node, input_bag, side_inputs):
        main_input = next(iter(transform_node.main_inputs.values()))
        window_fn = getattr(getattr(main_input, "windowing", None), "windowfn", None)
        return input_bag.map_partitions(_run_bundle, transform_node.transform, window_fn,
                                        side_inputs or None)

    def unread_bags(self):
        """The bags no transform reads: the pipeline's sinks and ends."""
        return [bag for collection, bag in self.bags.items()
                if collection not in self.read and bag is not None]


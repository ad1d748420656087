"""What the job tests share: a local Dask cluster."""

import pytest


@pytest.fixture(scope="module")
def dask_scheduler():
    """The address of a local dask.distributed cluster, a scheduler and two
    single-threaded worker processes on 127.0.0.1, closed after the module
    (idle workers still take CPU from the tests that follow). The workers'
    profiler, which samples every 10 ms, is off."""
    import dask
    import distributed  # Only the tests that run a job on Dask pay for it.

    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def dask_arguments(address):
    """A job's Beam options for the cluster at `address`."""
    return ["--runner=dask", f"--dask_client_address={address}"]

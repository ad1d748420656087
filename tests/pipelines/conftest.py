"""What the job tests share: a local Dask cluster."""

import pytest


@pytest.fixture(scope="session")
def dask_scheduler():
    """The address of a local dask.distributed cluster, a scheduler and two
    single-threaded worker processes on 127.0.0.1, closed at the end."""
    import distributed  # Only the tests that run a job on Dask pay for it.

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def dask_arguments(address):
    """A job's Beam options for the cluster at `address`."""
    return ["--runner=dask", f"--dask_client_address={address}"]

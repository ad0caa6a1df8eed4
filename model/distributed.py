"""A sweep's runs on a Dask cluster (issue 29): `score --cluster ADDRESS` (or "local:N").

A sweep's (scheduler, W) runs are independent: when a fleet's month of binlogs outgrows one
machine, they go to the workers of a Dask distributed cluster instead of the local process pool
(which stays the default: `scoring.fork_map`). The results are the same, in the same order
(tests/test_distributed.py: a local two-worker cluster gives the same bytes as the local pool).

Why Dask distributed and not Ray (chosen for this job, both looked at): its wheels are pure
Python (tornado, msgpack, cloudpickle, psutil), a few MB that `make setup` installs in seconds
on a fresh machine, where Ray is a ~70 MB binary wheel with its own object store and raylet
daemons; a sweep is a map of a few hundred coarse tasks over one shared input, which is exactly
`Client.scatter` (the trace sent once to every worker) plus `Client.map`; and a `LocalCluster`
of worker processes runs the same code path in the tests as a real cluster does.

A lost worker: the scheduler notices its death and runs its tasks again on another worker
(up to `distributed.scheduler.allowed-failures` times, 3 by default, before the sweep fails with
`KilledWorker` naming the task, said in one line); a task that raised is retried `RETRIES`
times. The shared input (the trace, scattered to every worker) has no recipe to recompute it:
when every worker holding it dies (a remote cluster's only worker at the time, or all of them),
it is scattered again and the runs not yet done are submitted again, `RESCATTERS` times at
most before a one-line error. Nothing is silently dropped: every run's result is waited for,
in order.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

RETRIES = 2
# times the shared input is scattered again after the workers holding it all died
RESCATTERS = 3
RESCATTER_WAIT_S = 60


class ClusterError(RuntimeError):
    pass


def _client(address: str):
    """A client of the cluster at `address`, or of a new local cluster for "local:N" (N
    worker processes, one thread each), with what to close afterwards."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError("--cluster needs Dask distributed (pip install distributed; "
                           "`make setup` installs it)") from None
    if address.startswith("local:"):
        try:
            n = int(address.split(":", 1)[1])
        except ValueError:
            n = 0
        if n < 1:
            raise ClusterError(f"--cluster {address}: give local:N with N a positive integer")
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        # every worker up before the shared input is scattered: a broadcast reaches only the
        # workers registered by then, and a worker holding the only copy takes it with it
        # when it dies ("lose scattered data, which can't be recovered": the sweep failed so)
        try:
            client.wait_for_workers(n, timeout=120)
        except TimeoutError:
            client.close()
            cluster.close()
            raise ClusterError(f"--cluster {address}: its {n} workers did not start within "
                               "120 s") from None
        return client, (cluster,)
    try:
        return Client(address, timeout="10s"), ()
    except (OSError, TimeoutError) as e:
        raise ClusterError(f"--cluster {address}: cannot reach the scheduler ({e})") from None


def cluster_map(fn: Callable, items: Sequence, address: str, *, shared: tuple = (),
                tick: Callable[[], None] | None = None) -> Iterator:
    """fn(item, *shared) for each item, in order, on the cluster's workers: `shared` is sent
    once to every worker (scattered), each item is a task. Yields each result once it and the
    ones before it are done; `tick()` about once a second while waiting.

    Scattered data has no recipe: when every worker holding it dies, the scheduler forgets it
    and cancels the tasks that need it. Then `shared` is scattered again to the workers there
    are and the items not yet yielded are submitted again, at most `RESCATTERS` times before
    the sweep fails with one line (ClusterError); a task that kills its worker every time ends
    as Dask's KilledWorker, also one line."""
    items = list(items)
    if not items:
        return
    client, owned = _client(address)
    try:
        yield from _results(client, fn, items, shared, tick, address)
    finally:
        client.close()
        for c in owned:
            c.close()


def _results(client, fn, items: list, shared: tuple, tick, address: str) -> Iterator:
    from distributed import TimeoutError as DaskTimeout
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker
    from .progress import TICK_SECONDS
    done, rescattered = 0, 0
    futures = _submit(client, fn, items, shared)
    while done < len(items):
        try:
            value = futures[done].result(timeout=TICK_SECONDS)
        except (DaskTimeout, TimeoutError):
            if tick is not None:
                tick()
            continue
        except FutureCancelledError as e:
            # the shared input was lost with the workers that held it (or the task was
            # cancelled with it): scatter it again, submit what is left again
            if rescattered == RESCATTERS:
                raise ClusterError(
                    f"--cluster {address}: the workers holding the sweep's shared input died "
                    f"{rescattered + 1} times; gave up after sending it {rescattered} more "
                    f"time{'s' if rescattered != 1 else ''} ({_one_line(e)})") from None
            rescattered += 1
            _wait_for_a_worker(client, address)
            futures = [None] * done + _submit(client, fn, items[done:], shared)
            continue
        except KilledWorker as e:
            raise ClusterError(f"--cluster {address}: a run killed every worker it was given "
                               f"({_one_line(e)})") from None
        futures[done] = None            # its result is yielded: not held for the resubmission
        done += 1
        yield value


def _submit(client, fn, items: list, shared: tuple) -> list:
    handles = client.scatter(list(shared), broadcast=True) if shared else []
    return client.map(fn, items, *[[h] * len(items) for h in handles], retries=RETRIES,
                      pure=False)


def _wait_for_a_worker(client, address: str) -> None:
    """At least one worker to scatter to (a lost one's nanny restarts it in a second or two)."""
    try:
        client.wait_for_workers(1, timeout=RESCATTER_WAIT_S)
    except TimeoutError:
        raise ClusterError(f"--cluster {address}: no worker left to send the sweep's input to "
                           f"(waited {RESCATTER_WAIT_S} s)") from None


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__

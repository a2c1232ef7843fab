"""Where the tasks run: the local machine's cores (:func:`run_local`, the default, no Ray needed) or
a Ray cluster (:func:`run_ray`, ``--engine ray``; ``pip install rbd_estimator[fleet]``).

Both run :func:`rbd_estimator.fleet.tasks.run_task` once per recording, in parallel processes, and
hand each task's summary row to ``on_row`` as it arrives. A task's own failures (an unreadable
recording) come back as rows with ``status: failed``; a *worker* that dies (killed, out of memory,
a crash in compiled code) has its task run again, up to ``max_retries`` times, then reported as
failed.
"""
from __future__ import annotations

import os

from .tasks import failed_row, partials, run_task


def _died(task, why: str) -> dict:
    return failed_row(task.name, task.input, task.robot, f"worker died: {why}")


def run_local(tasks, on_row, workers: int | None = None, max_retries: int = 3) -> None:
    """The tasks on ``workers`` processes of this machine (default: one per core), with
    :class:`concurrent.futures.ProcessPoolExecutor`. A worker that dies breaks the pool
    (``BrokenProcessPool`` for every task not finished). The tasks that had started replaying in that
    pool (a new temporary folder left, :func:`~rbd_estimator.fleet.tasks.partials`) are suspects, charged an
    attempt, and run again one at a time, so that the culprit alone is charged from then on; the
    others go to a new pool."""
    workers = workers or os.cpu_count() or 1
    crashes = {t: 0 for t in tasks}
    left = list(tasks)
    while left:
        suspects = [t for t in left if crashes[t]]
        group = suspects or left
        before = {t: set(partials(t)) for t in group}
        broken = _pool(group, 1 if suspects else workers, on_row)
        for t in [t for t in broken if set(partials(t)) - before[t]] or broken:     # started in this pool
            crashes[t] += 1
        failed = [t for t in broken if crashes[t] > max_retries]
        for t in failed:
            on_row(_died(t, f"the worker process died in each of its {crashes[t]} attempts"))
        finished = set(group).difference(broken).union(failed)
        left = [t for t in left if t not in finished]


def _pool(tasks, workers: int, on_row) -> list:
    """Run ``tasks`` on a new pool of ``workers`` processes; the tasks it could not finish (broken)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    broken = []
    ctx = mp.get_context("spawn")               # a fresh interpreter: no thread or lock state forked
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
        futures = {pool.submit(run_task, t): t for t in tasks}
        for f in as_completed(futures):
            try:
                on_row(f.result())
            except BrokenProcessPool:
                broken.append(futures[f])
    return broken


def run_ray(tasks, on_row, address: str | None = None, max_retries: int = 3, num_cpus: int | None = None) -> None:
    """The tasks as Ray tasks (one CPU each) on the cluster at ``address`` (``ray start --head``
    prints it; ``auto``: the one this machine belongs to), or on a local Ray started here (``num_cpus``:
    default all cores). A Ray session already started in this process (``ray.init``) is used as is.
    Ray runs a task again when its worker dies (``max_retries``); the dashboard
    (``ray[default]``) shows the tasks, their workers and logs."""
    try:
        import ray
    except ImportError:
        raise ImportError("--engine ray needs Ray: pip install 'rbd_estimator[fleet]' (or 'ray[default]' for "
                          "the dashboard)") from None
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=None if address else num_cpus, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(run_task)
    pending = {remote.remote(t): t for t in tasks}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            t = pending.pop(ref)
            try:
                on_row(ray.get(ref))
            except ray.exceptions.RayError as exc:       # retries exhausted (or Ray itself failed)
                on_row(_died(t, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))


ENGINES = {"local": run_local, "ray": run_ray}

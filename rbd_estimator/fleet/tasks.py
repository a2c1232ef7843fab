"""One task per recording (the estimator is stateful along a recording: a recording is never split).

:func:`run_task` replays one recording with :func:`rbd_estimator.replay.replay_bag`, exactly as
``rbd-estimator replay`` does, into ``<output>/<recording>/``:

* ``estimates/``: the estimate bag (rosbag2, MCAP or sqlite3), as ``replay`` writes it;
* ``ticks.parquet``: one row per tick (:mod:`rbd_estimator.fleet.tables`);
* ``_COMPLETE.json``: the completion marker, written last: the recording's summary row.

Both outputs are written under a temporary name in ``<output>/.partial/`` and renamed into place
(one ``rename`` of the folder) once flushed and closed; the marker follows, written to a temporary
name and renamed too. So a worker killed at any point leaves either no output at ``<output>/<recording>``
or outputs without a marker, which the next attempt removes, with the leftovers in ``.partial``;
a recording with a marker is skipped. A recording that cannot be replayed at all (unreadable,
missing, wrong parameters) is reported with its reason and gets no output (a rerun tries again); a
truncated or corrupt recording is replayed up to the damage, like ``replay``: its outputs hold that
part, the marker says ``status: partial`` and why.

A worker process plans the estimator once per robot description and parameters (:func:`plans`, the
last few kept) and gives every later recording of that robot the estimator exactly as planned (its
per-tick data and warm starts restored; everything else of a replay is made anew per recording):
the outputs are those of a replay in a fresh process, bit for bit (test/test_fleet_plans.py).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from dataclasses import dataclass

MARKER = "_COMPLETE.json"
PARTIAL = ".partial"
#: test hook: ``<substring>:<file>``: the worker replaying a recording whose name contains
#: ``substring`` kills itself (SIGKILL) in the middle of the replay, once (while ``file`` does not
#: exist; every time with no file)
CRASH_ENV = "RBD_ESTIMATOR_FLEET_CRASH_ONCE"


#: the robot descriptions and parameter sets whose estimator a worker process keeps (its latest ones)
PLANS_KEPT = 4
_plans = []


def plans():
    """This worker process's :class:`~rbd_estimator.runtime.plans.PlanCache` (made on first use)."""
    if not _plans:
        from ..runtime.plans import PlanCache
        _plans.append(PlanCache(PLANS_KEPT))
    return _plans[0]


@dataclass(frozen=True)
class Task:
    """A recording to replay: ``input`` (a rosbag2 folder), ``name`` (its output folder under
    ``output``), the ``robot`` it belongs to and that robot's parameter file (and URDF, else the
    parameters' or the recording's), and the replay's options."""
    input: str
    name: str
    output: str
    robot: str
    params: str
    robot_description: str | None = None
    copy_inputs: bool = False
    compress: bool = True
    storage: str | None = None
    namespace: str = "/"
    node_name: str = "rbd_estimator"
    run: str = ""                      # the fleet run's id: a marker of this run is a retry's, not a skip


    @property
    def folder(self) -> str:
        return os.path.join(self.output, self.name)


def done(task: Task) -> dict | None:
    """The marker's row when the recording's outputs are complete, else None."""
    try:
        with open(os.path.join(task.folder, MARKER), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def run_task(task: Task) -> dict:
    """Replay ``task`` (module docstring); returns its summary row (``status``: ``done``, ``partial``,
    ``skipped`` (done before) or ``failed``, with the ``reason``)."""
    row = done(task)
    if row is not None and row.get("run") == task.run:     # completed by an earlier attempt of this run
        return row
    if row is not None:
        return dict(row, status="skipped", previous_status=row["status"])
    t0 = time.perf_counter()
    stale = _clean(task)
    tmp = os.path.join(task.output, PARTIAL, f"{task.name.replace(os.sep, '__')}.{uuid.uuid4().hex}")
    os.makedirs(tmp)
    try:
        row = _replay(task, tmp)
    except Exception as exc:  # noqa: BLE001 - any failure is this recording's: report it, the fleet goes on
        shutil.rmtree(tmp, ignore_errors=True)
        return failed_row(task.name, task.input, task.robot or "default", f"{type(exc).__name__}: {exc}",
                          model="", attempts=1 + stale, wall_s=time.perf_counter() - t0)
    row.update(attempts=1 + stale, wall_s=time.perf_counter() - t0, run=task.run)
    os.makedirs(os.path.dirname(task.folder) or ".", exist_ok=True)
    os.rename(tmp, task.folder)                                   # the outputs, in place at once
    _write_marker(task.folder, row)                               # then the marker, last
    return row


def _replay(task: Task, tmp: str) -> dict:
    """Replay into ``tmp`` (bag and table, closed and flushed); the summary row."""
    from ..replay import ReplayError, load_config, replay_bag
    from .tables import TickTable

    table = TickTable(os.path.join(tmp, "ticks.parquet"), dict(recording=task.name, robot=task.robot,
                                                               input=os.path.abspath(task.input)))
    xml = None
    if task.robot_description:
        with open(task.robot_description, encoding="utf-8") as fh:
            xml = fh.read()
    if not os.path.exists(task.input):
        raise ReplayError(f"recording '{task.input}' does not exist (any more)")
    summary, rep = replay_bag(task.input, os.path.join(tmp, "estimates"), load_config(task.params), xml,
                              storage=task.storage, compress=task.compress, namespace=task.namespace,
                              node_name=task.node_name, collect=True, flush=table.flush,
                              copy_inputs=task.copy_inputs, progress=_crash_hook(task), planner=plans().plan)
    table.start(rep.joint_names, rep.contact_names, rep.offset_names)
    table.close()
    _fsync_tree(tmp)
    f = rep.core.faults
    faults = dict(fault_alarms=f.alarms, fault_exclusions=f.exclusions, fault_returns=f.returns,
                  fault_unexplained=f.unexplained) if f is not None else {}
    model = rep.session.estimator.model.name
    return _row(task, status="partial" if summary.error else "done", reason=summary.error, model=model,
                duration_s=summary.bag_seconds, stale_timer_ticks=summary.stale_timer_ticks, speed=summary.speed,
                **table.stats.row(), **faults)


def _row(task: Task, model: str = "", **values) -> dict:
    """A summary row; the robot is the ``--params ROBOT=`` name, else the robot model's name."""
    return row(task.name, task.input, task.robot or model or "default", model=model, **values)


def row(name: str, input: str, robot: str, **values) -> dict:
    """The summary row of the recording ``input`` (output folder ``name``) of ``robot``."""
    return dict(recording=name, input=os.path.abspath(input), robot=robot, **values)


def failed_row(name: str, input: str, robot: str, reason: str, **values) -> dict:
    """The summary row of a recording that has no outputs (``status: failed``), and why."""
    return row(name, input, robot, status="failed", reason=reason, **values)


def partials(task: Task) -> list:
    """The temporary folders of the task's attempts that did not finish (their worker died)."""
    part = os.path.join(task.output, PARTIAL)
    prefix = task.name.replace(os.sep, "__") + "."
    return [os.path.join(part, f) for f in os.listdir(part) if f.startswith(prefix)] if os.path.isdir(part) else []


def _clean(task: Task) -> int:
    """Remove what earlier attempts left (outputs without marker, temporary folders); the number of
    earlier attempts that started replaying."""
    if os.path.exists(task.folder):
        shutil.rmtree(task.folder)
    stale = partials(task)
    for f in stale:
        shutil.rmtree(f, ignore_errors=True)
    return len(stale)


def _write_marker(folder: str, row: dict) -> None:
    tmp = os.path.join(folder, f".{MARKER}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(row, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.rename(tmp, os.path.join(folder, MARKER))
    _fsync_dir(folder)


def _fsync_tree(root: str) -> None:
    """Flush every file under ``root`` to the disk (the rename that follows publishes complete files)."""
    for d, _, files in os.walk(root):
        for f in files:
            fd = os.open(os.path.join(d, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(d)


def _fsync_dir(d: str) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _crash_hook(task: Task):
    """The progress callback of the test hook :data:`CRASH_ENV` (None when it does not apply)."""
    spec = os.environ.get(CRASH_ENV, "")
    if ":" not in spec:
        return None
    part, flag = spec.split(":", 1)
    if part not in task.name or (flag and os.path.exists(flag)):
        return None

    def progress(done_: int, total: int) -> None:     # after the first batch: the outputs half written
        if flag:
            with open(flag, "w", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return progress

"""A fleet run: find the recordings, make a task of each, run them on an engine, then write the
fleet summary (``fleet_summary.parquet``) and the report (``fleet_report.png`` / ``.pdf``)."""
from __future__ import annotations

import os
import sys
import time
import uuid

from . import engines
from .inputs import FleetError, find_recordings, make_tasks, mapping, names
from .tasks import PARTIAL, failed_row


class FleetProgress:
    """A one-line progress display on stderr: recordings done, failed, skipped, and the ETA from the
    recorded seconds replayed so far (a long recording weighs more than a short one)."""

    def __init__(self, total: int, stream=None):
        self.total, self.stream = total, stream or sys.stderr
        self.n = self.failed = self.skipped = 0
        self.t0 = time.perf_counter()

    def __call__(self, row: dict) -> None:
        self.n += 1
        self.failed += row["status"] == "failed"
        self.skipped += row["status"] == "skipped"
        elapsed = time.perf_counter() - self.t0
        worked = self.n - self.skipped
        eta = elapsed / worked * (self.total - self.n) if worked else float("nan")
        self.stream.write(f"\r[{'#' * (30 * self.n // max(1, self.total)):<30}] {self.n}/{self.total} recordings"
                          f" ({self.skipped} skipped, {self.failed} failed)  {elapsed:.0f} s, ETA "
                          f"{'?' if eta != eta else f'{eta:.0f} s'}   ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def run_fleet(inputs, output: str, params, robot_descriptions=None, engine: str = "local", workers=None,
              address=None, max_retries: int = 3, report: bool = True, progress: bool = True, on_row=None,
              **options) -> list:
    """Replay every recording of ``inputs`` into ``output`` (see :mod:`rbd_estimator.fleet`);
    ``params``/``robot_descriptions``: ``[ROBOT=]FILE`` entries; ``on_row(row)``: called with each
    recording's summary row as it arrives; ``options``: :class:`~.tasks.Task`'s replay options.
    Returns the summary rows, in the recordings' order. Raises :class:`FleetError` when it cannot start."""
    params = mapping(params, "--params")
    if not params:
        raise FleetError("--params: give a parameter file (or ROBOT=FILE per robot)")
    descriptions = mapping(robot_descriptions, "--robot-description")
    out = os.path.abspath(output)
    recordings = [r for r in find_recordings(inputs) if not os.path.abspath(r).startswith(out + os.sep)]
    if not recordings:
        raise FleetError("no recording found in " + ", ".join(inputs))
    os.makedirs(out, exist_ok=True)
    tasks, unassigned = make_tasks(recordings, out, params, descriptions, run=uuid.uuid4().hex, **options)
    rows = {name: failed_row(name, rec, "", why) for rec, name, why in unassigned}
    show = FleetProgress(len(recordings)) if progress else None

    def arrived(row):
        rows[row["recording"]] = row
        if show is not None:
            show(row)
        if on_row is not None:
            on_row(row)
    for row in list(rows.values()):
        arrived(row)
    run = engines.ENGINES[engine]
    kw = dict(address=address, num_cpus=workers) if engine == "ray" else dict(workers=workers)
    try:
        run(tasks, arrived, max_retries=max_retries, **kw)
    finally:
        if show is not None:
            show.close()
    part = os.path.join(out, PARTIAL)
    if os.path.isdir(part) and not os.listdir(part):
        os.rmdir(part)
    result = [rows[n] for n in names(recordings)]
    from .tables import write_summary
    write_summary(result, os.path.join(out, "fleet_summary.parquet"))
    if report:
        from .report import plot_report
        plot_report(result, os.path.join(out, "fleet_report"), out)
    return result


def text(rows: list) -> str:
    """The summary printed at the end of a run."""
    by = {}
    for r in rows:
        by.setdefault(r["status"], []).append(r)
    hours = sum(r.get("duration_s") or 0 for r in rows if r["status"] != "failed") / 3600
    lines = [f"{len(rows)} recordings: " + ", ".join(f"{len(v)} {k}" for k, v in sorted(by.items()))
             + f"; {hours:.3f} h of recording in the outputs"]
    for r in by.get("failed", []) + by.get("partial", []):
        lines.append(f"  {r['status'].upper()} {r['recording']}: {r.get('reason')}")
    return "\n".join(lines)

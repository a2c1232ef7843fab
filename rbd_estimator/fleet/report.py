"""The fleet's one-page report (matplotlib, PNG and PDF) from the summary rows: peak joint torque
per joint across the fleet (each robot), time in each contact subset, ticks without estimate per
recording and why, and the tracked sensor offsets over time (read from the recordings' tables)."""
from __future__ import annotations

import os

import numpy as np

#: at most this many points of each recording's offsets in the plot
OFFSET_POINTS = 400


def plot_report(rows: list, path_stem: str, folder: str | None = None) -> list:
    """Save the report as ``path_stem.png`` and ``path_stem.pdf``; returns the paths. ``folder``: the
    fleet's output folder (the recordings' tables; default: ``path_stem``'s folder)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r.get("ticks")]
    robots = sorted({r["robot"] for r in ok}) or ["(none)"]
    fig = plt.figure(figsize=(11.7, 8.3))                    # A4 landscape
    grid = fig.add_gridspec(3, max(2, len(robots)))
    for k, robot in enumerate(robots):
        _peaks(fig.add_subplot(grid[0, k]), [r for r in ok if r["robot"] == robot], robot)
    _subsets(fig.add_subplot(grid[1, 0]), ok)
    _missing(fig.add_subplot(grid[1, 1:]), rows)
    _offsets(fig.add_subplot(grid[2, :]), ok, folder or os.path.dirname(os.path.abspath(path_stem)))
    done = sum(r["status"] in ("done", "skipped") for r in rows)
    hours = sum(r.get("duration_s") or 0.0 for r in ok) / 3600
    fig.suptitle(f"rbd_estimator fleet replay: {len(rows)} recordings ({done} complete), {hours:.2f} h replayed")
    fig.tight_layout()
    out = [path_stem + ".png", path_stem + ".pdf"]
    for p in out:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return out


def _peaks(ax, rows: list, robot: str) -> None:
    """Per joint: the largest |torque| of the fleet (bar) and each recording's (dots)."""
    joints = list(rows[0]["peak_abs_tau"]) if rows else []
    P = np.array([[r["peak_abs_tau"].get(j, np.nan) for j in joints] for r in rows]).reshape(len(rows), len(joints))
    x = np.arange(len(joints))
    if len(joints):
        ax.bar(x, np.nanmax(P, axis=0), color="0.8", label="fleet peak")
        for p in P:
            ax.plot(x, p, ".", ms=3, color="C0")
    ax.set_xticks(x, joints, rotation=90, fontsize=6)
    ax.set_ylabel("peak |torque| (N·m)")
    ax.set_title(f"{robot}: peak joint torque ({len(rows)} recordings)", fontsize=9)


def _subsets(ax, rows: list) -> None:
    """Hours in each contact subset over the fleet."""
    total = {}
    for r in rows:
        for label, s in (r.get("time_in_subset") or {}).items():
            total[label] = total.get(label, 0.0) + s
    labels = sorted(total, key=total.get, reverse=True)
    ax.barh(np.arange(len(labels)), [total[k] / 3600 for k in labels], color="C1")
    ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
    ax.set_xlabel("hours")
    ax.set_title("time in each contact subset", fontsize=9)


def _missing(ax, rows: list) -> None:
    """Ticks without estimate per recording, stacked by reason; failed recordings marked."""
    reasons = sorted({k for r in rows for k in (r.get("no_estimate") or {})})
    names = [r["recording"] for r in rows]
    x, bottom = np.arange(len(rows)), np.zeros(len(rows))
    for k, reason in enumerate(reasons):
        v = np.array([(r.get("no_estimate") or {}).get(reason, 0) for r in rows], float)
        ax.bar(x, v, bottom=bottom, label=reason[:60], color=f"C{k % 10}")
        bottom += v
    for i, r in enumerate(rows):
        if r["status"] in ("failed", "partial"):
            ax.annotate(r["status"], (i, bottom[i]), rotation=90, fontsize=6, color="red", ha="center", va="bottom")
    ax.set_xticks(x, names, rotation=90, fontsize=5)
    ax.set_ylabel("ticks without estimate")
    ax.set_title("ticks without estimate per recording, by reason", fontsize=9)
    if reasons:
        ax.legend(fontsize=6)


def _offsets(ax, rows: list, folder: str) -> None:
    """The tracked offsets over log time, every recording that tracks some (its table's offset
    columns, thinned to :data:`OFFSET_POINTS`), one colour per entry."""
    colour: dict = {}
    for r in rows:
        names = list(r.get("offset_final") or {})
        path = os.path.join(folder, r["recording"], "ticks.parquet")
        if not names or not os.path.exists(path):
            continue
        t, o = _offset_trace(path, names)
        for k, name in enumerate(names):
            first = name not in colour
            c = colour.setdefault(name, f"C{len(colour) % 10}")
            ax.plot(t, o[:, k], lw=0.8, color=c, label=name if first else None)
    if not colour:
        ax.text(0.5, 0.5, "no tracked offsets", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.set_xlabel("log time (UTC)")
    ax.set_ylabel("offset (N, N·m)")
    ax.set_title("tracked sensor offsets over time (docs/offsets.md)", fontsize=9)
    ax.legend(fontsize=6, ncol=max(1, len(colour) // 8))


def _offset_trace(path: str, names: list):
    """Log times (datetime64) and offsets ``(n, len(names))`` of a table's estimated ticks, thinned."""
    import pyarrow.parquet as pq
    t = pq.read_table(path, columns=["time_ns", "estimated"] + [f"offset/{e}" for e in names])
    keep = np.asarray(t.column("estimated"))
    step = max(1, int(keep.sum()) // OFFSET_POINTS)
    time_ns = np.asarray(t.column("time_ns"))[keep][::step]
    o = np.column_stack([np.asarray(t.column(f"offset/{e}"))[keep][::step] for e in names])
    return time_ns.astype("datetime64[ns]"), o

"""What the command line shows of a replay: a plot of the estimates and a progress bar."""
from __future__ import annotations

import sys
import time

import numpy as np



def plot(results: dict, path: str, max_joints: int = 6) -> None:
    """Torques (up to ``max_joints``, the largest) and contact forces/torques over time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = (results["times"] - results["times"][0]) * 1e-9 if len(results["times"]) else np.zeros(0)
    tau, w = results["tau"], results["wrenches"]
    nc = w.shape[1]
    fig, axes = plt.subplots(1 + 2 * max(nc, 0) if nc else 1, 1, figsize=(11, 3 + 2.2 * (2 * nc)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    ax = axes[0]
    if len(tau):
        order = np.argsort(-np.abs(tau).max(axis=0))[:max_joints]
        for k in order:
            ax.plot(t, tau[:, k], lw=1.0, label=results["joint_names"][k])
        ax.legend(loc="upper right", fontsize=7, ncol=2)
    ax.set_ylabel("torque (N·m)")
    ax.set_title("joint torques (largest)")
    for c, name in enumerate(results["contact_names"]):
        for j, (lab, unit) in enumerate((("f", "N"), ("t", "N·m"))):
            ax = axes[1 + 2 * c + j]
            for comp, axis in enumerate("xyz"):
                ax.plot(t, w[:, c, 3 * j + comp], lw=1.0, label=f"{lab}{axis}")
            ax.set_ylabel(f"{name} ({unit})")
            ax.legend(loc="upper right", fontsize=7, ncol=3)
    axes[-1].set_xlabel("time since the first estimate (s)")
    fig.suptitle("rbd_estimator replay: joint torques and contact wrenches")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


class Progress:
    """A one-line text progress bar on stderr, redrawn at most every 0.2 s on a terminal; into a pipe
    or a log file (no terminal) one line at :meth:`close`, with where the replay got to."""

    def __init__(self, stream=None, width: int = 30):
        self.stream = stream or sys.stderr
        self.width = width
        self._last = 0.0
        self._t0 = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._state = None                      # the latest (done, total, seconds)

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        self._state = (done, total, now - self._t0)
        if not self._tty or (now - self._last < 0.2 and done < total):
            return
        self._last = now
        self.stream.write("\r" + self._line())
        self.stream.flush()

    def _line(self) -> str:
        done, total, seconds = self._state
        frac = min(1.0, done / total) if total else 1.0
        bar = "#" * int(frac * self.width)
        return f"[{bar:<{self.width}}] {100 * frac:5.1f}%  {done}/{total} messages  {seconds:.1f} s"

    def close(self) -> None:
        if self._state is None:
            return
        self.stream.write(("" if self._tty else self._line()) + "\n")
        self.stream.flush()

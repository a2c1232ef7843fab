"""Shared by the benchmark scripts: timing and a description of the machine."""
from __future__ import annotations

import os
import platform
import time

import numpy as np


def median_us(fn, calls: int, warmup: int | None = None) -> float:
    """Median wall time of ``fn()`` in µs over ``calls`` calls, after ``warmup`` calls
    (default ``max(100, calls // 10)``)."""
    for _ in range(max(100, calls // 10) if warmup is None else warmup):
        fn()
    t = np.empty(calls)
    for k in range(calls):
        t0 = time.perf_counter()
        fn()
        t[k] = time.perf_counter() - t0
    return float(np.median(t) * 1e6)


def paired_median_us(fn_ref, fn, calls: int, rounds: int = 7) -> tuple[float, float]:
    """``(t_ref, t)``: medians of ``fn_ref()`` and ``fn()`` in µs, each the median over ``rounds``
    interleaved rounds of ``calls // rounds`` calls, so that a burst of load on a shared machine
    (seconds long) shifts one round of both, not the ratio."""
    n = max(100, calls // rounds)
    pairs = [(median_us(fn_ref, n), median_us(fn, n)) for _ in range(rounds)]
    return float(np.median([a for a, _ in pairs])), float(np.median([b for _, b in pairs]))


def rnea_at_neutral(xml: str, floating_base: bool):
    """``f()`` calling pinocchio's ``rnea`` of the URDF ``xml`` (a free flyer added on a floating base)
    at its neutral configuration, zero velocity and acceleration: the reference the benchmarks'
    ratios are taken against."""
    import pinocchio as pin
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromXML(xml)
    pd = pm.createData()
    pq, pv = pin.neutral(pm), np.zeros(pm.nv)
    return lambda: pin.rnea(pm, pd, pq, pv, pv)


def machine() -> str:
    """CPU model, core count, OS and the versions of the numerical packages."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            name = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for mod in ("numba", "pinocchio"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            pass
    return (f"{platform.machine()} {name or platform.processor()}, {os.cpu_count()} CPUs, {platform.system()} "
            f"{platform.release()}; " + ", ".join(versions))

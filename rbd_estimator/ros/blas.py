"""Limit the BLAS thread pools of this process (OpenBLAS, as bundled with the numpy and scipy wheels).

The tick uses no BLAS, but planning runs dense LAPACK (SVD, LU). Multi-threaded OpenBLAS spins its
threads while waiting for work; on a machine whose cores are busy (ticks, publishers, other nodes)
that turns a 0.1 s plan into seconds and starves the tick thread. The node's executable therefore
runs BLAS single-threaded; ``OPENBLAS_NUM_THREADS`` set by the user wins (nothing is changed then).
"""
from __future__ import annotations

import ctypes
import os

_SET = ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
        "scipy_openblas_set_num_threads64_")
_GET = ("openblas_get_num_threads", "openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
        "scipy_openblas_get_num_threads64_")


def _openblas_libraries():
    paths = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.split()[-1] if line.strip() else ""
                if "openblas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    libs = []
    for p in paths:
        try:
            libs.append(ctypes.CDLL(p))
        except OSError:
            continue
    return libs


def blas_threads() -> list:
    """Current thread count of every OpenBLAS loaded in this process."""
    out = []
    for lib in _openblas_libraries():
        for sym in _GET:
            f = getattr(lib, sym, None)
            if f is not None:
                out.append(int(f()))
                break
    return out


def limit_blas_threads(n: int = 1, respect_environment: bool = True) -> list:
    """Set every loaded OpenBLAS to ``n`` threads; returns the previous counts (for restoring)."""
    import numpy  # noqa: F401 - make sure the libraries are loaded
    import scipy.linalg  # noqa: F401
    if respect_environment and os.environ.get("OPENBLAS_NUM_THREADS"):
        return []
    previous = []
    for lib in _openblas_libraries():
        get = next((getattr(lib, s) for s in _GET if getattr(lib, s, None) is not None), None)
        put = next((getattr(lib, s) for s in _SET if getattr(lib, s, None) is not None), None)
        if put is None:
            continue
        previous.append(int(get()) if get is not None else 0)
        put(ctypes.c_int(int(n)))
    return previous


def restore_blas_threads(previous: list) -> None:
    """Undo :func:`limit_blas_threads` (same library order)."""
    for lib, n in zip([lb for lb in _openblas_libraries()
                       if any(getattr(lb, s, None) is not None for s in _SET)], previous):
        if n > 0:
            put = next(getattr(lib, s) for s in _SET if getattr(lib, s, None) is not None)
            put(ctypes.c_int(n))

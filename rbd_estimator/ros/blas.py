"""Limit the BLAS thread pools of this process, through ``threadpoolctl``.

The tick uses no BLAS, but planning runs dense LAPACK (SVD, LU). Multi-threaded OpenBLAS spins its
threads while waiting for work; on a machine whose cores are busy (ticks, publishers, other nodes)
that turns a 0.1 s plan into seconds and starves the tick thread. The node's executable therefore
runs BLAS single-threaded. A thread count the user chose through the environment wins: a library
whose own variable is set (:data:`THREAD_VARIABLES`: ``OPENBLAS_NUM_THREADS`` for OpenBLAS,
``MKL_NUM_THREADS`` for MKL, …, or ``OMP_NUM_THREADS``, which they all read) is left as it is.

``threadpoolctl`` finds every BLAS loaded in the process (the OpenBLAS builds bundled with the numpy
and scipy wheels, MKL, BLIS, FlexiBLAS) and sets their thread counts through their own calls.
"""
from __future__ import annotations

import os

from threadpoolctl import ThreadpoolController

#: Environment variables that set each BLAS's thread count (threadpoolctl's ``internal_api`` names);
#: a library of a kind not listed honours ``OMP_NUM_THREADS`` only.
THREAD_VARIABLES = {
    "openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
    "mkl": ("MKL_NUM_THREADS", "OMP_NUM_THREADS"),
    "blis": ("BLIS_NUM_THREADS", "OMP_NUM_THREADS"),
    "flexiblas": ("FLEXIBLAS_NUM_THREADS", "OMP_NUM_THREADS"),
}


def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded in this process (numpy's and scipy's loaded first)."""
    import numpy  # noqa: F401 - make sure the libraries are loaded
    import scipy.linalg  # noqa: F401
    return ThreadpoolController().select(user_api="blas")


def user_chose_threads(internal_api: str, environ=None) -> bool:
    """Whether the environment (``os.environ`` by default) sets the thread count of a BLAS of kind
    ``internal_api`` (threadpoolctl's name: ``openblas``, ``mkl``, ``blis``, ``flexiblas``)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(v) for v in THREAD_VARIABLES.get(internal_api, ("OMP_NUM_THREADS",)))


def blas_threads() -> list:
    """Current thread count of every BLAS loaded in this process."""
    return [int(lib["num_threads"]) for lib in _blas().info()]


def limit_blas_threads(n: int = 1, respect_environment: bool = True):
    """Set every loaded BLAS to ``n`` threads, except (``respect_environment``) those whose thread
    count the environment sets. Returns a handle for :func:`restore_blas_threads`, or None when no
    library was changed."""
    libs = _blas()
    if respect_environment:
        libs = libs.select(internal_api=sorted({lib["internal_api"] for lib in libs.info()
                                                if not user_chose_threads(lib["internal_api"])}))
    if not libs.info():
        return None
    return libs.limit(limits=int(n))


def restore_blas_threads(previous) -> None:
    """Undo :func:`limit_blas_threads` (``previous`` is what it returned)."""
    if previous is not None:
        previous.restore_original_limits()

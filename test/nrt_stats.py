"""Numba runtime allocation counts, for the tests that a compiled kernel allocates nothing per call.

numba counts its runtime allocations only when ``NUMBA_NRT_STATS=1`` is set before it is imported,
so a test runs its measurement in a fresh interpreter (:func:`run`), whose script imports
:func:`extra_allocations` from here: the allocations of ``n`` calls of a kernel minus those of a
do-nothing compiled function given the same arguments (numba's boxing of the array arguments).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script: str, timeout: float = 900) -> list[str]:
    """Run ``script`` (dedented) with numba's allocation statistics on, from the repository root
    with the package and ``test/`` importable; returns its non-empty output lines."""
    env = dict(os.environ, NUMBA_NRT_STATS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "test"), os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-2000:]
    return [line for line in res.stdout.splitlines() if line.strip()]


def allocations(f, args, n: int = 100) -> int:
    """numba runtime allocations made by ``n`` calls ``f(*args)`` (after one warm-up call)."""
    from numba.core.runtime import rtsys
    f(*args)
    a0 = rtsys.get_allocation_stats().alloc
    for _ in range(n):
        f(*args)
    return rtsys.get_allocation_stats().alloc - a0


def nothing_like(args, signatures=None):
    """A compiled function of as many arguments as ``args`` that does nothing (returns 0)."""
    import numba as nb
    names = ", ".join(f"a{k}" for k in range(len(args)))
    fn = eval(f"lambda {names}: 0")                     # noqa: S307  (a generated parameter list)
    return nb.njit(signatures)(fn) if signatures is not None else nb.njit(fn)


def extra_allocations(f, args, n: int = 100, signatures=None) -> int:
    """Allocations of ``n`` calls of ``f`` beyond those of a do-nothing function of the same arguments."""
    return allocations(f, args, n) - allocations(nothing_like(args, signatures), args, n)

"""The package's compiled functions: one decorator, one place for numba's options and cache.

Every kernel is ``@njit`` (or ``njit(signatures, **options)(fn)``) from here: numba's ``njit`` with
the package's options (:data:`JIT`: cached, GIL released, numpy's error model unless a module asks
otherwise) and the package's cache location, so that a first ``configure`` loads machine code
instead of compiling it (issue 14):

* the cache of each source file lives under one root, in a sub-folder named after the file's
  folder inside the package (``estimation/``, ``ros/``, …), so a cache made for one installation
  serves every copy of the same sources; its freshness stamp is the SHA-256 of all the package's
  source files (not a modification time, which installers reset; and not the kernel's own file
  alone, since a kernel's machine code includes the kernels it calls from other files);
* the root is ``$RBD_ESTIMATOR_CACHE_DIR`` when set; else ``<package>/_jit_cache`` when it can be
  written (source trees, colcon and pip installs made by their user); else a per-user folder
  (``$XDG_CACHE_HOME/rbd_estimator/jit``, default ``~/.cache/rbd_estimator/jit``) that is first
  seeded with the package's ``_jit_cache`` when the installation is read-only (a container image
  pre-warmed at build time);
* numba keys each entry by its version and the target CPU: another CPU or numba recompiles
  instead of loading foreign code.

``rbd-estimator warm-cache`` (:mod:`rbd_estimator.warm`) fills the cache ahead of time. With a
numba older than 0.60 (no ``NUMBA_CACHE_LOCATOR_CLASSES``) numba's own cache location is used.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import threading

import numba as nb
import numpy as np
from numba.core import config as _numba_config

#: The options of every kernel (a module may override one, e.g. ``error_model='python'``).
JIT = dict(cache=True, nogil=True, error_model="numpy")
#: fastmath flags of the per-tick kernels (:func:`fast_njit`): contraction, reassociation, no signed
#: zeros, reciprocals; not ``nnan``/``ninf``, since the kernels test their results for finiteness.
FASTMATH = frozenset({"contract", "reassoc", "nsz", "arcp"})
#: Index cast of the per-tick kernels: numba checks every signed index for a negative value to wrap
#: around, which costs up to 2.7× in short loops; ``x[uidx(k)]`` skips it (``k`` must be ≥ 0).
uidx = np.uint64
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
PACKAGE_CACHE = os.path.join(PACKAGE_DIR, "_jit_cache")
ENV = "RBD_ESTIMATOR_CACHE_DIR"
_lock = threading.Lock()


def _writable(path: str) -> bool:
    probe = path if os.path.isdir(path) else os.path.dirname(path)
    return os.access(probe, os.W_OK | os.X_OK)


def user_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rbd_estimator", "jit")


@functools.lru_cache(maxsize=None)
def cache_root() -> str:
    """Where the package's compiled code is cached (see the module docstring)."""
    if os.environ.get(ENV):
        return os.path.abspath(os.environ[ENV])
    if _writable(PACKAGE_CACHE):
        return PACKAGE_CACHE
    root = user_cache_dir()
    if os.path.isdir(PACKAGE_CACHE):              # read-only installation pre-warmed at build time
        shutil.copytree(PACKAGE_CACHE, root, dirs_exist_ok=True, copy_function=_copy_if_missing)
    return root


def _copy_if_missing(src, dst):
    if not os.path.exists(dst):
        shutil.copy2(src, dst)


try:                                              # numba's public locator classes (numba >= 0.60)
    from numba.core.caching import InTreeCacheLocator as _Base
except ImportError:                               # pragma: no cover - older numba: its own locations
    _Base = None


if _Base is not None:
    class PackageCacheLocator(_Base):
        """numba cache locator of the package's sources (see the module docstring)."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), PACKAGE_DIR)
            self._cache_path = os.path.normpath(os.path.join(cache_root(), rel))

        def get_source_stamp(self):
            return _sources_hash()

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.abspath(py_file).startswith(PACKAGE_DIR + os.sep):
                return None
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self


@functools.lru_cache(maxsize=None)
def _sources_hash() -> str:
    """SHA-256 of every source file of the package: a kernel's machine code includes the kernels
    it calls, which may live in other files, so an entry is fresh only for the same sources."""
    h = hashlib.sha256()
    for base, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d not in ("_jit_cache", "__pycache__"))
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(base, f)
                h.update(os.path.relpath(path, PACKAGE_DIR).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


@contextlib.contextmanager
def _package_locator():
    """numba picks a function's cache locator when the function is decorated: during our
    decorations, ours first (numba's own after it, for files outside the package)."""
    if _Base is None or not hasattr(_numba_config, "CACHE_LOCATOR_CLASSES"):
        yield
        return
    with _lock:
        previous = _numba_config.CACHE_LOCATOR_CLASSES
        _numba_config.CACHE_LOCATOR_CLASSES = ",".join(
            [f"{__name__}.PackageCacheLocator", "numba.core.caching.InTreeCacheLocator",
             "numba.core.caching.UserWideCacheLocator"])
        try:
            yield
        finally:
            _numba_config.CACHE_LOCATOR_CLASSES = previous


def njit(first=None, **options):
    """``numba.njit`` with :data:`JIT` and the package's cache: ``@njit``, ``@njit(**options)`` or
    ``njit(signatures, **options)(fn)`` (explicit signatures compile, or load, at decoration)."""
    opts = {**JIT, **options}

    def decorate(fn, signatures=None):
        with _package_locator():
            return (nb.njit(signatures, **opts) if signatures is not None else nb.njit(**opts))(fn)

    if callable(first):
        return decorate(first)
    return lambda fn: decorate(fn, first)


def fast_njit(first=None, **options):
    """:func:`njit` with :data:`FASTMATH`: the decorator of the per-tick kernels."""
    return njit(first, fastmath=set(FASTMATH), **options)


@contextlib.contextmanager
def compile_timer():
    """``with compile_timer() as t: ...``; then ``t.seconds``: time numba spent compiling inside
    the block (0 when every kernel came from the cache)."""
    from numba.core import event

    class Total:
        seconds = 0.0
    total = Total()
    with event.install_timer("numba:compile", lambda s: setattr(total, "seconds", s)):
        yield total

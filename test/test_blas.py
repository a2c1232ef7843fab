"""BLAS thread limiting (:mod:`rbd_estimator.ros.blas`, through threadpoolctl): the node's executable
runs every loaded BLAS single-threaded unless the environment chose that library's thread count.

Each test starts from two threads per library (set with threadpoolctl, restored afterwards), so the
change to one thread is visible on any machine."""
from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from rbd_estimator.ros.blas import (THREAD_VARIABLES, blas_threads, limit_blas_threads, restore_blas_threads,
                                    user_chose_threads)

ALL_VARIABLES = sorted({v for vs in THREAD_VARIABLES.values() for v in vs})


@pytest.fixture
def two_threads(monkeypatch):
    """Every BLAS at two threads, no thread variable in the environment; the kinds loaded."""
    for v in ALL_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    with threadpool_limits(2, user_api="blas"):
        kinds = [lib["internal_api"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        assert kinds, "no BLAS loaded: numpy and scipy link one"
        assert blas_threads() == [2] * len(kinds)
        yield kinds


def test_limit_sets_every_blas_and_restore_undoes_it(two_threads):
    handle = limit_blas_threads(1)
    assert handle is not None
    assert blas_threads() == [1] * len(two_threads)
    restore_blas_threads(handle)
    assert blas_threads() == [2] * len(two_threads)


def test_a_thread_count_chosen_in_the_environment_wins(two_threads, monkeypatch):
    for kind in set(two_threads):
        monkeypatch.setenv(THREAD_VARIABLES.get(kind, ("OMP_NUM_THREADS",))[0], "2")
    assert limit_blas_threads(1) is None
    assert blas_threads() == [2] * len(two_threads)
    restore_blas_threads(None)                              # nothing to undo
    handle = limit_blas_threads(1, respect_environment=False)
    assert blas_threads() == [1] * len(two_threads)
    restore_blas_threads(handle)
    assert blas_threads() == [2] * len(two_threads)


def test_which_variables_count_for_which_library():
    assert user_chose_threads("openblas", {"OPENBLAS_NUM_THREADS": "4"})
    assert user_chose_threads("openblas", {"OMP_NUM_THREADS": "4"})
    assert not user_chose_threads("openblas", {"MKL_NUM_THREADS": "4"})
    assert not user_chose_threads("openblas", {"OPENBLAS_NUM_THREADS": ""})       # empty: not set
    assert user_chose_threads("mkl", {"MKL_NUM_THREADS": "1"})
    assert not user_chose_threads("mkl", {"OPENBLAS_NUM_THREADS": "1"})
    assert user_chose_threads("some_new_blas", {"OMP_NUM_THREADS": "1"})
    assert not user_chose_threads("some_new_blas", {"BLIS_NUM_THREADS": "1"})

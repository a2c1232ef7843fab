"""The plan (Nori §IV-D) cheap enough to plan every contact subset (issue 11, point 4).

* The rank test: the reduced test of ``plan._null_space_reduced`` (sparse LU of the Newton–Euler
  rows on their natural pivots, SVD of sensor rows × contact unknowns) against a dense SVD of the
  whole system, well-posed and ill-posed, structurally and only numerically; its dense fallback.
* The symbolic LU against a dense elimination of a random instance of the same pattern.
* The block order of the static LU: the generic plan of a serial chain has a fill-in linear in the
  number of bodies and stays exact.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from groundtruth import GroundTruth
from oracle import urdf_xml
from test_estimator import FEET, _loadcell_config, icub_config
from trees import serial_chain, tree_urdf

from rbd_estimator import IllPosedError
from rbd_estimator.estimation import SensorConfig, estimator_for
from rbd_estimator.estimation import estimator as estimator_module
from rbd_estimator.estimation import plan
from rbd_estimator.estimation.sparse_lu import symbolic_lu

IMU_W = dict(frame="root_link", use_angular_acceleration=True)
CASES = {   # name: (configuration, expected number of undetermined directions)
    "six force-torque sensors": (icub_config(), 0),
    "IMU with angular acceleration, single support": (
        icub_config(ft_sensors=[], imu=IMU_W, contacts=["l_foot"], contact=dict(l_foot=dict(frame="l_sole"))), 0),
    "IMU with angular acceleration, double support": (icub_config(ft_sensors=[], imu=IMU_W), 6),
    "load cells under full-wrench feet (Nori Remark 5)": (_loadcell_config("full_wrench"), 3),
    "no force-torque sensor": (icub_config(ft_sensors=[]), 9),
    # structurally well posed, numerically not: both forces enter every row with the same coefficients
    "two point contacts at one point": (icub_config(
        contacts=["l_foot", "l_foot_2", "r_foot"],
        contact=dict(FEET["contact"], l_foot=dict(frame="l_sole", type="point_force"),
                     l_foot_2=dict(frame="l_sole", type="point_force"))), 3),
}


class _Captured(Exception):
    pass


def _rank_test_input(monkeypatch, cfg):
    """``(layout, pattern, [A at the random states])`` that planning iCub hands to its rank test."""
    seen = []

    def spy(*args):
        seen.append(args)
        raise _Captured
    with monkeypatch.context() as m:
        m.setattr(estimator_module, "check_well_posed", spy)
        with pytest.raises(_Captured):
            estimator_for(urdf_xml("icub"), cfg)
    return seen[0]


def _dense_null_projector(A: sp.spmatrix) -> np.ndarray:
    """Orthogonal projector onto the null space of ``A`` from numpy's dense SVD; the cases have a
    clear gap in the singular values."""
    _, s, Vt = np.linalg.svd(A.toarray())
    rank = int(np.sum(s > 1e-9 * s[0]))
    assert rank == len(s) or s[rank] < 1e-12 * s[0], "no clear numerical rank"
    return Vt[rank:].T @ Vt[rank:]


@pytest.mark.parametrize("case", list(CASES))
def test_reduced_rank_test_gives_the_null_space_of_a_dense_svd(monkeypatch, case):
    cfg, ndir = CASES[case]
    layout, _, A_states = _rank_test_input(monkeypatch, cfg)
    for A in A_states:
        null = plan._null_space_reduced(layout, A)
        assert null is not None, "the Newton–Euler rows of iCub were not certified"
        assert null.shape == (ndir, layout.n)
        np.testing.assert_allclose(null @ null.T, np.eye(ndir), atol=1e-12)       # orthonormal rows
        np.testing.assert_allclose(null.T @ null, _dense_null_projector(A), atol=1e-9)


def test_plans_and_diagnoses_without_the_dense_svd(monkeypatch):
    """The dense SVD is only a fallback: a well-posed plan and the ill-posed diagnosis (quantities
    named, numerically or structurally) run without it."""
    def no_svd(A):
        raise AssertionError("dense SVD of the whole system")
    monkeypatch.setattr(plan, "_null_space", no_svd)
    est = estimator_for(urdf_xml("icub"), CASES["six force-torque sensors"][0])
    assert est.report.n_unknowns == 506
    with pytest.raises(IllPosedError, match=r"\(numerically\): contact wrenches of l_foot and l_foot_2: 3 directions"):
        estimator_for(urdf_xml("icub"), CASES["two point contacts at one point"][0])
    with pytest.raises(IllPosedError, match=r"\(structurally\): contact wrenches of l_foot and r_foot.*3 directions"):
        estimator_for(urdf_xml("icub"), CASES["load cells under full-wrench feet (Nori Remark 5)"][0])


def test_dense_fallback_decides_and_explains_the_same(monkeypatch):
    """When the Newton–Euler rows are not certified (here: a pivot bound no LU can meet), the
    dense SVD decides; the verdicts and messages are those of the reduced test."""
    names = ["six force-torque sensors", "two point contacts at one point", "IMU with angular acceleration, double support"]

    def verdicts():
        out = []
        for name in names:
            try:
                out.append(estimator_for(urdf_xml("icub"), CASES[name][0]).report.n_unknowns)
            except IllPosedError as exc:
                out.append(str(exc))
        return out
    reduced = verdicts()
    monkeypatch.setattr(plan, "PIVOT_RATIO_BOUND", 2.0)
    assert verdicts() == reduced
    assert reduced[0] == 506 and "3 directions" in reduced[1] and "6 directions" in reduced[2]


def test_symbolic_lu_is_the_pattern_of_a_dense_elimination():
    """``L`` and ``U`` patterns against a dense LU without pivoting of random values on the same
    pattern (diagonally dominant: no pivoting needed; random values: no cancellation)."""
    rng = np.random.default_rng(4)
    for n in (1, 7, 30, 60):
        M = (rng.random((n, n)) < 4.0 / n) * rng.uniform(0.5, 1.0, (n, n))
        np.fill_diagonal(M, 2.0 * n)
        A = sp.csr_matrix(M)
        Lp, Li, Up, Ui = symbolic_lu(A.indptr, A.indices, n)
        U = M.copy()
        L = np.zeros((n, n))
        for k in range(n):
            L[k + 1:, k] = U[k + 1:, k] / U[k, k]
            U[k + 1:, k:] -= np.outer(L[k + 1:, k], U[k, k:])
        for i in range(n):
            assert Li[Lp[i]:Lp[i + 1]].tolist() == np.flatnonzero(L[i, :i]).tolist()
            assert Ui[Up[i]:Up[i + 1]].tolist() == (i + np.flatnonzero(np.abs(U[i, i:]) > 1e-300)).tolist()
    with pytest.raises(ValueError, match="structurally zero pivot in row 1"):
        A = sp.csr_matrix(np.array([[1.0, 0, 0], [1, 0, 0], [0, 0, 1]]))
        symbolic_lu(A.indptr, A.indices, 3)


def _chain(n):
    xml, soles = tree_urdf(serial_chain(n), seed=n, ft_leaves=1)
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root"), ft_sensors=["ft0"],
                                      contacts=["c0"], contact=dict(c0=dict(frame=soles[0]))))
    return xml, estimator_for(xml, cfg, solver="generic")


def test_generic_plan_of_a_serial_chain_has_linear_fill_in_and_is_exact():
    """The fill-in of the planned LU per body stays about constant from 27 to 102 bodies (+16 %; it
    grew with the length, quadratic in total, when the rows that follow the coupled block were
    factorised after it), and the generic estimate matches a pinocchio ground truth."""
    _, short = _chain(25)
    xml, long = _chain(100)
    per_body = [e.report.fill_in / e.model.NB for e in (short, long)]
    assert per_body[1] <= 1.5 * per_body[0], per_body
    gt, rng = GroundTruth(xml, long), np.random.default_rng(2)
    for _ in range(5):
        inputs, truth = gt.sample(rng)
        r = long.estimate(**inputs)
        assert np.max(np.abs(r.tau - truth["tau"])) <= 1e-9 * np.max(np.abs(truth["tau"]))
        assert np.max(np.abs(r.contact_wrenches - truth["wrenches"])) <= 1e-9 * np.max(np.abs(truth["wrenches"]))

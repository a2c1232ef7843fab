"""A fleet worker plans once per robot and parameters (``fleet.tasks.plans()``, a
:class:`~rbd_estimator.runtime.plans.PlanCache`): three recordings of the demo humanoid (150 ms each,
windows of one simulation) replayed one after another through the fleet's task
(:func:`~rbd_estimator.fleet.tasks.run_task`) in this process, the second and third on the estimator
planned for the first, give the outputs of the same recordings each replayed on an estimator planned
for it alone (the cache emptied before each), bit for bit: every message of the estimate bag (bytes)
and every value of the Parquet tick table (float bits). Two parameter sets, each with state carried
from tick to tick: the shipped one (fault monitor on, covariance) and one tracking
``l_leg_ft_sensor``'s force offsets (the offset tracker's filter, the per-message tick path). A
different parameter set is planned anew. And the loops' warm start (``LoopEstimator``), carried from
tick to tick inside the estimator, is restored too (four-bar knee)."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import numpy as np
import pytest
import yaml

rosbags = pytest.importorskip("rosbags")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from test_fleet import PARAMS, ROOT, _window  # noqa: E402

from rbd_estimator.fleet import tasks  # noqa: E402
from rbd_estimator.runtime.plans import PlanCache  # noqa: E402

SENSOR = "l_leg_ft_sensor"
STEPS = 150


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three recordings, and the parameter files: shipped, tracking offsets, shipped without covariance."""
    base = tmp_path_factory.mktemp("fleet_plans")
    with open(PARAMS, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    params = {"shipped": PARAMS}
    for name, edit in (("tracking", lambda p: p["ft"][SENSOR].update(force_offset_drift=2.0)),
                       ("mean", lambda p: p.update(covariance=False))):
        d = yaml.safe_load(yaml.safe_dump(doc))
        edit(d["rbd_estimator"]["ros__parameters"])
        params[name] = str(base / f"{name}.yaml")
        with open(params[name], "w", encoding="utf-8") as fh:
            yaml.safe_dump(d, fh)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from make_demo_bag import write_bag
    from rbd_estimator.demo import share_file, simulate
    from rbd_estimator.estimation import SensorConfig
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    sim = simulate(xml, SensorConfig.from_yaml(PARAMS), 0.35, 1000.0, 1.0, 5, log=lambda *a: None)
    recordings = []
    for k in range(3):
        rec = _window(sim, 70 * k, STEPS)
        if k == 1:                      # a step on the tracked sensor's fz: the tracker moves
            i = list(sim.ft_names).index(SENSOR)
            ft = rec.ft.copy()
            ft[60:, i, 2] += 15.0
            rec = replace(rec, ft=ft)
        recordings.append(str(base / "in" / f"r{k}"))
        write_bag(recordings[-1], xml, rec, 1000.0)
    return dict(base=base, params=params, recordings=recordings)


def _replay_all(fleet, robot: str, out: str, fresh: bool) -> list:
    """The recordings through the fleet's task, in this process; ``fresh``: the cache emptied before each."""
    cache = tasks.plans()
    cache.clear()
    rows = []
    for k, path in enumerate(fleet["recordings"]):
        if fresh:
            cache.clear()
        rows.append(tasks.run_task(tasks.Task(input=path, name=f"r{k}", output=out, robot=robot,
                                              params=fleet["params"][robot], copy_inputs=False)))
    assert [r["status"] for r in rows] == ["done"] * 3, rows
    return rows


def _messages(bag: str) -> list:
    with Reader(bag) as r:
        return [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in r.messages()]


def _bits(column) -> np.ndarray:
    """A table column's values, lists flattened, floats as their bits."""
    while pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        column = pa.compute.list_flatten(column)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    values = column.to_numpy(zero_copy_only=False)
    return values.view(np.int64) if values.dtype == np.float64 else values


def _same_outputs(a: str, b: str) -> None:
    """The recording's outputs in folders ``a`` and ``b``: the same bag messages, the same table."""
    ma, mb = _messages(os.path.join(a, "estimates")), _messages(os.path.join(b, "estimates"))
    assert len(ma) > 100 and ma == mb
    ta, tb = pq.read_table(os.path.join(a, "ticks.parquet")), pq.read_table(os.path.join(b, "ticks.parquet"))
    assert ta.schema.equals(tb.schema) and ta.num_rows == tb.num_rows > 100
    meta = [json.loads(t.schema.metadata[b"rbd_estimator"]) for t in (ta, tb)]
    assert [dict(m, recording="") for m in meta] == [dict(meta[0], recording="")] * 2   # but the folder's name
    for name in ta.column_names:
        assert np.array_equal(_bits(ta.column(name)), _bits(tb.column(name))), name


@pytest.mark.parametrize("robot", ["shipped", "tracking"])
def test_reused_plan_gives_the_fresh_outputs(fleet, robot):
    base = fleet["base"] / robot
    _replay_all(fleet, robot, str(base / "fresh"), fresh=True)
    cache = tasks.plans()
    assert (cache.hits, cache.misses) == (0, 1)              # the last recording's, cache emptied before
    _replay_all(fleet, robot, str(base / "reused"), fresh=False)
    assert (cache.hits, cache.misses) == (2, 1)              # planned once, reused twice
    for k in range(3):
        _same_outputs(str(base / "fresh" / f"r{k}"), str(base / "reused" / f"r{k}"))
    if robot == "tracking":                                  # the tracker's state did move in each recording
        offsets = [c for c in pq.read_table(str(base / "reused" / "r1" / "ticks.parquet")).column_names
                   if c.startswith("offset/") and c.endswith("fz")]
        t = pq.read_table(str(base / "reused" / "r1" / "ticks.parquet"))
        assert offsets and np.nanmax(np.abs(t.column(offsets[0]).to_numpy(zero_copy_only=False))) > 5.0


def test_other_parameters_are_planned_anew(fleet):
    """A parameter set that differs (covariance off) is a new key: a new estimator, its own outputs."""
    cache = tasks.plans()
    cache.clear()
    out = str(fleet["base"] / "mixed")
    for k, robot in enumerate(["shipped", "mean", "shipped"]):
        row = tasks.run_task(tasks.Task(input=fleet["recordings"][0], name=f"{robot}{k}", output=out, robot=robot,
                                        params=fleet["params"][robot], copy_inputs=False))
        assert row["status"] == "done"
    assert (cache.hits, cache.misses) == (1, 2)
    topics = {k: {m[0] for m in _messages(os.path.join(out, k, "estimates"))} for k in ("shipped0", "mean1")}
    assert any(t.endswith("/covariance") for t in topics["shipped0"])
    assert not any(t.endswith("/covariance") for t in topics["mean1"])
    _same_outputs(os.path.join(out, "shipped0"), os.path.join(out, "shipped2"))


def test_cache_keys_bound_and_node_parameters():
    """At most ``size`` keys kept (least recently used dropped); a node-only parameter (the fault
    monitor's rate) is part of the key; the same key gives the same estimator object."""
    from rbd_estimator.demo import share_file
    from rbd_estimator.estimation import SensorConfig
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    config = SensorConfig.from_yaml(PARAMS)
    other = SensorConfig.from_yaml(PARAMS)
    other.node["fault_false_alarm_rate"] = 0.0
    assert PlanCache.key(xml, config, False) != PlanCache.key(xml, other, False)
    cache = PlanCache(size=1)
    a = cache.plan(xml, config)
    assert cache.plan(xml, config) is a and (cache.hits, cache.misses) == (1, 1)
    assert cache.plan(xml, config, strict=True) is not a                 # a new key drops the older one
    assert cache.plan(xml, config) is not a and (cache.hits, cache.misses) == (1, 3)


def test_loop_warm_start_restored():
    """The four-bar knee's ``LoopEstimator`` keeps the last assembly as the next tick's warm start: the
    cached estimator, after ticks of another recording, gives the ticks of a freshly planned one bit for bit."""
    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.runtime.plans import PlanSet
    d = os.path.join(ROOT, "test", "data", "loops")
    xml = open(os.path.join(d, "four_bar_knee.urdf"), encoding="utf-8").read()
    config = SensorConfig.from_dict(dict(floating_base=False, loops_file=os.path.join(d, "four_bar_knee.yaml")))
    cache = PlanCache()
    est = cache.plan(xml, config)
    assert est.has_loops
    n = len(est.joint_names)

    def ticks(e, seed):
        """Small steps from a random start (each tick's assembly warm-started by the last)."""
        r = np.random.default_rng(seed)
        y, out = r.uniform(-1, 1, n), []
        for _ in range(20):
            y = y + r.normal(scale=0.05, size=n)
            out.append(e.estimate(y, r.normal(size=n), r.normal(size=n)).tau.copy())
        return np.array(out)
    ticks(est, 1)                                # moves the warm start
    stale = ticks(est, 2)                        # the next recording's ticks, not restored
    again = cache.plan(xml, config)
    assert again is est and cache.hits == 1
    got, fresh = ticks(again, 2), ticks(PlanSet.plan(xml, config), 2)
    assert np.isfinite(fresh).all() and np.array_equal(got.view(np.int64), fresh.view(np.int64))
    assert not np.array_equal(stale.view(np.int64), fresh.view(np.int64))     # the warm start does matter


def test_switching_estimator_reset():
    """Contacts that come and go (``mode: detected``): after ticks over every subset, :meth:`reset`
    gives the ticks of a freshly planned estimator bit for bit, and the result holds no estimate."""
    from rbd_estimator.demo import share_file
    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.runtime.plans import PlanSet
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    p = SensorConfig.from_yaml(PARAMS).to_parameters()
    for name in ("l_foot", "r_foot"):
        p[f"contact.{name}.mode"] = "detected"
    config = SensorConfig.from_parameters(p)
    est = PlanSet.plan(xml, config)
    assert est.switching() is est
    n, ny = len(est.joint_names), est.measurements.size

    def ticks(e, seed):
        r, out = np.random.default_rng(seed), []
        for k in range(12):
            res = e.estimate(r.uniform(-0.5, 0.5, n), r.normal(size=n), r.normal(size=n), y=r.normal(size=ny) + 1.0,
                             contacts=[bool(k & 1), bool(k & 2)] if k % 4 else None)
            out.append(np.concatenate([res.tau, res.contact_wrenches.ravel(), res.tau_variance,
                                       res.contact_covariance.ravel(), [res.chi2, res.condition]]))
        return np.array(out)
    ticks(est, 1)
    est.reset()
    assert est.result.subset is None and not est.result.active.any() and not est.result.tau.any()
    got, fresh = ticks(est, 2), ticks(PlanSet.plan(xml, config), 2)
    assert np.isfinite(fresh).all() and np.array_equal(got.view(np.int64), fresh.view(np.int64))


@pytest.mark.parametrize("solver", ["generic", "structured"])
def test_estimator_reset_both_ticks(solver):
    """An :class:`Estimator` on either tick (the generic one: sources, sparse LU, its own buffers;
    the structured one with measured accelerations: the limbs' factors in the state buffer), after
    ticks from other inputs and :meth:`reset`, gives a freshly planned one's ticks bit for bit (with
    the covariance); the counters are back to zero."""
    from rbd_estimator.demo import share_file
    from rbd_estimator.estimation import SensorConfig, estimator_for
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    p = SensorConfig.from_yaml(PARAMS).to_parameters()
    p["joint_acceleration_stddev"] = 0.5
    config = SensorConfig.from_parameters(p)
    est = estimator_for(xml, config, solver=solver)
    n, ny = len(est.joint_names), est.measurements.size

    def ticks(e, seed):
        r, out = np.random.default_rng(seed), []
        for _ in range(8):
            res = e.estimate(list(r.uniform(-0.5, 0.5, n)), r.normal(size=n), r.normal(size=n),
                             y=r.normal(size=ny) + 1.0)      # q as a list: the converted input path too
            out.append(np.concatenate([res.tau, res.contact_wrenches.ravel(), res.tau_variance,
                                       res.contact_covariance.ravel(), [res.chi2, res.condition]]))
        return np.array(out)
    ticks(est, 1)
    est.reset()
    assert est.pivot_fallbacks == 0
    got, fresh = ticks(est, 2), ticks(estimator_for(xml, config, solver=solver), 2)
    assert np.isfinite(fresh).all() and np.array_equal(got.view(np.int64), fresh.view(np.int64))

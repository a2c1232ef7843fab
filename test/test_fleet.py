"""``rbd-estimator replay-fleet`` (issue 22) on 20 generated recordings of two robots: 18 good, one
truncated (corrupt: 800 ms cut at 60 %), one deleted while the run goes on, and one worker process killed during its
task, with the local engine and with Ray.

The oracle of every recording is a single ``rbd-estimator replay --estimates-only`` of it (the
command users run on one bag): the fleet's estimate bag must hold the same messages, byte for byte
(rosbags' reader), and the Parquet table, read back in its documented schema (pandas when installed,
else pyarrow), the values of those messages, decoded by rosbags. The recordings are the demo
humanoid simulated by :func:`rbd_estimator.demo.simulate` and written by ``scripts/make_demo_bag.py``
(150 ms each, windows of two simulations); robot ``alpha`` runs the shipped parameters, robot
``beta`` the same with ``covariance: false`` (``--params alpha=... --params beta=...``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import yaml

rosbags = pytest.importorskip("rosbags")
pa = pytest.importorskip("pyarrow")

from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_estimator import cli  # noqa: E402
from rbd_estimator.fleet import MARKER, run_fleet  # noqa: E402
from rbd_estimator.fleet.tasks import CRASH_ENV, PARTIAL  # noqa: E402
from rbd_estimator.runtime import cdr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARAMS = os.path.join(ROOT, "config", "humanoid.yaml")
TS = get_typestore(Stores.ROS2_JAZZY)
PREFIX = "/rbd_estimator/"
STEPS = 150                                   # per recording: 150 ms at 1 kHz
KILLED, CORRUPT, DELETED = "alpha/r03", "beta/r08", "beta/r09"


def _window(rec, a: int, n: int):
    """Steps ``a … a + n`` of a simulated recording."""
    cut = {k: getattr(rec, k)[a:a + n] for k in ("q", "dq", "ft", "tau", "wrenches", "active")}
    return replace(rec, imu=rec.imu[a:a + n], **cut)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """20 recordings under ``fleet/alpha`` and ``fleet/beta`` (10 each), their parameter files, and the
    single-replay oracle of each."""
    base = tmp_path_factory.mktemp("fleet")
    with open(PARAMS, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    doc["rbd_estimator"]["ros__parameters"]["covariance"] = False
    beta = str(base / "beta.yaml")
    with open(beta, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh)
    params = {"alpha": PARAMS, "beta": beta}
    _warm_cache(base, params.values())
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from make_demo_bag import write_bag
    from rbd_estimator.demo import share_file, simulate
    from rbd_estimator.estimation import SensorConfig
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    config = SensorConfig.from_yaml(PARAMS)
    sims = [simulate(xml, config, 0.8, 1000.0, 1.0, seed, log=lambda *a: None) for seed in (1, 2)]
    paths = {}
    for k in range(20):
        robot = "alpha" if k < 10 else "beta"
        name = f"{robot}/r{k % 10:02d}"
        path = str(base / "fleet" / name)
        steps = 800 if name == CORRUPT else STEPS        # several MCAP chunks: the first ones survive the cut
        write_bag(path, xml, _window(sims[k % 2], 60 * (k // 2) if steps == STEPS else 0, steps), 1000.0)
        paths[name] = path
    mcap = next(os.path.join(paths[CORRUPT], f) for f in os.listdir(paths[CORRUPT]) if f.endswith(".mcap"))
    with open(mcap, "r+b") as fh:                              # cut short at 60 %: truncated
        fh.truncate(int(os.path.getsize(mcap) * 0.6))
    oracle = {name: str(base / "single" / name) for name in paths if name != DELETED}
    rcs = _single_replays([["replay", paths[name], out, "--params", params[name.split("/")[0]], "--estimates-only",
                            "-q"] for name, out in oracle.items()])
    assert rcs == [1 if name == CORRUPT else 0 for name in oracle]
    return dict(base=base, paths=paths, params=params, oracle=oracle)


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))


def _single_replays(jobs) -> list:
    """``rbd-estimator replay`` for each argument list of ``jobs``, in one process of their own (which, like
    the fleet's workers, loads the kernels from the cache :func:`_warm_cache` filled, whatever this process
    compiled for earlier tests); their exit statuses."""
    code = ("import json, sys\nfrom rbd_estimator import cli\n"
            "print(json.dumps([cli.main(a) for a in json.loads(sys.argv[1])]))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(jobs)], env=_env(), check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _warm_cache(base, params) -> None:
    """The replay's compiled kernels into the cache before this process or a worker uses them, by a
    replay in a process of its own: then every process loads the same machine code. On a cold cache
    (the first run after a source change: its stamp hashes every source file) this process and each
    worker would compile the kernels apart, and code compiled apart can differ in the last bits of
    its results (fastmath reassociation: ~1e-14 N·m), which a bit-for-bit comparison would see."""
    for k, p in enumerate(params):
        subprocess.run([sys.executable, "-m", "rbd_estimator.cli", "replay", os.path.join(ROOT, "test", "data",
                        "demo_humanoid"), str(base / f"warm{k}"), "--params", p, "--estimates-only", "-q"],
                       env=_env(), check=True, capture_output=True)


def _messages(bag: str) -> list:
    with Reader(bag) as r:
        return [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in r.messages()]


def _read_table(path: str):
    """The table as columns (pandas when installed, else pyarrow), and its schema."""
    import pyarrow.parquet as pq
    schema = pq.read_schema(path)
    if importlib.util.find_spec("pandas") is not None:
        import pandas
        df = pandas.read_parquet(path)
        return {c: df[c].to_numpy() for c in df.columns}, schema
    t = pq.read_table(path)
    return {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}, schema


def _stamp(m) -> int:
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def _check_table(path: str, messages: list, covariance: bool) -> None:
    """The table against the oracle bag's messages (decoded by rosbags), in the documented schema."""
    cols, schema = _read_table(path)
    meta = json.loads(schema.metadata[b"rbd_estimator"])
    joints, contacts = meta["joint_names"], meta["contact_names"]
    assert meta["schema_version"] == 1 and len(joints) == 22 and contacts == ["l_foot", "r_foot"]
    assert meta["offset_names"] == []                     # no offset tracked: no offset column (below)
    axes = ["fx", "fy", "fz", "tx", "ty", "tz"]
    expected = (["time_ns", "stamp_ns", "estimated", "reason"] + [f"tau/{j}" for j in joints]
                + [f"wrench/{c}/{a}" for c in contacts for a in axes] + [f"tau_var/{j}" for j in joints]
                + [f"wrench_var/{c}/{a}" for c in contacts for a in axes] + ["chi2", "dof", "condition"]
                + [f"in_contact/{c}" for c in contacts] + ["subset", "plan_missing", "excluded"])
    assert schema.names == expected
    types = {f.name: f.type for f in schema}
    assert types["time_ns"] == pa.int64() and types["estimated"] == pa.bool_() and types["dof"] == pa.int32()
    assert pa.types.is_dictionary(types["reason"]) and types[f"tau/{joints[0]}"] == pa.float64()
    by = {}                                     # topic (after the node's prefix) → {stamp: message} or [messages]
    for topic, msgtype, _, raw in messages:
        m, key = TS.deserialize_cdr(raw, msgtype), topic[len(PREFIX):]
        if msgtype == cdr.FLOAT64_MULTI_ARRAY:            # no header: in the order of the ticks
            by.setdefault(key, []).append(m)
        else:
            by.setdefault(key, {})[_stamp(m)] = m
    est = cols["estimated"].astype(bool)
    stamps = cols["stamp_ns"][est]
    assert est.all() and len(stamps) == len(by["joint_torques"]) > 50
    assert list(by["joint_torques"][stamps[0]].name) == joints
    tau = np.column_stack([cols[f"tau/{j}"] for j in joints])
    assert np.array_equal(tau, np.array([by["joint_torques"][s].effort for s in stamps]))
    for c in contacts:
        w = np.column_stack([cols[f"wrench/{c}/{a}"] for a in axes])
        got = [by[f"contact_wrenches/{c}"][s].wrench for s in stamps]
        assert np.array_equal(w, np.array([[x.force.x, x.force.y, x.force.z, x.torque.x, x.torque.y, x.torque.z]
                                           for x in got]))
        wv = np.column_stack([cols[f"wrench_var/{c}/{a}"] for a in axes])
        if covariance:
            cov = [np.array(m.data).reshape(6, 6) for m in by[f"contact_wrenches/{c}/covariance"]]
            assert np.array_equal(wv, np.array([np.diag(C) for C in cov]))
        else:
            assert np.isnan(wv).all()
        assert cols[f"in_contact/{c}"].all()
    tv = np.column_stack([cols[f"tau_var/{j}"] for j in joints])
    if covariance:
        assert np.array_equal(tv, np.array([by["joint_torque_variance"][s].effort for s in stamps]))
    else:
        assert np.isnan(tv).all() and "joint_torque_variance" not in by
    assert (cols["dof"] > 0).all() and (cols["chi2"] > 0).all() and np.isfinite(cols["condition"]).all()
    assert set(cols["plan_missing"]) == set(cols["reason"]) == set(cols["excluded"]) == {""}
    assert set(cols["subset"]) == {"l_foot+r_foot"}
    return tau


# ============================================================================ the scenario, per engine
def _run(rec, out: str, engine: str, **kw) -> dict:
    """The fleet run; the first recording to finish deletes DELETED (not started yet: two workers take the
    recordings in order, and it is the last)."""
    deleted = rec["paths"][DELETED]

    def on_row(row):
        if os.path.exists(deleted):
            shutil.rmtree(deleted)
    rows = run_fleet([str(rec["base"] / "fleet")], out, [f"{r}={p}" for r, p in rec["params"].items()],
                     engine=engine, progress=False, on_row=on_row, **kw)
    return {r["recording"]: r for r in rows}


def _restore(rec) -> None:
    """DELETED back in place (a run deletes it)."""
    path, backup = rec["paths"][DELETED], str(rec["base"] / "deleted_backup")
    if not os.path.exists(backup):
        shutil.copytree(path, backup)
    elif not os.path.exists(path):
        shutil.copytree(backup, path)


def _check_run(rec, out: str, rows: dict, crashed: str) -> None:
    """Every good recording equals its single replay; the corrupt one partial, the deleted one failed,
    the killed one retried; no temporary output left; the summary and the report written."""
    assert sorted(rows) == sorted(rec["paths"])
    assert rows[DELETED]["status"] == "failed" and "does not exist" in rows[DELETED]["reason"]
    assert not os.path.exists(os.path.join(out, DELETED))
    assert rows[CORRUPT]["status"] == "partial" and "truncated or corrupt" in rows[CORRUPT]["reason"]
    assert os.path.exists(crashed) and rows[KILLED]["attempts"] == 2
    for name, single in rec["oracle"].items():
        row = rows[name]
        assert row["status"] == ("partial" if name == CORRUPT else "done"), (name, row)
        folder = os.path.join(out, name)
        assert os.path.exists(os.path.join(folder, MARKER))
        fleet_msgs, single_msgs = _messages(os.path.join(folder, "estimates")), _messages(single)
        diff = next((k for k, (a, b) in enumerate(zip(fleet_msgs, single_msgs)) if a != b), None)
        assert diff is None and len(fleet_msgs) == len(single_msgs) > 100, (    # byte for byte, in order
            name, row, len(fleet_msgs), len(single_msgs), diff, diff is not None and fleet_msgs[diff][:3],
            diff is not None and single_msgs[diff][:3])
        tau = _check_table(os.path.join(folder, "ticks.parquet"), single_msgs, name.startswith("alpha"))
        peak = np.abs(tau).max(axis=0)
        assert row["ticks"] == row["estimates"] == len(tau) and row["ticks_without_estimate"] == 0
        assert list(row["peak_abs_tau"].values()) == peak.tolist()
        assert row["time_in_subset"] == {"l_foot+r_foot": pytest.approx((len(tau) - 1) * 1e-3)}   # 1 kHz
        assert row["robot"] == name.split("/")[0] and row["model"] == "rbd_humanoid"
        assert row["offset_final"] == row["offset_peak_abs"] == {}       # nothing tracked (test_fleet_offsets.py)
    # the recording's span: the robot description 1 ms before the first step to the last joint state,
    # logged 0.3 ms after its stamp (scripts/make_demo_bag.py)
    assert rows["alpha/r00"]["duration_s"] == pytest.approx((STEPS - 1) * 1e-3 + 1.3e-3)
    assert not os.path.exists(os.path.join(out, PARTIAL))
    import pyarrow.parquet as pq
    summary = pq.read_table(os.path.join(out, "fleet_summary.parquet")).to_pylist()
    assert [r["recording"] for r in summary] == sorted(rec["paths"])
    s = {r["recording"]: r for r in summary}
    assert s[CORRUPT]["status"] == "partial" and s[KILLED]["attempts"] == 2
    assert dict(s["beta/r01"]["peak_abs_tau"]) == rows["beta/r01"]["peak_abs_tau"]
    assert os.path.getsize(os.path.join(out, "fleet_report.png")) > 10_000


def _check_rerun(rec, out: str, engine: str, **kw) -> None:
    """A second run skips every recording with outputs (no file touched); with the deleted recording
    back, a third replays it alone."""
    stamps = {n: os.stat(os.path.join(out, n, MARKER)).st_mtime_ns for n in rec["oracle"]}
    rows = _run(rec, out, engine, **kw)
    assert sorted(rows) == sorted(rec["oracle"]) and DELETED not in rows          # gone from the fleet
    assert all(r["status"] == "skipped" for r in rows.values())
    assert rows[CORRUPT]["previous_status"] == "partial" and rows[KILLED]["attempts"] == 2
    assert stamps == {n: os.stat(os.path.join(out, n, MARKER)).st_mtime_ns for n in rec["oracle"]}
    _restore(rec)                                            # the command line this time
    argv = ["replay-fleet", str(rec["base"] / "fleet"), "-o", out, "--engine", engine, "--no-report", "-q"]
    argv += [a for r, p in rec["params"].items() for a in ("--params", f"{r}={p}")]
    assert cli.main(argv + [a for k, v in kw.items() for a in (f"--{k}", str(v))]) == 0
    import pyarrow.parquet as pq
    rows = pq.read_table(os.path.join(out, "fleet_summary.parquet")).to_pylist()
    assert [(r["recording"], r["status"]) for r in rows if r["status"] != "skipped"] == [(DELETED, "done")]


def test_local_engine(recordings, tmp_path, monkeypatch):
    """The default engine (ProcessPoolExecutor, two workers, no Ray): the worker replaying KILLED kills
    itself once (SIGKILL, mid-replay): the broken pool's tasks run again, the killed one as its 2nd attempt."""
    _restore(recordings)
    flag = str(tmp_path / "crashed")
    monkeypatch.setenv(CRASH_ENV, f"{KILLED}:{flag}")
    out = str(tmp_path / "out")
    rows = _run(recordings, out, "local", workers=2)
    _check_run(recordings, out, rows, flag)
    _check_rerun(recordings, out, "local", workers=2)


def test_local_engine_fails_a_recording_that_kills_every_worker(recordings, tmp_path, monkeypatch):
    """A recording whose worker dies every time: reported after 1 + max_retries attempts; the
    recordings replayed beside it when the pool broke are run again alone and complete."""
    fleet = tmp_path / "fleet"
    for name in ("alpha/r00", "alpha/r01", "alpha/r02"):
        shutil.copytree(recordings["paths"][name], fleet / name)
    monkeypatch.setenv(CRASH_ENV, "r00:")                    # no flag file: every time
    rows = run_fleet([str(fleet)], str(tmp_path / "out"), [PARAMS], workers=2, max_retries=1, progress=False,
                     report=False)
    status = {r["recording"]: (r["status"], r.get("reason", "")) for r in rows}
    assert status["r00"] == ("failed", "worker died: the worker process died in each of its 2 attempts")
    assert status["r01"] == status["r02"] == ("done", "")


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory):
    """One local Ray (2 CPUs) for the module; its workers kill themselves once on KILLED (the hook's
    variable is set for Ray's workers only)."""
    ray = pytest.importorskip("ray")
    flag = str(tmp_path_factory.mktemp("ray") / "crashed")
    path = os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path, CRASH_ENV: f"{KILLED}:{flag}"}})
    yield flag
    ray.shutdown()


def test_ray_engine(recordings, ray_session, tmp_path):
    """``--engine ray``: the same outputs; Ray runs the killed worker's task again (max_retries)."""
    _restore(recordings)
    out = str(tmp_path / "out")
    rows = _run(recordings, out, "ray")
    _check_run(recordings, out, rows, ray_session)
    _check_rerun(recordings, out, "ray")

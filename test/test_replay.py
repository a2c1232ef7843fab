"""Offline replay (``rbd-estimator replay``) of the shipped demo recording, ``test/data/demo_humanoid``.

The recording (``scripts/make_demo_bag.py``: 1 s of the demo humanoid at 1 kHz, sensor noise as in
the demo, ground truth on ``/truth/...``) is replayed through the node's tick logic and compared with

* the ground truth, to the demo's accuracy;
* the estimates the live :class:`~rbd_estimator.node.EstimatorNode` publishes when the same messages
  are published to it (real rclpy on the loopback, in-process, as in ``test_node.py``): equal to
  1e-12;
* itself through MCAP and sqlite3 storage.

Truncated and corrupt recordings must stop with a clear error and leave a valid partial bag.
"""
from __future__ import annotations

import os
import shutil
import struct

import numpy as np
import pytest

rosbags = pytest.importorskip("rosbags")

from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_estimator import cli  # noqa: E402
from rbd_estimator.estimation import SensorConfig  # noqa: E402
from rbd_estimator.replay import ReplayError, load_config, replay_bag  # noqa: E402
from rbd_estimator.runtime import cdr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAG = os.path.join(ROOT, "test", "data", "demo_humanoid")
PARAMS = os.path.join(ROOT, "config", "humanoid.yaml")
URDF = os.path.join(ROOT, "urdf", "humanoid.urdf")
TS = get_typestore(Stores.ROS2_JAZZY)
WARMUP = 50            # estimates before the acceleration filter has settled (50 ms at 1 kHz)


def stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def read_bag(path, prefix):
    """``{stamp: tau}`` and ``{contact: {stamp: wrench}}`` of ``prefix/joint_torques`` and
    ``prefix/contact_wrenches/*`` (decoded by rosbags, not by our codecs)."""
    tau, wrenches = {}, {}
    with Reader(path) as r:
        conns = [c for c in r.connections if c.topic.startswith(prefix + "/")]
        for c, _, raw in r.messages(connections=conns):
            m = TS.deserialize_cdr(raw, c.msgtype)
            if c.topic == prefix + "/joint_torques":
                tau[stamp(m)] = (list(m.name), np.array(m.effort))
            elif c.msgtype == cdr.WRENCH_STAMPED:
                f, t = m.wrench.force, m.wrench.torque
                wrenches.setdefault(c.topic.rsplit("/", 1)[1], {})[stamp(m)] = (
                    m.header.frame_id, np.array([f.x, f.y, f.z, t.x, t.y, t.z]))
    return tau, wrenches


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("replay") / "out")
    summary, rep = replay_bag(BAG, out, load_config(PARAMS), collect=True)
    return out, summary, rep


# ============================================================================ the recording
def test_shipped_recording_is_small_and_complete():
    size = sum(os.path.getsize(os.path.join(BAG, f)) for f in os.listdir(BAG))
    assert size < 3e6
    with Reader(BAG) as r:
        topics = {c.topic: c.msgcount for c in r.connections}
    assert topics["/joint_states"] == topics["/imu"] == topics["/truth/joint_torques"] == 1001
    assert topics["/robot_description"] == 1
    assert sum(1 for t in topics if t.startswith("/ft/")) == 6


# ============================================================================ truth
def test_replay_matches_ground_truth_to_the_demos_accuracy(replayed):
    out, summary, rep = replayed
    assert not summary.error and summary.estimates == 1000 and summary.ticks == 1000
    assert all(sum(r.values()) == 0 for r in summary.rejected.values())
    truth_tau, truth_w = read_bag(BAG, "/truth")
    res = rep.results()
    assert list(res["joint_names"]) == truth_tau[res["stamps"][0]][0]
    T = np.array([truth_tau[s][1] for s in res["stamps"]])
    W = np.array([[truth_w[c][s][1] for c in res["contact_names"]] for s in res["stamps"]])
    tau_rms = np.sqrt(np.mean((res["tau"][WARMUP:] - T[WARMUP:]) ** 2, axis=0))
    w_rms = np.sqrt(np.mean((res["wrenches"][WARMUP:] - W[WARMUP:]) ** 2, axis=0))
    # the demo's accuracy with its sensor noise (noise x1) and 100 Hz acceleration filter
    assert tau_rms.max() < 0.25, tau_rms
    assert tau_rms.max() < 0.01 * np.sqrt(np.mean(T ** 2, axis=0)).max()
    assert w_rms[:, :3].max() < 8.0 and w_rms[:, 3:].max() < 0.6, w_rms
    # and what was written to the bag is what the replay computed
    tau, wrenches = read_bag(out, "/rbd_estimator")
    assert len(tau) == 1000 and all(len(v) == 1000 for v in wrenches.values())
    for k, s in enumerate(res["stamps"]):
        assert np.array_equal(tau[s][1], res["tau"][k])
        for i, c in enumerate(res["contact_names"]):
            assert np.array_equal(wrenches[c][s][1], res["wrenches"][k, i])
    assert wrenches["l_foot"][res["stamps"][0]][0] == "l_sole"


def test_results_are_made_once_per_number_of_rows(tmp_path):
    """``Replayer.results()`` (and ``times``/``stamps``/``tau``/``wrenches``, which read it) is made from
    the tick log once, not on every access (loops over ``rep.tau[i]`` were quadratic), and made again
    when rows were logged since."""
    summary, rep = replay_bag(BAG, str(tmp_path / "out"), load_config(PARAMS), collect=True, copy_inputs=False)
    res = rep.results()
    assert rep.results() is res and rep.tau is res["tau"] and rep.times is res["times"]
    assert len(rep.tau) == summary.estimates and rep.wrenches.shape == (summary.estimates, 2, 6)
    rep.log.add_tick(int(rep.times[-1]) + 1, int(rep.stamps[-1]) + 1, None, "test row", [True, True], "l_foot+r_foot",
                     (), ())
    assert rep.results() is not res and np.array_equal(rep.tau, res["tau"])      # the new row has no estimate
    assert rep.log.columns()["reason"][-1] == "test row"


def test_output_bag_has_input_and_estimate_topics(replayed):
    out, summary, _ = replayed
    with Reader(out) as r:
        topics = {c.topic: (c.msgtype, c.msgcount) for c in r.connections}
    assert topics["/joint_states"] == (cdr.JOINT_STATE, 1001)
    assert topics["/imu"][1] == 1001 and topics["/robot_description"][1] == 1
    assert topics["/rbd_estimator/joint_torques"] == (cdr.JOINT_STATE, 1000)
    assert topics["/rbd_estimator/contact_wrenches/r_foot"] == (cdr.WRENCH_STAMPED, 1000)
    assert not any(t.startswith("/truth") for t in topics)     # the node does not read them
    assert summary.messages_written == sum(n for _, n in topics.values())


def test_output_bag_has_the_uncertainty_topics(replayed):
    """Issue 20: next to the estimates, every tick's joint-torque variances (``sensor_msgs/JointState``
    stamped like the torques) and each contact wrench's 6 × 6 covariance (``Float64MultiArray``,
    labelled dimensions), decoded by rosbags: symmetric, positive definite, and the last ones what
    the estimator computed."""
    out, summary, rep = replayed
    var, cov = {}, {}
    with Reader(out) as r:
        topics = {c.topic: (c.msgtype, c.msgcount) for c in r.connections}
        conns = [c for c in r.connections if "variance" in c.topic or "covariance" in c.topic]
        for c, _, raw in r.messages(connections=conns):
            m = TS.deserialize_cdr(raw, c.msgtype)
            if c.topic.endswith("variance") and not c.topic.endswith("covariance"):
                var[stamp(m)] = (list(m.name), np.array(m.effort))
            else:
                assert [(d.label, d.size, d.stride) for d in m.layout.dim] == [("fx fy fz tx ty tz", 6, 36),
                                                                              ("fx fy fz tx ty tz", 6, 6)]
                cov.setdefault(c.topic.split("/")[-2], []).append(np.array(m.data).reshape(6, 6))
    assert topics["/rbd_estimator/joint_torque_variance"] == (cdr.JOINT_STATE, 1000)
    assert topics["/rbd_estimator/contact_wrenches/l_foot/covariance"] == (cdr.FLOAT64_MULTI_ARRAY, 1000)
    res = rep.results()
    assert sorted(var) == sorted(res["stamps"]) and var[res["stamps"][0]][0] == list(res["joint_names"])
    assert all(np.all(v > 0) for _, v in var.values())
    for C in cov["l_foot"] + cov["r_foot"]:
        np.testing.assert_allclose(C, C.T, rtol=0, atol=1e-12 * np.abs(C).max())
        assert np.linalg.eigvalsh(C).min() > 0
    last = rep.session.estimator.result
    np.testing.assert_array_equal(var[res["stamps"][-1]][1], last.tau_variance)
    np.testing.assert_array_equal(cov["r_foot"][-1], last.contact_covariance[1])


def test_sqlite3_round_trip_gives_the_same_estimates(replayed, tmp_path):
    out, _, rep = replayed
    db = str(tmp_path / "out.db3")
    assert cli.main(["replay", out, db, "--params", PARAMS, "--robot-description", URDF, "-q"]) == 0
    assert any(f.endswith(".db3") for f in os.listdir(db))
    again, _ = read_bag(db, "/rbd_estimator")
    first, _ = read_bag(out, "/rbd_estimator")
    assert again.keys() == first.keys()
    assert all(np.array_equal(again[s][1], first[s][1]) for s in first)


def test_estimates_only_writes_the_same_estimates_and_nothing_else(replayed, tmp_path):
    out, _, _ = replayed
    only = str(tmp_path / "only")
    assert cli.main(["replay", BAG, only, "--params", PARAMS, "--estimates-only", "-q"]) == 0
    with Reader(only) as r:
        topics = {c.topic for c in r.connections}
    assert topics and all(t.startswith("/rbd_estimator/") for t in topics), topics
    tau, wrenches = read_bag(only, "/rbd_estimator")
    tau_all, wrenches_all = read_bag(out, "/rbd_estimator")
    assert tau.keys() == tau_all.keys() and wrenches.keys() == wrenches_all.keys()
    assert all(np.array_equal(tau[s][1], tau_all[s][1]) for s in tau)
    assert all(np.array_equal(wrenches[c][s][1], wrenches_all[c][s][1]) for c in wrenches for s in wrenches[c])


# ============================================================================ the live node
def recorded_steps(n_steps: int, change=None) -> list:
    """The first ``n_steps`` joint states of the recording, each with the sensor messages before it:
    ``[[(topic, rclpy message), ...], ...]``; ``change(k, topic, msg)`` may alter a message."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Imu, JointState
    types = {cdr.JOINT_STATE: JointState, cdr.IMU: Imu, cdr.WRENCH_STAMPED: WrenchStamped}
    steps, cur = [], []
    with Reader(BAG) as r:
        conns = [c for c in r.connections if c.topic in ("/joint_states", "/imu") or c.topic.startswith("/ft/")]
        for c, _, raw in r.messages(connections=conns):
            msg = deserialize_message(raw, types[c.msgtype])
            if change is not None:
                change(len(steps), c.topic, msg)
            cur.append((c.topic, msg))
            if c.topic == "/joint_states":
                steps.append(cur)
                cur = []
                if len(steps) == n_steps:
                    break
    return steps


def node_parameters(**overrides) -> dict:
    """The humanoid's parameter file as node parameters, the URDF inline, no cross-check, and sensor
    timeouts long enough for a test process's scheduling (no sensor was ever stale in the recording)."""
    cfg = SensorConfig.from_yaml(PARAMS)
    flat = cfg.to_parameters()
    flat.update(cfg.node)
    flat.update(robot_description=open(URDF, encoding="utf-8").read(), oracle_every_n=0, prepare_fallbacks=False)
    for k in list(flat):
        if k.endswith(".timeout"):
            flat[k] = 5.0
    flat.update(overrides)
    return flat


def test_replay_equals_the_live_node_on_the_same_messages(replayed):
    """The node (real rclpy, loopback) is fed the recording's messages in lockstep; every estimate
    it publishes equals the replay's for the same stamp."""
    pytest.importorskip("rclpy")
    from lockstep import LockstepNode, stamp as msg_stamp
    from rbd_estimator.runtime.session import Session

    _, _, rep = replayed
    res = rep.results()
    n_steps = 150
    steps = recorded_steps(n_steps)
    with LockstepNode(node_parameters(), res["contact_names"], steps[0]) as n:
        # one runtime: every message goes through a Session's handlers in both (issue 19)
        assert type(n.node.session) is Session and type(rep.session) is Session
        for k, step in enumerate(steps):
            assert n.step(step, expect_estimate=k > 0) or k == 0, f"no estimate {k} ({msg_stamp(step[-1][1])})"
        got_tau, got_w = n.tau, n.wrenches
    assert len(got_tau) == n_steps - 1
    index = {int(s): k for k, s in enumerate(res["stamps"])}
    worst = 0.0
    for s, tau in got_tau.items():
        k = index[s]
        worst = max(worst, float(np.max(np.abs(tau - res["tau"][k]))))
        for i, c in enumerate(res["contact_names"]):
            worst = max(worst, float(np.max(np.abs(got_w[c][s] - res["wrenches"][k, i]))))
    assert worst <= 1e-12, worst


# ============================================================================ damaged recordings
def _damaged(tmp_path, how):
    bag = tmp_path / f"{how}_bag"
    shutil.copytree(BAG, bag)
    mcap = next(p for p in bag.iterdir() if p.suffix == ".mcap")
    data = bytearray(mcap.read_bytes())
    if how == "truncated":
        del data[int(len(data) * 0.6):]
    else:
        mid = len(data) // 2
        data[mid:mid + 256] = bytes(256)
    mcap.write_bytes(bytes(data))
    return str(bag)


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_damaged_recording_gives_clear_error_and_valid_partial_bag(tmp_path, capsys, how):
    bag = _damaged(tmp_path, how)
    out = str(tmp_path / "out")
    plot = str(tmp_path / "plot.png")
    rc = cli.main(["replay", bag, out, "--params", PARAMS, "--plot", plot])
    cap = capsys.readouterr()
    assert rc == 1
    assert "truncated or corrupt" in cap.err and "reading stopped after" in cap.err
    assert "%" in cap.err                                    # the progress bar
    assert "ticks:" in cap.out and "joint_states" in cap.out
    tau, wrenches = read_bag(out, "/rbd_estimator")          # a valid bag, readable by rosbags
    assert 100 < len(tau) < 1000
    assert all(len(v) == len(tau) for v in wrenches.values())
    truth, _ = read_bag(BAG, "/truth")
    assert set(tau) <= set(truth)
    assert os.path.getsize(plot) > 0
    with Reader(out) as r:
        assert r.message_count == sum(1 for _ in r.messages())


def test_unreadable_input_and_existing_output_are_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli.main(["replay", str(tmp_path / "empty"), str(tmp_path / "o"), "--params", PARAMS]) == 2
    assert "cannot open input bag" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ReplayError, match="exists already"):
        replay_bag(BAG, str(tmp_path / "empty"), load_config(PARAMS))


# ============================================================================ node parameters in the replay
def _config(**overrides):
    cfg = SensorConfig.from_yaml(PARAMS)
    flat = cfg.to_parameters()
    flat.update(cfg.node)
    flat.update(overrides)
    return SensorConfig.from_parameters(flat)


def test_timer_tick_and_ft_offsets_parameters_are_honoured(replayed, tmp_path):
    _, _, plain = replayed
    base = plain.results()
    # tick: timer at 500 Hz of log time, stamped with the latest joint state's stamp
    s, rep = replay_bag(BAG, str(tmp_path / "timer"), _config(tick="timer", rate_hz=500.0), collect=True)
    res = rep.results()
    assert not s.error and abs(s.estimates - 500) <= 2
    assert np.all(np.diff(res["times"]) >= 2_000_000) and set(res["stamps"].tolist()) <= set(base["stamps"].tolist())
    # the timer ticks between messages: the latest IMU may be one step newer than the joint state
    index = {int(t): k for k, t in enumerate(base["stamps"])}
    diff = np.array([res["tau"][k] - base["tau"][index[int(st)]] for k, st in enumerate(res["stamps"])])
    assert np.sqrt(np.mean(diff[WARMUP // 2:] ** 2)) < 0.5, np.abs(diff).max()
    # ft_offsets.<sensor>: subtracted from every reading, as in the node
    off = [5.0, -3.0, 10.0, 0.5, 0.2, -0.1]
    s, rep = replay_bag(BAG, str(tmp_path / "offsets"), _config(**{"ft_offsets.l_foot_ft_sensor": off}), collect=True)
    assert not s.error
    assert np.array_equal(rep.inputs.ft_matrix[rep.inputs.ft_names.index("l_foot_ft_sensor")],
                          rep.inputs.ft_raw_matrix[rep.inputs.ft_names.index("l_foot_ft_sensor")] - off)
    assert np.abs(rep.results()["tau"] - base["tau"]).max() > 1e-3
    with pytest.raises(ReplayError, match="no force-torque sensor 'nope'"):
        replay_bag(BAG, str(tmp_path / "bad"), _config(**{"ft_offsets.nope": [0.0] * 6}))


def _eventful(tmp_path):
    """The shipped recording with events the compiled loop hands back to Python: a force-torque
    sensor silent for 100 ms (DEGRADED plan, then back), non-finite and truncated sensor messages,
    joint states with the names in another order, with a stamp going backwards, with a NaN."""
    from rosbags.rosbag2 import Writer
    bag = str(tmp_path / "eventful")
    rng = np.random.default_rng(2)
    with Reader(BAG) as r:
        conns = list(r.connections)
        msgs = [(c, t, bytes(raw)) for c, t, raw in r.messages()]
    t0 = min(t for _, t, _ in msgs)
    with Writer(bag, version=9) as w:
        out = {c.id: w.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest) for c in conns}
        js_count = 0
        for c, t, raw in msgs:
            ms = (t - t0) // 1_000_000
            if c.topic == "/ft/l_foot_ft_sensor" and 300 <= ms < 400:
                continue                                            # the sensor goes silent
            if c.topic == "/ft/r_arm_ft_sensor" and ms in (120, 121, 500):
                raw = raw[:-8] + struct.pack("<d", np.nan)          # non-finite torque z
            if c.topic == "/imu" and ms in (200, 650):
                raw = raw[:40]                                      # undecodable
            if c.topic == "/joint_states":
                js_count += 1
                m = TS.deserialize_cdr(raw, c.msgtype)
                if js_count in (600, 601, 602):                      # names in another order
                    p = rng.permutation(len(m.name))
                    m.name, m.position, m.velocity = [m.name[k] for k in p], m.position[p], m.velocity[p]
                if js_count == 700:
                    m.header.stamp.nanosec -= 5_000_000             # stamp going backwards
                if js_count == 800:
                    m.velocity = m.velocity.copy()
                    m.velocity[3] = np.nan
                raw = TS.serialize_cdr(m, c.msgtype)
            w.write(out[c.id], t, raw)
    return bag


def test_compiled_batch_loop_and_per_message_path_agree(tmp_path, monkeypatch):
    """The replay's compiled loop (rbd_estimator.runtime.batch) against the per-message path the live
    node takes (SensorInputs.on_message + TickCore.tick), on a recording full of events: the same
    output bag, message for message, and the same counters."""
    from rbd_estimator.replay import Replayer
    bag = _eventful(tmp_path)
    fast, rep_fast = replay_bag(bag, str(tmp_path / "fast"), load_config(PARAMS), compress=False, collect=True)
    monkeypatch.setattr(Replayer, "_batch_ok", lambda self: False)
    slow, rep_slow = replay_bag(bag, str(tmp_path / "slow"), load_config(PARAMS), compress=False, collect=True)
    assert not fast.error and not slow.error
    assert fast.undecodable == slow.undecodable == {"/imu": 2}
    assert fast.rejected == slow.rejected
    rej = fast.rejected
    assert rej["joint_states"] == {"stamp_not_increasing": 1, "non_finite": 1}
    assert rej["r_arm_ft_sensor"] == {"non_finite": 3}
    assert (fast.ticks, fast.estimates, fast.messages_written) == (slow.ticks, slow.estimates, slow.messages_written)
    assert fast.ticks == 998                                     # 1000 joint states, two rejected
    assert rep_fast.plans.lookup(frozenset({"l_foot_ft_sensor"}))[0] is not None     # the degraded plan was used
    with Reader(str(tmp_path / "fast")) as a, Reader(str(tmp_path / "slow")) as b:
        ma = [(c.topic, t, bytes(raw)) for c, t, raw in a.messages()]
        mb = [(c.topic, t, bytes(raw)) for c, t, raw in b.messages()]
    assert len(ma) == len(mb) and ma == mb
    degraded = [m for m in ma if m[0] == "/rbd_estimator/joint_torques"]
    assert len(degraded) == fast.estimates
    # and the same tick log (the fleet's table: residual, condition, plan, reasons), row for row
    a, b = rep_fast.log.columns(), rep_slow.log.columns()
    assert len(a["time_ns"]) == fast.ticks and int(a["estimated"].sum()) == fast.estimates
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k
    assert set(a["plan_missing"]) >= {"", "l_foot_ft_sensor"} and (a["chi2"][a["estimated"]] > 0).all()


def test_missing_joint_states_topic_is_explained(tmp_path):
    with pytest.raises(ReplayError, match="no '/robot1/joint_states'.*its topics: .*/imu"):
        replay_bag(BAG, str(tmp_path / "o"), _config(joint_states_topic="joint_states"), namespace="/robot1")
    assert not (tmp_path / "o").exists()

"""Reconfiguration without a gap (issue 19): the node (``python -m rbd_estimator.node``, its own
process, as deployed) is driven at 2 kHz with the shipped humanoid and every sensor flowing from
this process, while its sensor set changes three times through parameters (drop
``l_arm_ft_sensor``, bring it back, drop ``r_arm_ft_sensor``).

Asserted: no sensor is ever declared missing (every sensor was being published the whole time),
the reconfigurations are applied, the joint states lost around each change are no more than
elsewhere (the windows of the changes against the rest of the run, per joint state), and every
estimate is finite. The readings are published by a process of their own
(``python -m rbd_estimator.ros.demo_runner``), so that this process (service calls, receiving the
estimates) cannot delay and bunch them. The sensor timeouts are the stall-tolerant 5 s of the other node tests, so a
scheduling stall of the CI machine is not taken for a lost sensor; a sensor that reconfiguration
itself made "missing" (the old behaviour when a sensor came back) is reported whatever the timeout.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

from rcl_interfaces.srv import SetParametersAtomically  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from rbd_estimator.estimation import SensorConfig  # noqa: E402
from rbd_estimator.ros.demo_runner import Client, NodeProcess  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMANOID = os.path.join(ROOT, "urdf", "humanoid.urdf")
HUMANOID_YAML = os.path.join(ROOT, "config", "humanoid.yaml")
RATE = 2000.0
SECONDS = 6.0
#: a change's window: from the call to this long after its answer
AFTER = 0.05


def _tolerant_overrides() -> dict:
    with open(HUMANOID_YAML, encoding="utf-8") as fh:
        p = yaml.safe_load(fh)["rbd_estimator"]["ros__parameters"]
    ft = {n: dict(v, timeout=5.0, topic=f"ft/{n}") for n, v in p["ft"].items()}    # the client's topics
    imu = dict(p["imu"], timeout=5.0, topic="imu")
    return {"ft": ft, "imu": imu, "oracle_every_n": 0, "diagnostics_period": 0.5}


def _set(cli, values: dict) -> tuple:
    """Set (or delete: None) parameters atomically, as a user drops or restores a sensor (its list
    entry and its parameters together), through the service client ``cli`` made before the run (a
    client made per call stalls this process, and with it the publisher, for milliseconds)."""
    req = SetParametersAtomically.Request()
    req.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
    t0 = time.time_ns()
    fut = cli.call_async(req)
    end = time.monotonic() + 60.0
    while not fut.done() and time.monotonic() < end:
        time.sleep(0.002)
    assert fut.done(), "no answer from set_parameters_atomically within 60 s"
    return t0, time.time_ns(), fut.result().result


def _stop(client: Client, proc: NodeProcess) -> None:
    """Take the node through deactivate, cleanup and shutdown (whatever state a failed test left),
    then stop the client and the process."""
    for label in ("deactivate", "cleanup", "shutdown"):
        try:
            client.transition(label)
        except Exception:  # noqa: BLE001 - teardown of a failed test
            pass
    client.close()
    proc.stop()


@pytest.fixture(scope="module")
def ros():
    rclpy.init()
    yield
    rclpy.try_shutdown()


def test_three_sensor_set_changes_at_2khz_lose_nothing(ros):
    from rbd_estimator.demo import simulate
    xml = open(HUMANOID, encoding="utf-8").read()
    config = SensorConfig.from_yaml(HUMANOID_YAML)
    base = simulate(xml, config, 0.5, RATE, noise=0.0, log=lambda s: None)
    ns = f"/rbd_reconf_{os.getpid()}"
    proc = NodeProcess(xml, HUMANOID_YAML, ns, overrides=_tolerant_overrides())
    client = Client(ns, base.joint_names, base.ft_names, base.contact_names)
    fqn = f"{ns}/rbd_estimator"
    try:
        assert client.transition("configure"), proc.log_tail()
        assert client.transition("activate"), proc.log_tail()
        assert client.wait_matched(30.0), proc.log_tail()
        end = time.monotonic() + 120.0                    # the single-loss plans, prepared in the background
        while time.monotonic() < end and "fallback/r_arm_ft_sensor" not in client.diagnostics:
            time.sleep(0.05)
        assert "fallback/r_arm_ft_sensor" in client.diagnostics, proc.log_tail()
        cli = client.node.create_client(SetParametersAtomically, f"{fqn}/set_parameters_atomically")
        assert cli.wait_for_service(timeout_sec=30.0)
        out_npz = proc.params_path.replace(".yaml", "_published.npz")
        rec_npz = proc.params_path.replace(".yaml", "_recording.npz")
        np.savez(rec_npz, joint_names=np.array(base.joint_names), ft_names=np.array(base.ft_names), q=base.q,
                 dq=base.dq, ft=base.ft, imu_orientation=np.array([i[0] for i in base.imu]),
                 imu_angular_velocity=np.array([i[1] for i in base.imu]),
                 imu_linear_acceleration=np.array([i[2] for i in base.imu]))
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        publisher = subprocess.Popen([sys.executable, "-m", "rbd_estimator.ros.demo_runner", ns, rec_npz,
                                      str(RATE), str(SECONDS), out_npz],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert publisher.stdout.readline().strip() == "ready"
        publisher.stdin.write("go\n")            # ready: the node's subscriptions matched its publishers
        publisher.stdin.flush()
        names = list(config.sensor_names)
        ft_all = [s.name for s in config.ft_sensors]
        params = {n: {f"ft.{n}.{k}": v for k, v in proc.params["ft"][n].items()} for n in ft_all}

        def drop(name):
            return {"ft_sensors": [n for n in ft_all if n != name], **{k: None for k in params[name]}}

        changes = []
        for k, values in enumerate([drop("l_arm_ft_sensor"), {"ft_sensors": ft_all, **params["l_arm_ft_sensor"]},
                                    drop("r_arm_ft_sensor")]):
            time.sleep(SECONDS / 4 - (0.2 if k == 0 else 0.0))
            t0, t1, res = _set(cli, values)
            assert res.successful, res.reason
            changes.append((t0, t1))
        assert publisher.wait(SECONDS * 10) == 0
        with np.load(out_npz) as published:
            stamps, sent = published["stamps"], published["sent"]
        os.unlink(out_npz)
        os.unlink(rec_npz)
        time.sleep(0.5)
        log = open(proc.log_path, encoding="utf-8", errors="replace").read()
        assert log.count("reconfigured: the new sensor set is in use") == 3, proc.log_tail(40)
        assert "missing" not in log, [line for line in log.splitlines() if "missing" in line]
        got = set(client.arrival)
        lost = np.array([s not in got for s in stamps.tolist()])
        near = np.zeros(len(sent), dtype=bool)
        for t0, t1 in changes:
            near |= (sent >= t0) & (sent <= t1 + int(AFTER * 1e9))
        lost_near, lost_far = lost[near].sum(), lost[~near].sum()
        if os.environ.get("RBD_DEBUG_RECONF"):            # where the lost ones are, relative to each change
            for t0, t1 in changes:
                w = (sent >= t0 - int(0.2e9)) & (sent <= t1 + int(0.3e9))
                print("change", (t1 - t0) * 1e-6, "ms; lost at ms from call:",
                      [round((x - t0) * 1e-6, 1) for x in sent[w & lost]])
        rate_far = lost_far / max(1, (~near).sum())
        # no more lost joint states around a change than elsewhere (the joint-state queue of 32 covers 16 ms at 2 kHz)
        assert lost_near <= 3 * rate_far * near.sum() + 10, (lost_near, near.sum(), lost_far, (~near).sum())
        assert len(got) > 0.5 * len(stamps), (len(got), len(stamps))
        tau = client.torques
        assert all(np.isfinite(t).all() for t in tau.values())
        assert all(np.isfinite(w).all() for by in client.wrenches.values() for w in by.values())
        print(f"\n2 kHz, 3 reconfigurations: {len(stamps)} joint states, {lost.sum()} without estimate "
              f"({lost_near} of {near.sum()} around the changes, {lost_far} of {(~near).sum()} elsewhere); "
              f"changes answered in {[round((b - a) * 1e-6, 1) for a, b in changes]} ms; sensors {names}")
    finally:
        _stop(client, proc)


def test_graph_after_launch_style_remapping(ros):
    """Started as a launch file starts it (``-r __node:=…``, ``-r __ns:=…``, a topic remap), the graph
    holds exactly the documented nodes (the node, and its hidden tick-thread helper ``_<name>_io``
    under its own name), publishers and subscriptions (docs/node.md, "The node in the graph")."""
    from rclpy.node import Node
    xml = open(HUMANOID, encoding="utf-8").read()
    config = SensorConfig.from_yaml(HUMANOID_YAML)
    ns, name = f"/rbd_graph_{os.getpid()}", "estimator"
    proc = NodeProcess(xml, HUMANOID_YAML, ns, overrides=_tolerant_overrides(), node_name=name,
                       ros_args=("-r", "joint_states:=/robot/joint_states"))
    client = Client(ns, [], [], [], node_name=name)
    probe = Node("graph_probe", namespace="/graph_probe")
    try:
        assert client.transition("configure"), proc.log_tail()
        assert client.transition("activate"), proc.log_tail()

        def graph():
            nodes = sorted(n for n, s in probe.get_node_names_and_namespaces()      # but the test's client
                           if s == ns and not n.startswith("rbd_demo_"))
            pubs = {n: sorted(t for t, _ in probe.get_publisher_names_and_types_by_node(n, ns)) for n in nodes}
            subs = {n: sorted(t for t, _ in probe.get_subscriber_names_and_types_by_node(n, ns)) for n in nodes}
            return nodes, pubs, subs

        fqn = f"{ns}/{name}"
        sensors = [f"{ns}/ft/{s.name}" for s in config.ft_sensors] + [f"{ns}/imu"]
        want_subs = {f"_{name}_io": sorted(["/robot/joint_states", *sensors]), name: []}
        want_pubs = {f"_{name}_io": ["/parameter_events"], name: sorted([f"{fqn}/joint_torques", f"{fqn}/contact_state", "/diagnostics",
                                                     f"{fqn}/contact_wrenches/l_foot",
                                                     f"{fqn}/contact_wrenches/r_foot", f"{fqn}/transition_event",
                                                     f"{fqn}/joint_torque_variance",
                                                     f"{fqn}/contact_wrenches/l_foot/covariance",
                                                     f"{fqn}/contact_wrenches/r_foot/covariance",
                                                     f"{fqn}/sensor_faults",
                                                     "/parameter_events", "/rosout"])}
        end = time.monotonic() + 30.0
        while time.monotonic() < end:
            nodes, pubs, subs = graph()
            if nodes == sorted([name, f"_{name}_io"]) and subs == want_subs and pubs == want_pubs:
                break
            time.sleep(0.1)
        assert nodes == sorted([name, f"_{name}_io"]), nodes
        assert subs == want_subs, subs
        assert pubs == want_pubs, pubs
        assert "already registered" not in open(proc.log_path, encoding="utf-8", errors="replace").read()
    finally:
        probe.destroy_node()
        _stop(client, proc)

"""Walking through the node (issue 11): commanded contacts switch the plan between two ticks.

The harness of ``test_node`` (real rclpy, loopback, lockstep publishing of a ground-truth
trajectory); the trajectory follows a gait schedule in which the feet in the air carry no wrench.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from groundtruth import Trajectory

rclpy = pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from rclpy.qos import QoSProfile, QoSReliabilityPolicy  # noqa: E402
from test_node import (HUMANOID, HUMANOID_YAML, TOL, Sim, params_from_yaml, read, ros,  # noqa: E402,F401
                       running, stamp_of, time_msg, unique_ns, wait_until)

from rbd_estimator import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.estimation.config import FTConfig  # noqa: E402


class WalkingSim(Sim):
    """A :class:`Sim` that also publishes the contact command of each frame and records ``~/contact_state``."""

    def __init__(self, ros, node, traj, ns):
        super().__init__(ros, node, traj, ns)
        qos = QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE)
        self.cmd = ros.client.create_publisher(JointState, f"{ns}/contact_command", qos)
        self._pubs.append(self.cmd)
        self.states = {}
        self._subs.append(ros.client.create_subscription(JointState, f"{ns}/rbd_estimator/contact_state",
                                                         self._on_state, qos))
        wait_until(lambda: self.cmd.get_subscription_count() > 0, 10.0)

    def _on_state(self, msg):
        self.states[stamp_of(msg)] = (list(msg.name), np.array(msg.position), np.array(msg.velocity))

    def command(self, k):
        if self.node.session.contacts.detector is not None:
            return                                   # detected: the node decides from the force-torque sensors
        active = self.traj.frame(k)["active"]          # every frame, as a controller publishing at its rate
        m = JointState()
        m.header.stamp = time_msg(self.traj.stamp(k))
        m.name = list(self.traj.est.contact_names)
        m.position = [1.0 if a else 0.0 for a in active]
        before = self.node.session.contacts.commands
        self.cmd.publish(m)
        assert wait_until(lambda: self.node.session.contacts.commands > before, 10.0), "contact command not taken"

    def walk(self, k, expect_output=True):
        self.command(k)
        stamp = self.step(k, expect_output=expect_output)
        if k > 0:                                   # the first joint state only starts the filter: no tick
            assert wait_until(lambda: stamp in self.states, 10.0), f"no contact state for frame {k}"
        return stamp


def gait(k):
    """Left single support, double support, right single support (5 frames each), then again."""
    phase = (k // 5) % 4
    return np.array([phase != 2, phase != 0])


def switchable(cfg, mode="commanded", **kw):
    return replace(cfg, contacts=tuple(replace(c, mode=mode, **kw) for c in cfg.contacts))


def _flat(cfg, xml, **kw):
    # lockstep publishing is slower than a controller's rate on a loaded machine: commands never time
    # out here (the timeout itself: test_contacts.py::test_contact_commands_hold_until_the_next_and_time_out)
    flat = params_from_yaml(HUMANOID_YAML, xml, oracle_every_n=0, prepare_fallbacks=False,
                            contact_command_timeout=0.0, **kw)
    for c in cfg.contacts:
        flat.update({f"contact.{c.name}.{f}": getattr(c, f) for f in ("mode", "force_on", "force_off", "dwell")})
    if cfg.imu.use_angular_acceleration:
        flat["imu.use_angular_acceleration"] = True
    return flat


@pytest.mark.parametrize("mode", ["commanded", "detected"])
def test_walking_with_force_torque_sensors_switches_without_skipping_a_tick(ros, mode):
    """Six force-torque sensors, contacts commanded (or detected from the ankle sensors, no dwell):
    every tick of the gait has an estimate equal to the truth; the foot in the air publishes a zero
    wrench with the tick's stamp; the contact state says which feet are in contact and where the
    decision came from."""
    xml = read(HUMANOID)
    cfg = switchable(SensorConfig.from_yaml(HUMANOID_YAML), mode, force_on=40.0, force_off=20.0, dwell=0.0)
    est = estimator_for(xml, cfg)
    ns = unique_ns("walk")
    with running(ros, _flat(cfg, xml), ns, Trajectory(est, seed=2, schedule=gait), sim_class=WalkingSim) as sim:
        n = 22
        for k in range(n):
            sim.walk(k, expect_output=k > 0)
        stamps = [sim.traj.stamp(k) for k in range(1, n)]
        assert all(s in sim.torques for s in stamps)                    # no tick skipped at a switch
        assert max(sim.error(k) for k in range(1, n)) <= TOL
        for k in range(1, n):
            f = sim.traj.frame(k)
            names, pos, src = sim.states[f["stamp"]]
            assert names == list(est.contact_names) and np.array_equal(pos > 0.5, f["active"])
            assert np.all(src == (1.0 if mode == "commanded" else 2.0))   # where the decision came from
            for c, on in zip(est.contact_names, f["active"]):
                if not on:
                    assert not sim.wrenches[c][f["stamp"]][1].any()       # zero wrench, same stamp
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v.get("contacts/switches", 0)) >= 3)
        assert msg == "OK" and float(v["contacts/time_s/l_foot+r_foot"]) > 0


def test_imu_only_biped_double_support_is_an_error_and_single_support_exact(ros):
    """IMU and joint encoders only: single support is exact; double support is ill-posed, so the
    node reports ERROR and publishes nothing (but the contact state) until a foot lifts again."""
    xml = read(HUMANOID)
    base = SensorConfig.from_yaml(HUMANOID_YAML)
    cfg = switchable(base.without_kind(FTConfig).with_sensor(replace(base.imu, use_angular_acceleration=True)))
    est = estimator_for(xml, cfg)
    flat = _flat(cfg, xml)
    flat["ft_sensors"] = []
    for k in [k for k in flat if k.startswith("ft.")]:
        del flat[k]
    ns = unique_ns("imuonly")
    with running(ros, flat, ns, Trajectory(est, seed=4, schedule=gait), sim_class=WalkingSim) as sim:
        node = sim.node
        for k in range(5):                                                # left single support
            sim.walk(k, expect_output=k > 0)
        assert max(sim.error(k) for k in range(1, 5)) <= TOL
        silent = [sim.walk(k, expect_output=False) for k in range(5, 10)]  # double support
        assert not any(s in sim.torques for s in silent)
        assert all(s in sim.states for s in silent)
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: lvl == b"\x02")
        assert "contact subset l_foot+r_foot is ill-posed" in msg and int(v["contacts/ill_posed_ticks"]) >= 5
        for k in range(10, 15):                                           # right single support: recovery
            sim.walk(k)
        assert max(sim.error(k) for k in range(11, 15)) <= TOL
        assert node.status[0] == b"\x00"

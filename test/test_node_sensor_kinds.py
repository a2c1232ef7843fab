"""Issue 18, end to end: the foot normal-force, 3-axis contact-force and known-external-wrench
sensor kinds through the live node (real rclpy, loopback publishers and subscribers, lockstep as in
``test_node.py``) compared with pinocchio's ground truth to 1e-9 (relative).

The readings come from :class:`groundtruth.Trajectory` (constant joint accelerations, so the node's
finite differences are exact); the truth of every frame is pinocchio's ``rnea`` of the frame's
state and wrenches (not our dynamics). A known external wrench is, for the truth, one more contact
of the configuration (its wrench solved with the feet's so that the floating base balances); the
node reads it from its ``geometry_msgs/WrenchStamped`` topic.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from groundtruth import Trajectory
from oracle import rel_err

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("pinocchio")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.qos import QoSProfile, QoSReliabilityPolicy  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from kinds_truth import FEET_SENSORS, PAYLOAD, REL_TOL, PinTruth, humanoid_dict, with_payload_contact  # noqa: E402
from test_node import (DROPOUT_TIMEOUT, HUMANOID, HUMANOID_YAML, STALL_TOLERANT, Sim,  # noqa: E402,F401
                       params_from_yaml, read, ros, running, time_msg, unique_ns, wait_taken, wait_until)

from rbd_estimator import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.sensors import ContactForce, ExternalWrench, FootForce  # noqa: E402


def node_params(xml, cfg: SensorConfig, **overrides) -> dict:
    """The node's flat parameters for ``cfg``: the shipped YAML's node part, relative default topics,
    stall-tolerant sensor timeouts (see ``test_node.STALL_TOLERANT``)."""
    flat = {k: v for k, v in params_from_yaml(HUMANOID_YAML, xml).items()
            if not any(k == g or k.startswith(g + ".") for g in ("floating_base", "imu", "ft_sensors", "ft",
                                                                  "contacts", "contact"))}
    for k, v in cfg.to_parameters().items():
        if k.endswith(".topic"):
            v = ""                                           # the default topic, relative to the namespace
        if k.endswith(".timeout"):
            v = STALL_TOLERANT
        flat[k] = v
    flat["imu.topic"] = "imu"
    flat.update(oracle_every_n=0, prepare_fallbacks=False, acceleration_cutoff_hz=0.0)
    flat.update(overrides)
    return flat


class KindsSim(Sim):
    """:class:`test_node.Sim` plus publishers for the foot normal-force and 3-axis contact-force
    sensors (``std_msgs/Float64MultiArray`` on ``foot_force/<name>``, ``contact_force/<name>``: the
    default topics) and the known external wrenches (``WrenchStamped`` on ``external_wrench/<name>``)."""

    def __init__(self, ros, node, traj, ns):
        c, qos = ros.client, QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE)
        cfg = node.estimator.config
        self.arrays = {s.name: c.create_publisher(Float64MultiArray, f"{ns}/{s.GROUP}/{s.name}", qos)
                       for s in cfg.sensors if isinstance(s, (FootForce, ContactForce))}
        self.known = {s.name: c.create_publisher(WrenchStamped, f"{ns}/external_wrench/{s.name}", qos)
                      for s in cfg.of_kind(ExternalWrench)}
        #: the wrench of each known external wrench: its index among the trajectory's contacts
        self.known_index = {n: [c.name for c in traj.cfg.contacts].index(n) for n in self.known}
        super().__init__(ros, node, traj, ns)
        self.wait_contacts = list(node.estimator.contact_names)
        self._pubs += [*self.arrays.values(), *self.known.values()]
        wait_until(lambda: all(p.get_subscription_count() > 0 for p in self._pubs if p is not None), 10.0)

    def publish_sensors(self, k, skip=(), wait=True):
        before = self.node.input_counts()
        super().publish_sensors(k, skip=skip, wait=False)
        f = self.traj.frame(k)
        expect = [n for n in ("imu", *self.ft, *self.cells) if n not in skip and not (n == "imu" and self.imu is None)]
        for name, pub in self.arrays.items():
            if name not in skip:
                pub.publish(Float64MultiArray(data=[float(x) for x in f["readings"].readings[name]]))
                expect.append(name)
        for name, pub in self.known.items():
            if name not in skip:
                w = f["wrenches"][self.known_index[name]]
                m = WrenchStamped()
                m.header.stamp = time_msg(f["stamp"])
                m.header.frame_id = self.node.estimator.config.sensor(name).frame
                m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = (float(x) for x in w[:3])
                m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = (float(x) for x in w[3:])
                pub.publish(m)
                expect.append(name)
        if wait:
            wait_taken(self.node, before, expect, k)

    def rel_error(self, k, truth: PinTruth) -> float:
        """Relative error of the published torques and contact wrenches of frame ``k`` against
        pinocchio's torques and the frame's contact wrenches."""
        f = self.traj.frame(k)
        est = self.node.estimator
        names, tau = self.torques[f["stamp"]]
        assert names == list(est.joint_names)
        err = rel_err(tau, truth.tau(f))
        for c in est.contact_names:
            frame, w = self.wrenches[c][f["stamp"]]
            assert frame == est.config.contact(c).frame
            err = max(err, rel_err(w, f["wrenches"][[x.name for x in self.traj.cfg.contacts].index(c)]))
        return err


@pytest.fixture(scope="module")
def xml():
    return read(HUMANOID)


def test_foot_normal_force_and_contact_force_sensors_end_to_end(ros, xml):
    """The humanoid with its legs' force-torque sensors, a normal-force sensor and a 3-axis force
    sensor under each foot, all on their default topics: the published torques and contact
    wrenches equal pinocchio's truth to 1e-9; the slots hold exactly what was published."""
    cfg = SensorConfig.from_dict(humanoid_dict(**FEET_SENSORS))
    est = estimator_for(xml, cfg)
    ns = unique_ns("kinds")
    truth = PinTruth(xml, est, cfg)
    with running(ros, node_params(xml, cfg), ns, Trajectory(est, seed=11), sim_class=KindsSim) as sim:
        node = sim.node
        assert {f"{ns}/foot_force/l_fz", f"{ns}/foot_force/r_fz", f"{ns}/contact_force/l_f3",
                f"{ns}/contact_force/r_f3"} <= node.input_topics
        n = 12
        for k in range(n):
            sim.step(k, expect_output=k > 0)
        errors = [sim.rel_error(k, truth) for k in range(1, n)]
        assert max(errors) <= REL_TOL, f"largest relative error {max(errors):.3g}"
        last = sim.traj.frame(n - 1)["readings"].readings
        for name in ("l_fz", "r_fz", "l_f3", "r_f3"):
            assert np.array_equal(node.session.inputs.slots[name].value, last[name])
        assert sim.all_finite()
        # a foot-force message with two elements is rejected and counted; estimates go on
        sim.arrays["l_fz"].publish(Float64MultiArray(data=[1.0, 2.0]))
        assert wait_until(lambda: node.input_rejections()["l_fz"] == 1, 10.0)
        sim.step(n)
        assert sim.rel_error(n, truth) <= REL_TOL
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v.get("l_fz/rejected", 0)) >= 1)
        assert int(v["l_fz/rejected/wrong_length"]) == 1 and int(v["r_f3/received"]) >= n


def test_known_external_wrench_from_its_topic_end_to_end(ros, xml):
    """A known wrench on the left hand from ``external_wrench/payload``: nothing is published (and
    nothing non-finite) while the topic is silent; once it arrives, the estimates equal pinocchio's
    truth computed with the wrench as one more contact, to 1e-9; when it stops (older than its
    timeout), nothing again: it is not droppable."""
    cfg = SensorConfig.from_dict(humanoid_dict(**PAYLOAD))
    with_hand = with_payload_contact()
    est = estimator_for(xml, cfg)
    truth_est = estimator_for(xml, with_hand)     # the trajectory's wrenches and readings with the hand's
    ns = unique_ns("known")
    truth = PinTruth(xml, est, with_hand)
    params = node_params(xml, cfg, **{"external_wrench.payload.timeout": DROPOUT_TIMEOUT})
    with running(ros, params, ns, Trajectory(truth_est, seed=12), sim_class=KindsSim) as sim:
        node = sim.node
        assert f"{ns}/external_wrench/payload" in node.input_topics
        silent = []
        for k in range(4):                                  # every input but the known wrench
            sim.step(k, skip=("payload",), expect_output=False)
            silent.append(sim.traj.stamp(k))
        lvl, msg, v = sim.latest_diagnostics(
            lambda lvl, m, v: int(v["ticks_without_output"]) >= 3 and "cannot be left out" in m)
        assert lvl == b"\x02" and msg.startswith("ERROR: missing payload"), msg
        assert not any(s in sim.torques for s in silent) and not sim.all_values
        n = 12
        for k in range(4, n):
            sim.step(k)
        errors = [sim.rel_error(k, truth) for k in range(4, n)]
        assert max(errors) <= REL_TOL, f"largest relative error {max(errors):.3g}"
        assert np.abs(sim.traj.frame(n - 1)["wrenches"][2]).max() > 1.0      # a wrench that matters
        assert sim.all_finite()
        sim.latest_diagnostics(lambda lvl, m, v: m == "OK" and v["active_plan"] == "full")
        # the wrench stops arriving: once its last sample is older than its timeout, nothing again
        time.sleep(DROPOUT_TIMEOUT + 0.2)
        stopped = []
        for k in range(n, n + 3):
            sim.step(k, skip=("payload",), expect_output=False)
            stopped.append(sim.traj.stamp(k))
        sim.latest_diagnostics(lambda lvl, m, v: lvl == b"\x02" and m.startswith("ERROR: missing payload")
                               and int(v["joint_states/received"]) >= n + 3)
        assert not wait_until(lambda: any(s in sim.torques for s in stopped), 0.5)
        assert sim.all_finite()

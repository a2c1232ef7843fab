"""Sensor kinds (issue 18): a kind is one module behind one interface. A kind defined in this file
alone plans and estimates; the foot normal-force, 3-axis contact-force and known-external-wrench
kinds match pinocchio ground truth (test/groundtruth.py) on iCub; an IMU named by the URDF's
``<sensor type="imu">`` element; misspelled keys are refused naming the closest valid one."""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import rel_err, urdf_xml

from rbd_estimator import ConfigError
from rbd_estimator.estimation import SensorConfig, estimator_for
from rbd_estimator.schema import parameter
from rbd_estimator.sensors import KINDS, Sensor, register, unregister
from rbd_estimator.sensors.base import timeout_parameter

ICUB_FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
           "l_arm_ft_sensor", "r_arm_ft_sensor"]
FEET = dict(contacts=["l_foot", "r_foot"], contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="r_sole")))


def _truth_check(est, gt, n=5, seed=0, readings=None, solver=None):
    """Worst relative error of torques and wrenches over ``n`` ground-truth samples;
    ``readings(inputs, truth)`` adds the readings of kinds the ground truth does not produce."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        inputs, truth = gt.sample(rng)
        extra = readings(inputs, truth) if readings else {}
        r = est.estimate(**inputs, **extra)
        worst = max(worst, rel_err(r.tau, truth["tau"]), rel_err(r.contact_wrenches, truth["wrenches"][:len(
            est.contact_names)]))
    return worst


# ---------------------------------------------------------------------------- a kind in this file only
@dataclass(frozen=True)
class SoleWrench(Sensor):
    """A six-axis sensor between a sole and the ground: the contact's wrench ``[fx..tz]`` (N, N·m)
    in the contact frame. Defined here, not in the package: the proof that a kind is one module."""
    contact: str = parameter("the contact under the sole (a name in `contacts`)", "", required=True)
    force_stddev: float = parameter("standard deviation of each force axis (N)", 1.0, gt=0.0)
    torque_stddev: float = parameter("standard deviation of each torque axis (N·m)", 0.1, gt=0.0)
    topic: str = parameter("input topic of the node (std_msgs/Float64MultiArray, [fx..tz]); empty: "
                           "`sole_wrench/<name>`, relative to the node's namespace", "")
    timeout: float = timeout_parameter()

    LIST: ClassVar[str] = "sole_wrench_sensors"
    LIST_DESCRIPTION: ClassVar[str] = "six-axis sensors under the soles"
    GROUP: ClassVar[str] = "sole_wrench"
    KEYWORD: ClassVar[str] = "sole_wrenches"

    @property
    def size(self) -> int:
        return 6

    def rows(self, w) -> None:
        c, _frame, B = w.contact(self.contact, f"{self.prefix}contact")
        s = np.array([self.force_stddev] * 3 + [self.torque_stddev] * 3)
        P = np.array([3, 4, 5, 0, 1, 2])                   # [fx..tz] ← Featherstone [n; f]
        r0 = w.soft(self.name, ["fx", "fy", "fz", "tx", "ty", "tz"])
        w.block(r0, w.col("h", c.name), B[P, :] / s[:, None])
        for a in range(6):
            w.measured(r0 + a, a, 1.0 / s[a])


@pytest.fixture
def sole_wrench_kind():
    register(SoleWrench)
    yield SoleWrench
    unregister(SoleWrench)


def test_a_kind_defined_in_a_test_plans_and_estimates_against_pinocchio(sole_wrench_kind):
    """Registered from this file, the kind parses its parameters, plans (no force-torque sensor:
    the sole sensors alone determine the feet) and estimates to 1e-9 of pinocchio's ground truth,
    through both its keyword and the measurement vector ``y``."""
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **FEET,
                                      sole_wrench_sensors=["l_sole_sensor", "r_sole_sensor"],
                                      sole_wrench=dict(l_sole_sensor=dict(contact="l_foot"),
                                                       r_sole_sensor=dict(contact="r_foot", force_stddev=2.0))))
    assert [type(s).__name__ for s in cfg.sensors] == ["Imu", "SoleWrench", "SoleWrench"]
    assert cfg.sensor("r_sole_sensor").force_stddev == 2.0
    xml = urdf_xml("icub")
    est = estimator_for(xml, cfg)
    gt = GroundTruth(xml, est)
    assert _truth_check(est, gt, readings=lambda inputs, truth: dict(sole_wrenches=truth["wrenches"])) <= 1e-9
    # the same through y, assembled by hand from the slices the estimator reports
    inputs, truth = gt.sample(np.random.default_rng(3))
    y = np.zeros(est.measurements.size)
    imu = inputs["imu"]
    y[est.measurements.slice("imu")] = np.concatenate([imu[0], imu[1], imu[2]])
    y[est.measurements.slice("l_sole_sensor")] = truth["wrenches"][0]
    y[est.measurements.slice("r_sole_sensor")] = truth["wrenches"][1]
    r = est.estimate(inputs["q"], inputs["dq"], inputs["ddq"], y=y)
    assert rel_err(r.tau, truth["tau"]) <= 1e-9
    with pytest.raises(ConfigError, match=r"'sole_wrench.l_sole_sensor.contcat' \(did you mean "
                                          r"'sole_wrench.l_sole_sensor.contact'\?\)"):
        SensorConfig.from_dict(dict(imu=dict(frame="root_link"), **FEET, sole_wrench_sensors=["l_sole_sensor"],
                                    sole_wrench=dict(l_sole_sensor=dict(contcat="l_foot"))))
    assert "sole_wrench_sensors" in KINDS
    # its parameters are in the one schema: typed, described, ranged (the node declares them, the docs list them)
    from rbd_estimator.estimation.config import sensor_schema
    rows = dict(sensor_schema().rows())
    assert rows["sole_wrench_sensors"].type == "string_array" and "soles" in rows["sole_wrench_sensors"].description
    f = rows["sole_wrench.<name>.force_stddev"]
    assert (f.type, f.default, f.gt) == ("double", 1.0, 0.0) and f.description
    assert rows["sole_wrench.<name>.contact"].required
    with pytest.raises(ConfigError, match=r"'sole_wrench.l_sole_sensor.force_stddev' must be a number > 0, got -1"):
        SensorConfig.from_dict(dict(imu=dict(frame="root_link"), **FEET, sole_wrench_sensors=["l_sole_sensor"],
                                    sole_wrench=dict(l_sole_sensor=dict(contact="l_foot", force_stddev=-1.0))))
    with pytest.raises(ConfigError, match=r"'sole_wrench.l_sole_sensor.contact' is required"):
        SensorConfig.from_dict(dict(imu=dict(frame="root_link"), **FEET, sole_wrench_sensors=["l_sole_sensor"]))


def test_a_kind_must_describe_its_parameters():
    """``register`` refuses a kind with a field that is not declared with ``parameter`` (it would be
    a parameter without a type, description or range), or without a description of its list."""
    @dataclass(frozen=True)
    class Bare(SoleWrench):
        extra: str = ""
        LIST: ClassVar[str] = "bare_sensors"
        GROUP: ClassVar[str] = "bare"

    with pytest.raises(TypeError, match=r"Bare: field\(s\) extra must be declared with"):
        register(Bare)

    @dataclass(frozen=True)
    class Unlisted(SoleWrench):
        LIST: ClassVar[str] = "bare_sensors"
        LIST_DESCRIPTION: ClassVar[str] = ""
        GROUP: ClassVar[str] = "bare"

    with pytest.raises(TypeError, match="must describe its list parameter 'bare_sensors'"):
        register(Unlisted)
    assert "bare_sensors" not in KINDS


def test_a_kind_read_from_a_topic_must_declare_it():
    """The node and the replay subscribe to each sensor's ``topic`` and call it missing after its
    ``timeout``: ``register`` refuses a kind without them (it used to register, then fail with an
    AttributeError when a node or a replay configured it)."""
    @dataclass(frozen=True)
    class Topicless(Sensor):
        contact: str = parameter("the contact", "", required=True)
        LIST: ClassVar[str] = "topicless_sensors"
        LIST_DESCRIPTION: ClassVar[str] = "sensors without a topic"
        GROUP: ClassVar[str] = "topicless"

        def rows(self, w) -> None:
            pass

    with pytest.raises(TypeError, match=r"Topicless: the node and the replay read it from its own topic and need "
                                        r"the parameter\(s\) topic, timeout"):
        register(Topicless)
    assert "topicless_sensors" not in KINDS


def test_a_kind_defined_in_a_test_runs_in_the_session(sole_wrench_kind):
    """The runtime the node and the replay share subscribes to the kind's topic (default
    ``<group>/<name>``) with the kind's message."""
    from rbd_estimator.runtime.session import Session
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **FEET,
                                      sole_wrench_sensors=["l_sole_sensor", "r_sole_sensor"],
                                      sole_wrench=dict(l_sole_sensor=dict(contact="l_foot"),
                                                       r_sole_sensor=dict(contact="r_foot", topic="/soles/right"))))
    session = Session(urdf_xml("icub"), cfg)
    topics = {i.key[1]: (i.topic, i.message) for i in session.inputs_needed() if i.key[0] == "sensor"}
    array = "std_msgs/msg/Float64MultiArray"
    assert topics == {"imu": ("imu", "sensor_msgs/msg/Imu"), "l_sole_sensor": ("sole_wrench/l_sole_sensor", array),
                      "r_sole_sensor": ("/soles/right", array)}


# ---------------------------------------------------------------------------- the package's new kinds
@pytest.mark.parametrize("solver", ["structured", "generic"])
def test_foot_normal_force_sensors_match_pinocchio(solver):
    """iCub with the legs' force-torque sensors and one normal-force sensor per foot (as the real
    recording logs them): redundant, and noise-free readings give the truth."""
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **FEET,
                                      ft_sensors=ICUB_FT[:4],
                                      foot_force_sensors=["l_fz", "r_fz"],
                                      foot_force=dict(l_fz=dict(contact="l_foot"), r_fz=dict(contact="r_foot"))))
    xml = urdf_xml("icub")
    est = estimator_for(xml, cfg, solver=solver)
    gt = GroundTruth(xml, est)
    forces = lambda inputs, truth: dict(foot_forces=truth["wrenches"][:, 2])      # noqa: E731
    assert _truth_check(est, gt, readings=forces) <= 1e-9
    # the readings are used: a wrong normal force moves the estimate
    inputs, truth = gt.sample(np.random.default_rng(1))
    good = est.estimate(**inputs, foot_forces=truth["wrenches"][:, 2]).contact_wrenches.copy()
    bad = est.estimate(**inputs, foot_forces=truth["wrenches"][:, 2] + 50.0).contact_wrenches
    assert np.max(np.abs(bad - good)) > 1.0


def test_foot_normal_force_alone_with_point_contacts_determines_the_feet():
    """Point-force feet: the IMU, the legs' force-torque sensors above the ankles and a normal-force
    sensor per foot; through readings by name."""
    feet = dict(contacts=["l_foot", "r_foot"], contact=dict(l_foot=dict(frame="l_sole", type="point_force"),
                                                            r_foot=dict(frame="r_sole", type="point_force")))
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **feet,
                                      ft_sensors=ICUB_FT[:2], foot_force_sensors=["l_fz", "r_fz"],
                                      foot_force=dict(l_fz=dict(contact="l_foot"), r_fz=dict(contact="r_foot"))))
    xml = urdf_xml("icub")
    est = estimator_for(xml, cfg)
    gt = GroundTruth(xml, est)
    by_name = lambda inputs, truth: dict(readings=dict(l_fz=truth["wrenches"][0, 2], r_fz=truth["wrenches"][1, 2]))  # noqa
    assert _truth_check(est, gt, readings=by_name) <= 1e-9


@pytest.mark.parametrize("solver", ["structured", "generic"])
def test_three_axis_contact_force_sensors_match_pinocchio(solver):
    """Point-force feet with a 3-axis force sensor each and no force-torque sensor at all."""
    feet = dict(contacts=["l_foot", "r_foot"], contact=dict(l_foot=dict(frame="l_sole", type="point_force"),
                                                            r_foot=dict(frame="r_sole", type="point_force")))
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **feet,
                                      contact_force_sensors=["l_f3", "r_f3"],
                                      contact_force=dict(l_f3=dict(contact="l_foot"), r_f3=dict(contact="r_foot"))))
    xml = urdf_xml("icub")
    est = estimator_for(xml, cfg, solver=solver)
    gt = GroundTruth(xml, est)
    assert _truth_check(est, gt, readings=lambda inputs, truth: dict(contact_forces=truth["wrenches"][:, :3])) <= 1e-9
    with pytest.raises(ConfigError, match="slippery"):
        estimator_for(xml, SensorConfig.from_dict(dict(
            floating_base=True, imu=dict(frame="root_link"), contacts=["l_foot"],
            contact=dict(l_foot=dict(frame="l_sole", type="slippery")), contact_force_sensors=["f"],
            contact_force=dict(f=dict(contact="l_foot")))))


def test_known_external_wrench_matches_pinocchio():
    """A known wrench on the left hand: the ground truth is made with it as one more contact
    (pinocchio's rnea with every wrench), the estimator is given it as ``external_wrenches``."""
    xml = urdf_xml("icub")
    with_hand = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), ft_sensors=ICUB_FT,
                                            contacts=["l_foot", "r_foot", "payload"],
                                            contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="r_sole"),
                                                         payload=dict(frame="l_hand"))))
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), ft_sensors=ICUB_FT, **FEET,
                                      external_wrenches=["payload"],
                                      external_wrench=dict(payload=dict(frame="l_hand", topic="/payload"))))
    est = estimator_for(xml, cfg)
    gt = GroundTruth(xml, types.SimpleNamespace(model=est.model, config=with_hand))
    known = lambda inputs, truth: dict(external_wrenches=truth["wrenches"][2:3])      # noqa: E731
    assert _truth_check(est, gt, readings=known) <= 1e-9
    inputs, truth = gt.sample(np.random.default_rng(9))
    wrong = est.estimate(**inputs, external_wrenches=np.zeros((1, 6))).tau       # without it: another answer
    assert rel_err(wrong, truth["tau"]) > 1e-3


def test_imu_named_by_the_urdf_sensor_element():
    """Talos's URDF declares ``<sensor name="imu_sensor" type="imu">`` on ``imu_link``: naming it
    gives the same estimate as naming the link."""
    xml = urdf_xml("talos")
    ft = {"l_ankle_ft": "leg_left_sole_fix_joint", "r_ankle_ft": "leg_right_sole_fix_joint"}
    base = dict(floating_base=True, ft_sensors=list(ft), ft={k: dict(joint=j) for k, j in ft.items()},
                contacts=["l_foot", "r_foot"],
                contact=dict(l_foot=dict(frame="left_sole_link"), r_foot=dict(frame="right_sole_link")))
    by_link = estimator_for(xml, SensorConfig.from_dict(dict(base, imu=dict(frame="imu_link"))))
    by_sensor = estimator_for(xml, SensorConfig.from_dict(dict(base, imu=dict(frame="imu_sensor"))))
    assert "imu_sensor" in by_sensor.model.imu_sensors
    gt = GroundTruth(xml, by_link)
    inputs, truth = gt.sample(np.random.default_rng(4))
    a = by_link.estimate(**inputs).tau.copy()
    b = by_sensor.estimate(**inputs).tau
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-9 * np.max(np.abs(a)))
    with pytest.raises(ConfigError, match="imu.frame.*no_such_imu"):
        estimator_for(xml, SensorConfig.from_dict(dict(base, imu=dict(frame="no_such_imu"))))


# ---------------------------------------------------------------------------- configuration
@pytest.mark.parametrize("params, bad, close", [
    (dict(imu=dict(frme="root_link")), "imu.frme", "imu.frame"),
    (dict(imu=dict(frame="root_link"), **FEET, ft_sensors=["l_leg_ft_sensor"],
          ft=dict(l_leg_ft_sensor=dict(force_stdev=2.0))), "ft.l_leg_ft_sensor.force_stdev",
     "ft.l_leg_ft_sensor.force_stddev"),
    (dict(imu=dict(frame="root_link"), contacts=["FL"], contact=dict(FL=dict(frame="l_sole", mdoe="commanded"))),
     "contact.FL.mdoe", "contact.FL.mode"),
])
def test_misspelled_keys_are_refused_with_the_closest_valid_key(params, bad, close):
    with pytest.raises(ConfigError, match=rf"unknown parameter '{bad}' \(did you mean '{close}'\?\)"):
        SensorConfig.from_dict(params)


def test_a_group_for_a_sensor_not_listed_is_refused():
    with pytest.raises(ConfigError, match=r"'ft.l_leg_ft_sesnor.force_stddev': 'l_leg_ft_sesnor' is not listed in "
                                          r"'ft_sensors'"):
        SensorConfig.from_dict(dict(imu=dict(frame="root_link"), ft_sensors=["l_leg_ft_sensor"],
                                    ft=dict(l_leg_ft_sesnor=dict(force_stddev=2.0))))


def test_measurement_vector_errors_name_the_sensor():
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **FEET,
                                      ft_sensors=ICUB_FT[:4], foot_force_sensors=["l_fz", "r_fz"],
                                      foot_force=dict(l_fz=dict(contact="l_foot"), r_fz=dict(contact="r_foot"))))
    xml = urdf_xml("icub")
    est = estimator_for(xml, cfg)
    inputs, truth = GroundTruth(xml, est).sample(np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"foot_forces\[1\] \(r_fz fz\) is not finite"):
        est.estimate(**inputs, foot_forces=[1.0, np.nan])
    with pytest.raises(ValueError, match="foot_forces: the configuration declares l_fz, r_fz"):
        est.estimate(**inputs)
    with pytest.raises(TypeError, match="foot_force"):
        est.estimate(**inputs, foot_force=[1.0, 2.0])
    with pytest.raises(ValueError, match="readings: 'nope'"):
        est.estimate(**inputs, foot_forces=[1.0, 2.0], readings=dict(nope=1.0))


# ---------------------------------------------------------------------------- the plan and its data
@pytest.mark.parametrize("solver", ["structured", "generic"])
def test_a_tick_writes_only_the_estimators_data(solver):
    """Model/Data: every array the estimator holds outside ``est.data`` (its plan: layout maps, LU
    pattern, packed trees) is bitwise the same after estimates; the outputs live in ``est.data``."""
    xml = urdf_xml("icub")
    est = estimator_for(xml, SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), **FEET,
                                                         ft_sensors=ICUB_FT)), solver=solver)

    def plan_arrays():
        out = {}
        for k, v in vars(est).items():
            for j, a in enumerate(v if isinstance(v, tuple) else (v,)):
                if isinstance(a, np.ndarray):
                    out[(k, j)] = a.copy()
        return out
    before = plan_arrays()
    assert len(before) > 10
    gt = GroundTruth(xml, est)
    rng = np.random.default_rng(5)
    for _ in range(3):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        assert rel_err(r.tau, truth["tau"]) <= 1e-9
        assert np.shares_memory(r.tau, est.data.state)
    after = plan_arrays()
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=str(k))

"""The joint-torque sensors read from the joint states' ``effort`` field in compiled code
(``runtime/input_core.joint_efforts``; what lets the replay's batch loop run the Go2 and the G1).

Oracle: the Python path that did it before (:meth:`SensorInputs.on_joint_torques` on the decoded
message after the joint state itself, as the session called it), run on a second input state that
takes its joint torques from another topic. Both see the same sequence of joint states — accepted,
efforts missing, efforts not finite, a stamp repeated, a joint state rejected for an unknown joint
(its efforts of known joints still read, by name), another wire order — and must end each step
with the same values, stamps, counters and rejection reasons in every joint-torque slot.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("rosbags")
from groundtruth import Serializer  # noqa: E402

from rbd_estimator import SensorConfig, estimator_for, robots  # noqa: E402
from rbd_estimator.runtime import cdr  # noqa: E402
from rbd_estimator.runtime import input_core as core  # noqa: E402
from rbd_estimator.runtime.inputs import SensorInputs  # noqa: E402
from rbd_estimator.runtime.params import NodeSettings  # noqa: E402

MS = 1_000_000


def _slots(inp):
    return {n: (s.value[0], s.stamp_ns, s.received, s.ready, dict(s.rejected))
            for n, s in inp.slots.items() if s.kind == "joint_effort"}


def test_compiled_joint_efforts_equal_the_python_path():
    with open(robots.urdf_file("go2"), encoding="utf-8") as fh:
        xml = fh.read()
    config = SensorConfig.from_yaml(robots.params_file("go2"))
    est = estimator_for(xml, config)
    settings = NodeSettings.from_parameters(dict(config.node))
    assert settings.joint_torque_source() == settings.joint_states_topic
    compiled = SensorInputs.for_estimator(est, config, settings)
    python = SensorInputs.for_estimator(est, config, dataclasses.replace(settings, joint_torque_topic="/tau"))
    assert compiled.I[core.H_JTJS] == 1 and python.I[core.H_JTJS] == 0
    ser, names, nj = Serializer(), list(est.joint_names), len(est.joint_names)
    rng = np.random.default_rng(4)
    pos, vel = rng.normal(size=nj), rng.normal(size=nj)
    rev = names[::-1]
    steps = [(1, names, rng.normal(size=nj)), (2, names, rng.normal(size=nj)), (3, names, ()),
             (4, names, np.r_[np.nan, rng.normal(size=nj - 1)]), (2, names, rng.normal(size=nj)),
             (4, names, rng.normal(size=nj)),
             (5, rev, rng.normal(size=nj)), (6, rev[:-1] + ["not_a_joint"], rng.normal(size=nj)),
             (7, names[1:], rng.normal(size=nj - 1)), (8, names, rng.normal(size=nj))]
    seen = set()
    for k, (ms, wire, effort) in enumerate(steps):
        raw = ser.joint_state(ms * MS, wire, pos, vel, effort) if len(wire) == nj else \
            ser.joint_state(ms * MS, wire, pos[:len(wire)], vel[:len(wire)], effort)
        code = compiled.on_message(0, raw, 100 + k)
        assert python.on_message(0, raw, 100 + k) == code
        if code != core.CDR_ERROR:
            python.on_joint_torques(cdr.decode(cdr.JOINT_STATE, raw), 100 + k)
        a, b = _slots(compiled), _slots(python)
        assert a.keys() == b.keys() and len(a) == 12
        for n in a:
            assert (np.isnan(a[n][0]) and np.isnan(b[n][0])) or a[n] == b[n], (k, n, a[n], b[n])
        seen |= {r for v in a.values() for r in v[4]}
    assert {"wrong_length", "non_finite", "stamp_not_increasing"} <= seen
    assert _slots(compiled)[names[0]][2] >= 5            # accepted on most steps

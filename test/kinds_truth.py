"""Ground truth for the sensor-kind tests of the node and the replay (issue 18): the shipped
humanoid's configuration with the new kinds, and pinocchio's joint torques of a
:class:`groundtruth.Trajectory` frame."""
from __future__ import annotations

import types

import numpy as np
import pinocchio as pin
from groundtruth import GroundTruth

from rbd_estimator import SensorConfig

REL_TOL = 1e-9                      # relative: max|x − truth| / max(1, max|truth|)
LEG_FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor"]
FEET_SENSORS = dict(foot_force_sensors=["l_fz", "r_fz"],
                    foot_force=dict(l_fz=dict(contact="l_foot"), r_fz=dict(contact="r_foot")),
                    contact_force_sensors=["l_f3", "r_f3"],
                    contact_force=dict(l_f3=dict(contact="l_foot"), r_f3=dict(contact="r_foot")))
PAYLOAD = dict(external_wrenches=["payload"], external_wrench=dict(payload=dict(frame="l_hand")))


def humanoid_dict(**extra) -> dict:
    """The shipped humanoid's sensor configuration (``config/humanoid.yaml``) as a dictionary, plus ``extra``."""
    d = {"floating_base": True, "imu": {"frame": "imu_link"}, "ft_sensors": LEG_FT,
         "contacts": ["l_foot", "r_foot"],
         "contact": {"l_foot": {"frame": "l_sole"}, "r_foot": {"frame": "r_sole"}}}
    d.update(extra)
    return d


def with_payload_contact() -> SensorConfig:
    """The truth's configuration for :data:`PAYLOAD`: the known wrench as one more contact."""
    return SensorConfig.from_dict(humanoid_dict(
        contacts=["l_foot", "r_foot", "payload"],
        contact={"l_foot": {"frame": "l_sole"}, "r_foot": {"frame": "r_sole"}, "payload": {"frame": "l_hand"}}))


class PinTruth:
    """Pinocchio's joint torques of a :class:`Trajectory` frame (its state and all its wrenches,
    the contacts of ``truth_config``, which may list a known external wrench as one more contact)."""

    def __init__(self, xml, est, truth_config):
        self.gt = GroundTruth(xml, types.SimpleNamespace(model=est.model, config=truth_config))

    def tau(self, frame) -> np.ndarray:
        gt = self.gt
        q, v, a = frame["state"]
        q_p, v_p, a_p = gt._to_pin(gt.pm, q[:7], v[:6], a[:6], q[7:], v[6:], a[6:])
        full = pin.rnea(gt.pm, gt.pd, q_p, v_p, a_p, gt._fext(gt.pm, frame["wrenches"]))
        assert np.max(np.abs(full[:6])) <= 1e-8 * max(1.0, np.max(np.abs(full)))   # the base balances
        return np.array([full[gt.pm.idx_vs[gt.pm.getJointId(n)]] for n in gt.model.joint_names])

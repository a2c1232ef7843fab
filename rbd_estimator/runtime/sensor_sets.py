"""What a :class:`~rbd_estimator.runtime.session.Session` declares and builds for one sensor set.

Its subscriptions (:class:`Input`) and topics (:class:`Output`), the plans of a configuration
(:func:`plan_set`), the output encoders (:func:`encoders_for`), the pinocchio cross-check
(:func:`make_oracle`), a set planned beside the one in use (:class:`Pending`), the key under which
a planned estimator is kept for later (:func:`problem_key`), and the advice of a failed configure.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

from ..errors import ConfigError, DescriptionUnavailable, IllPosedError, ModelError, ModelWarning
from ..sensors.base import ARRAY_MESSAGE, IMU_MESSAGE, WRENCH_MESSAGE
from . import cdr
from .contact_state import ContactState
from .inputs import SensorInputs
from .params import NodeSettings
from .plans import PlanSet

#: the ROS type of each input slot's decoder
MESSAGE_OF = {IMU_MESSAGE: cdr.IMU, WRENCH_MESSAGE: cdr.WRENCH_STAMPED, ARRAY_MESSAGE: cdr.FLOAT64_MULTI_ARRAY}


@dataclass(frozen=True)
class Input:
    """A subscription the session needs: ``topic`` as configured (relative, ``~/…`` or absolute:
    the driver resolves it), ``message`` its ROS type, ``handler(raw, now) → code`` (the
    :mod:`~rbd_estimator.runtime.input_core` code; ``CDR_ERROR`` for bytes that do not decode),
    ``trigger``: joint states (a tick per message; the node queues a few)."""
    key: tuple
    topic: str
    message: str
    handler: object
    trigger: bool = False


#: the joint torques' posterior variances ((N·m)²), a ``sensor_msgs/JointState`` like ``~/joint_torques``
#: with the variances as ``effort`` (docs/probabilistic_model.md)
VARIANCE_TOPIC = "~/joint_torque_variance"
#: the sensors the fault monitor excludes (``std_msgs/String``, names separated by ", "; empty: none),
#: emitted when the set changes
FAULTS_TOPIC = "~/sensor_faults"


@dataclass(frozen=True)
class Output:
    """A topic the session emits on (private topics: ``~/…``), with its ROS type."""
    topic: str
    message: str


@dataclass(frozen=True)
class Pending:
    """A sensor set planned beside the one in use (:meth:`Session.prepare`), for :meth:`Session.swap`:
    its plans, input state, contact state and output encoders, all built off the tick thread."""
    config: object
    settings: NodeSettings
    plans: PlanSet
    oracle: object
    oracle_error: str
    inputs: SensorInputs
    contacts: ContactState
    encoders: tuple


def encoders_for(estimator, contacts: ContactState) -> tuple:
    """``(joint torques, [contact wrenches], contact state or None, joint-torque variance or None,
    [contact-wrench covariances])`` encoders of a set's outputs (the uncertainty's: :func:`uncertainty_of`)."""
    variance, covariance = uncertainty_of(estimator)
    return (cdr.JointTorquesEncoder(estimator.joint_names),
            [cdr.WrenchStampedEncoder(f) for f in estimator.contact_frames],
            cdr.ContactStateEncoder(contacts.names) if contacts.switchable else None,
            cdr.JointTorquesEncoder(estimator.joint_names) if variance else None,
            [cdr.CovarianceEncoder() for _ in estimator.contact_frames] if covariance else [])


def uncertainty_of(estimator) -> tuple[bool, bool]:
    """Whether the estimates of ``estimator`` carry the joint torques' variances and the contact
    wrenches' covariances (``covariance: true``; no torque variances for a robot with loops)."""
    on = bool(estimator.config.covariance)
    return on and not estimator.has_loops, on


def advice(exc: BaseException) -> str:
    """One line for a failed configure or reconfiguration: what is wrong and what to change."""
    if isinstance(exc, IllPosedError):
        return (f"the sensor set is ill-posed: {exc}. Add sensors (force-torque, load cells, joint torques) or "
                f"constrain the contacts (contact.<name>.type), then configure again")
    if isinstance(exc, ModelError):
        return (f"robot model error: {exc}. Fix robot_description, or the frame and sensor names in the "
                f"parameters, then configure again")
    if isinstance(exc, ConfigError):
        return f"invalid parameters: {exc}. Fix the parameter named above, then configure again"
    if isinstance(exc, DescriptionUnavailable):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def make_oracle(xml, config, estimator, settings):
    """The pinocchio cross-check of the full set: ``(oracle or None, why it is off or '')``."""
    if settings.oracle_every_n == 0:
        return None, ""
    if estimator.has_loops:            # actuator efforts: the URDF alone has no rotors
        return None, ("pinocchio cross-check off: the configuration declares loops or the URDF has mimic joints "
                      "(actuator efforts), which pinocchio's tree model does not couple")
    try:
        from .oracle import PinocchioOracle
        return PinocchioOracle(xml, config.floating_base, estimator.joint_names, estimator.contact_frames,
                               config.imu.frame if config.imu else None), ""
    except Exception as exc:  # noqa: BLE001 - the cross-check is diagnostics: never a reason to fail
        return None, f"pinocchio cross-check off: {type(exc).__name__}: {exc}"


def plan_set(xml, config, settings, quiet: bool = False, planner=None) -> PlanSet:
    """The plans of ``config`` (raises ModelError / ConfigError / IllPosedError with the reason);
    ``quiet``: the model's warnings were reported already; ``planner(xml, config, strict)``: where
    the full set's estimator comes from (default :meth:`PlanSet.plan`; a fleet worker's
    :class:`~.plans.PlanCache`)."""
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", ModelWarning)
        return PlanSet(xml, config, (planner or PlanSet.plan)(xml, config, strict=settings.strict_model))


def problem(config) -> dict:
    """The parameters that define the estimation problem (everything but the node-only ones)."""
    flat = config.to_parameters()
    for k in config.node:
        flat.pop(k, None)
    return flat


def problem_key(config) -> str:
    """A hashable form of :func:`problem`."""
    return json.dumps(problem(config), sort_keys=True, default=repr)

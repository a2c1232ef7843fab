"""The one interface of every estimator variant.

Three variants share it, each composed of the previous one rather than chosen by a constructor:

* :class:`~.estimator.Estimator` — a kinematic tree with a fixed contact set: the plan of Nori's
  system for one sensor set (§IV-D) and its compiled tick;
* :class:`~.contacts.SwitchingEstimator` — contacts that come and go: one :class:`Estimator` per
  contact subset (:func:`~.contacts.make_estimator` picks it for switchable contacts);
* :class:`~.loops.LoopEstimator` — kinematic loops and mimic joints: one of the above on the
  spanning tree (:func:`~.loops.estimator_for` picks it for a URDF with loops or mimic joints).

The node, the replay and the calibration use only what is declared here.
"""
from __future__ import annotations

from abc import ABC, abstractmethod


class EstimatorInterface(ABC):
    """What every estimator offers: the names its inputs and outputs are ordered by, the
    measurement vector, one estimate per call, the report of its plan."""

    model = None
    config = None

    # ------------------------------------------------------------------ names
    @property
    def joint_names(self) -> tuple[str, ...]:
        """Order of ``q``, ``dq``, ``ddq`` and of the estimated ``tau``."""
        return self.model.joint_names

    @property
    def contact_names(self) -> tuple[str, ...]:
        """Order of ``contact_wrenches``."""
        return tuple(c.name for c in self.config.contacts)

    @property
    def contact_frames(self) -> tuple[str, ...]:
        return tuple(c.frame for c in self.config.contacts)

    @property
    def ft_names(self) -> tuple[str, ...]:
        """Order of an ``ft`` array of readings."""
        return tuple(s.name for s in self.config.ft_sensors)

    @property
    @abstractmethod
    def kept_joints(self) -> tuple[str, ...]:
        """Fixed joints whose wrench is estimated (``joint_wrenches``)."""

    @property
    @abstractmethod
    def measurements(self):
        """:class:`~.measurements.Measurements`: where each sensor's slice sits in ``y``."""

    @property
    @abstractmethod
    def report(self):
        """:class:`~.plan.PlanReport` of the plan (unknowns, equations, nonzeros, flops, solver)."""

    # ------------------------------------------------------------------ tick
    @abstractmethod
    def estimate(self, q, dq, ddq, imu=None, ft=None, load_cells=None, joint_torques=None, external_wrenches=None,
                 contacts=None, *, y=None, readings=None, **by_kind):
        """One estimate (:meth:`.estimator.Estimator.estimate` documents the arguments)."""

    @abstractmethod
    def base_state(self, result=None):
        """Pinocchio free-flyer ``(q_base, v_base, a_base)`` of the last (or the given) estimate."""

    def switching(self):
        """The :class:`~.contacts.SwitchingEstimator` that chooses this estimator's contact subset
        per tick, or None (fixed contacts)."""
        return None

    @property
    def has_loops(self) -> bool:
        """True for a :class:`~.loops.LoopEstimator` (its efforts are actuator efforts)."""
        return False

    def subset_reason(self, mask: int) -> str | None:
        """Why the contact subset ``mask`` has no well-posed estimate, or None (fixed contacts: always None)."""
        return None

    def weak_directions(self) -> dict:
        """``{contact subset label: (component, ...)}``: the contact components the sensors do not
        determine at the nominal stance (``nominal_pose``, other joints at zero), whose estimate there is the prior's
        (:meth:`.estimator.Estimator.nominal_check`); subsets without any are left out."""
        return {}

    @abstractmethod
    def reset(self) -> None:
        """Put the per-tick state back as planning left it — the data the tick works in, what carries
        from one tick to the next (a loop's warm start), the counters — so that the next estimate is
        the one a freshly planned estimator would make (a fleet worker reuses one plan over its
        recordings: :class:`~rbd_estimator.runtime.plans.PlanCache`). Each variant restores its own
        state and asks the estimators it is made of to restore theirs."""

    def kernel(self) -> tuple | None:
        """``(ip, state)``: the constant and state arguments of the compiled structured tick of
        this estimator (the replay's batch loop calls it directly), or None when it has none."""
        return None

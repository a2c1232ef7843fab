"""The nominal stance of an :class:`~.estimator.Estimator` and what its sensors leave to the prior there.

The nominal stance: the joints at the model's neutral (zero) but those of ``nominal_pose``, at
rest, the IMU frame level. :func:`nominal_check` estimates there once at planning and names the
contact components whose posterior standard deviation is the prior's (docs/probabilistic_model.md);
the estimator also plans its generic tick's static pivots to hold there.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import ConditioningWarning
from .config import nominal_positions
from .layout import BOUNDARY

__all__ = ["nominal_check", "nominal_inputs", "nominal_stance"]


def nominal_check(est) -> tuple[str, ...]:
    """The contact components (``'l_foot tz'``) whose posterior standard deviation at the
    nominal stance of the estimator ``est`` is above 10 % of the
    prior's: the sensors do not determine them there, the prior does (a finite estimate with a
    large variance, docs/probabilistic_model.md). Empty without the covariance (``covariance:
    false``); warns about each (``ConditioningWarning``)."""
    if not est.config.covariance or not est.layout.contacts:
        return ()
    lay = est.layout
    q, dq, ddq, y = nominal_inputs(est)
    try:
        r = est.estimate(q, dq, ddq, y=y)
    except (FloatingPointError, ValueError) as exc:   # noqa: PERF203 - plan time
        weak = (f"the nominal stance is singular ({exc})",)
    else:
        prior = lay.prior_stddev
        sd = np.sqrt(np.diagonal(r.contact_covariance, axis1=1, axis2=2))
        weak = tuple(f"{c} {BOUNDARY[k]}" for i, c in enumerate(est.contact_names) for k in range(6)
                     if sd[i, k] > 0.1 * prior)
    est.data.pivot_fallbacks = 0                      # a plan-time estimate: not a tick's
    if weak:                                          # stacklevel: the caller of Estimator(...)
        warnings.warn(f"rbd_estimator: at the nominal stance ({nominal_stance(est.config)}) the sensors do not "
                      f"determine {', '.join(weak)}: the estimate there is the prior's, with its variance",
                      ConditioningWarning, stacklevel=4)
    return weak


def nominal_inputs(est) -> tuple:
    """``(q, dq, ddq, y)`` of the nominal stance for the estimator ``est`` (float64, its
    ``joint_names`` order and measurement vector): ``nominal_pose``, at rest, the IMU frame level
    (identity orientation ``[x, y, z, w]``, no rate, no acceleration), every other sensor zero."""
    lay, imu = est.layout, est.config.imu
    y = np.zeros(lay.n_y)
    if imu is not None:
        y[lay.y_offsets[imu.name] + 3] = 1.0
    z = np.zeros(est.model.n_joints)
    return nominal_positions(est.config, est.model.joint_names), z, z, y


def nominal_stance(config) -> str:
    """The nominal stance in words: ``joints at zero`` or ``nominal_pose``'s joints, others at zero."""
    given = [f"{n} = {v:g}" for n, v in config.nominal_pose]
    return f"{', '.join(given)}, other joints at zero" if given else "joints at zero"

"""The tracked offsets at run time (docs/offsets.md): the session's
:class:`~rbd_estimator.estimation.offsets.OffsetTracker`, kept across reconfigurations, its topic
``~/sensor_offsets`` and its ``/diagnostics`` values. No ROS import."""
from __future__ import annotations

import numpy as np

from ..estimation.offsets import OffsetTracker
from . import cdr

#: the node's output topic of the tracked offsets: ``sensor_msgs/JointState`` with one name per
#: tracked entry (``<sensor> <axis>``), ``position`` the offset (reading = true + offset; N, N·m),
#: ``effort`` its posterior variance
OFFSETS_TOPIC = "~/sensor_offsets"


def tracks(config) -> bool:
    """Whether a sensor of ``config`` tracks its offset (an ``offset_drift`` above 0)."""
    return any(np.any(np.asarray(s.drift_rates()) > 0) for s in config.sensors)


def tracker_for(config, settings, old: OffsetTracker | None = None) -> OffsetTracker | None:
    """The tracker of ``config``, starting from the calibrated force-torque offsets
    (``ft_offsets.<sensor>``, already subtracted by the inputs), or None when nothing is tracked.
    The entries ``old`` tracked too keep their offset and variance, unless their calibrated offset
    changed (a new calibration restarts them from it)."""
    if not tracks(config):
        return None
    names = set(config.sensor_names)
    applied = {n: v for n, v in settings.ft_offsets if n in names}
    new = OffsetTracker(config, applied=applied)
    if old is not None:
        where = {lab: j for j, lab in enumerate(old.labels)}
        for j, lab in enumerate(new.labels):
            i = where.get(lab)
            if i is not None and old.applied[i] == new.applied[j]:
                new.offsets[j], new.P[j, j] = old.offsets[i], old.P[i, i]
    return new


def encoder_for(tracker: OffsetTracker | None):
    """The ``~/sensor_offsets`` message template of ``tracker`` (None: no tracker)."""
    return None if tracker is None else cdr.OffsetsEncoder(tracker.labels)


def diagnostics(tracker: OffsetTracker) -> dict:
    """``offsets/<sensor> <axis>`` (the offset) and ``offsets/<sensor> <axis>/stddev`` values."""
    out = {"offsets/updates": tracker.updates, "offsets/observability_updates": tracker.refreshes}
    sd = np.sqrt(np.maximum(tracker.variance, 0.0))
    for lab, o, s in zip(tracker.labels, tracker.offsets, sd):
        out[f"offsets/{lab}"] = float(o)
        out[f"offsets/{lab}/stddev"] = float(s)
    return out


__all__ = ["OFFSETS_TOPIC", "diagnostics", "encoder_for", "tracker_for", "tracks"]

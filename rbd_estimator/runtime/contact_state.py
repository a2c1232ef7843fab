"""The contact state of each tick, shared by the node and the replay (no ROS import).

Per contact (``contact.<name>.mode``):

* ``always``: in contact;
* ``commanded``: the last state received on ``contact_command_topic`` (``sensor_msgs/JointState``:
  ``name`` the contacts it commands, ``position`` 1.0 in contact / 0.0 in the air, threshold 0.5).
  It is kept until a new command arrives; a command older than ``contact_command_timeout`` seconds
  (0: never) no longer counts, and the contact is then taken as in contact (the full-set
  assumption of a fixed configuration), with source ``COMMAND_TIMED_OUT``. Before the first
  command every commanded contact is in contact;
* ``detected``: :class:`~rbd_estimator.estimation.contacts.ContactDetector` on the latest readings.

``~/contact_state`` (also ``sensor_msgs/JointState``) publishes per tick ``name`` = every contact,
``position`` = 1.0 / 0.0 (in contact or not), ``velocity`` = the source of the decision (0 always,
1 commanded, 2 detected, 3 command timed out) and ``effort`` = the measured normal force (N) for
detected contacts (0 otherwise).
"""
from __future__ import annotations

import numpy as np

from ..estimation.contacts import subset_label

ALWAYS, COMMANDED, DETECTED, COMMAND_TIMED_OUT = 0, 1, 2, 3


class ContactState:
    """Contact decisions for one estimator (see the module docstring). ``mask`` is the subset mask
    of :class:`SwitchingEstimator` after :meth:`update`; :attr:`switches` and :attr:`time_in`
    (seconds per subset label) feed ``/diagnostics``."""

    def __init__(self, estimator, command_timeout: float = 0.5):
        self.est = estimator.switching()                          # None: fixed contacts
        cfg = estimator.config
        self.names = tuple(c.name for c in cfg.contacts)
        modes = [c.mode for c in cfg.contacts]
        self.source = np.array([{"always": ALWAYS, "commanded": COMMANDED, "detected": DETECTED}[m] for m in modes],
                               dtype=float)
        self.active = np.ones(len(self.names), dtype=bool)
        self.position = np.ones(len(self.names))        # ``active`` as ~/contact_state publishes it (1.0 / 0.0)
        self.force = np.zeros(len(self.names))
        self._commanded = np.array([m == "commanded" for m in modes])
        self._command = np.ones(len(self.names), dtype=bool)
        self._command_ns = -1
        self._timeout_ns = int(command_timeout * 1e9)
        self._index = {n: k for k, n in enumerate(self.names)}
        self.detector = self.est.detector() if self.est is not None and DETECTED in self.source else None
        self._detected = np.flatnonzero(self.source == DETECTED)
        self.mask = self.est.mask_of(None) if self.est is not None else 0
        n_subsets = len(self.est.reasons) if self.est is not None else 1
        self._labels = [self.label(m) for m in range(n_subsets)]       # time_in's keys, built once
        self.switches = 0
        self.time_in: dict = {}
        self.unknown_commands = 0
        self.commands = 0
        self._last_ns = None
        self._cells = None

    @property
    def switchable(self) -> bool:
        return self.est is not None

    def command(self, names, positions, now_ns: int) -> None:
        """A contact command (``JointState`` names and positions) received at ``now_ns``."""
        for n, p in zip(names, positions):
            k = self._index.get(n)
            if k is None or not self._commanded[k]:
                self.unknown_commands += 1
                continue
            self._command[k] = p >= 0.5
        self._command_ns = now_ns
        self.commands += 1

    def update(self, inputs, now_ns: int) -> int:
        """The subset mask at ``now_ns`` from the commands and the latest readings in ``inputs``
        (:class:`~rbd_estimator.runtime.inputs.SensorInputs`)."""
        if self.est is None:
            return 0
        stale = self._timeout_ns > 0 and (self._command_ns < 0 or now_ns - self._command_ns > self._timeout_ns)
        timed_out = stale and self._command_ns >= 0
        c = self._commanded
        self.active[c] = True if stale else self._command[c]
        self.source[c] = COMMAND_TIMED_OUT if timed_out else COMMANDED
        if self.detector is not None:
            d = self.detector
            if self._cells is None or self._cells.slots is not inputs.slots:
                self._cells = _Cells(inputs)
            # the full sensor set's latest readings (a lost sensor's last one)
            f = d.normal_forces(self._cells)
            self.active[self._detected] = d.update(f, now_ns)
            self.force[self._detected] = f
        np.copyto(self.position, self.active)
        mask = self.est.mask_of(self.active)
        if mask != self.mask:
            self.switches += 1
        if self._last_ns is not None:
            label = self._labels[self.mask]
            self.time_in[label] = self.time_in.get(label, 0.0) + (now_ns - self._last_ns) * 1e-9
        self._last_ns = now_ns
        self.mask = mask
        return mask

    def label(self, mask: int) -> str:
        return subset_label(self.est.subset_names(mask)) if self.est is not None else "fixed"


class _Cells:
    """``inputs.slots`` as the mapping sensor → latest reading that the detector reads."""
    __slots__ = ("slots",)

    def __init__(self, inputs):
        self.slots = inputs.slots

    def __getitem__(self, name):
        return self.slots[name].value


__all__ = ["ContactState", "ALWAYS", "COMMANDED", "DETECTED", "COMMAND_TIMED_OUT"]

"""Sensor kinds: one module per kind behind one interface (:class:`~.base.Sensor`), listed in the
registry :data:`~.base.KINDS` in the order of their slices of the measurement vector ``y``.

Importing this package registers the package's own kinds; a new kind is one module (or one class
in a test) decorated with :func:`register`. See ``docs/adding_a_sensor_kind.md``."""
from .base import KINDS, RowWriter, Sensor, register, unknown_key, unregister
from .imu import Imu
from .force_torque import FT_DIRECTIONS, FT_FRAMES, ForceTorque
from .contact_sensors import ContactForce, FootForce, LoadCells
from .joint_torque import JointTorque
from .external_wrench import ExternalWrench

__all__ = ["KINDS", "RowWriter", "Sensor", "register", "unregister", "unknown_key", "Imu",
           "ForceTorque", "LoadCells", "FootForce", "ContactForce", "JointTorque", "ExternalWrench",
           "FT_FRAMES", "FT_DIRECTIONS"]

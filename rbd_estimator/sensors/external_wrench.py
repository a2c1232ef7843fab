"""A known external wrench (a payload, a tool, a measured interaction) on a link or frame: not a
noisy measurement but a known term of the Newton–Euler equations (Nori eqs. 7–8 with ``y ≠ 0``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..schema import parameter
from .base import register, timeout_parameter
from .force_torque import WrenchReading


@register
@dataclass(frozen=True)
class ExternalWrench(WrenchReading):
    """The wrench ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) applied to the robot at ``frame``, in that
    frame, torque about its origin; from ``topic`` (``geometry_msgs/WrenchStamped``) on the node.
    It cannot be dropped: without it the estimate would be wrong, not less precise."""
    frame: str = parameter("link or frame it acts on; the wrench `[fx..tz]` is in that frame, torque about its "
                           "origin", "", required=True)
    topic: str = parameter("input topic of the node (geometry_msgs/WrenchStamped); empty: `external_wrench/<name>`, "
                           "relative to the node's namespace. While it is missing the node publishes nothing (an "
                           "estimate without it would be wrong, not less precise)", "")
    timeout: float = timeout_parameter(0.1)

    LIST: ClassVar[str] = "external_wrenches"
    LIST_DESCRIPTION: ClassVar[str] = ("known external wrenches (a payload, a tool, a measured interaction): known terms "
                                       "of the Newton–Euler equations, not measurements")
    GROUP: ClassVar[str] = "external_wrench"
    KEYWORD: ClassVar[str] = "external_wrenches"
    DROPPABLE: ClassVar[bool] = False

    def rows(self, w) -> None:
        """No sensor row: ``f_i^x = ⁱX*_F w`` enters the body's (3f) right-hand side."""
        w.known_wrench(w.frame(self.frame, f"external_wrench.{self.name}.frame"), 0)

"""A known external wrench (a payload, a tool, a measured interaction) on a link or frame: not a
noisy measurement but a known term of the Newton–Euler equations (Nori eqs. 7–8 with ``y ≠ 0``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import ConfigError
from .base import register
from .force_torque import WrenchReading


@register
@dataclass(frozen=True)
class ExternalWrench(WrenchReading):
    """The wrench ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) applied to the robot at ``frame``, in that
    frame, torque about its origin; from ``topic`` (``geometry_msgs/WrenchStamped``) on the node.
    It cannot be dropped: without it the estimate would be wrong, not less precise."""
    frame: str = ""
    topic: str = ""
    timeout: float = 0.1

    LIST: ClassVar[str] = "external_wrenches"
    GROUP: ClassVar[str] = "external_wrench"
    KEYWORD: ClassVar[str] = "external_wrenches"
    DROPPABLE: ClassVar[bool] = False

    def check(self) -> None:
        if not self.frame:
            raise ConfigError(f"parameter 'external_wrench.{self.name}.frame' is required (the link or frame it "
                              f"acts on)")
        super().check()

    def rows(self, w) -> None:
        """No sensor row: ``f_i^x = ⁱX*_F w`` enters the body's (3f) right-hand side."""
        w.known_wrench(w.frame(self.frame, f"external_wrench.{self.name}.frame"), 0)

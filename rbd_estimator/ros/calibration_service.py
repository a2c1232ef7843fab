"""The node's ``~/calibrate_ft_offsets`` service (request and response: :mod:`rbd_estimator.runtime.calibration`):
collect samples at the next ticks, refuse if a joint moves, fit the offsets, store the identified
ones in the ``ft_offsets.<sensor>`` parameters (applied from the next sample on)."""
from __future__ import annotations

import json

from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import SetParameters as CalibrateFtOffsets
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.parameter import Parameter


class CalibrationService:
    """``~/calibrate_ft_offsets`` of ``node`` (an :class:`~rbd_estimator.node.EstimatorNode`): the
    service thread waits for the samples while the tick thread collects them."""

    def __init__(self, node):
        self.node = node
        node.create_service(CalibrateFtOffsets, "~/calibrate_ft_offsets", self._on_request,
                            callback_group=MutuallyExclusiveCallbackGroup())

    def _on_request(self, request, response):
        try:
            ok, text = self.calibrate({p.name: Parameter.from_parameter_msg(p).value for p in request.parameters})
        except Exception as exc:  # noqa: BLE001 - an answer, never an exception into rclpy
            ok, text = False, f"unexpected {type(exc).__name__}: {exc}"
        if not ok:
            self.node.get_logger().warning(f"calibrate_ft_offsets refused: {text}")
        response.results = [SetParametersResult(successful=ok, reason=text)]
        return response

    def calibrate(self, values: dict) -> tuple:
        """``(ok, JSON result or why not)`` for the request's arguments ``values``."""
        node = self.node
        with node.tick_lock:
            if node.lifecycle_state != "active":
                return False, (f"the node is {node.lifecycle_state}: calibrate while it is active (receiving "
                               f"sensor data)")
            session = node.session
            col, args = session.start_calibration(values)
        if col is None:
            return False, args
        try:
            col.done.wait(args["timeout"])
        finally:
            with node.tick_lock:
                session.collector = None
        ok, text, result = session.finish_calibration(col, args)
        if not ok:
            return False, text
        applied = [r.name for r in result.sensors if r.ok]
        if applied:
            res = node.set_parameters_atomically(
                [Parameter(f"ft_offsets.{n}", value=[float(x) for x in result[n].offset]) for n in applied])
            if not res.successful:
                return False, f"offsets computed but not stored: {res.reason}"
        node.get_logger().info(f"force-torque offsets calibrated; stored for {', '.join(applied) or 'no sensor'}:\n"
                               f"{result.summary()}")
        return True, json.dumps(dict(result.to_dict(), applied=applied))

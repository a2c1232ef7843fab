"""The node's ``/diagnostics`` status (``diagnostic_msgs/DiagnosticArray``), built from a snapshot.

One ``DiagnosticStatus`` named ``rbd_estimator: <node>`` with level OK / WARN / ERROR and these
keys (values are strings, as the message defines):

* ``state`` (lifecycle state), ``status`` (OK, ``DEGRADED: missing <sensor>``, ``ERROR: ...``),
  ``active_plan`` (``full`` or ``without <sensors>``);
* ``ticks``, ``outputs``, ``ticks_without_output``;
* ``tick_latency_median_ms``, ``tick_latency_p99_ms``, ``tick_latency_max_ms``;
* ``plan``, ``plan_unknowns``, ``plan_equations``, ``plan_nnz``, ``plan_fill_in``, ``plan_flops``;
* ``fallback/<sensor>``: ``ready`` or ``unavailable: <reason>`` for every prepared loss;
* ``oracle_residual`` (N·m), ``oracle_base_residual``, ``oracle_checks``, ``oracle_tolerance``;
* per input (``joint_states`` and every sensor): ``<input>/fresh``, ``<input>/age_ms``,
  ``<input>/received``, ``<input>/rejected`` and ``<input>/rejected/<reason>``;
  ``joint_states/rejected_joints``: the joints at fault in the latest joint state rejected for its
  names (``not in the robot description: 'a', …``, ``listed twice: …``, ``missing: …``), once one was.
"""
from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def diagnostic_array(stamp, name: str, hardware_id: str, level: int, message: str, values: dict) -> DiagnosticArray:
    status = DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                              values=[KeyValue(key=k, value=_fmt(v)) for k, v in values.items()])
    arr = DiagnosticArray()
    arr.header.stamp = stamp
    arr.status = [status]
    return arr


def values_of(status: DiagnosticStatus) -> dict:
    """``{key: value}`` of a status (for tools and tests)."""
    return {kv.key: kv.value for kv in status.values}

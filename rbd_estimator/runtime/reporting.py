"""What a :class:`~rbd_estimator.runtime.session.Session` reports: its diagnostics snapshot and
the lines on the contact subsets it has a plan for (read from the session's public state).
"""
from __future__ import annotations

from . import offsets

#: diagnostic levels (``diagnostic_msgs/DiagnosticStatus``: OK 0, WARN 1, ERROR 2)
OK, WARN, ERROR = 0, 1, 2

__all__ = ["OK", "WARN", "ERROR", "coverage_lines", "diagnostics"]


def coverage_lines(session) -> list:
    """``(level, text)`` lines of a :class:`~.session.Session` on which contact subsets have a plan
    (switchable contacts) and which contact components the sensors leave to the prior at the
    nominal stance."""
    weak = [(WARN, f"contacts {k}: at the nominal stance (`nominal_pose`, other joints at zero) the sensors "
                   f"do not determine {', '.join(v)}; estimated with the prior's variance there (docs/probabilistic_model.md)")
            for k, v in session.estimator.weak_directions().items()]
    sw = session.estimator.switching()
    if sw is None:
        return weak
    cov = sw.coverage()
    ok = [k for k, r in cov.items() if r is None]
    out = [(OK, f"contact subsets planned ({len(ok)} of {len(cov)}): {', '.join(ok)}")]
    out += [(WARN, f"contact subset {k} is ill-posed with these sensors (ERROR, no output, while it lasts): {r}")
            for k, r in cov.items() if r is not None]
    return out + weak


def diagnostics(session, now: int) -> tuple:
    """``(level, message, values)`` of a :class:`~.session.Session` at ``now`` (ns; see
    :mod:`rbd_estimator.ros.diagnostics` for the keys)."""
    level, message = session.status
    if session.subset_status is not None:
        level, message = max(level, session.subset_status[0]), session.subset_status[1] + "; " + message
    core, plans = session.core, session.plans
    plan = core.plan_in_use or plans.main
    values = {"status": message,
              "active_plan": "full" if not plan.missing else "without " + ", ".join(sorted(plan.missing)),
              "ticks": core.ticks, "outputs": core.outputs, "ticks_without_output": core.no_output,
              "estimate_failures": core.estimate_failures, "nonfinite_outputs": core.nonfinite_outputs,
              "stale_timer_ticks": session.stale_timer_ticks, "reconfigurations": session.swaps}
    lat = session.latency.summary()
    values.update(tick_latency_median_ms=lat["median"] * 1e3, tick_latency_p99_ms=lat["p99"] * 1e3,
                  tick_latency_max_ms=lat["max"] * 1e3)
    rep = plans.main.estimator.report
    values.update(plan=rep.summary(), plan_unknowns=rep.n_unknowns, plan_equations=rep.n_equations,
                  plan_nnz=rep.nnz, plan_fill_in=rep.fill_in, plan_flops=rep.flops)
    values.update({f"fallback/{k}": v for k, v in plans.fallback_summary().items()})
    tol = session.settings.oracle_tolerance
    values.update(oracle_residual=session.oracle_residual, oracle_base_residual=session.oracle_base_residual,
                  oracle_checks=session.oracle_checks, oracle_tolerance=tol)
    if session.oracle_error:
        values["oracle_error"] = session.oracle_error
    c = session.contacts
    if c.switchable:
        values.update({"contacts/subset": c.label(c.mask), "contacts/switches": c.switches,
                       "contacts/ill_posed_ticks": core.ill_posed_subset_ticks,
                       "contacts/unknown_commands": c.unknown_commands})
        values.update({f"contacts/time_s/{k}": v for k, v in sorted(c.time_in.items())})
        values.update({f"contacts/ill_posed/{k}": r for k, r in c.est.coverage().items() if r is not None})
    if session.oracle_residual > tol:
        level = max(level, WARN)
        message += f"; oracle residual {session.oracle_residual:.3g} N·m above tolerance {tol:g}"
    if session.core.faults is not None:
        values.update(session.core.faults.summary())
    if session.core.offsets is not None:
        values.update(offsets.diagnostics(session.core.offsets))
    cond = session.condition.summary()
    last = session.condition.last()
    values.update(condition_last=last, condition_min=cond["min"], condition_warn_below=session.settings.condition_warn_below)
    if last < session.settings.condition_warn_below:
        level = max(level, WARN)
        message += (f"; ill-conditioned: condition estimate {last:.3g} below {session.settings.condition_warn_below:g} "
                    f"(a direction the sensors barely determine at this state: see the covariance)")
    inp = session.inputs
    for name, slot in [("joint_states", inp.joint_states)] + list(inp.slots.items()):
        values[f"{name}/fresh"] = slot.fresh(now)
        values[f"{name}/age_ms"] = slot.age(now) * 1e3
        values[f"{name}/received"] = slot.received
        values[f"{name}/rejected"] = sum(slot.rejected.values())
        for reason, count in sorted(slot.rejected.items()):
            values[f"{name}/rejected/{reason}"] = count
    if inp.joint_state_problem:
        values["joint_states/rejected_joints"] = inp.joint_state_problem
    return level, message, values

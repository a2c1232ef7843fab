"""The node's tick over a run of recorded messages in one compiled loop (the replay's fast path).

For every message of a batch (:class:`~rbd_estimator.replay.bag_io.RawBatch`) :func:`run` calls the
same compiled input handling as the live node (:func:`rbd_estimator.runtime.input_core.ingest`) and, on
every joint state that makes the inputs ready, the same estimate: the compiled structured tick
(:func:`rbd_estimator.estimation.structured.structured_tick`) of the configuration's main plan,
with the same arrays :class:`~rbd_estimator.runtime.tick.TickCore` hands it. The loop only covers the
steady state. It stops and hands the message back to Python (the per-message path of
:class:`~rbd_estimator.replay.Replayer`) whenever the live node would do something else than
"all sensors fresh, main plan, estimate succeeded": a sensor missing, a plan change, a failed
estimate, a joint state with a new name layout, undecodable bytes, an input it does not handle
(joint torques on a topic of their own). So both paths run literally the same code for every message.
"""
from __future__ import annotations


from ..estimation.structured import H_SCOV, H_SINFO, H_SOUT, H_STAIL, compiled_tick
from . import input_core as core
from ..jit import njit


#: :func:`run` stop codes (besides input_core's CDR_ERROR and NEED_LAYOUT: message not handled)
DONE, TICK_PENDING, PYTHON = 1, 2, 3
#: ``slot_of`` entries: not an input (copied only) / handled in Python
NOT_INPUT, IN_PYTHON = -1, -2

_kernel = compiled_tick()


@njit
def run(I, F, conn, time, data, start, length, slot_of, i0, main_ok, chi2_max, K, res_tau, res_w, res_cov, res_info,
        res_time, res_stamp, res_msg, k0):
    """Messages ``i0…`` of a batch (connection index ``conn[i]``, log time ``time[i]`` in ns, bytes
    ``data[start[i]:start[i] + length[i]]``; ``slot_of[conn]`` the input slot) through the input
    handling and, on every ready joint state, the main plan's estimate (``K``: the structured
    kernel's arguments; ``main_ok``: the node's state is "all sensors fresh, main plan"; an estimate
    whose whitened residual's ``χ²`` exceeds ``chi2_max`` goes to Python, to the fault monitor). Results
    go to row ``k`` of ``res_tau`` (joint torques, N·m), ``res_w`` (contact wrenches, flattened
    ``n_c × 6``), ``res_cov`` (the estimate's covariance buffer: torque variances, then each contact's
    6 × 6; zero columns when it is not published), ``res_info`` (the condition estimate and the
    residual's χ²), ``res_time`` (log time), ``res_stamp`` (joint-state stamp, ns), ``res_msg`` (the
    triggering message) from ``k0`` on. Returns ``(i, k, code)``: the message where it stopped, the
    next result row, and why (:data:`DONE`: all handled; :data:`TICK_PENDING`: message ``i`` was
    taken in and its tick is for Python; otherwise message ``i`` was not taken in)."""
    k = k0
    nj, nw = res_tau.shape[1], res_w.shape[1]
    S, ip = K[1], K[0]
    out, cov = S[ip[H_SOUT]:ip[H_SINFO]], S[ip[H_SCOV]:ip[H_STAIL]]
    for i in range(i0, time.shape[0]):
        s = slot_of[conn[i]]
        if s == NOT_INPUT:
            continue
        if s == IN_PYTHON:
            return i, k, PYTHON
        code = core.ingest(I, F, data[start[i]:start[i] + length[i]], s, time[i])
        if code == core.NEED_LAYOUT or code == core.CDR_ERROR:
            return i, k, code
        if s != 0 or code != 1:
            continue
        if not main_ok or k == res_tau.shape[0] or core.missing_mask(I, time[i]) != 0:
            return i, k, TICK_PENDING
        y, yidx = K[5], K[6]
        for j in range(y.shape[0]):                 # the plan's measurement vector (Plan.measurement)
            y[j] = F[yidx[j]]
        if _kernel(K[0], K[1], K[2], K[3], K[4], y) != 0 or S[ip[H_SINFO] + 3] > chi2_max:
            return i, k, TICK_PENDING
        for j in range(nj):
            res_tau[k, j] = out[j]
        for j in range(nw):
            res_w[k, j] = out[nj + j]
        for j in range(res_cov.shape[1]):
            res_cov[k, j] = cov[j]
        res_info[k, 0] = S[ip[H_SINFO] + 2]
        res_info[k, 1] = S[ip[H_SINFO] + 3]
        res_time[k] = time[i]
        res_stamp[k] = I[I[core.H_SLOTS] + core.S_STAMP]
        res_msg[k] = i
        k += 1
    return time.shape[0], k, DONE


def kernel_args(inputs, plan):
    """The structured kernel's arguments for ``plan`` (the main plan) reading the current samples
    of ``inputs`` (views: valid until ``inputs`` is reconfigured), as
    :meth:`~rbd_estimator.estimation.structured.StructuredSolver.estimate` passes them, followed by
    the gather index of its measurement vector in ``inputs.F``; None when the estimator does not
    use the structured solver."""
    kernel = plan.estimator.kernel()
    if kernel is None:
        return None
    return (*kernel, inputs.q, inputs.dq, inputs.ddq, plan.measurement(inputs), plan.index)

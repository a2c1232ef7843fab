"""The real iCub recording (../shared/data/icub-com-sinusoid, README there): foot forces estimated
from IMU + encoders + the other foot's normal force, against the logged ones.

* **Leave-one-out**: the configuration measures one foot's normal force (σ 5 N) and estimates
  both contacts (point feet at ``l_sole``/``r_sole``); the estimated normal force of the *other*
  foot is compared with its logged value; RMS in N and in % of the weight m·g.
* **Sum**: the two estimated normal forces add up to what the dynamics give (the base's
  Newton–Euler equation with the IMU); compared with m·(g + c̈_z), c̈ the centre of mass's
  acceleration from the motion-capture base pose and the joints (pinocchio, then a zero-phase
  5 Hz filter and two central differences), and the logged sum against the same.

The variants differ in how q̇, q̈ (and the IMU's ω̇) are obtained:

* *causal* ones run as the node runs — every message through the replay's ``Replayer`` (the node's
  input handling, filter and tick): the finite difference of the logged velocities (low-pass off),
  the node's first-order low-pass at 5 Hz, and the Kalman filter (``acceleration_filter: kalman``,
  docs/joint_acceleration.md) on the positions, with and without its acceleration variance handed
  to the estimator;
* *zero-phase* is what a user post-processing the log would do: a 2nd-order Butterworth at 5 Hz run
  forwards and backwards (``scipy.signal.filtfilt``) on the positions and the gyro, then central
  differences; the library's ``estimate`` on every sample.

**Offset tracking** (docs/offsets.md), two causal protocols in which the left-out sensor enters
nothing that is evaluated (every row is evaluated after :data:`STILL_S` s):

* *online, one sensor*: the leave-one-out configuration tracks the measured foot's offset
  (ρ = 0.1 N/√s). It is observable there: the base's Newton–Euler equations with the accelerometer
  give the total force and the moment balance about the centre of mass its split between the feet;
  the one free direction, a squeeze along the line between the feet (which the left sole's 1.1° roll
  turns into normal force), is bounded by the contact prior (:data:`PRIOR`). Under the default weak
  prior (1e4 m·g) the tracker does not move it (offset 0, σ 50 N after 3 s);
* *still phase, then held*: both feet measured, both offsets tracked (ρ = 0.1 N/√s, contact prior at
  the weight, as ``test_offsets_replay.py``) through the node's session over the still phase only
  (0–:data:`STILL_S` s); the leave-one-out run subtracts the measured foot's value from its readings.

Two references for the left-out foot: its logged force, and its logged force minus its own
still-phase offset (the tracker's value of the true force, from 0–:data:`STILL_S` s only).

:data:`VARIANTS` lists them as (label, node parameters, causal); ``offset_drift`` tracks the measured
foot's offset, ``still_phase_offsets`` applies the still phase's. Run::

    .venv/bin/python benchmarks/bench_real_icub.py [--data DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "icub-com-sinusoid"))
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/icub-com-sinusoid"
WRISTS = ("l_wrist_prosup", "l_wrist_pitch", "l_wrist_yaw", "r_wrist_prosup", "r_wrist_pitch", "r_wrist_yaw")
FEET = (("l_foot_force", "/foot_force/left", "l_foot"), ("r_foot_force", "/foot_force/right", "r_foot"))
G = 9.81
ZERO_PHASE_HZ = 5.0
#: the Kalman filter's parameters on this robot: the encoders' quantisation 2π/4096 rad (README
#: quirk 4) is a uniform error of standard deviation 2π/4096/√12 = 4.4e-4 rad; the process noise is
#: chosen on this recording (docs/joint_acceleration.md)
KALMAN = dict(acceleration_filter="kalman", kalman_model="constant_jerk", kalman_process_noise=1.0,
              kalman_position_stddev=4.4e-4, kalman_velocity_stddev=0.0, kalman_nominal_rate_hz=99.48)
#: (label, node parameters, causal)
VARIANTS = [
    ("finite difference of the logged velocities", dict(acceleration_cutoff_hz=0.0), True),
    ("low-pass 5 Hz (first order)", dict(acceleration_cutoff_hz=5.0), True),
    ("Kalman filter, constant jerk", KALMAN, True),
    ("Kalman filter, its σ_a to the estimator", dict(KALMAN, joint_acceleration_stddev_from_filter=True), True),
    (f"zero-phase Butterworth {ZERO_PHASE_HZ:g} Hz (filtfilt)", {}, False),
    ("Kalman filter, the measured foot's offset tracked online", dict(KALMAN, offset_drift=0.1), True),
    ("Kalman filter, both feet's offsets tracked in the still phase, then held",
     dict(KALMAN, still_phase_offsets=True), True),
]
#: the still phase (README of the recording: the robot stands still for ≈1.4 s): offsets tracked with
#: both sensors up to here; every row is evaluated after it
STILL_S = 1.4
#: the still phase's offset tracking: ρ (N/√s) and the contact prior (units of the weight) that
#: determines the sum of the two offsets (docs/offsets.md, test_offsets_replay.py)
TRACK_DRIFT, TRACK_PRIOR = 0.1, 1.0


def icub_xml(data: str) -> str:
    """The recording's URDF with the six unlogged wrist joints fixed (README: held at 0)."""
    with open(os.path.join(data, "model.urdf"), encoding="utf-8") as fh:
        xml = fh.read()
    for j in WRISTS:
        xml, n = re.subn(r'(<joint\s+name="%s"\s+type=")revolute(")' % re.escape(j), r"\1fixed\2", xml)
        assert n == 1, j
    return xml


#: σ of the contact prior in units of the weight. With point feet and one normal-force sensor the
#: force along the line between the feet is not observable; under the default weak prior (1e4 m·g)
#: the estimate uses it to fit the measured normal force (±2000 N along the line, which the soles'
#: tilt turns into ±35 N of normal force: 11 % of the weight whatever the filter). 0.3 m·g keeps
#: it within ±40 N (docs/joint_acceleration.md)
PRIOR = 0.3


def config(measured, extra: dict):
    """IMU (ω̇ from the gyro) and the normal force of foot ``measured`` (a name, or a tuple of them);
    node parameters ``extra``, whose ``offset_drift`` (N/√s) tracks the measured feet's offsets."""
    from rbd_estimator import SensorConfig
    from rbd_estimator.runtime.params import NODE_KEYS
    extra = dict(extra)
    drift = extra.pop("offset_drift", 0.0)
    extra.setdefault("contact_prior_stddev", PRIOR)
    feet = [f for f in FEET if f[0] in ((measured,) if isinstance(measured, str) else measured)]
    return SensorConfig.from_dict(dict(
        floating_base=True, joint_states_topic="/joint_states", oracle_every_n=0, fault_false_alarm_rate=0.0,
        imu=dict(frame="root_link_imu_frame", topic="/imu", use_angular_acceleration=True),
        contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="l_sole", type="point_force"), r_foot=dict(frame="r_sole", type="point_force")),
        foot_force_sensors=[f[0] for f in feet],
        foot_force={name: dict(contact=contact, topic=topic, stddev=5.0, offset_drift=drift)
                    for name, topic, contact in feet}, **extra),
        node_keys=NODE_KEYS)


def read_recording(data: str) -> dict:
    """Every message in log order (``raw``: (topic, log time, bytes)) and the decoded arrays."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    ts = get_typestore(Stores.ROS2_HUMBLE)
    raw, out = [], {k: [] for k in ("t", "names", "q", "dq", "quat", "gyro", "acc", "left", "right", "pos", "rot")}
    with Reader(os.path.join(data, "com_sinusoid")) as r:
        for c, t, b in r.messages():
            raw.append((c.topic, t, bytes(b)))
            m = ts.deserialize_cdr(b, c.msgtype)
            if c.topic == "/joint_states":
                out["t"].append(t)
                out["names"] = list(m.name)
                out["q"].append(np.array(m.position))
                out["dq"].append(np.array(m.velocity))
            elif c.topic == "/imu":
                o = m.orientation
                out["quat"].append([o.x, o.y, o.z, o.w])
                out["gyro"].append([m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z])
                out["acc"].append([m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z])
            elif c.topic == "/foot_force/left":
                out["left"].append(m.data[0])
            elif c.topic == "/foot_force/right":
                out["right"].append(m.data[0])
            elif c.topic == "/ground_truth/base_pose":
                p, o = m.pose.position, m.pose.orientation
                out["pos"].append([p.x, p.y, p.z])
                out["rot"].append([o.x, o.y, o.z, o.w])
    arrays = {k: (v if k == "names" else np.array(v, dtype=float)) for k, v in out.items()}
    arrays["t"] = np.array(out["t"], dtype=np.int64)
    return dict(raw=raw, **arrays)


def causal(xml: str, rec: dict, measured: str, extra: dict, offsets: dict | None = None) -> dict:
    """Every message through the replay's tick logic (the node's); estimates by joint-state stamp.
    ``offsets`` ({sensor: N}): subtracted from the measured foot's readings."""
    from rbd_estimator.replay import Replayer
    rep = Replayer(xml, config(measured, extra), collect=True)
    raw = rec["raw"] if offsets is None else corrected(rec["raw"], measured, offsets[measured])
    for topic, t, b in raw:
        rep.feed(topic, b, t)
    res = rep.results()
    return dict(stamps=res["stamps"], fz=res["wrenches"][:, :, 2])


def still_phase_offsets(xml: str, rec: dict, extra: dict, until_s: float = STILL_S) -> dict:
    """``{sensor: offset (N)}``: both feet's normal forces measured, both offsets tracked
    (:data:`TRACK_DRIFT`, contact prior :data:`TRACK_PRIOR`), every message of the first ``until_s``
    seconds through the replay's tick logic (the node's session); the tracker's state at the end."""
    from rbd_estimator.replay import Replayer
    cfg = config(tuple(f[0] for f in FEET), dict(extra, offset_drift=TRACK_DRIFT, contact_prior_stddev=TRACK_PRIOR))
    rep = Replayer(xml, cfg)
    end = rec["raw"][0][1] + int(until_s * 1e9)
    for topic, t, b in rec["raw"]:
        if t > end:
            break
        rep.feed(topic, b, t)
    tr = rep.core.offsets
    return {lab.split()[0]: float(o) for lab, o in zip(tr.labels, tr.offsets)}


def corrected(raw: list, sensor: str, offset: float) -> list:
    """``raw`` with ``offset`` (N) subtracted from every reading of foot-force ``sensor``."""
    from rosbags.typesys import Stores, get_typestore
    ts, kind = get_typestore(Stores.ROS2_HUMBLE), "std_msgs/msg/Float64MultiArray"
    topic = next(f[1] for f in FEET if f[0] == sensor)
    out = []
    for tp, t, b in raw:
        if tp == topic:
            m = ts.deserialize_cdr(b, kind)
            m.data = m.data - offset
            b = bytes(ts.serialize_cdr(m, kind))
        out.append((tp, t, b))
    return out


def zero_phase(xml: str, rec: dict, measured: str) -> dict:
    """Butterworth 5 Hz forwards and backwards on positions and gyro, central differences; the
    library's estimate on every sample."""
    from scipy.signal import butter, filtfilt

    from rbd_estimator import ImuSample, estimator_for
    est = estimator_for(xml, config(measured, {}))
    t = (rec["t"] - rec["t"][0]) * 1e-9
    dt = float(np.mean(np.diff(t)))
    b, a = butter(2, ZERO_PHASE_HZ, fs=1.0 / dt)
    order = [rec["names"].index(j) for j in est.joint_names]
    q = filtfilt(b, a, rec["q"][:, order], axis=0)
    dq = np.gradient(q, dt, axis=0)
    ddq = np.gradient(dq, dt, axis=0)
    alpha = np.gradient(filtfilt(b, a, rec["gyro"], axis=0), dt, axis=0)
    side = "left" if measured.startswith("l") else "right"
    fz = np.zeros((len(t), 2))
    for k in range(len(t)):
        imu = ImuSample(rec["quat"][k], rec["gyro"][k], rec["acc"][k], alpha[k])
        r = est.estimate(q[k], dq[k], ddq[k], imu=imu, readings={measured: [rec[side][k]]})
        fz[k] = r.contact_wrenches[:, 2]
    return dict(stamps=rec["t"], fz=fz)


def com_reference(xml: str, rec: dict) -> tuple[float, np.ndarray]:
    """``(m, m·(g + c̈_z))`` per sample: the centre of mass from the motion-capture base pose and
    the logged joints (pinocchio), zero-phase 5 Hz, two central differences."""
    import pinocchio as pin
    from scipy.signal import butter, filtfilt
    model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    data = model.createData()
    mass = float(sum(i.mass for i in model.inertias))
    names = [model.names[j] for j in range(2, model.njoints)]
    col = [rec["names"].index(n) for n in names]
    c = np.zeros((len(rec["t"]), 3))
    for k in range(len(rec["t"])):
        q = np.concatenate([rec["pos"][k], rec["rot"][k], rec["q"][k][col]])
        c[k] = pin.centerOfMass(model, data, q)
    dt = float(np.mean(np.diff(rec["t"]))) * 1e-9
    b, a = butter(2, ZERO_PHASE_HZ, fs=1.0 / dt)
    cz = filtfilt(b, a, c[:, 2])
    return mass, mass * (G + np.gradient(np.gradient(cz, dt), dt))


def evaluate(xml: str, rec: dict, variants=VARIANTS, skip_s: float = STILL_S) -> list[dict]:
    """Per variant: leave-one-out RMS and mean error of each foot (N) against its logged force, their
    mean, the same against the logged force minus its still-phase offset (``* tracked ref``), and the
    sum's RMS against m·(g + c̈_z) (N); the first ``skip_s`` seconds (filters starting, the still
    phase's offset tracking) left out. ``row["offsets"]``: the still phase's tracked offsets."""
    mass, total_ref = com_reference(xml, rec)
    weight = mass * G
    logged = {"l_foot_force": rec["left"], "r_foot_force": rec["right"]}
    index = {int(t): k for k, t in enumerate(rec["t"])}
    t0 = rec["t"][0] + int(skip_s * 1e9)
    still = still_phase_offsets(xml, rec, KALMAN)
    rows = []
    for label, extra, is_causal in variants:
        extra = dict(extra)
        held = still if extra.pop("still_phase_offsets", False) else None
        row = dict(label=label, causal=is_causal, weight=weight, offsets=still)
        sums = []
        for measured, other in (("r_foot_force", "l_foot_force"), ("l_foot_force", "r_foot_force")):
            res = causal(xml, rec, measured, extra, held) if is_causal else zero_phase(xml, rec, measured)
            keep = res["stamps"] >= t0
            k = np.array([index[int(s)] for s in res["stamps"][keep]])
            fz = res["fz"][keep]
            est_other = fz[:, 0 if other.startswith("l") else 1]
            e = est_other - logged[other][k]
            for ref, e in (("", e), (" tracked ref", e + still[other])):
                row[other + ref] = float(np.sqrt(np.mean(e ** 2)))
                row[other + ref + " bias"] = float(np.mean(e))
            sums.append(fz.sum(axis=1) - total_ref[k])
        for ref in ("", " tracked ref"):
            row["loo" + ref] = 0.5 * (row["l_foot_force" + ref] + row["r_foot_force" + ref])
        row["loo_centred"] = 0.5 * sum(np.sqrt(row[f] ** 2 - row[f + " bias"] ** 2)
                                       for f in ("l_foot_force", "r_foot_force"))
        row["sum"] = float(np.sqrt(np.mean(np.concatenate(sums) ** 2)))
        rows.append(row)
    keep = rec["t"] >= t0
    logged_sum = rec["left"][keep] + rec["right"][keep] - total_ref[keep]
    nan = float("nan")
    rows.append(dict({f"{f}{ref}{b}": nan for f in ("l_foot_force", "r_foot_force", "loo")
                      for ref in ("", " tracked ref") for b in ("", " bias")},
                     label="logged sum (no estimate)", causal=None, weight=weight, loo_centred=nan, offsets=still,
                     sum=float(np.sqrt(np.mean(logged_sum ** 2)))))
    return rows


def table(rows: list[dict]) -> str:
    w = rows[0]["weight"]
    pct = lambda x: f"{x:.2f} N ({100 * x / w:.2f} %)" if np.isfinite(x) else "—"  # noqa: E731
    num = lambda x: f"{x:+.1f}" if np.isfinite(x) else "—"  # noqa: E731
    lines = ["| q̇, q̈, ω̇ from | causal | left, right estimated: RMS (mean error, N) | leave-one-out RMS | "
             "about its mean | against the logged force − its still-phase offset: left, right RMS (mean), "
             "leave-one-out RMS | sum vs m·(g + c̈_z) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        c = {True: "yes", False: "no", None: "—"}[r["causal"]]
        lines.append(f"| {r['label']} | {c} | {pct(r['l_foot_force'])} ({num(r['l_foot_force bias'])}), "
                     f"{pct(r['r_foot_force'])} ({num(r['r_foot_force bias'])}) | {pct(r['loo'])} | "
                     f"{pct(r['loo_centred'])} | {pct(r['l_foot_force tracked ref'])} "
                     f"({num(r['l_foot_force tracked ref bias'])}), {pct(r['r_foot_force tracked ref'])} "
                     f"({num(r['r_foot_force tracked ref bias'])}), {pct(r['loo tracked ref'])} | {pct(r['sum'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA, help="the recording's directory (default: %(default)s)")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from common import machine
    xml = icub_xml(args.data)
    rec = read_recording(args.data)
    rows = evaluate(xml, rec)
    print(machine())
    print(f"iCub com-sinusoid, {len(rec['t'])} samples, weight m·g = {rows[0]['weight']:.1f} N; offsets tracked "
          f"over the still phase (0–{STILL_S:g} s, both feet): "
          + ", ".join(f"{k} {v:+.2f} N" for k, v in rows[0]["offsets"].items()) + f"; rows from {STILL_S:g} s")
    print(table(rows))
    zp = next(r for r in rows if r["causal"] is False)["loo"]
    for r in rows:
        if r["causal"]:
            print(f"{r['label']}: leave-one-out {r['loo'] / zp:.2f} × the zero-phase figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())

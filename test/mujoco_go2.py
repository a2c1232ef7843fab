"""A Go2 in MuJoCo (an independent simulator) with the actuators' armature, Coulomb and viscous
friction: the robot of example-robot-data's URDF (the estimator's model), a free base, point
feet on a floor, torque-controlled motors whose torque the joint-torque sensors read.

MuJoCo's joint ``armature`` adds to the joint-space inertia's diagonal, ``frictionloss`` is dry
friction (a constraint), ``damping`` viscous friction: the joint receives the motor torque minus
those, which is the actuator model of docs/actuator_model.md. Values: MuJoCo Menagerie's
``unitree_go2/go2.xml`` (commit 2ffe3e33bbf5785a4c5a2290dd909b7a051845bf): ``armature="0.01"
frictionloss="0.2" damping="2"`` on every joint.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

ARMATURE, FRICTIONLOSS, DAMPING = 0.01, 0.2, 2.0
FEET = ("FL", "FR", "RL", "RR")
FOOT_RADIUS = 0.004          # m: small, so that the contact point is close to the foot frame's origin


def _mjcf_from_urdf(urdf: str) -> str:
    """The URDF without visuals and collisions, fixed links kept (foot and IMU frames)."""
    root = ET.fromstring(urdf)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    ext = ET.SubElement(root, "mujoco")
    ET.SubElement(ext, "compiler", fusestatic="false", discardvisual="true", balanceinertia="false")
    return ET.tostring(root, encoding="unicode")


def build(urdf: str, armature=ARMATURE, frictionloss=FRICTIONLOSS, damping=DAMPING, timestep=5e-4):
    """``(MjModel, MjData)``: the Go2 standing at the home pose on a floor."""
    import mujoco
    spec = mujoco.MjSpec.from_string(_mjcf_from_urdf(urdf))
    spec.option.timestep = timestep
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    base = spec.body("base")
    base.add_freejoint()
    base.pos = [0, 0, 0.30]
    for j in spec.joints:
        if j.type == mujoco.mjtJoint.mjJNT_HINGE:
            j.armature, j.frictionloss, j.damping = armature, frictionloss, [damping, 0.0, 0.0]
    for f in FEET:
        spec.body(f"{f}_foot").add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[FOOT_RADIUS, 0, 0],
                                       friction=[1.0, 0.005, 0.0001], condim=3)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1], condim=3)
    imu = spec.body("imu")
    site = imu.add_site(name="imu_site")
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu_site")
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu_site")
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_FRAMEQUAT, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu_site")
    del site
    model = spec.compile()
    return model, mujoco.MjData(model)


def simulate(urdf: str, joint_names, seconds=3.0, rate_hz=500.0, seed=0, amplitude=1.0, **kw):
    """A squatting and swaying stance under joint PD control (all four feet on the floor; ``amplitude``
    scales the joint targets' sinusoids).
    Returns a dict of arrays per sample at ``rate_hz``: ``q``, ``dq``, ``ddq`` (joint_names
    order), ``quat`` ([x, y, z, w]), ``gyro``, ``acc`` (IMU frame), ``alpha`` (IMU angular
    acceleration, IMU frame), ``motor`` (the torques the motors produce, N·m), ``force`` (the
    contact force on each foot, world, (n, 4, 3)), ``R_foot`` (world ← foot frame)."""
    import mujoco
    model, data = build(urdf, **kw)
    rng = np.random.default_rng(seed)
    qadr = np.array([model.joint(n).qposadr[0] for n in joint_names])
    vadr = np.array([model.joint(n).dofadr[0] for n in joint_names])
    home = np.array([{"hip": 0.0, "thigh": 0.8, "calf": -1.6}[n.split("_")[1]] for n in joint_names])
    data.qpos[qadr] = home
    mujoco.mj_forward(model, data)
    lowest = min(data.geom_xpos[model.geom(i).id][2] for i in range(model.ngeom) if model.geom_bodyid[i] > 0)
    data.qpos[2] -= lowest - FOOT_RADIUS + 1e-4
    kp, kd = 60.0, 3.0
    amp = amplitude * np.array([{"hip": 0.08, "thigh": 0.25, "calf": 0.45}[n.split("_")[1]] for n in joint_names])
    phase = rng.uniform(0, 2 * np.pi, 2)
    step_every = int(round(1.0 / (rate_hz * model.opt.timestep)))
    out = {k: [] for k in ("q", "dq", "ddq", "quat", "gyro", "acc", "alpha", "motor", "force", "R_foot")}
    imu = model.site("imu_site").id
    imu_body = model.site_bodyid[imu]
    foot_bodies = [model.body(f"{f}_foot").id for f in FEET]
    settle = int(0.5 / model.opt.timestep)
    for k in range(settle + int(seconds / model.opt.timestep)):
        t = max(0, k - settle) * model.opt.timestep
        s = np.sin(2 * np.pi * 1.2 * t + phase[0]) * min(1.0, t)
        target = home + amp * s * np.where(np.char.startswith(np.array(joint_names), "F"), 1.0, 0.7)
        target += 0.05 * np.sin(2 * np.pi * 0.7 * t + phase[1]) * (np.char.find(np.array(joint_names), "hip") >= 0)
        motor = kp * (target - data.qpos[qadr]) - kd * data.qvel[vadr]
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[vadr] = motor
        mujoco.mj_forward(model, data)
        if k >= settle and (k - settle) % step_every == 0:
            _record(model, data, out, qadr, vadr, motor, imu, imu_body, foot_bodies)
        mujoco.mj_step(model, data)
    return {k: np.array(v) for k, v in out.items()}


def _record(model, data, out, qadr, vadr, motor, imu, imu_body, foot_bodies):
    import mujoco
    out["q"].append(data.qpos[qadr].copy())
    out["dq"].append(data.qvel[vadr].copy())
    out["ddq"].append(data.qacc[vadr].copy())
    sd = data.sensordata
    out["acc"].append(sd[0:3].copy())
    out["gyro"].append(sd[3:6].copy())
    w, x, y, z = sd[6:10]
    out["quat"].append(np.array([x, y, z, w]))
    R_site = data.site_xmat[imu].reshape(3, 3)
    R_base = data.xmat[model.body("base").id].reshape(3, 3)
    alpha_base = data.qacc[3:6]                          # free joint: angular acceleration, base frame
    out["alpha"].append(R_site.T @ R_base @ alpha_base)
    out["motor"].append(motor.copy())
    forces = np.zeros((4, 3))
    for i in range(data.ncon):
        c = data.contact[i]
        b = {model.geom_bodyid[c.geom1], model.geom_bodyid[c.geom2]}
        for k, fb in enumerate(foot_bodies):
            if fb in b:
                f6 = np.zeros(6)
                mujoco.mj_contactForce(model, data, i, f6)
                f_world = c.frame.reshape(3, 3).T @ f6[:3]           # on geom2 from geom1
                forces[k] += f_world if model.geom_bodyid[c.geom2] == fb else -f_world
    out["force"].append(forces)
    out["R_foot"].append(np.array([data.xmat[fb].reshape(3, 3) for fb in foot_bodies]))

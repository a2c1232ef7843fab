"""Fill the compiled-code cache ahead of time (issue 14): ``rbd-estimator warm-cache``.

Plans every shipped configuration whose robot description is installed (the package's humanoid
and arm always; iCub, Talos, Go2, G1 with example-robot-data), makes a few estimates with each,
and runs the node's compiled input handling, so that every kernel a first ``configure`` and the
first ticks use is compiled once, into the cache of :mod:`rbd_estimator.jit`. In a container
image, run it once after installing the package (``RUN rbd-estimator warm-cache``); the cache then
lives inside the installation (or ``$RBD_ESTIMATOR_CACHE_DIR``) and serves read-only starts.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np


def _sample(est):
    """Finite inputs of the estimator's shapes (the values do not matter for compiling)."""
    from .estimation import ImuSample
    cfg, n = est.config, len(est.joint_names)
    kw = dict(q=np.zeros(n), dq=np.zeros(n), ddq=np.zeros(n))
    if cfg.imu is not None:
        kw["imu"] = ImuSample(np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), np.array([0.0, 0.0, 9.81]),
                              np.zeros(3) if cfg.imu.use_angular_acceleration else None)
    if cfg.ft_sensors:
        kw["ft"] = np.zeros((len(cfg.ft_sensors), 6))
    if cfg.load_cells:
        kw["load_cells"] = [np.full(len(c.positions), 10.0) for c in cfg.load_cells]
    if cfg.joint_torque_sensors:
        kw["joint_torques"] = np.zeros(len(cfg.joint_torque_sensors))
    return kw


def _warm_dynamics(model) -> None:
    """Call every public dynamics function once on ``model`` (their kernels compile or load)."""
    from .dynamics import DynamicsData, aba, crba, forward_dynamics_ltdl, minverse, rnea
    q, v = model.neutral_configuration(), np.zeros(model.nv)
    data = DynamicsData(model)
    rnea(model, q, v, v, data=data)
    aba(model, q, v, v, data=data)
    forward_dynamics_ltdl(model, q, v, v, data=data)
    minverse(model, q, data=data)
    crba(model, q, data=data)


def warm(names=None, log=print) -> int:
    """Compile (or load) the kernels of the shipped configurations; returns how many were warmed."""
    from . import robots
    from .errors import ConfigError
    from .estimation import SensorConfig
    from .estimation.loops import estimator_for
    from .jit import cache_root, compile_timer
    from .runtime.inputs import SensorInputs
    from .runtime.params import NODE_KEYS, NodeSettings
    t0, done = time.perf_counter(), 0
    with compile_timer() as compiled:
        for name in names or robots.SHIPPED:
            try:
                params, urdf = robots.params_file(name), robots.urdf_file(name)
            except ConfigError as exc:
                log(f"warm-cache: skipping {name}: {exc}")
                continue
            with open(urdf, encoding="utf-8") as fh:
                xml = fh.read()
            cfg = SensorConfig.from_yaml(params, node_keys=NODE_KEYS)
            est = estimator_for(xml, cfg)
            for _ in range(2):
                est.estimate(**_sample(est))
            SensorInputs.for_estimator(est, cfg, NodeSettings.from_parameters(dict(cfg.node))).warm_up()
            log(f"warm-cache: {name} ready")
            done += 1
            if name == "humanoid":      # the library's dynamics functions (compiled rnea, aba, crba, M⁻¹, LTDL)
                _warm_dynamics(est.model)
            if name == "humanoid":      # with geared rotors (config/humanoid_loops.yaml): the loop kernels
                loops = os.path.join(os.path.dirname(params), "humanoid_loops.yaml")
                if os.path.isfile(loops):
                    est = estimator_for(xml, SensorConfig.from_parameters({**cfg.to_parameters(), "loops_file": loops}))
                    for _ in range(2):
                        est.estimate(**_sample(est))
                    log("warm-cache: humanoid with rotors ready")
    seconds = time.perf_counter() - t0
    log(f"warm-cache: {done} configurations in {seconds:.1f} s ({compiled.seconds:.1f} s compiling) "
        f"into {cache_root()}")
    return done


def main(argv=None) -> int:
    return 0 if warm(argv or None) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

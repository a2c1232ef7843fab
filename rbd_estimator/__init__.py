"""rbd_estimator: joint-torque and contact-wrench estimation for legged robots (Nori's sparse formulation).

The library (everything but :mod:`rbd_estimator.node`) imports no ROS module.
"""
from .errors import ConfigError, IllPosedError, ModelError
from .model.robot_model import Frame, FTSensor, RobotModel

__all__ = ["ModelError", "ConfigError", "IllPosedError", "RobotModel", "Frame", "FTSensor"]


def _export(module: str, names: list) -> None:
    """Re-export names from submodules that exist (the package grows module by module)."""
    import importlib
    try:
        mod = importlib.import_module(module, __name__)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(__name__):
            return
        raise
    for n in names:
        if hasattr(mod, n):
            globals()[n] = getattr(mod, n)
            __all__.append(n)


_export(".model.cost", ["cost"])
_export(".dynamics", ["rnea", "aba", "crba", "ltl", "ltdl", "minverse", "forward_dynamics_ltdl"])
_export(".estimation", ["Estimator", "SensorConfig"])

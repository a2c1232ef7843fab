"""rbd_estimator: joint-torque and contact-wrench estimation for legged robots (Nori's sparse formulation).

The library (everything but :mod:`rbd_estimator.node` and :mod:`rbd_estimator.ros`) imports no ROS module.
"""
from .dynamics import (ClusterDynamics, DynamicsData, aba, ce_aba, ce_crba, ce_rnea, crba, forward_dynamics_ltdl, ltdl, ltl, minverse,
                       mul_L, mul_Lt, rnea, solve_L, solve_Lt)
from .errors import ConfigError, IllPosedError, ModelError, ModelWarning
from .estimation import (Estimate, Estimator, EstimatorInterface, ImuSample, LoopEstimate, LoopEstimator, SensorConfig,
                         SwitchingEstimator, apply_offsets, calibrate_ft_offsets, estimator_for, make_estimator)
from .estimation.forward import SparseForwardDynamics
from .estimation.hybrid import HybridDynamics
from .model.clusters import ClusterTree
from .model.cost import cost
from .model.loops import LoopConfig
from .model.robot_model import Frame, FTSensor, RobotModel

__all__ = ["ModelError", "ModelWarning", "ConfigError", "IllPosedError", "RobotModel", "Frame", "FTSensor",
           "rnea", "aba", "crba", "minverse", "ltl", "ltdl", "mul_L", "mul_Lt", "solve_L", "solve_Lt",
           "forward_dynamics_ltdl", "DynamicsData", "cost", "SensorConfig", "Estimator", "EstimatorInterface", "estimator_for",
           "make_estimator", "Estimate", "ImuSample",
           "LoopEstimator", "LoopEstimate",
           "SparseForwardDynamics", "HybridDynamics", "calibrate_ft_offsets", "apply_offsets",
           "ClusterTree", "ClusterDynamics", "LoopConfig", "ce_aba", "ce_rnea", "ce_crba", "SwitchingEstimator"]

"""Nori's estimation: system layout, sensor rows, the off-line plan and the on-line solve."""
from .config import ContactConfig, FTConfig, ImuConfig, LoadCellConfig, SensorConfig
from .calibration import CalibrationResult, SensorOffset, apply_offsets, calibrate_ft_offsets
from .estimate import Estimate
from .estimator import Estimator
from .measurements import ImuSample
from .contacts import ContactDetector, SwitchingEstimate, SwitchingEstimator, make_estimator
from .interface import EstimatorInterface
from .loops import LoopEstimate, LoopEstimator, estimator_for

__all__ = ["SensorConfig", "ImuConfig", "FTConfig", "ContactConfig", "LoadCellConfig",
           "Estimator", "EstimatorInterface", "make_estimator", "estimator_for", "Estimate", "ImuSample", "SwitchingEstimator", "SwitchingEstimate", "ContactDetector", "LoopEstimator", "LoopEstimate",
           "calibrate_ft_offsets", "apply_offsets",
           "CalibrationResult", "SensorOffset"]

"""Nori's estimation: system layout, sensor rows, the off-line plan and the on-line solve."""
from .config import ContactConfig, FTConfig, ImuConfig, LoadCellConfig, SensorConfig
from .estimator import Estimate, Estimator, ImuSample

__all__ = ["SensorConfig", "ImuConfig", "FTConfig", "ContactConfig", "LoadCellConfig",
           "Estimator", "Estimate", "ImuSample"]

"""Rigid-body dynamics of the papers: compiled, allocation-free functions behind the public names.

``rnea``, ``aba``, ``crba``, ``minverse``, ``forward_dynamics_ltdl`` run compiled kernels
(:mod:`.tree_jit`, :mod:`.minverse_jit`) in the buffers of a :class:`DynamicsData` (pinocchio's
Data: ``data=DynamicsData(model)``, made once by the caller; without it a call makes its own, about
0.7 ms for iCub); ``ltl``, ``ltdl`` and the four kernels of Featherstone's App. A are compiled in
:mod:`.ltl_jit`. The readable versions, the equations line by line, are in :mod:`.reference` (one
algorithm per module: :mod:`.rnea`, :mod:`.aba`, :mod:`.crba`, :mod:`.ltl`,
:mod:`.forward_dynamics`, :mod:`.minverse`), and :mod:`.ce_aba` / :mod:`.ce_rnea` hold Chignoli's
constraint embedding on the cluster tree.
"""
from . import data as _data, reference  # noqa: F401 (reference first: it binds the submodules rnea, aba, …)
from .ce_rnea import ce_crba
from .ce_data import ClusterDynamics, ce_aba, ce_rnea   # compiled (after the readable modules, whose
                                                            # names these functions shadow in the package)
from .data import DynamicsData
from .ltl_jit import ltdl, ltdl_inplace, ltl, ltl_inplace, mul_L, mul_Lt, solve_L, solve_Lt

# Mimic joints (URDF <mimic>): the public names also take pinocchio's mimic layout (see .mimic).
rnea, aba, crba, minverse = _data.rnea, _data.aba, _data.crba, _data.minverse
forward_dynamics_ltdl = _data.forward_dynamics_ltdl

__all__ = ["rnea", "aba", "crba", "ltl", "ltdl", "ltl_inplace", "ltdl_inplace",
           "mul_L", "mul_Lt", "solve_L", "solve_Lt", "forward_dynamics_ltdl", "minverse",
           "DynamicsData", "ce_aba", "ce_rnea", "ce_crba", "ClusterDynamics"]

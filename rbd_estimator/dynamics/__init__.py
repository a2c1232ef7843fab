"""Readable reference algorithms of the papers (not the per-tick path).

One algorithm per module: :mod:`.rnea` (Nori §IV-A), :mod:`.aba` (Nori §V-A), :mod:`.crba`
(Featherstone 2005 §5), :mod:`.ltl` (Featherstone 2005 §2 and App. A: LTL, LTDL and the four
kernels), :mod:`.forward_dynamics` (eq. 1 via CRBA + LTDL), :mod:`.minverse` (Carpentier 2018),
:mod:`.ce_aba` and :mod:`.ce_rnea` (Chignoli et al., constraint embedding on the cluster tree).
"""
from . import aba as _aba, crba as _crba, forward_dynamics as _fd, minverse as _minverse, rnea as _rnea
from .ce_rnea import ce_crba
from .ce_compiled import ClusterDynamics, ce_aba, ce_rnea   # compiled (after the readable modules, whose
                                                            # names these functions shadow in the package)
from .ltl import ltdl, ltdl_inplace, ltl, ltl_inplace, mul_L, mul_Lt, solve_L, solve_Lt
from .mimic import mimic_crba, mimic_forward, mimic_minverse, mimic_rnea

# Mimic joints (URDF <mimic>): the public names also take pinocchio's mimic layout (see .mimic).
rnea = mimic_rnea(_rnea.rnea)
crba = mimic_crba(_crba.crba)
minverse = mimic_minverse(_minverse.minverse, _crba.crba)
aba = mimic_forward(_aba.aba, _rnea.rnea, _crba.crba)
forward_dynamics_ltdl = mimic_forward(_fd.forward_dynamics_ltdl, _rnea.rnea, _crba.crba)

__all__ = ["rnea", "aba", "crba", "ltl", "ltdl", "ltl_inplace", "ltdl_inplace",
           "mul_L", "mul_Lt", "solve_L", "solve_Lt", "forward_dynamics_ltdl", "minverse",
           "ce_aba", "ce_rnea", "ce_crba", "ClusterDynamics"]

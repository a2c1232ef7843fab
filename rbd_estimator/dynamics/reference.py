"""The readable reference algorithms: the papers' equations line by line, the tests' second oracle.

Pure Python and numpy, looping over the bodies (hundreds of times slower than the compiled
functions behind the public names, which the tests hold to these and to pinocchio). Same names,
signatures and results as :mod:`rbd_estimator.dynamics`, mimic layout included:
:mod:`.rnea` (Nori §IV-A), :mod:`.aba` (Nori §V-A), :mod:`.crba` (Featherstone 2005 §5),
:mod:`.ltl` (Featherstone 2005 §2 and App. A), :mod:`.forward_dynamics` (eq. 1 via CRBA + LTDL),
:mod:`.minverse` (Carpentier 2018), and Chignoli's constraint embedding :mod:`.ce_aba` (Alg. 1) and
:mod:`.ce_rnea` (§V) on the cluster tree.
"""
from .aba import aba as _aba
from .crba import crba as _crba
from .forward_dynamics import forward_dynamics_ltdl as _fd
from .minverse import minverse as _minverse
from .rnea import rnea as _rnea
from .ltl import ltdl, ltdl_inplace, ltl, ltl_inplace, mul_L, mul_Lt, solve_L, solve_Lt
from .mimic import mimic_crba, mimic_forward, mimic_minverse, mimic_rnea
from .ce_aba import ce_aba
from .ce_rnea import ce_crba, ce_rnea

rnea = mimic_rnea(_rnea)
crba = mimic_crba(_crba)
minverse = mimic_minverse(_minverse, _crba)
aba = mimic_forward(_aba, _rnea, _crba)
forward_dynamics_ltdl = mimic_forward(_fd, _rnea, _crba)

__all__ = ["rnea", "aba", "crba", "minverse", "forward_dynamics_ltdl", "ltl", "ltdl", "ltl_inplace",
           "ltdl_inplace", "mul_L", "mul_Lt", "solve_L", "solve_Lt", "ce_aba", "ce_rnea", "ce_crba"]

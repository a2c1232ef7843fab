"""Readable reference algorithms of the papers (not the per-tick path).

One algorithm per module: :mod:`.rnea` (Nori §IV-A), :mod:`.aba` (Nori §V-A), :mod:`.crba`
(Featherstone 2005 §5), :mod:`.ltl` (Featherstone 2005 §2 and App. A: LTL, LTDL and the four
kernels), :mod:`.forward_dynamics` (eq. 1 via CRBA + LTDL), :mod:`.minverse` (Carpentier 2018),
:mod:`.ce_aba` and :mod:`.ce_rnea` (Chignoli et al., constraint embedding on the cluster tree).
"""
from .aba import aba
from .ce_aba import ce_aba
from .ce_rnea import ce_crba, ce_rnea
from .crba import crba
from .forward_dynamics import forward_dynamics_ltdl
from .ltl import ltdl, ltdl_inplace, ltl, ltl_inplace, mul_L, mul_Lt, solve_L, solve_Lt
from .minverse import minverse
from .rnea import rnea

__all__ = ["rnea", "aba", "crba", "ltl", "ltdl", "ltl_inplace", "ltdl_inplace",
           "mul_L", "mul_Lt", "solve_L", "solve_Lt", "forward_dynamics_ltdl", "minverse",
           "ce_aba", "ce_rnea", "ce_crba"]

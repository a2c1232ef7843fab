"""The public dynamics functions on models with mimic joints (pinocchio's mimic layout).

For a model with ``<mimic>`` joints, ``q``/``v``/``a``/``τ`` may be given in the independent
layout of :class:`~rbd_estimator.model.mimic.MimicMap` (the layout of pinocchio's
``buildModelFromUrdf(..., mimic=True)``) or in the tree's layout (every joint a coordinate); the
length of ``q`` tells which. In the independent layout, with ``q = γ(y)``, ``q̇ = G ẏ``,
``q̈ = G ÿ`` (the map's constant ``G``, ``g = 0``; Chignoli eqs. 3 and 6):

    rnea:     τ_y = Gᵀ rnea(q, G ẏ, G ÿ)
    crba:     H_y = Gᵀ H(q) G
    aba:      ÿ = H_y⁻¹ (τ_y − Gᵀ rnea(q, G ẏ, 0))
    minverse: H_y⁻¹
"""
from __future__ import annotations

import functools

import numpy as np

from ..model.mimic import mimic_map


def _independent(model, q):
    """The model's mimic map when ``q`` is in the independent layout, else None."""
    m = mimic_map(model)
    return m if m is not None and np.shape(q) == (m.nq,) else None


# ---------------------------------------------------------------------------- the independent layout
# ``m``: the model's MimicMap; ``rnea``, ``crba``: the tree-layout algorithm, without the model
# argument (a DynamicsData's method, or a reference function bound to its model).
def rnea_independent(m, rnea, q, dq, ddq, f_ext=None):
    """``τ_y = Gᵀ rnea(q, G ẏ, G ÿ)``."""
    return m.G.T @ rnea(m.q(q), m.G @ dq, m.G @ ddq, f_ext)


def crba_independent(m, crba, q):
    """``H_y = Gᵀ H(q) G``."""
    return m.G.T @ crba(m.q(q)) @ m.G


def minverse_independent(m, crba, q):
    """``H_y⁻¹``."""
    return np.linalg.inv(crba_independent(m, crba, q))


def forward_independent(m, rnea, crba, q, dq, tau, f_ext=None):
    """``ÿ = H_y⁻¹ (τ_y − Gᵀ rnea(q, G ẏ, 0))`` (``aba`` and ``forward_dynamics_ltdl``)."""
    qt = m.q(q)
    h = m.G.T @ rnea(qt, m.G @ dq, np.zeros(m.G.shape[0]), f_ext)
    return np.linalg.solve(m.G.T @ crba(qt) @ m.G, np.asarray(tau, dtype=float) - h)


# ---------------------------------------------------------------------------- model-level wrappers
def mimic_rnea(rnea):
    @functools.wraps(rnea)
    def wrapped(model, q, dq, ddq, f_ext=None):
        m = _independent(model, q)
        if m is None:
            return rnea(model, q, dq, ddq, f_ext)
        return rnea_independent(m, functools.partial(rnea, model), q, dq, ddq, f_ext)
    return wrapped


def mimic_crba(crba):
    @functools.wraps(crba)
    def wrapped(model, q):
        m = _independent(model, q)
        return crba(model, q) if m is None else crba_independent(m, functools.partial(crba, model), q)
    return wrapped


def mimic_minverse(minverse, crba):
    @functools.wraps(minverse)
    def wrapped(model, q):
        m = _independent(model, q)
        return minverse(model, q) if m is None else minverse_independent(m, functools.partial(crba, model), q)
    return wrapped


def mimic_forward(forward, rnea, crba):
    """``aba`` and ``forward_dynamics_ltdl``."""
    @functools.wraps(forward)
    def wrapped(model, q, dq, tau, f_ext=None):
        m = _independent(model, q)
        if m is None:
            return forward(model, q, dq, tau, f_ext)
        return forward_independent(m, functools.partial(rnea, model), functools.partial(crba, model), q, dq, tau,
                                   f_ext)
    return wrapped

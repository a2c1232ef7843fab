"""Parent arrays of the kinematic trees used in Featherstone (2005), for tests and benchmarks.

Not a test module. Every generator returns a list of ints in the 0-based convention of
:mod:`rbd_estimator.model.cost`: ``parents[i] < i`` (regular numbering) and ``-1`` means "hangs
from the fixed base". All joints are 1-DoF unless a ``dofs`` list is returned as well.
Numbering is depth-first wherever the tree allows it, as RobotModel numbers bodies.
"""
from __future__ import annotations

import numpy as np


def serial_chain(n: int) -> list[int]:
    """Unbranched chain of ``n`` bodies (Table 2, first row): λ(i) = i − 1."""
    return [i - 1 for i in range(n)]


def balanced_binary_tree(m: int) -> list[int]:
    """Balanced binary tree of n = 2^m − 1 bodies (Fig. 4b): one body on the root, every body
    above the last level has two children; 2^(k−1) bodies at depth k = 1 … m."""
    if m < 1:
        raise ValueError("m must be >= 1")
    n = 2 ** m - 1
    # Depth-first (pre-order) numbering of the heap-shaped tree.
    parents: list[int] = []

    def visit(parent: int, level: int) -> None:
        me = len(parents)
        parents.append(parent)
        if level < m:
            visit(me, level + 1)
            visit(me, level + 1)

    visit(-1, 1)
    assert len(parents) == n
    return parents


def short_side_branches(m: int) -> list[int]:
    """Chain of ``m`` bodies each carrying one single-body side branch, n = 2m (Fig. 4a)."""
    parents: list[int] = []
    prev_main = -1
    for _ in range(m):
        main = len(parents)
        parents.append(prev_main)
        parents.append(main)          # the side branch, numbered right after its parent
        prev_main = main
    return parents


def square_grid_spanning_tree(m: int, seed: int | None = None) -> list[int]:
    """A spanning tree of an m × m grid of bodies, n = m², with the root attached to the corner
    body (0, 0) and every body on a minimum-length path to the root (Fig. 4c): body (r, c) has
    d = r + c + 1. Its parent is (r−1, c) or (r, c−1).

    ``seed=None`` gives a deterministic comb: the first row is a chain, every column hangs from it.
    An integer seed picks each body's parent at random among the two candidates, which gives
    another tree with the same D₁ and D₂ (§4.2: the formulas hold for all such trees).
    Bodies are numbered row by row, which is regular since both candidate parents come earlier.
    """
    if m < 1:
        raise ValueError("m must be >= 1")
    rng = None if seed is None else np.random.default_rng(seed)
    idx = lambda r, c: r * m + c  # noqa: E731
    parents: list[int] = []
    for r in range(m):
        for c in range(m):
            candidates = []
            if r > 0:
                candidates.append(idx(r - 1, c))
            if c > 0:
                candidates.append(idx(r, c - 1))
            if not candidates:
                parents.append(-1)
            elif rng is None:
                parents.append(candidates[0])          # up the column, or along the first row
            else:
                parents.append(int(candidates[rng.integers(len(candidates))]))
    return parents


def humanoid_30dof() -> tuple[list[int], list[int]]:
    """The 30-DoF humanoid of §6 (Fig. 6): a torso on a 6-DoF joint and four 6-body limbs of
    revolute joints. Returns ``(parents, dofs)`` of the unexpanded 25-body graph; body 0 is the
    torso, limb k is bodies 1 + 6k … 6 + 6k."""
    parents = [-1]
    for _ in range(4):
        first = len(parents)
        parents.append(0)
        parents.extend(range(first, first + 5))
    dofs = [6] + [1] * 24
    return parents, dofs


def floating_chain_30dof() -> tuple[list[int], list[int]]:
    """§6's equivalent unbranched chain: a floating body and 24 revolute joints in series."""
    return serial_chain(25), [6] + [1] * 24


def random_tree(n: int, rng: np.random.Generator, branchiness: float = 0.5) -> list[int]:
    """A random regular tree of ``n`` bodies. With probability ``1 − branchiness`` a body hangs
    from the previous one (chains); otherwise from a uniformly chosen earlier body or the root."""
    parents: list[int] = []
    for i in range(n):
        if i == 0:
            parents.append(-1)
        elif rng.random() >= branchiness:
            parents.append(i - 1)
        else:
            parents.append(int(rng.integers(-1, i)))
    return parents


def tree_urdf(parents, seed: int = 0, ft_leaves: int = 0, name: str = "tree") -> tuple[str, list[str]]:
    """A URDF for a parent array: random revolute axes, offsets and physically valid inertias.
    The first ``ft_leaves`` leaves each get a foot link on a fixed joint carrying a
    ``force_torque`` sensor (gazebo tag), and a massless sole frame. Returns ``(xml, soles)``."""
    rng = np.random.default_rng(seed)
    n = len(parents)
    links = ['<link name="root"><inertial><mass value="2.0"/><inertia ixx="0.02" ixy="0" ixz="0" '
             'iyy="0.03" iyz="0" izz="0.025"/></inertial></link>']
    joints, gazebo, soles = [], [], []

    def inertial():
        m = rng.uniform(0.5, 2.0)
        d = rng.uniform(0.002, 0.01, 3)
        ixx, iyy, izz = d[1] + d[2], d[0] + d[2], d[0] + d[1]          # triangle inequality holds
        c = rng.uniform(-0.05, 0.05, 3)
        return (f'<inertial><origin xyz="{c[0]} {c[1]} {c[2]}" rpy="{rng.uniform(-1, 1)} 0 0"/>'
                f'<mass value="{m}"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')

    for i, p in enumerate(parents):
        parent = "root" if p < 0 else f"l{p}"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        xyz, rpy = rng.uniform(-0.2, 0.2, 3), rng.uniform(-np.pi, np.pi, 3)
        links.append(f'<link name="l{i}">{inertial()}</link>')
        joints.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
                      f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                      f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
                      f'<limit effort="100" velocity="10" lower="-3" upper="3"/></joint>')
    leaves = [i for i in range(n) if i not in set(parents)]
    for k, i in enumerate(leaves[:ft_leaves]):
        links.append(f'<link name="foot{k}">{inertial()}</link><link name="sole{k}"/>')
        joints.append(f'<joint name="ft{k}" type="fixed"><parent link="l{i}"/><child link="foot{k}"/>'
                      f'<origin xyz="0 0 -0.05" rpy="0 0 0"/></joint>'
                      f'<joint name="sole{k}_joint" type="fixed"><parent link="foot{k}"/><child link="sole{k}"/>'
                      f'<origin xyz="0.02 0 -0.03" rpy="0 0 0"/></joint>')
        gazebo.append(f'<gazebo reference="ft{k}"><sensor name="ft{k}" type="force_torque"/></gazebo>')
        soles.append(f"sole{k}")
    xml = f'<robot name="{name}">' + "".join(links + joints + gazebo) + "</robot>"
    return xml, soles

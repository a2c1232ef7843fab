"""The fleet's recordings and which parameter file each takes.

Recordings: each argument is a rosbag2 recording (a folder with ``metadata.yaml`` or an ``.mcap`` /
``.db3`` file), a folder searched recursively for recordings, or a glob pattern (``**`` allowed) of
either. A recording's output folder is its path relative to the recordings' common parent.

Parameter files: ``--params FILE`` for every recording, or one ``--params ROBOT=FILE`` per robot of
a mixed fleet (both forms may be combined: the plain file is the default). A recording belongs to
``ROBOT`` when a folder of its path is named ``ROBOT`` (the deepest such folder wins), as in
``fleet/talos_02/2026-11-27/run_3``. ``--robot-description [ROBOT=]URDF`` is read the same way.
"""
from __future__ import annotations

import glob
import os

from .tasks import Task

#: the robot name of the plain ``--params FILE`` (every recording no ``ROBOT=`` entry claims)
DEFAULT = ""


class FleetError(ValueError):
    """The fleet cannot start (no recording, a malformed ``ROBOT=FILE`` entry, a missing file)."""


def is_recording(path: str) -> bool:
    if not os.path.isdir(path):
        return False
    return any(f == "metadata.yaml" or f.endswith((".mcap", ".db3")) for f in os.listdir(path))


def find_recordings(args) -> list:
    """The recordings named by ``args`` (module docstring), each once, sorted."""
    found = set()
    for a in args:
        paths = sorted(glob.glob(a, recursive=True)) if glob.has_magic(a) else [a]
        if not paths:
            raise FleetError(f"no recording matches '{a}'")
        for p in paths:
            if is_recording(p):
                found.add(os.path.normpath(p))
            elif os.path.isdir(p):
                found.update(os.path.normpath(d) for d, _, _ in os.walk(p) if is_recording(d))
            elif not glob.has_magic(a):
                raise FleetError(f"'{a}' is not a rosbag2 recording nor a folder of recordings")
    return sorted(found)


def mapping(values, what: str) -> dict:
    """``{robot: file}`` of ``[ROBOT=]FILE`` entries (the plain form under :data:`DEFAULT`); every
    file must exist."""
    out = {}
    for v in values or ():
        robot, _, path = v.rpartition("=") if "=" in v else (DEFAULT, "", v)
        if robot in out:
            raise FleetError(f"{what}: robot '{robot or '(default)'}' given twice ({out[robot]}, {path})")
        if not os.path.isfile(path):
            raise FleetError(f"{what} {v}: no such file '{path}'")
        out[robot] = path
    return out


def robot_of(recording: str, robots) -> str | None:
    """The robot of ``recording``: its deepest folder named as one of ``robots`` (else the default
    when there is one, else None)."""
    parts = os.path.normpath(os.path.abspath(recording)).split(os.sep)
    for p in reversed(parts):
        if p in robots and p != DEFAULT:
            return p
    return DEFAULT if DEFAULT in robots else None


def names(recordings) -> list:
    """Each recording's output folder: its path relative to the recordings' common parent."""
    if not recordings:
        return []
    full = [os.path.abspath(r) for r in recordings]
    root = os.path.commonpath([os.path.dirname(f) for f in full])
    return [os.path.relpath(f, root) for f in full]


def make_tasks(recordings, output: str, params: dict, descriptions: dict | None = None, **options):
    """``(tasks, unassigned)``: a :class:`Task` per recording with a parameter file, and the
    ``(recording, name, reason)`` of those without."""
    tasks, unassigned = [], []
    descriptions = descriptions or {}
    for rec, name in zip(recordings, names(recordings)):
        robot = robot_of(rec, params)
        if robot is None:
            unassigned.append((rec, name, f"no parameter file: no folder of its path is named as a robot of "
                                          f"--params ({', '.join(sorted(params))}) and there is no default "
                                          f"--params FILE"))
            continue
        urdf = descriptions.get(robot, descriptions.get(DEFAULT))
        tasks.append(Task(rec, name, output, robot, params[robot], urdf, **options))
    return tasks, unassigned

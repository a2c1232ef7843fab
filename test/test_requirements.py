"""The reproducible set-up: ``requirements/standalone.lock.txt`` pins an exact version of everything
the loose list ``requirements/standalone.txt`` names (within its bounds), the loose list names every
runtime dependency of ``setup.py``, and the quick start (hence CI) installs from the lock."""
from __future__ import annotations

import ast
import os

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOSE = os.path.join(ROOT, "requirements", "standalone.txt")
LOCK = os.path.join(ROOT, "requirements", "standalone.lock.txt")


def requirements(path) -> list:
    """The requirement lines of a pip requirements file (comments and blank lines left out)."""
    with open(path, encoding="utf-8") as fh:
        lines = [line.split("#", 1)[0].strip() for line in fh]
    return [Requirement(line) for line in lines if line]


def locked() -> dict:
    """``{canonical name: version}`` of the lock; every line must pin one exact version."""
    pins = {}
    for req in requirements(LOCK):
        (spec,) = req.specifier
        assert spec.operator == "==" and "*" not in spec.version, f"not an exact pin: {req}"
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_the_lock_pins_everything_the_loose_list_names():
    pins = locked()
    loose = requirements(LOOSE)
    assert loose and len(pins) > len(loose)             # the dependencies of the dependencies too
    missing = [str(r) for r in loose if canonicalize_name(r.name) not in pins]
    assert not missing, f"refresh the lock (command at the top of {LOOSE}): not locked: {missing}"
    outside = [f"{r} (locked {pins[canonicalize_name(r.name)]})" for r in loose
               if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert not outside, f"locked versions outside the loose list's bounds: {outside}"


def test_the_loose_list_holds_the_runtime_dependencies():
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    runtime = next(ast.literal_eval(kw.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
                   for kw in node.keywords if kw.arg == "install_requires")
    assert "threadpoolctl" in runtime and "rosbags" in runtime
    loose = {canonicalize_name(r.name) for r in requirements(LOOSE)}
    assert not [r for r in runtime if canonicalize_name(Requirement(r).name) not in loose]


def test_the_quick_start_installs_the_lock():
    with open(os.path.join(ROOT, "scripts", "quickstart.sh"), encoding="utf-8") as fh:
        script = fh.read()
    assert "pip install -r requirements/standalone.lock.txt" in script
    assert "pip install -r requirements/standalone.txt" not in script
    stamp = next(line for line in script.splitlines() if line.startswith("want="))
    assert "requirements/standalone.lock.txt" in stamp          # a new lock reinstalls

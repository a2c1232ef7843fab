"""The package's layers import in one direction only (issue 12): robot_description → model →
dynamics → estimation → ros → node/replay. Each module's imports of the package, read from its
source with ``ast`` (lazy imports inside functions included), may name its own layer or a lower
one, never a higher one; the model layer imports nothing from dynamics or estimation."""
from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rbd_estimator")

# lowest first; a top-level module not listed is an application module (node, replay, demo, cli, …)
LAYERS = [
    {"errors", "spatial", "jit", "yaml_file"},
    {"model"},
    {"dynamics"},
    {"sensors"},
    {"estimation"},
    {"ros"},
]
APPLICATION = len(LAYERS)


def _layer(parts) -> int:
    """Layer of the package module ``rbd_estimator.<parts...>``."""
    for k, names in enumerate(LAYERS):
        if parts and parts[0] in names:
            return k
    return APPLICATION


def _modules():
    for base, _dirs, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(base, f)
                rel = os.path.relpath(path, PACKAGE)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                yield path, rel, f == "__init__.py"


def _imports(path, rel, is_package):
    """Package-relative module paths imported by the file (absolute or relative imports)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    here = rel if is_package else rel[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "rbd_estimator":
                target = node.module.split(".")[1:]
            else:
                continue
            if not node.module:                    # from . import a, b
                for a in node.names:
                    yield target + [a.name], node.lineno
            else:
                yield target, node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "rbd_estimator":
                    yield a.name.split(".")[1:], node.lineno


def test_the_layers_import_downwards_only():
    wrong = []
    for path, rel, is_pkg in _modules():
        own = _layer(rel)
        for target, line in _imports(path, rel, is_pkg):
            if target and _layer(target) > own:
                wrong.append(f"rbd_estimator/{os.path.relpath(path, PACKAGE)}:{line} imports "
                             f"rbd_estimator.{'.'.join(target)}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_check_sees_an_upward_import(tmp_path):
    """The checker itself: an upward import is found (a test that could fail)."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from ..dynamics.rnea import rnea\n")
    found = list(_imports(str(src), ["model", "m"], False))
    assert found == [(["dynamics", "rnea"], 2)] and _layer(found[0][0]) > _layer(["model", "m"])


@pytest.mark.parametrize("layer", ["model"])
def test_model_layer_imports_nothing_from_dynamics_or_estimation(layer):
    for path, rel, is_pkg in _modules():
        if rel and rel[0] == layer:
            for target, line in _imports(path, rel, is_pkg):
                assert not target or target[0] not in ("dynamics", "estimation", "ros"), (path, line, target)

"""The package's layers import in one direction only (issue 12): robot_description → model →
dynamics → estimation → runtime → ros → node/replay. Each module's imports of the package, read from its
source with ``ast`` (lazy imports inside functions included), may name its own layer or a lower
one, never a higher one; the model layer imports nothing from dynamics or estimation."""
from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rbd_estimator")

# lowest first; a top-level module not listed is an application module (node, replay, demo, cli, …)
LAYERS = [
    {"errors", "spatial", "jit", "yaml_file", "schema", "kernels"},
    {"model"},
    {"dynamics"},
    {"sensors"},
    {"estimation"},
    {"runtime"},
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


def _type_checking_only(tree) -> set:
    """The nodes under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports for annotations."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for stmt in node.body:
                inside.update(id(n) for n in ast.walk(stmt))
    return inside


def _imports(path, rel, is_package, type_checking=True):
    """Package-relative module paths imported by the file (absolute or relative imports, lazy ones
    inside functions included; those under ``if TYPE_CHECKING:`` only with ``type_checking``)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    here = rel if is_package else rel[:-1]
    skip = set() if type_checking else _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
                assert not target or target[0] not in ("dynamics", "estimation", "runtime", "ros"), (path, line, target)


# ---------------------------------------------------------------------------- import circles


def _module_graph(root=PACKAGE, type_checking=False) -> dict:
    """``{module: {imported modules}}`` over the package's modules (dotted, package-relative; a
    package is its ``__init__``). An imported name that is not a module stands for its module;
    imports under ``if TYPE_CHECKING:`` are left out (they run only for a type checker)."""
    files = {}
    for base, _dirs, names in os.walk(root):
        for f in names:
            if f.endswith(".py"):
                path = os.path.join(base, f)
                rel = os.path.relpath(path, root)[:-3].split(os.sep)
                is_pkg = rel[-1] == "__init__"
                files[tuple(rel[:-1] if is_pkg else rel)] = (path, is_pkg)
    graph = {}
    for mod, (path, is_pkg) in files.items():
        deps = set()
        for target, _line in _imports(path, list(mod), is_pkg, type_checking):
            t = tuple(target)
            while t and t not in files:          # a name imported from a module: that module
                t = t[:-1]
            if t in files and t != mod:
                deps.add(".".join(t))
        graph[".".join(mod)] = deps
    return graph


def _cycles(graph: dict) -> set:
    """Every elementary cycle of ``graph``, each as a tuple of modules starting with its smallest."""
    found = set()
    order = sorted(graph)
    for start in order:
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
            elif nxt == start:
                found.add(tuple(path))
            elif nxt > start and nxt not in path and nxt in graph:
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return found


def test_no_import_circles():
    """No module imports itself through others (DESIGN: no import circle, inside a layer or
    across layers), lazy imports inside functions included, ``TYPE_CHECKING`` imports excluded."""
    cycles = _cycles(_module_graph())
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c + (c[0],)) for c in sorted(cycles))


def test_the_check_sees_an_import_circle(tmp_path):
    """The checker itself: a circle through a lazy import is found, one through a ``TYPE_CHECKING``
    import is not, and a package importing its own module is no circle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from .sub.c import h\n    return h()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..a import f\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import E\n")
    (pkg / "e.py").write_text("from . import d\n")
    graph = _module_graph(str(pkg))
    assert graph["d"] == set() and graph["e"] == {"d"}
    assert _cycles(graph) == {("a", "b", "sub.c")}
    assert ("d", "e") in _cycles(_module_graph(str(pkg), type_checking=True))

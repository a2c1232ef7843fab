"""launch/humanoid.launch.py: checked statically always, and through launch_ros when it is installed."""
from __future__ import annotations

import ast
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILE = os.path.join(ROOT, "launch", "humanoid.launch.py")
ARGUMENTS = {"robot_description_file", "params_file", "autostart", "use_robot_state_publisher"}


def _tree() -> ast.Module:
    with open(LAUNCH_FILE, encoding="utf-8") as fh:
        return ast.parse(fh.read(), filename=LAUNCH_FILE)


def _calls(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                yield node


def test_launch_file_declares_generate_launch_description_and_arguments():
    tree = _tree()
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in functions
    declared = set()
    for call in _calls(tree, "DeclareLaunchArgument"):
        first = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "name")
        assert isinstance(first, ast.Constant), "launch argument names must be literal strings"
        declared.add(first.value)
    assert ARGUMENTS <= declared, f"missing launch arguments: {ARGUMENTS - declared}"
    # every LaunchConfiguration used is declared (catches a typo in either place)
    used = {c.args[0].value for c in _calls(tree, "LaunchConfiguration") if c.args and isinstance(c.args[0], ast.Constant)}
    assert used <= declared, f"LaunchConfiguration of undeclared arguments: {used - declared}"


def test_launch_file_uses_the_lifecycle_pattern_and_the_shipped_files():
    tree = _tree()
    nodes = list(_calls(tree, "LifecycleNode"))
    assert len(nodes) == 1
    kw = {k.arg: k.value for k in nodes[0].keywords}
    assert ast.literal_eval(kw["package"]) == "rbd_estimator"
    assert ast.literal_eval(kw["executable"]) == "estimator_node"
    assert ast.literal_eval(kw["name"]) == "rbd_estimator"
    assert "namespace" in kw
    assert list(_calls(tree, "OnStateTransition")) and list(_calls(tree, "ChangeState"))
    assert list(_calls(tree, "RegisterEventHandler"))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {"humanoid.urdf", "humanoid.yaml", "urdf", "config"} <= strings
    for rel in ("urdf/humanoid.urdf", "config/humanoid.yaml"):
        assert os.path.isfile(os.path.join(ROOT, rel)), rel
    # the console script the LifecycleNode runs exists
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as fh:
        assert "estimator_node = rbd_estimator.node:main" in fh.read()
    # no throw-away scaffolding left behind
    assert not os.path.exists(os.path.join(ROOT, "launch", "x.launch.py"))
    assert not os.path.exists(os.path.join(ROOT, "config", "x.yaml"))
    assert not os.path.exists(os.path.join(ROOT, "config", "subdir"))


def _load_launch_module():
    spec = importlib.util.spec_from_file_location("humanoid_launch", LAUNCH_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generate_launch_description_with_launch_ros():
    pytest.importorskip("launch")
    pytest.importorskip("launch_ros")
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, RegisterEventHandler
    from launch_ros.actions import LifecycleNode
    from launch_ros.event_handlers import OnStateTransition

    ld = _load_launch_module().generate_launch_description()
    assert isinstance(ld, LaunchDescription)
    entities = ld.entities
    args = {e.name: e for e in entities if isinstance(e, DeclareLaunchArgument)}
    assert ARGUMENTS <= set(args)
    assert "".join(getattr(s, "text", "") for s in args["autostart"].default_value) == "true"
    assert "".join(getattr(s, "text", "") for s in args["use_robot_state_publisher"].default_value) == "false"
    nodes = [e for e in entities if isinstance(e, LifecycleNode)]
    assert len(nodes) == 1
    handlers = [e for e in entities if isinstance(e, RegisterEventHandler)]
    assert any(isinstance(h.event_handler, OnStateTransition) for h in handlers)
    args_names = {a.name for a in ld.get_launch_arguments()}
    assert ARGUMENTS <= args_names

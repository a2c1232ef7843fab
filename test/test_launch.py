"""launch/robot.launch.py and humanoid.launch.py: checked statically always, through launch_ros when it
is installed; the robot lookup the launch file uses (rbd_estimator.robots) is tested here without ROS."""
from __future__ import annotations

import ast
import importlib.util
import os

import pytest

from rbd_estimator import robots
from rbd_estimator.errors import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "launch")
ROBOT_LAUNCH = os.path.join(LAUNCH, "robot.launch.py")
HUMANOID_LAUNCH = os.path.join(LAUNCH, "humanoid.launch.py")
ARGUMENTS = {"robot", "robot_description_file", "params_file", "description_source", "autostart",
             "use_robot_state_publisher"}


def _tree(path) -> ast.Module:
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), filename=path)


def _calls(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                yield node


def test_launch_file_declares_generate_launch_description_and_arguments():
    tree = _tree(ROBOT_LAUNCH)
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
    tree = _tree(ROBOT_LAUNCH)
    nodes = list(_calls(tree, "LifecycleNode"))
    assert len(nodes) == 1
    kw = {k.arg: k.value for k in nodes[0].keywords}
    assert ast.literal_eval(kw["package"]) == "rbd_estimator"
    assert ast.literal_eval(kw["executable"]) == "estimator_node"
    assert ast.literal_eval(kw["name"]) == "rbd_estimator"
    assert "namespace" in kw
    assert list(_calls(tree, "OnStateTransition")) and list(_calls(tree, "ChangeState"))
    assert list(_calls(tree, "RegisterEventHandler"))
    for r in robots.SHIPPED.values():                      # every shipped robot has its parameter file
        assert os.path.isfile(os.path.join(ROOT, "config", r.params)), r.params
        if r.source == "package":
            assert os.path.isfile(os.path.join(ROOT, "urdf", r.urdf)), r.urdf
    # humanoid.launch.py is robot.launch.py with its default robot
    strings = {n.value for n in ast.walk(_tree(HUMANOID_LAUNCH)) if isinstance(n, ast.Constant)}
    assert {"rbd_estimator", "launch", "robot.launch.py"} <= strings
    assert list(_calls(_tree(HUMANOID_LAUNCH), "IncludeLaunchDescription"))
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as fh:
        assert "estimator_node = rbd_estimator.node:main" in fh.read()


@pytest.mark.parametrize("name", sorted(robots.SHIPPED))
def test_shipped_robots_resolve_to_a_parameter_file_and_a_urdf_that_load(name):
    from rbd_estimator import SensorConfig, estimator_for
    params, urdf = robots.params_file(name), robots.urdf_file(name)
    assert os.path.isfile(params) and os.path.isfile(urdf)
    with open(urdf, encoding="utf-8") as fh:
        estimator_for(fh.read(), SensorConfig.from_yaml(params))


def test_unknown_robot_names_the_shipped_ones():
    with pytest.raises(ConfigError, match="'nao'.*talos"):
        robots.params_file("nao")


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path).split(".")[0] + "_launch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generate_launch_description_with_launch_ros():
    pytest.importorskip("launch")
    pytest.importorskip("launch_ros")
    from launch import LaunchContext, LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler
    from launch_ros.actions import LifecycleNode

    ld = _load(ROBOT_LAUNCH).generate_launch_description()
    assert isinstance(ld, LaunchDescription)
    assert ARGUMENTS <= {a.name for a in ld.get_launch_arguments()}
    context = LaunchContext()
    for e in ld.entities:
        if isinstance(e, DeclareLaunchArgument):
            e.visit(context)
    context.launch_configurations["robot"] = "go2"
    opaque = next(e for e in ld.entities if isinstance(e, OpaqueFunction))
    entities = opaque.execute(context)
    nodes = [e for e in entities if isinstance(e, LifecycleNode)]
    assert len(nodes) == 1
    assert any(isinstance(e, RegisterEventHandler) for e in entities)
    assert isinstance(_load(HUMANOID_LAUNCH).generate_launch_description(), LaunchDescription)


def test_robot_state_publisher_gets_the_urdf_when_the_node_reads_its_topic(tmp_path):
    """``robot_description_file:=my.urdf description_source:=topic use_robot_state_publisher:=true``
    (a user's own robot, docs/node.md): robot_state_publisher publishes the file, the node reads the
    topic. The launch file gave robot_state_publisher the node's empty description then."""
    urdf = tmp_path / "mine.urdf"
    urdf.write_text('<robot name="mine"><link name="base"/></robot>', encoding="utf-8")
    mine = urdf.read_text(encoding="utf-8")
    assert robots.launch_descriptions("arm", str(urdf), "topic", True) == ("", mine)
    assert robots.launch_descriptions("arm", str(urdf), "topic", False) == ("", "")
    assert robots.launch_descriptions("arm", str(urdf), "file", True) == (mine, mine)
    with open(robots.urdf_file("arm"), encoding="utf-8") as fh:
        assert robots.launch_descriptions("arm", "", "topic", True) == ("", fh.read())
    with pytest.raises(ConfigError, match="robot_description_file: cannot read .*missing.urdf"):
        robots.launch_descriptions("arm", str(tmp_path / "missing.urdf"), "file", False)
    # and the launch file passes robot_state_publisher its own text
    tree = _tree(ROBOT_LAUNCH)
    assert any(isinstance(n.func, ast.Attribute) and n.func.attr == "launch_descriptions"
               for n in _calls(tree, "launch_descriptions"))
    rsp = next(c for c in _calls(tree, "Node") if any(k.arg == "executable" and k.value.value == "robot_state_publisher"
                                                      for k in c.keywords))
    params = next(k.value for k in rsp.keywords if k.arg == "parameters")
    assert ast.unparse(params) == "[{'robot_description': rsp_urdf}]"

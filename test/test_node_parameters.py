"""The node's declared parameters (issue 19 item 3), with the real rclpy through the parameter
services that ``ros2 param list`` / ``describe`` / ``set`` use: every parameter the docs' tables name
is declared with a type and a description; the fields of a sensor added to a list are declared once
the change is accepted and its defaults go when it is dropped; unknown or misspelled names are
refused naming the closest valid one; the tables are the schema's."""
from __future__ import annotations

import os
import re

import pytest

rclpy = pytest.importorskip("rclpy")

from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters  # noqa: E402
from rclpy.parameter import Parameter, parameter_value_to_python  # noqa: E402
from test_node import HUMANOID, HUMANOID_YAML, params_from_yaml, read, ros, unique_ns  # noqa: E402,F401

from rbd_estimator.runtime.params import BEGIN, DOC_TABLES, END, ROS_PARAMETERS, docs_with_tables, main  # noqa: E402

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor", "l_arm_ft_sensor",
      "r_arm_ft_sensor"]

#: The shipped humanoid's parameters plus one sensor of every other kind, a known wrench and loops
#: of every type with every optional field: every pattern of the docs' tables applies (the node is
#: not configured: these only have to parse; the loops are read at configure).
EXTRA = {
    "load_cells": ["l_cells"], "load_cell.l_cells.contact": "l_foot",
    "load_cell.l_cells.positions_x": [0.1, 0.1, -0.1], "load_cell.l_cells.positions_y": [0.05, -0.05, 0.0],
    "foot_force_sensors": ["l_fz"], "foot_force.l_fz.contact": "l_foot",
    "contact_force_sensors": ["r_f3"], "contact_force.r_f3.contact": "r_foot",
    "joint_torque_sensors": ["l_knee"], "joint_torque_stddev": 0.2,
    "nominal_pose_joints": ["l_knee"], "nominal_pose.l_knee": 0.3,
    "external_wrenches": ["payload"], "external_wrench.payload.frame": "l_hand",
    "bodies": ["rotor"], "body.rotor.parent": "pelvis", "body.rotor.axis": [0.0, 1.0, 0.0],
    "loops": ["drive", "belt", "belt2", "bar", "diff"],
    "loop.drive.type": "link_and_rotor", "loop.drive.joint": "l_knee", "loop.drive.rotor": "rotor",
    "loop.drive.gear_ratio": 6.0,
    "loop.belt.type": "belt_transmission", "loop.belt.joints": ["l_knee"], "loop.belt.rotors": ["rotor"],
    "loop.belt.gear_ratios": [6.0], "loop.belt.belt_ratios": [1.0],
    "loop.belt2.type": "belt_transmission", "loop.belt2.joints": ["l_knee"], "loop.belt2.rotors": ["rotor"],
    "loop.belt2.ratio_matrix": [6.0],
    "loop.bar.type": "four_bar", "loop.bar.input": "a", "loop.bar.coupler": "b", "loop.bar.output": "c",
    "loop.bar.closure_coupler_xyz": [0.0, 0.0, 0.1], "loop.bar.closure_output_xyz": [0.0, 0.0, 0.1],
    "loop.bar.closure_axis": [0.0, 1.0, 0.0], "loop.bar.closure_output_axis": [0.0, 1.0, 0.0],
    "loop.diff.type": "linear_transmission", "loop.diff.independent": ["a"], "loop.diff.dependent": ["b"],
    "loop.diff.ratio_matrix": [1.0],
}


def doc_parameters(page: str) -> list[str]:
    """The parameter names of the tables of ``docs/<page>``: the backticked names of each row's first cell."""
    with open(os.path.join(DOCS, page), encoding="utf-8") as fh:
        text = fh.read()
    names, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| parameter |"):
            in_table = True
        elif in_table and line.startswith("|"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
        else:
            in_table = False
    return [n for n in names if n != "--- "]


def as_regex(pattern: str) -> re.Pattern:
    """``ft.<name>.force_stddev`` → a regex matching the concrete names (``<…>``: one name)."""
    return re.compile("".join(r"[^.]+" if p.startswith("<") else re.escape(p) for p in re.split(r"(<[^>]+>)", pattern))
                      + "$")


class Params:
    """The parameter services of one node, as ``ros2 param`` calls them."""

    def __init__(self, ros, node):
        self.ros, self.fqn = ros, node.get_fully_qualified_name()

    def list(self) -> list[str]:
        return list(self.ros.call(ListParameters, f"{self.fqn}/list_parameters", ListParameters.Request()).result.names)

    def describe(self, names) -> dict:
        res = self.ros.call(DescribeParameters, f"{self.fqn}/describe_parameters",
                            DescribeParameters.Request(names=list(names)))
        return dict(zip(names, res.descriptors))

    def get(self, name):
        v = self.ros.call(GetParameters, f"{self.fqn}/get_parameters", GetParameters.Request(names=[name])).values[0]
        return parameter_value_to_python(v)


@pytest.fixture(scope="module")
def humanoid_xml():
    return read(HUMANOID)


@pytest.fixture
def node(ros, humanoid_xml):
    n = ros.estimator(params_from_yaml(HUMANOID_YAML, humanoid_xml, **EXTRA), unique_ns("params"))
    yield n
    ros.destroy(n)


def test_every_parameter_in_the_docs_is_declared_with_type_and_description(ros, node):
    """The acceptance test of issue 19 item 3, for docs/node.md and docs/sensors.md (and the loop
    table of docs/loops.md): every parameter their tables name is declared — for a pattern, every
    name of the running configuration — with a type and a non-empty description; and every declared
    parameter is in one of those tables."""
    p = Params(ros, node)
    declared = p.list()
    described = p.describe(declared)
    patterns = {page: doc_parameters(page) for page in ("node.md", "sensors.md", "loops.md")}
    assert len(patterns["node.md"]) >= 19 and len(patterns["sensors.md"]) >= 45 and len(patterns["loops.md"]) >= 20
    for page, names in patterns.items():
        for pattern in names:
            matches = [n for n in declared if as_regex(pattern).match(n)]
            assert matches, f"docs/{page}: '{pattern}' is not declared"
            for n in matches:
                d = described[n]
                assert d.type != ParameterType.PARAMETER_NOT_SET and d.description.strip(), (page, n, d)
    # concrete examples, and the per-name expansion: every force-torque sensor has its fields
    assert {f"ft.{s}.force_stddev" for s in FT} | {f"ft_offsets.{s}" for s in FT} <= set(declared)
    d = described["ft.l_arm_ft_sensor.torque_stddev"]
    assert d.type == ParameterType.PARAMETER_DOUBLE and "N·m" in d.description and "> 0" in d.additional_constraints
    d = described["rate_hz"]
    assert d.type == ParameterType.PARAMETER_DOUBLE and not d.dynamic_typing and not d.read_only
    assert d.floating_point_range[0].from_value == 0.0 and "deactivate" in d.additional_constraints
    assert described["robot_description"].additional_constraints.endswith("takes effect at the next configure")
    assert described["ft_sensors"].type == ParameterType.PARAMETER_STRING_ARRAY
    assert described["loops"].type == ParameterType.PARAMETER_STRING_ARRAY
    assert described["loop.drive.gear_ratio"].type == ParameterType.PARAMETER_DOUBLE
    assert described["loop.diff.independent"].type == ParameterType.PARAMETER_STRING_ARRAY
    assert described["contact.l_foot.mode"].additional_constraints.startswith("one of `always`")
    assert described["nominal_pose.l_knee"].type == ParameterType.PARAMETER_DOUBLE and p.get("nominal_pose.l_knee") == 0.3
    assert "nominal stance" in described["nominal_pose_joints"].description
    # the other direction: nothing is declared that the docs do not describe
    every = [as_regex(x) for names in patterns.values() for x in names]
    undocumented = [n for n in declared if not n.startswith(ROS_PARAMETERS) and not any(r.match(n) for r in every)]
    assert not undocumented, undocumented


def test_a_sensor_added_to_a_list_has_its_fields_declared_and_a_dropped_one_loses_its_defaults(ros, node):
    p = Params(ros, node)
    before = set(p.list())
    assert not any(n.startswith(("ft.extra_ft.", "ft_offsets.extra_ft")) for n in before)
    # a new sensor (a joint of the URDF, not configured yet: the set only has to parse) with one field set
    res = ros.set_parameters(node, {"ft_sensors": FT + ["extra_ft"], "ft.extra_ft.joint": "l_ankle",
                                    "ft.extra_ft.force_stddev": 3})
    assert res.successful, res.reason
    names = set(p.list())
    new = {f"ft.extra_ft.{f}" for f in ("topic", "joint", "frame", "measure_direction", "force_stddev",
                                        "torque_stddev", "timeout")} | {"ft_offsets.extra_ft"}
    assert new <= names
    d = p.describe(sorted(new))
    assert all(x.description and x.type != ParameterType.PARAMETER_NOT_SET for x in d.values())
    assert p.get("ft.extra_ft.force_stddev") == 3.0              # the integer given, as the double it is
    assert d["ft.extra_ft.force_stddev"].type == ParameterType.PARAMETER_DOUBLE
    assert p.get("ft.extra_ft.torque_stddev") == 0.05            # a default
    # dropped with only the parameters that were set for it: its defaults go by themselves
    res = ros.set_parameters(node, {"ft_sensors": FT})
    assert not res.successful and "'ft.extra_ft." in res.reason and "'extra_ft' is not listed" in res.reason
    res = ros.set_parameters(node, {"ft_sensors": FT, "ft.extra_ft.joint": None, "ft.extra_ft.force_stddev": None})
    assert res.successful, res.reason
    assert set(p.list()) == before
    # a given field deleted while its sensor stays: its default comes back
    assert ros.set_parameters(node, {"ft.l_leg_ft_sensor.force_stddev": None}).successful
    assert p.get("ft.l_leg_ft_sensor.force_stddev") == 1.0
    assert node.get_parameter("ft.l_leg_ft_sensor.force_stddev").value == 1.0


@pytest.mark.parametrize("bad, closest", [
    ("ft.l_leg_ft_sensor.force_stdev", "ft.l_leg_ft_sensor.force_stddev"),
    ("imu.frme", "imu.frame"),
    ("ft_sensor", "ft_sensors"),
    ("contact.l_foot.mdoe", "contact.l_foot.mode"),
    ("acceleration_cutof_hz", "acceleration_cutoff_hz"),
    ("ft_ofsets.l_leg_ft_sensor", "ft_offsets.l_leg_ft_sensor"),
])
def test_an_unknown_parameter_is_refused_naming_the_closest_valid_one(ros, node, bad, closest):
    res = ros.set_parameters(node, {bad: 1.0})
    assert not res.successful
    assert f"unknown parameter '{bad}' (did you mean '{closest}'?)" in res.reason, res.reason
    assert bad not in Params(ros, node).list()


def test_values_outside_their_type_or_range_are_refused(ros, node):
    for name, value, why in [("rate_hz", "fast", "Wrong parameter type"),          # static: rclpy's check
                             ("rate_hz", -5.0, "out of range"),                      # the descriptor's range
                             ("diagnostics_period", 0.0, "'diagnostics_period' must be a number > 0"),
                             ("ft.l_leg_ft_sensor.force_stddev", "x", "must be a number"),   # dynamic: the schema
                             ("contact.l_foot.type", "sticky", "is not one of")]:
        res = ros.set_parameters(node, {name: value})
        assert not res.successful and why in res.reason, (name, res.reason)
    # an integer for a double is a double
    assert ros.set_parameters(node, {"rate_hz": 500}).successful and node.get_parameter("rate_hz").value == 500.0
    # [] (a byte array for rclpy, a bool array for the ros2 CLI) clears a list, and the defaults of its names go
    assert node.has_parameter("joint_torque.l_knee.stddev")
    res = node.set_parameters([Parameter("joint_torque_sensors", value=[])])[0]
    assert res.successful, res.reason
    assert node.get_parameter("joint_torque_sensors").value == [] and not node.has_parameter("joint_torque.l_knee.stddev")
    assert node.describe_parameter("joint_torque_sensors").type == ParameterType.PARAMETER_STRING_ARRAY


def test_the_docs_tables_are_the_schemas(capsys):
    for page in DOC_TABLES:
        with open(os.path.join(DOCS, page), encoding="utf-8") as fh:
            text = fh.read()
        assert BEGIN in text and END in text, page
        assert docs_with_tables(text, page) == text, f"docs/{page}: run python -m rbd_estimator.runtime.params --write-docs"
    assert main(["--check-docs", DOCS]) == 0
    main([])
    out = capsys.readouterr().out
    assert "| `ft.<name>.force_stddev` | double | `1` |" in out and "| `rate_hz` | double | `1000` |" in out

"""The one parameter schema (issue 19 item 3): every parameter typed and described, the parsers
checking types and ranges through it, and the set of parameters that applies to given values."""
from __future__ import annotations

import math

import pytest

from rbd_estimator import ConfigError, ModelError, SensorConfig
from rbd_estimator.estimation.config import sensor_schema
from rbd_estimator.model.loops import BODY_FIELDS, LOOP_FIELDS
from rbd_estimator.runtime.params import NEEDS_CONFIGURE, NEEDS_REACTIVATE, NODE_PARAMETERS, NodeSettings, node_schema
from rbd_estimator.schema import CONFIGURE, REACTIVATE, TYPES, Field, Group, Schema


def test_every_parameter_of_the_node_is_typed_and_described():
    rows = node_schema().rows()
    assert len(rows) > 60
    for pattern, f in rows:
        assert f.type in TYPES and len(f.description) > 10, pattern
        if f.type in ("integer", "double") and not f.required:
            f.value(pattern, f.default)               # every default is valid
    names = [p for p, _ in rows]
    for expected in ("rate_hz", "ft_sensors", "ft.<name>.force_stddev", "imu.frame", "contact.<name>.mode",
                     "ft_offsets.<sensor>", "joint_torque_stddev", "loop.<name>.gear_ratio", "body.<name>.mass"):
        assert expected in names


@pytest.mark.parametrize("field, value, message", [
    (Field("double", "d", 1.0, gt=0.0), 0.0, "must be a number > 0, got 0.0"),
    (Field("double", "d", 1.0, ge=0.0, le=1.0), 1.5, "must be a number >= 0, <= 1, got 1.5"),
    (Field("double", "d", 1.0), math.inf, "must be a finite number"),
    (Field("double", "d", 1.0), True, "must be a number, got True"),
    (Field("double", "d", 1.0), "1", "must be a number, got '1'"),
    (Field("integer", "i", 1), 1.5, "must be an integer"),
    (Field("bool", "b", True), 1, "must be true or false"),
    (Field("string", "s", "a", choices=("a", "b")), "c", "'c' is not one of"),
    (Field("string_array", "n", ()), ["a", "a"], "lists a name twice"),
    (Field("double_array", "v", (0.0,) * 3, size=3), [1.0, 2.0], "must hold 3 values"),
    (Field("double_array", "v", ()), [1.0, math.nan], "non-finite"),
])
def test_a_value_outside_its_field_is_refused_naming_the_parameter(field, value, message):
    with pytest.raises(ConfigError, match=r"parameter 'p'.*" + message.replace("(", r"\(").replace(")", r"\)")):
        field.value("p", value)


def test_values_are_converted_to_the_fields_type():
    assert Field("double", "d", 1.0).value("p", 2) == 2.0 and isinstance(Field("double", "d").value("p", 2), float)
    assert Field("double_array", "v", ()).value("p", [1, 2]) == (1.0, 2.0)
    assert Field("string_array", "n", ()).value("p", ["a", "b"]) == ("a", "b")
    with pytest.raises(TypeError):
        Field("float", "not a ROS type")
    with pytest.raises(TypeError):
        Field("double", "")                          # no description


def test_node_settings_read_types_and_ranges_from_the_schema():
    assert NodeSettings.from_parameters({"rate_hz": 500}).rate_hz == 500.0
    with pytest.raises(ConfigError, match=r"'rate_hz' must be a number > 0, got 0"):
        NodeSettings.from_parameters({"rate_hz": 0})
    with pytest.raises(ConfigError, match=r"'tick': 'timr' is not one of \('joint_states', 'timer'\)"):
        NodeSettings.from_parameters({"tick": "timr"})
    with pytest.raises(ConfigError, match=r"'oracle_every_n' must be a number >= 0"):
        NodeSettings.from_parameters({"oracle_every_n": -1})
    with pytest.raises(ConfigError, match="'strict_model' must be true or false"):
        NodeSettings.from_parameters({"strict_model": "yes"})
    defaults = NodeSettings.from_parameters({})
    assert all(getattr(defaults, k) == f.default for k, f in NODE_PARAMETERS.items())
    # the change classes the node enforces come from the same fields
    assert NEEDS_CONFIGURE == {k for k, f in NODE_PARAMETERS.items() if f.change == CONFIGURE} \
        == {"robot_description", "robot_description_topic", "robot_description_timeout", "strict_model"}
    assert NEEDS_REACTIVATE == {k for k, f in NODE_PARAMETERS.items() if f.change == REACTIVATE} \
        == {"joint_states_topic", "joint_torque_topic", "tick", "rate_hz", "contact_command_topic"}


def test_changes_that_need_a_new_configure_or_activation_are_refused_while_active():
    from rbd_estimator.runtime.params import change_refusal
    for name in ("robot_description", "strict_model", "loops", "loop.drive.gear_ratio", "body.rotor.mass",
                 "loops_file"):
        assert "cleanup and configure" in change_refusal({name}, True), name
        assert change_refusal({name}, False) == ""
    assert "deactivate, set, activate" in change_refusal({"rate_hz"}, True)
    assert change_refusal({"acceleration_cutoff_hz", "ft.a.force_stddev", "loopsy"}, True) == ""


def test_the_sensor_parser_checks_ranges_and_choices_from_the_schema():
    base = dict(imu=dict(frame="base"), contacts=["a"], contact=dict(a=dict(frame="foot")))
    with pytest.raises(ConfigError, match=r"'imu.linear_acceleration_stddev' must be a number > 0"):
        SensorConfig.from_dict(dict(base, imu=dict(frame="base", linear_acceleration_stddev=0.0)))
    with pytest.raises(ConfigError, match=r"'ft.s.frame': 'chld' is not one of"):
        SensorConfig.from_dict(dict(base, ft_sensors=["s"], ft=dict(s=dict(frame="chld"))))
    with pytest.raises(ConfigError, match=r"'contact.a.type': 'sliding' is not one of"):
        SensorConfig.from_dict(dict(base, contact=dict(a=dict(frame="foot", type="sliding"))))
    with pytest.raises(ConfigError, match=r"'contact.a.frame' is required"):
        SensorConfig.from_dict(dict(base, contact=dict(a=dict(type="point_force"))))
    with pytest.raises(ConfigError, match=r"'joint_torque_stddev' must be a number > 0"):
        SensorConfig.from_dict(dict(base, joint_torque_stddev=-0.1))
    with pytest.raises(ConfigError, match=r"'floating_base' must be true or false"):
        SensorConfig.from_dict(dict(base, floating_base="yes"))


def test_the_loop_parser_knows_the_fields_of_the_schema():
    from rbd_estimator.model.loops import LoopConfig
    with pytest.raises(ModelError, match=r"unknown field 'gear'"):
        LoopConfig.from_dict(dict(loops=["d"], loop=dict(d=dict(type="link_and_rotor", gear=1.0))))
    assert set(BODY_FIELDS) == {"parent", "xyz", "rpy", "axis", "mass", "com", "inertia"}
    assert set(LOOP_FIELDS["link_and_rotor"]) == {"joint", "rotor", "gear_ratio"}


def test_expand_gives_the_parameters_that_apply_to_the_values():
    s = node_schema()
    values = {"imu.frame": "base", "ft_sensors": ["l", "r"], "contacts": ["foot"], "contact.foot.frame": "sole",
              "loops": ["drive"], "loop.drive.type": "link_and_rotor", "joint_torque_sensors": ["knee"]}
    names = s.expand(values)
    for n in ("rate_hz", "imu.timeout", "ft.l.force_stddev", "ft.r.topic", "ft_offsets.l", "ft_offsets.r",
              "contact.foot.mode", "loop.drive.type", "loop.drive.gear_ratio", "joint_torque.knee.stddev",
              "load_cells", "bodies"):
        assert n in names, n
    for n in ("ft.x.topic", "loop.drive.joints", "load_cell.x.contact", "contact.l.frame", "ft_offsets.knee"):
        assert n not in names, n
    assert names["loop.drive.gear_ratio"].type == "double" and names["ft_offsets.l"].size == 6
    # no IMU parameter given: no IMU, none of its fields apply
    assert "imu.frame" not in s.expand({"ft_sensors": ["l"]})
    # a list that does not hold names declares nothing (the parser reports it)
    assert not any(n.startswith("ft.") for n in s.expand({"ft_sensors": "l"}))


def test_markdown_rows_follow_the_schema():
    s = Schema.of({"a": Field("double", "a number (m)", 1.0, gt=0.0, change="live")},
                  Group("g", {"f": Field("string", "a choice", "x", choices=("x", "y"))}, names="gs"))
    md = s.markdown()
    assert "| `a` | double | `1` | a number (m) (> 0); applies at once |" in md
    assert "| `g.<name>.f` | string | `x` | a choice (one of `x`, `y`) |" in md
    assert sensor_schema().markdown().count("\n") == len(sensor_schema().rows()) + 2

"""SensorConfig: the ROS 2 parameter-file schema shared by the library and the node."""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from rbd_estimator import ConfigError
from rbd_estimator.estimation import SensorConfig
from rbd_estimator.runtime.params import NODE_KEYS, NodeSettings

ICUB_YAML = """
rbd_estimator:
  ros__parameters:
    floating_base: true
    imu: {frame: root_link, use_angular_acceleration: true, linear_acceleration_stddev: 0.02}
    ft_sensors: [l_leg_ft_sensor, r_foot_ft_sensor]
    ft:
      l_leg_ft_sensor: {topic: /ft/l_leg, force_stddev: 2.0, torque_stddev: 0.1}
    contacts: [l_foot, r_foot]
    contact:
      l_foot: {frame: l_sole, type: full_wrench}
      r_foot: {frame: r_sole, type: slippery}
    load_cells: [r_cells]
    load_cell:
      r_cells: {contact: r_foot, positions_x: [0.05, 0.05, -0.03, -0.03], positions_y: [0.02, -0.02, 0.02, -0.02]}
    joint_torque_sensors: [l_knee]
    rate_hz: 500.0
"""


def write(tmp_path, text, name="p.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_reads_every_group_from_a_ros_parameter_file(tmp_path):
    cfg = SensorConfig.from_yaml(write(tmp_path, ICUB_YAML))
    assert cfg.floating_base and cfg.imu.frame == "root_link" and cfg.imu.use_angular_acceleration
    assert cfg.imu.linear_acceleration_stddev == 0.02
    assert [s.name for s in cfg.ft_sensors] == ["l_leg_ft_sensor", "r_foot_ft_sensor"]
    assert cfg.ft("l_leg_ft_sensor").force_stddev == 2.0 and cfg.ft("r_foot_ft_sensor").force_stddev == 1.0
    assert cfg.contact("r_foot").type == "slippery" and cfg.contact("l_foot").frame == "l_sole"
    np.testing.assert_array_equal(cfg.load_cells[0].positions[:, 0], [0.05, 0.05, -0.03, -0.03])
    assert cfg.joint_torque_sensors == ("l_knee",)
    assert cfg.node == {"rate_hz": 500.0}
    assert cfg.sensor_names == ("imu", "l_leg_ft_sensor", "r_foot_ft_sensor", "r_cells", "l_knee")


def test_parameters_round_trip(tmp_path):
    cfg = SensorConfig.from_yaml(write(tmp_path, ICUB_YAML))
    again = SensorConfig.from_parameters(cfg.to_parameters())
    assert again.to_parameters() == cfg.to_parameters()


def test_without_removes_one_sensor(tmp_path):
    cfg = SensorConfig.from_yaml(write(tmp_path, ICUB_YAML))
    assert cfg.without("imu").imu is None
    assert [s.name for s in cfg.without("l_leg_ft_sensor").ft_sensors] == ["r_foot_ft_sensor"]
    assert cfg.without("r_cells").load_cells == ()


def test_node_sections_and_wildcards(tmp_path):
    text = """
    /**:
      ros__parameters: {floating_base: false}
    other_node:
      ros__parameters: {floating_base: true}
    rbd_estimator:
      ros__parameters: {contacts: []}
    """
    p = write(tmp_path, text)
    assert SensorConfig.from_yaml(p, node_name="rbd_estimator").floating_base is False
    assert SensorConfig.from_yaml(p, node_name="/ns/other_node").floating_base is True
    with pytest.raises(ConfigError, match="several nodes"):
        SensorConfig.from_yaml(p)


@pytest.mark.parametrize("params,needle", [
    (dict(contacts=["c"], contact=dict(c=dict(frame="f", type="sticky"))), "contact.c.type"),
    (dict(contacts=["c"]), "contact.c.frame"),
    (dict(imu=dict(use_angular_acceleration=True)), "imu.frame"),
    (dict(imu=dict(frame="x", use_angular_acceleration="yes")), "imu.use_angular_acceleration"),
    (dict(ft_sensors="l_leg"), "ft_sensors"),
    (dict(ft_sensors=["a", "a"]), "ft_sensors"),
    (dict(ft_sensors=["a"], ft=dict(a=dict(force_stddev=-1.0))), "ft.a.force_stddev"),
    (dict(ft_sensors=["a"], ft=dict(a=dict(frame="world"))), "ft.a.frame"),
    (dict(floating_base="true"), "floating_base"),
    (dict(contacts=["c"], contact=dict(c=dict(frame="f")), load_cells=["k"],
          load_cell=dict(k=dict(contact="nope", positions_x=[0.0], positions_y=[0.0]))), "load_cell.k.contact"),
    (dict(contacts=["c"], contact=dict(c=dict(frame="f")), load_cells=["k"],
          load_cell=dict(k=dict(contact="c", positions_x=[0.0, 1.0], positions_y=[0.0]))), "load_cell.k"),
    (dict(contacts=["c"], contact=dict(c=dict(frame="f")), load_cells=["k"],
          load_cell=dict(k=dict(contact="c", positions_x=[0.0, float("nan")], positions_y=[0.0, 1.0]))),
     "load_cell.k.positions_x"),
])
def test_bad_parameters_name_the_parameter(params, needle):
    with pytest.raises(ConfigError) as err:
        SensorConfig.from_dict(params)
    assert needle in str(err.value)


def test_unreadable_or_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        SensorConfig.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        SensorConfig.from_yaml(write(tmp_path, "a: [1, 2"))
    with pytest.raises(ConfigError, match="ros__parameters"):
        SensorConfig.from_yaml(write(tmp_path, "rbd_estimator: {x: 1}"))


# ---------------------------------------------------------------------------- unknown keys (issue 18)
GO2_LIKE = dict(contacts=["FL", "RL"], contact=dict(FL=dict(frame="FL_foot"), RL=dict(frame="RL_foot")))


@pytest.mark.parametrize("params,bad,closest", [
    (dict(GO2_LIKE, contact=dict(FL=dict(frame="FL_foot", mdoe="commanded"))), "contact.FL.mdoe", "contact.FL.mode"),
    (dict(imu=dict(frame="base", frme="base")), "imu.frme", "imu.frame"),
    (dict(imu=dict(frme="base")), "imu.frme", "imu.frame"),               # before 'imu.frame is required'
    (dict(ft_sensors=["a"], ft=dict(a=dict(force_stdev=1.0))), "ft.a.force_stdev", "ft.a.force_stddev"),
    (dict(ft_sensors=["a"], ft=dict(frame="child")), "ft.frame", "ft.a.frame"),
    (dict(GO2_LIKE, load_cells=["k"], load_cell=dict(k=dict(contact="FL", position_x=[0.0], positions_y=[0.0]))),
     "load_cell.k.position_x", "load_cell.k.positions_x"),
    (dict(external_wrenches=["p"], external_wrench=dict(p=dict(frame="hand", topik="w"))),
     "external_wrench.p.topik", "external_wrench.p.topic"),
    (dict(contact=["FL"]), "contact", "contacts"),
    (dict(contacts=dict(FL=dict(mode="always"))), "contacts.FL.mode", "contacts"),
])
def test_an_unknown_key_names_itself_and_the_closest_valid_key(params, bad, closest):
    for node_keys in (None, NODE_KEYS):               # keys of the sensor schema are checked either way
        with pytest.raises(ConfigError) as err:
            SensorConfig.from_dict(params, node_keys=node_keys)
        assert str(err.value) == f"unknown parameter '{bad}' (did you mean '{closest}'?)"


@pytest.mark.parametrize("group,list_key", [("contact", "contacts"), ("ft", "ft_sensors"),
                                            ("load_cell", "load_cells"), ("external_wrench", "external_wrenches")])
def test_a_sub_dictionary_for_a_name_not_listed_is_refused(group, list_key):
    params = dict(GO2_LIKE)
    params[group] = dict(params.get(group, {}), FR=dict(frame="FR_foot"))
    with pytest.raises(ConfigError) as err:
        SensorConfig.from_dict(params)
    msg = str(err.value)
    assert f"'{group}.FR." in msg and "'FR'" in msg and f"'{list_key}'" in msg, msg


def test_a_misspelled_name_is_refused_with_the_closest_listed_one():
    params = dict(contacts=["left_foot"], contact=dict(left_foot=dict(frame="l"), left_fot=dict(mode="always")))
    with pytest.raises(ConfigError, match=r"'contact\.left_fot\.mode'.*did you mean 'left_foot'"):
        SensorConfig.from_dict(params)


def test_top_level_keys_are_checked_against_the_node_keys():
    params = dict(GO2_LIKE, joint_states_topc="/joint_states")
    # the library alone cannot know the node's parameters: kept for their reader ...
    assert SensorConfig.from_dict(params).node == {"joint_states_topc": "/joint_states"}
    # ... which refuses it (a Replayer given that configuration, for instance)
    with pytest.raises(ConfigError, match=r"unknown parameter 'joint_states_topc' \(did you mean 'joint_states_topic'"):
        NodeSettings.from_parameters(SensorConfig.from_dict(params).node)
    # with the node's keys, the sensor configuration refuses it itself
    with pytest.raises(ConfigError, match=r"unknown parameter 'joint_states_topc' \(did you mean 'joint_states_topic'"):
        SensorConfig.from_dict(params, node_keys=NODE_KEYS)
    with pytest.raises(ConfigError, match=r"unknown parameter 'ft_ofsets\.l_leg' \(did you mean 'ft_offsets\.l_leg'"):
        SensorConfig.from_dict(dict(ft_ofsets=dict(l_leg=[0.0] * 6)), node_keys=NODE_KEYS)
    with pytest.raises(ConfigError, match=r"unknown parameter 'ft_sensor' \(did you mean 'ft_sensors'"):
        SensorConfig.from_dict(dict(ft_sensor=["a"]), node_keys=NODE_KEYS)
    with pytest.raises(ConfigError, match=r"unknown parameter 'floating_bas' \(did you mean 'floating_base'"):
        SensorConfig.from_dict(dict(floating_bas=True), node_keys=("rate_hz",))
    with pytest.raises(ConfigError, match=r"unknown parameter 'nothing_like_it'$"):
        SensorConfig.from_dict(dict(nothing_like_it=1), node_keys=NODE_KEYS)
    # what the node, rclpy and the loop declarations read is accepted
    ok = dict(GO2_LIKE, rate_hz=500.0, use_sim_time=False, start_type_description_service=True,
              ft_offsets=dict(a=[0.0] * 6), loops_file="loops.yaml", **{"qos_overrides./imu.subscription.depth": 5})
    cfg = SensorConfig.from_dict(ok, node_keys=NODE_KEYS)
    assert cfg.node["rate_hz"] == 500.0 and cfg.node["loops_file"] == "loops.yaml" and "ft_offsets.a" in cfg.node
    settings = NodeSettings.from_parameters(cfg.node)
    assert settings.rate_hz == 500.0 and settings.ft_offsets == (("a", (0.0,) * 6),)


def test_loop_declarations_are_accepted_and_checked_by_their_reader():
    params = dict(bodies=["rotor"], body=dict(rotor=dict(parent="base", axis=[0.0, 0.0, 1.0])),
                  loops=["drive"], loop=dict(drive=dict(type="link_and_rotor", joint="j", rotor="rotor",
                                                        gear_ratio=6.0)))
    cfg = SensorConfig.from_dict(params, node_keys=NODE_KEYS)
    assert cfg.node["loop.drive.gear_ratio"] == 6.0
    NodeSettings.from_parameters(cfg.node)


CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml")
                                        and f != "humanoid_loops.yaml"))       # (a loop file, not parameters)
def test_every_shipped_parameter_file_has_only_known_keys(name):
    path = os.path.join(CONFIG_DIR, name)
    cfg = SensorConfig.from_yaml(path, node_keys=NODE_KEYS)
    NodeSettings.from_parameters(cfg.node)
    assert SensorConfig.from_parameters(cfg.to_parameters(), NODE_KEYS).to_parameters() == cfg.to_parameters()

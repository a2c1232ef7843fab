"""SensorConfig: the ROS 2 parameter-file schema shared by the library and the node."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from rbd_estimator import ConfigError
from rbd_estimator.estimation import SensorConfig

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

"""Sensors a URDF declares: force-torque sensors (``<gazebo reference="JOINT"><sensor
type="force_torque">`` and top-level ``<sensor type="force_torque"><parent joint="JOINT"/>``, SDF
``frame`` / ``measure_direction`` conventions) and IMUs (``<sensor type="imu">`` in ``<gazebo
reference="LINK">`` or with ``<parent link="LINK"/>``), each with its ``<pose>`` / ``<origin>``."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError
from ..spatial import rpy_to_E
from .elements import Frame

_FRAMES = ("child", "parent", "sensor")
_DIRECTIONS = ("child_to_parent", "parent_to_child")


def ft_sensor_tags(tree: ET.Element, joints: dict) -> dict:
    """joint name → FTSensor fields, from <gazebo reference=...> and top-level <sensor> tags."""
    found: dict[str, dict] = {}

    def add(joint_name, sensor, source):
        name = sensor.get("name") or joint_name
        if joint_name not in joints:
            raise ModelError(f"force-torque sensor '{name}' ({source}) refers to joint '{joint_name}', "
                             f"which does not exist")
        if joints[joint_name].type != "fixed":
            raise ModelError(f"force-torque sensor '{name}' is on {joints[joint_name].type} joint "
                             f"'{joint_name}': only sensors on fixed joints are supported")
        ft = sensor.find("force_torque")
        frame = _text(ft, "frame", "child", name)
        direction = _text(ft, "measure_direction", "child_to_parent", name)
        if frame not in _FRAMES:
            raise ModelError(f"force-torque sensor '{name}': <frame> is '{frame}', expected one of {_FRAMES}")
        if direction not in _DIRECTIONS:
            raise ModelError(f"force-torque sensor '{name}': <measure_direction> is '{direction}', "
                             f"expected one of {_DIRECTIONS}")
        E_sensor = _sensor_pose(sensor, name)[0]
        entry = found.setdefault(joint_name, {"names": []})
        if source == "sensor" or "frame" not in entry:
            entry.update(frame=frame, measure_direction=direction, E_sensor=E_sensor)
        if source == "sensor":
            entry["names"].insert(0, name)
        else:
            entry["names"].append(name)

    for gz in tree.findall("gazebo"):
        for sensor in gz.findall("sensor"):
            if sensor.get("type") == "force_torque":
                if gz.get("reference") is None:
                    raise ModelError(f"force-torque sensor '{sensor.get('name')}' has no gazebo reference joint")
                add(gz.get("reference"), sensor, "gazebo")
    for sensor in tree.findall("sensor"):
        if sensor.get("type") == "force_torque":
            parent = sensor.find("parent")
            if parent is None or parent.get("joint") is None:
                raise ModelError(f"force-torque sensor '{sensor.get('name')}' has no <parent joint=...>")
            add(parent.get("joint"), sensor, "sensor")
    return found


def _text(elem, tag: str, default: str, sensor: str) -> str:
    if elem is None or elem.find(tag) is None:
        return default
    text = (elem.find(tag).text or "").strip()
    if not text:
        raise ModelError(f"force-torque sensor '{sensor}': <{tag}> is empty")
    return text


def imu_frames(frames: dict, tree: ET.Element) -> dict:
    """IMU sensor name → :class:`Frame`, from ``<gazebo reference="LINK"><sensor type="imu">`` and
    top-level ``<sensor type="imu"><parent link="LINK"/>`` elements, with their ``<pose>`` /
    ``<origin>`` in the link's coordinates. A sensor on a link the model does not have is an error."""
    found = []
    for gz in tree.findall("gazebo"):
        for sensor in gz.findall("sensor"):
            if sensor.get("type") == "imu" and gz.get("reference"):
                found.append((gz.get("reference"), sensor))
    for sensor in tree.findall("sensor"):
        if sensor.get("type") == "imu" and sensor.find("parent") is not None:
            found.append((sensor.find("parent").get("link"), sensor))
    out = {}
    child_of = {j.get("name"): j.find("child").get("link") for j in tree.findall("joint") if j.find("child") is not None}
    for link, sensor in found:
        name = sensor.get("name") or link
        link = link if link in frames else child_of.get(link, link)    # a gazebo reference to a joint
        if link not in frames:
            raise ModelError(f"IMU sensor '{name}' is attached to '{link}', which is not a link of the model")
        base = frames[link]
        E_ls, p = _sensor_pose(sensor, name, "IMU sensor")        # link → sensor coordinates, origin in the link
        out[name] = Frame(name, base.body, E_ls @ base.E, base.r + base.E.T @ p)
    return out


def _sensor_pose(sensor: ET.Element, name: str, what: str = "force-torque sensor") -> tuple[np.ndarray, np.ndarray]:
    """``(E, p)``: rotation from link to sensor coordinates and the sensor origin in link
    coordinates (m), from an SDF ``<pose>x y z r p y</pose>`` or a URDF ``<origin xyz rpy>``
    (which wins)."""
    xyz = rpy = None
    pose = sensor.find("pose")
    if pose is not None and (pose.text or "").strip():
        vals = pose.text.split()
        if len(vals) != 6:
            raise ModelError(f"{what} '{name}': <pose> must have 6 numbers")
        xyz, rpy = vals[:3], vals[3:]
    origin = sensor.find("origin")
    if origin is not None:
        xyz, rpy = origin.get("xyz", "").split() or xyz, origin.get("rpy", "").split() or rpy
    p = np.zeros(3) if xyz is None else _three(xyz, f"{what} '{name}': invalid position")
    E = np.eye(3) if rpy is None else rpy_to_E(_three(rpy, f"{what} '{name}': invalid orientation")).T
    return E, p


def _three(vals, message: str) -> np.ndarray:
    """Three finite numbers, or :class:`ModelError` with ``message`` and the values."""
    try:
        v = np.array([float(x) for x in vals])
    except ValueError:
        raise ModelError(f"{message} {vals}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{message} {vals}")
    return v



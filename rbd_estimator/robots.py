"""The robots shipped with a configuration: name → parameter file and robot description.

Used by the launch file (``robot:=NAME``), the tests and the benchmarks. The shipped humanoid and
arm come with their URDFs in ``share/rbd_estimator/urdf``; the real robots' URDFs come from
*example-robot-data* (``ros-<distro>-example-robot-data`` in a ROS workspace, or the PyPI wheel
``example-robot-data``), which this module finds without importing ROS. Nothing here is needed to
run the estimator: a robot of your own is a URDF plus a parameter file.
"""
from __future__ import annotations

import importlib.metadata
import os
import sys
from dataclasses import dataclass

from .errors import ConfigError

PACKAGE = "rbd_estimator"
#: ROS package (ament index) and PyPI distribution of example-robot-data
ROBOT_DATA = "example-robot-data"


@dataclass(frozen=True)
class ShippedRobot:
    """``params``: file under ``share/rbd_estimator/config``; ``urdf``: path under
    ``share/rbd_estimator/urdf`` (``source='package'``) or under example-robot-data's ``robots/``
    (``source='example-robot-data'``)."""
    name: str
    params: str
    urdf: str
    source: str = "example-robot-data"
    description: str = ""


SHIPPED = {r.name: r for r in (
    ShippedRobot("humanoid", "humanoid.yaml", "humanoid.urdf", "package",
                 "the package's 22-joint humanoid: IMU, six force-torque sensors, two feet"),
    ShippedRobot("arm", "fixed_arm.yaml", "arm.urdf", "package", "fixed-base arm with a wrist force-torque sensor"),
    ShippedRobot("icub", "icub.yaml", "icub_description/robots/icub.urdf",
                 description="iCub: IMU, six force-torque sensors, two feet"),
    ShippedRobot("talos", "talos.yaml", "talos_data/robots/talos_reduced.urdf",
                 description="Talos: IMU, force-torque sensors at ankles and wrists, two feet"),
    ShippedRobot("go2", "go2.yaml", "go2_description/urdf/go2.urdf",
                 description="Unitree Go2: IMU, 12 motor torques, four point-force feet"),
    ShippedRobot("g1", "g1.yaml", "g1_description/urdf/g1_29dof_rev_1_0.urdf",
                 description="Unitree G1 (29 DoF): IMU, 29 motor torques, two feet"),
)}


def shipped(name: str) -> ShippedRobot:
    try:
        return SHIPPED[name]
    except KeyError:
        raise ConfigError(f"robot '{name}' is not shipped with a configuration; shipped: {', '.join(SHIPPED)} "
                          f"(for another robot give robot_description_file and params_file)") from None


def share_dir() -> str:
    """``share/rbd_estimator``: ``$RBD_ESTIMATOR_SHARE_DIR`` when set (the install step's cache
    warm-up, before the files are in place), the source tree when running from it (editable
    install), else the ament index in a ROS workspace, else the installation prefix (pip)."""
    if os.environ.get("RBD_ESTIMATOR_SHARE_DIR"):
        return os.environ["RBD_ESTIMATOR_SHARE_DIR"]
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isfile(os.path.join(source, "config", "humanoid.yaml")):
        return source
    try:
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory(PACKAGE)
    except Exception:  # noqa: BLE001 — not a ROS environment, or the package is not in its index
        pass
    # <prefix>/lib/pythonX.Y/site-packages → <prefix>/share/rbd_estimator (pip, colcon before
    # its setup files are sourced), <target>/share/rbd_estimator (pip --target), then the interpreter's prefixes
    up = [os.path.normpath(os.path.join(source, *[".."] * n, "share", PACKAGE)) for n in (3, 0)]
    for d in up + [os.path.join(prefix, "share", PACKAGE) for prefix in (sys.prefix, sys.base_prefix)]:
        if os.path.isfile(os.path.join(d, "config", "humanoid.yaml")):
            return d
    raise ConfigError(f"cannot find share/{PACKAGE} (configs and URDFs): is the package installed?")


def robot_data_dir() -> str:
    """The ``robots/`` folder of example-robot-data: the ROS package's share folder, else the PyPI
    wheel's (``site-packages/cmeel.prefix/share/example-robot-data/robots``)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        d = os.path.join(get_package_share_directory(ROBOT_DATA), "robots")
        if os.path.isdir(d):
            return d
    except Exception:  # noqa: BLE001 — not a ROS environment, or not installed there
        pass
    try:
        files = importlib.metadata.files(ROBOT_DATA) or ()
    except importlib.metadata.PackageNotFoundError:
        files = ()
    for f in files:
        parts = str(f).split("/")
        if "robots" in parts and parts[-1].endswith(".urdf"):
            full = str(f.locate())
            return full[: full.index("/robots/") + len("/robots")]
    raise ConfigError(f"the robot descriptions of {ROBOT_DATA} are not installed: install the ROS package "
                      f"(ros-$ROS_DISTRO-example-robot-data) or `pip install {ROBOT_DATA}`, or give "
                      f"robot_description_file")


def params_file(name: str) -> str:
    """The shipped parameter file of robot ``name``."""
    return os.path.join(share_dir(), "config", shipped(name).params)


def urdf_file(name: str) -> str:
    """The URDF of robot ``name`` (package share, or example-robot-data)."""
    r = shipped(name)
    path = (os.path.join(share_dir(), "urdf", r.urdf) if r.source == "package"
            else os.path.join(robot_data_dir(), r.urdf))
    if not os.path.isfile(path):
        raise ConfigError(f"robot '{name}': its robot description {path} does not exist")
    return path


def launch_descriptions(robot: str, robot_description_file: str = "", description_source: str = "file",
                        use_robot_state_publisher: bool = False) -> tuple[str, str]:
    """``(estimator's robot_description parameter, robot_state_publisher's)`` as ``robot.launch.py``
    passes them: the URDF text of ``robot_description_file``, else of the shipped ``robot``. With
    ``description_source='topic'`` the estimator's is empty (it reads ``/robot_description`` at
    configure) while robot_state_publisher, when the launch starts it, still gets the URDF: it is what
    publishes that topic. No file is read when neither needs one."""
    if description_source not in ("file", "topic"):
        raise ConfigError(f"description_source '{description_source}': one of 'file', 'topic'")
    if description_source == "topic" and not use_robot_state_publisher:
        return "", ""
    path = robot_description_file or urdf_file(robot)
    try:
        with open(path, encoding="utf-8") as fh:
            xml = fh.read()
    except OSError as exc:
        raise ConfigError(f"robot_description_file: cannot read {path}: {exc}") from None
    return ("" if description_source == "topic" else xml), xml

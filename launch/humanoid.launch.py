"""Launch the rbd_estimator lifecycle node for the humanoid shipped with the package.

    ros2 launch rbd_estimator humanoid.launch.py
    ros2 launch rbd_estimator humanoid.launch.py robot:=talos      # any argument of robot.launch.py

The same as ``robot.launch.py`` with ``robot:=humanoid`` by default; every argument of
robot.launch.py (robot, robot_description_file, params_file, description_source, autostart,
use_robot_state_publisher) is passed on.
"""
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare("rbd_estimator"), "launch", "robot.launch.py"]))),
    ])

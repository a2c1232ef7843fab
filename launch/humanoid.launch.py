"""Launch the rbd_estimator lifecycle node for a robot (default: the humanoid shipped with the package).

    ros2 launch rbd_estimator humanoid.launch.py
    ros2 launch rbd_estimator humanoid.launch.py robot_description_file:=/path/to/robot.urdf \\
        params_file:=/path/to/params.yaml autostart:=false use_robot_state_publisher:=true

Arguments:
  robot_description_file     URDF given to the node as its robot_description parameter
                             (default: share/rbd_estimator/urdf/humanoid.urdf)
  params_file                ROS 2 parameter file, node name 'rbd_estimator'
                             (default: share/rbd_estimator/config/humanoid.yaml)
  autostart                  configure, then activate, through lifecycle events (default: true)
  use_robot_state_publisher  also start robot_state_publisher with the same URDF (default: false)
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, RegisterEventHandler
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
from lifecycle_msgs.msg import Transition


def generate_launch_description():
    robot_description_file = LaunchConfiguration("robot_description_file")
    params_file = LaunchConfiguration("params_file")
    autostart = LaunchConfiguration("autostart")
    use_robot_state_publisher = LaunchConfiguration("use_robot_state_publisher")

    arguments = [
        DeclareLaunchArgument(
            "robot_description_file",
            default_value=PathJoinSubstitution([FindPackageShare("rbd_estimator"), "urdf", "humanoid.urdf"]),
            description="URDF of the robot, passed to the node as its robot_description parameter."),
        DeclareLaunchArgument(
            "params_file",
            default_value=PathJoinSubstitution([FindPackageShare("rbd_estimator"), "config", "humanoid.yaml"]),
            description="Parameter file (node name 'rbd_estimator'): sensors, contacts, topics, filter."),
        DeclareLaunchArgument(
            "autostart", default_value="true",
            description="Configure and activate the estimator through lifecycle transitions at start-up."),
        DeclareLaunchArgument(
            "use_robot_state_publisher", default_value="false",
            description="Also start robot_state_publisher with the same URDF (publishes /robot_description and TF)."),
    ]

    robot_description = ParameterValue(Command(["cat ", robot_description_file]), value_type=str)

    estimator = LifecycleNode(
        package="rbd_estimator",
        executable="estimator_node",
        name="rbd_estimator",
        namespace="",
        output="screen",
        parameters=[params_file, {"robot_description": robot_description}],
    )

    robot_state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        name="robot_state_publisher",
        output="screen",
        parameters=[{"robot_description": robot_description}],
        condition=IfCondition(use_robot_state_publisher),
    )

    # autostart: configure as soon as the node runs; activate when it reaches 'inactive'.
    configure = EmitEvent(
        event=ChangeState(
            lifecycle_node_matcher=matches_action(estimator),
            transition_id=Transition.TRANSITION_CONFIGURE),
        condition=IfCondition(autostart))

    activate_when_configured = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=estimator,
            start_state="configuring",
            goal_state="inactive",
            entities=[
                LogInfo(msg="rbd_estimator configured: activating"),
                EmitEvent(event=ChangeState(
                    lifecycle_node_matcher=matches_action(estimator),
                    transition_id=Transition.TRANSITION_ACTIVATE)),
            ]),
        condition=IfCondition(autostart))

    report_active = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=estimator,
            goal_state="active",
            entities=[LogInfo(msg="rbd_estimator active: publishing ~/joint_torques and ~/contact_wrenches/*")]))

    return LaunchDescription(arguments + [
        robot_state_publisher,
        activate_when_configured,
        report_active,
        estimator,
        configure,
    ])

"""Launch the rbd_estimator lifecycle node for a shipped robot, by name, or for your own.

    ros2 launch rbd_estimator robot.launch.py robot:=talos          # humanoid, icub, talos, go2, g1, arm
    ros2 launch rbd_estimator robot.launch.py robot:=go2 description_source:=topic   # from robot_state_publisher
    ros2 launch rbd_estimator robot.launch.py robot_description_file:=/path/robot.urdf params_file:=/path/params.yaml

Arguments:
  robot                      shipped robot (share/rbd_estimator/config/<robot>.yaml and its URDF: the package's
                             own for humanoid and arm, example-robot-data's for icub, talos, go2, g1); default humanoid
  robot_description_file     URDF given to the node as its robot_description parameter (default: the robot's)
  params_file                ROS 2 parameter file, node name 'rbd_estimator' (default: the robot's)
  description_source         'file' (default): the URDF file above; 'topic': the node reads robot_description
                             from robot_state_publisher's /robot_description topic at configure
  autostart                  configure, then activate, through lifecycle events (default: true)
  use_robot_state_publisher  also start robot_state_publisher with the URDF (default: false); with
                             description_source:=topic it publishes what the node reads
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from rbd_estimator import robots


def _resolve(context):
    """(params file, the estimator's robot_description, robot_state_publisher's) from the arguments:
    explicit files win over the robot's; with description_source:=topic the estimator reads the topic
    that robot_state_publisher (started here or elsewhere) publishes from the URDF."""
    robot = LaunchConfiguration("robot").perform(context)
    params = LaunchConfiguration("params_file").perform(context) or robots.params_file(robot)
    use_rsp = LaunchConfiguration("use_robot_state_publisher").perform(context).lower() in ("true", "1")
    return (params, *robots.launch_descriptions(
        robot, LaunchConfiguration("robot_description_file").perform(context),
        LaunchConfiguration("description_source").perform(context), use_rsp))


def _nodes(context):
    params, urdf, rsp_urdf = _resolve(context)
    autostart = LaunchConfiguration("autostart")
    estimator = LifecycleNode(
        package="rbd_estimator",
        executable="estimator_node",
        name="rbd_estimator",
        namespace="",
        output="screen",
        parameters=[params, {"robot_description": urdf}],
    )
    robot_state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        name="robot_state_publisher",
        output="screen",
        parameters=[{"robot_description": rsp_urdf}],
        condition=IfCondition(LaunchConfiguration("use_robot_state_publisher")),
    )
    # autostart: configure as soon as the node runs; activate when it reaches 'inactive'.
    configure = EmitEvent(
        event=ChangeState(lifecycle_node_matcher=matches_action(estimator),
                          transition_id=Transition.TRANSITION_CONFIGURE),
        condition=IfCondition(autostart))
    activate_when_configured = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=estimator, start_state="configuring", goal_state="inactive",
            entities=[
                LogInfo(msg="rbd_estimator configured: activating"),
                EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(estimator),
                                            transition_id=Transition.TRANSITION_ACTIVATE)),
            ]),
        condition=IfCondition(autostart))
    report_active = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=estimator, goal_state="active",
            entities=[LogInfo(msg="rbd_estimator active: publishing ~/joint_torques and ~/contact_wrenches/*")]))
    return [robot_state_publisher, activate_when_configured, report_active, estimator, configure]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="humanoid", choices=sorted(robots.SHIPPED),
                              description="Shipped robot: its parameter file and URDF."),
        DeclareLaunchArgument("robot_description_file", default_value="",
                              description="URDF passed as the robot_description parameter (default: the robot's)."),
        DeclareLaunchArgument("params_file", default_value="",
                              description="Parameter file (node name 'rbd_estimator'); default: the robot's."),
        DeclareLaunchArgument("description_source", default_value="file", choices=["file", "topic"],
                              description="'topic': read robot_description from robot_state_publisher's topic."),
        DeclareLaunchArgument("autostart", default_value="true",
                              description="Configure and activate the estimator through lifecycle transitions."),
        DeclareLaunchArgument("use_robot_state_publisher", default_value="false",
                              description="Also start robot_state_publisher with the same URDF."),
        OpaqueFunction(function=_nodes),
    ])

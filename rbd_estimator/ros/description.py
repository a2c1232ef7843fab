"""The robot description at configure: the ``robot_description`` parameter, or the transient-local
topic that ``robot_state_publisher`` latches."""
from __future__ import annotations

import rclpy
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import String

from ..errors import DescriptionUnavailable

DESCRIPTION_QOS = QoSProfile(depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=QoSReliabilityPolicy.RELIABLE)


def read_description(node, settings) -> str:
    """URDF XML for ``node``: ``settings.robot_description``, or when empty the first message on
    ``settings.robot_description_topic`` (resolved by ``node``) within its timeout. The reader is a
    private node in no executor (no other thread takes the message), deaf to the process's remaps."""
    if settings.robot_description.strip():
        return settings.robot_description
    reader = rclpy.create_node(f"_{node.get_name()}_description_reader", namespace=node.get_namespace(),
                               context=node.context, use_global_arguments=False,
                               start_parameter_services=False, enable_logger_service=False)
    try:
        ok, msg = wait_for_message(String, reader, node.resolve_topic_name(settings.robot_description_topic),
                                   qos_profile=DESCRIPTION_QOS, time_to_wait=settings.robot_description_timeout)
    finally:
        reader.destroy_node()
    if not ok or not msg.data.strip():
        raise DescriptionUnavailable(
            f"no robot description: parameter 'robot_description' is empty and nothing arrived on "
            f"'{settings.robot_description_topic}' within {settings.robot_description_timeout:g} s. Set the "
            f"parameter, or start robot_state_publisher (or change 'robot_description_topic'), then "
            f"configure again")
    return msg.data

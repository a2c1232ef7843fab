"""Offline replay of rosbag2 recordings (MCAP or sqlite3) through the estimator node's tick logic.

    rbd-estimator replay INPUT OUTPUT --params config.yaml [--robot-description URDF] [--plot FILE]

Reads the joint-state, IMU, force-torque and load-cell topics the node would subscribe to with the
same parameters, feeds every message, in the recording's order, to the same
:class:`~rbd_estimator.runtime.inputs.SensorInputs` (validation, derivative filters, latest samples)
and :class:`~rbd_estimator.runtime.tick.TickCore` (freshness against the sensor timeouts, plan for the
missing sensors, estimate) the live node uses, and writes the input topics plus the estimate topics
(``<namespace>/<node>/joint_torques``, ``<namespace>/<node>/contact_wrenches/<contact>``) to a new
bag, and, when contacts are switchable, the contact state of every tick
(``<namespace>/<node>/contact_state``, as the node publishes it; with fixed contacts the node's
contact state is the same every tick, all in contact, and is not written). Reading goes through the
public APIs of the ``rosbags`` package (and of the ``mcap`` package, which reads MCAP recordings chunk
by chunk: :mod:`rbd_estimator.replay.bag_io`); MCAP output is written a batch at a time with ``mcap``'s
records (:mod:`rbd_estimator.replay.bag_writer`), sqlite3 output by rosbags: no ROS installation is needed.

Time: the node's clock ("now", against which freshness is measured) is the time the recorder
received each message (the bag's log time), as the live node uses the middleware's receipt time.
Estimates are written at the log time of the joint state that triggered them (``tick:
joint_states``) or of the timer tick (``tick: timer``: ticks at ``rate_hz`` from the first message
on), stamped with the joint state's header stamp like the node's. Two differences with a live node,
both on purpose: a sensor loss without a plan yet is planned at once (the live node plans it in the
background and publishes nothing meanwhile), and the pinocchio cross-check and ``/diagnostics`` are
not run.

A recording that ends in the middle of a record, or whose bytes are corrupt, stops the replay with a
:class:`ReplayError`-style message in :attr:`ReplaySummary.error`; the output bag is always closed,
so what was replayed up to that point is a valid bag.
"""
from .bag import load_config, read_description, replay_bag
from .replayer import ReplayError, Replayer, ReplaySummary, resolve
from .report import Progress, plot

__all__ = ["Replayer", "ReplayError", "ReplaySummary", "replay_bag", "load_config", "read_description", "plot",
           "Progress", "resolve"]

"""Replaying a fleet's recordings: ``rbd-estimator replay-fleet`` (docs/fleet.md).

    rbd-estimator replay-fleet RECORDING|FOLDER|GLOB ... -o OUTPUT --params [ROBOT=]FILE ...
                               [--engine local|ray] [--workers N] [--address ADDR]

One task per recording (:mod:`.tasks`: the estimate bag exactly as ``rbd-estimator replay`` writes
it, a Parquet table with a row per tick (:mod:`.tables`), a completion marker written last; complete
recordings are skipped on a rerun), run on the local machine's cores or on Ray (:mod:`.engines`),
then the fleet summary table, a row per recording, and a one-page report (:mod:`.report`).
ROS-free (``rosbags`` and ``mcap`` read and write the bags); ``pyarrow`` writes the tables, ``ray``
is optional.
"""
from .inputs import FleetError, find_recordings, make_tasks
from .run import run_fleet, text
from .tasks import MARKER, Task, run_task

__all__ = ["run_fleet", "run_task", "Task", "FleetError", "find_recordings", "make_tasks", "text", "MARKER"]

"""ROS-side helpers of the estimator node (:mod:`rbd_estimator.node`): no mathematics of the estimate.

* :mod:`.params`      node-only parameters (topics, filter, timing) and how each may change;
* :mod:`.filters`     the derivative filter that turns velocities into accelerations;
* :mod:`.stats`       rolling latency statistics;
* :mod:`.input_core`  compiled input handling: serialized messages → validated latest samples, filters, freshness;
* :mod:`.inputs`      the input state of a configuration over it (slots, counters, force-torque offsets);
* :mod:`.tick`        one tick (freshness, plan lookup, estimate): shared by the node and the replay;
* :mod:`.batch`       the same tick over a run of recorded messages in one compiled loop (the replay);
* :mod:`.calibration` sample collection and request parsing of ``~/calibrate_ft_offsets``;
* :mod:`.cdr`         the output messages as templates serialized once by rosbags; the joint-state decoder;
* :mod:`.bag_io`      whole batches of raw messages in and out of rosbag2 bags, public APIs only (the replay);
* :mod:`.mcap_salvage` a truncated MCAP recording read record by record (mcap's ``StreamReader``; the replay);
* :mod:`.plans`       the estimator for the full sensor set plus the plans for sensor losses;
* :mod:`.convert`     message ↔ array conversions (the demo);
* :mod:`.diagnostics` the ``/diagnostics`` status;
* :mod:`.oracle`      the pinocchio cross-check.

Only :mod:`.convert`, :mod:`.diagnostics`, :mod:`.demo_runner` and the node import ROS packages; the
others are plain Python so they can be tested, and the replay (:mod:`rbd_estimator.replay`) can run,
without a ROS graph.
"""

"""ROS-side helpers of the estimator node (:mod:`rbd_estimator.node`): no mathematics of the estimate.

* :mod:`.params`      node-only parameters (topics, filter, timing) and how each may change;
* :mod:`.filters`     the derivative filter that turns velocities into accelerations;
* :mod:`.stats`       rolling latency statistics;
* :mod:`.inputs`      latest sample of every input, validation, freshness, force-torque offsets;
* :mod:`.tick`        one tick (freshness, plan lookup, estimate): shared by the node and the replay;
* :mod:`.calibration` sample collection and request parsing of ``~/calibrate_ft_offsets``;
* :mod:`.cdr`         fast CDR codecs of the input and output messages (the offline replay);
* :mod:`.mcap_salvage` sequential reading of a truncated MCAP recording (the offline replay);
* :mod:`.plans`       the estimator for the full sensor set plus the plans for sensor losses;
* :mod:`.convert`     message ↔ array conversions;
* :mod:`.diagnostics` the ``/diagnostics`` status;
* :mod:`.oracle`      the pinocchio cross-check.

Only :mod:`.convert`, :mod:`.diagnostics`, :mod:`.demo_runner` and the node import ROS packages; the
others are plain Python so they can be tested, and the replay (:mod:`rbd_estimator.replay`) can run,
without a ROS graph.
"""

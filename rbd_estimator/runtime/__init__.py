"""The estimator at run time, without ROS: what the node (:mod:`rbd_estimator.node`) and the replay
(:mod:`rbd_estimator.replay`) share, owned by one :class:`~.session.Session`.

* :mod:`.session`      the session: inputs and their handlers, the tick, outputs, reconfiguration swap, diagnostics;
* :mod:`.params`       node-only parameters (topics, filter, timing), the node's whole schema, the docs' tables;
* :mod:`.input_core`   compiled input handling: serialized messages → validated latest samples, filters, freshness;
* :mod:`.inputs`       the input state of a configuration over it (slots, counters, force-torque offsets);
* :mod:`.filters`      the derivative filter that turns velocities into accelerations;
* :mod:`.tick`         one tick (freshness, plan lookup, estimate);
* :mod:`.batch`        the same tick over a run of recorded messages in one compiled loop (the replay);
* :mod:`.plans`        the estimator for the full sensor set plus the plans for sensor losses;
* :mod:`.contact_state` the contact decisions of each tick;
* :mod:`.calibration`  sample collection, request parsing and fit of ``~/calibrate_ft_offsets``;
* :mod:`.cdr`          the output messages as templates serialized once by rosbags; the joint-state decoder;
* :mod:`.oracle`       the pinocchio cross-check;
* :mod:`.stats`        rolling latency statistics.

No module here imports ROS.
"""

"""ROS-side helpers of the estimator node (:mod:`rbd_estimator.node`): no mathematics of the estimate.

* :mod:`.params`      node-only parameters (topics, filter, timing) and how each may change;
* :mod:`.filters`     the derivative filter that turns velocities into accelerations;
* :mod:`.stats`       rolling latency statistics;
* :mod:`.inputs`      latest sample of every input, validation, freshness;
* :mod:`.plans`       the estimator for the full sensor set plus the plans for sensor losses;
* :mod:`.convert`     message ↔ array conversions;
* :mod:`.diagnostics` the ``/diagnostics`` status;
* :mod:`.oracle`      the pinocchio cross-check.

Only :mod:`.convert`, :mod:`.diagnostics` and the node import ROS message packages; the others are
plain Python so they can be tested without a ROS graph.
"""

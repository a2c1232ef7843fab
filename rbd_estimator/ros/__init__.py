"""What the node needs from ROS itself (rclpy and message packages); the ROS-free runtime that the
node and the replay share is :mod:`rbd_estimator.runtime`.

* :mod:`.tick_thread` the tick thread: a helper node with the input subscriptions, its spinner and lock;
* :mod:`.fast_spin`   the tick thread's wait-set spinner;
* :mod:`.description` the robot description at configure (parameter or latched topic);
* :mod:`.declare`     the node's ROS parameters declared from the schema (descriptors, per listed name);
* :mod:`.diagnostics` the ``/diagnostics`` message;
* :mod:`.convert`     message ↔ array conversions (the demo);
* :mod:`.demo_runner` the demo's and the benchmarks' node process, publisher and client;
* :mod:`.blas`        BLAS thread limits of the node's process (threadpoolctl).
"""

"""Replaying a rosbag2 recording into a new bag: :func:`replay_bag` (reading, the :class:`~.replayer.Replayer`,
writing, through :mod:`rbd_estimator.replay.bag_io`) and :func:`load_config`."""
from __future__ import annotations

import functools
import os
import time

from ..errors import ConfigError
from ..estimation import SensorConfig
from . import bag_io
from ..runtime import cdr
from ..runtime.params import NODE_KEYS, NodeSettings
from .bag_writer import open_writer
from .replayer import ReplayError, ReplaySummary, Replayer, resolve

STORAGES = ("mcap", "sqlite3")


def _storage_of(path: str, storage: str | None) -> str:
    if storage:
        if storage not in STORAGES:
            raise ReplayError(f"unknown storage '{storage}': use one of {', '.join(STORAGES)}")
        return storage
    return "sqlite3" if path.rstrip("/").endswith((".db3", "_sqlite3", ".sqlite3")) else "mcap"


def read_description(reader, topic: str) -> str | None:
    """The last ``std_msgs/String`` on ``topic`` in the bag (robot_state_publisher's description),
    read by rosbags."""
    from rosbags.typesys import Stores, get_typestore

    conns = [c for c in reader.connections if c.topic == topic and c.msgtype == cdr.STRING]
    text = None
    if not conns:
        return None
    ts = get_typestore(Stores.ROS2_JAZZY)
    try:
        for _, _, raw in reader.messages(connections=conns):
            text = ts.deserialize_cdr(raw, cdr.STRING).data
    except Exception:  # noqa: BLE001 - a damaged recording: the description read before the damage will do
        if text is None:
            raise
    return text


def _open_input(path: str, summary: ReplaySummary):
    """A rosbags ``Reader``; for an MCAP recording that rosbags cannot open (cut short: no footer,
    no summary, or no metadata.yaml), the sequential :class:`~rbd_estimator.replay.mcap_salvage.McapSalvageReader`."""
    from rosbags.rosbag2 import Reader

    try:
        reader = Reader(path)
        reader.open()
        return reader
    except Exception as exc:  # noqa: BLE001 - rosbags raises several types for unreadable bags
        first = f"{type(exc).__name__}: {exc}"
    from .mcap_salvage import McapSalvageReader
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".mcap"))
    else:
        files = [path] if path.endswith(".mcap") else []
    if len(files) == 1:
        try:
            reader = McapSalvageReader(files[0])
        except Exception as exc:  # noqa: BLE001
            raise ReplayError(f"cannot open input bag '{path}': {first}; reading its MCAP file sequentially "
                              f"failed too: {exc}") from None
        summary.salvage = (f"rosbags cannot open '{path}' ({first}): read sequentially up to the damage "
                           f"({reader.message_count} complete messages)")
        return reader
    raise ReplayError(f"cannot open input bag '{path}': {first.rstrip('.')}. Is it a rosbag2 directory "
                      f"(metadata.yaml plus .mcap or .db3 files)?")


def replay_bag(input_path: str, output_path: str, config: SensorConfig, xml: str | None = None, *,
               storage: str | None = None, compress: bool = True, namespace: str = "/",
               node_name: str = "rbd_estimator", collect: bool = False, progress=None,
               copy_inputs: bool = True, flush=None, planner=None):
    """Replay ``input_path`` into a new bag ``output_path`` (a directory; it must not exist).

    ``xml``: the URDF; None takes the ``robot_description`` parameter of ``config`` or, when empty,
    the recording's ``robot_description_topic``. ``storage``: ``mcap`` (default; zstd-compressed
    chunks with ``compress``) or ``sqlite3`` (default when ``output_path`` ends in ``.db3``).
    ``copy_inputs=False`` writes the estimate topics only (not the input topics the estimate read).
    MCAP output is written a batch at a time (:mod:`~rbd_estimator.replay.bag_writer`), sqlite3 through
    rosbags' ``Writer``.
    ``collect``: log every tick (``replayer.log``, :mod:`~rbd_estimator.replay.ticklog`), in chunks to
    ``flush(columns, joint_names, contact_names)`` when given. ``progress(done, total)`` is called
    now and then. ``planner``: where the estimator comes from (a fleet worker's
    :class:`~rbd_estimator.runtime.plans.PlanCache`; default: planned here). Returns ``(summary, replayer)``; a truncated or
    corrupt recording sets ``summary.error`` (the output holds what was replayed and is a valid bag).
    Raises :class:`ReplayError` when the replay cannot start.
    """
    from rosbags.typesys import Stores, get_typestore

    t_start = time.perf_counter()
    try:
        settings = NodeSettings.from_parameters(config.node)
    except ConfigError as exc:
        raise ReplayError(f"invalid parameters: {exc}") from None
    storage = _storage_of(output_path, storage)
    if os.path.exists(output_path):
        raise ReplayError(f"output '{output_path}' exists already: choose a new path (a bag is a directory)")
    summary = ReplaySummary(input=input_path, output=output_path)
    reader = _open_input(input_path, summary)
    try:
        if xml is None:
            xml = settings.robot_description if settings.robot_description.strip() else None
        if xml is None:
            topic = resolve(settings.robot_description_topic, namespace, node_name)
            try:
                xml = read_description(reader, topic)
            except Exception as exc:  # noqa: BLE001
                raise ReplayError(f"cannot read the robot description from '{topic}' in the bag: {exc}") from None
            if not xml:
                raise ReplayError(f"no robot description: the parameter 'robot_description' is empty and the bag "
                                  f"has no std_msgs/String on '{topic}'. Pass --robot-description URDF")
        try:
            rep = Replayer(xml, config, namespace=namespace, node_name=node_name, collect=collect, flush=flush,
                           planner=planner)
        except ConfigError as exc:
            raise ReplayError(f"invalid parameters: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - planning errors say what to change
            raise ReplayError(f"cannot plan the estimator: {type(exc).__name__}: {exc}") from None
        wanted = dict(rep.handlers)
        desc_topic = resolve(settings.robot_description_topic, namespace, node_name)
        outputs = {t for t, _ in rep.outputs}
        copy = [c for c in reader.connections
                if (c.topic in wanted or c.topic == desc_topic) and c.topic not in outputs]
        if not any(c.topic == rep.js_topic for c in copy):
            have = ", ".join(sorted({c.topic for c in reader.connections})) or "none"
            raise ReplayError(f"the recording has no '{rep.js_topic}' ({cdr.JOINT_STATE}), the topic that ticks the "
                              f"estimator; its topics: {have}. Set joint_states_topic (and the sensor topics) in the "
                              f"parameters, or --namespace for relative names")
        for c in copy:
            if c.topic in wanted and c.msgtype != wanted[c.topic].message:
                raise ReplayError(f"topic '{c.topic}' has type {c.msgtype} in the bag; the estimator reads "
                                  f"{wanted[c.topic].message} there")
        ts = get_typestore(Stores.ROS2_JAZZY)

        @functools.lru_cache(maxsize=None)
        def definition(msgtype: str) -> tuple:
            """``(message definition, RIHS01 hash)`` of ``msgtype`` from rosbags' type store."""
            return ts.generate_msgdef(msgtype, ros_version=2)[0], ts.hash_rihs01(msgtype)
        writer = open_writer(output_path, storage, compress)
    except BaseException:
        reader.close()
        raise
    first = last = None
    try:
        out_conn = {}
        for c in copy:
            key = (c.topic, c.msgtype)
            if key in out_conn or not copy_inputs:
                continue
            md = c.msgdef.data if getattr(c, "msgdef", None) is not None else ""
            digest = c.digest
            if not (md and digest):                          # the bag holds no definition: rosbags' own
                md, digest = definition(c.msgtype)
            out_conn[key] = writer.add_connection(c.topic, c.msgtype, md, digest,
                                                  offered_qos_profiles=c.ext.offered_qos_profiles)
        est_conns = [writer.add_connection(t, msgtype, *definition(msgtype)) for t, msgtype in rep.outputs]
        out_conns = [out_conn.get((c.topic, c.msgtype)) for c in copy] + est_conns
        topics = [c.topic for c in copy]
        counter = [0]

        first_written = 0 if copy_inputs else len(copy)      # connection indices below it are not written

        def write_batch(b):
            if first_written:
                b = b.select(b.conn >= first_written)
            writer.write_batch(b, out_conns)
            counter[0] += len(b)

        def write_one(c, t, data):
            if c >= first_written:
                writer.write(out_conns[c], t, data)
                counter[0] += 1

        total = sum(c.msgcount for c in copy) or reader.message_count
        n = 0
        decode_errors = {}
        t_loop = time.perf_counter()
        try:
            for batch in bag_io.iter_batches(reader, copy, max_messages=8192):
                if not len(batch):
                    continue
                if first is None:
                    first = int(batch.time[0])
                last = int(batch.time[-1])
                n += len(batch)
                for topic, m in rep.feed_batch(batch, topics, write_batch, write_one, copy_inputs).items():
                    decode_errors[topic] = decode_errors.get(topic, 0) + m
                if progress is not None:
                    progress(n, total)
        except Exception as exc:  # noqa: BLE001 - truncated or corrupt storage
            summary.error = (f"input bag '{input_path}' is truncated or corrupt: reading stopped after "
                             f"{n} messages ({type(exc).__name__}: {exc}). The output holds the replay up to "
                             f"that point")
        else:
            if last is not None:
                rep.sink(write_one, len(copy))
                rep.finish(last)
        summary.loop_seconds = time.perf_counter() - t_loop
        if progress is not None:
            progress(n, total)
        summary.messages_read = n
        summary.messages_written = counter[0]
        summary.undecodable = decode_errors
    finally:
        writer.close()
        reader.close()
    if rep.log is not None:
        rep.log.close()
    summary.ticks, summary.estimates = rep.core.ticks, rep.core.outputs
    summary.stale_timer_ticks = rep.stale_timer_ticks
    summary.received, summary.rejected = rep.session.input_counts()
    summary.rejected_joints = rep.session.inputs.joint_state_problem
    summary.bag_seconds = (last - first) * 1e-9 if first is not None else 0.0
    summary.wall_seconds = time.perf_counter() - t_start
    return summary, rep


def load_config(params_path: str, node_name: str | None = None) -> SensorConfig:
    try:
        return SensorConfig.from_yaml(params_path, node_name, NODE_KEYS)
    except ConfigError as exc:
        raise ReplayError(f"invalid parameter file: {exc}") from None


# ============================================================================ plot

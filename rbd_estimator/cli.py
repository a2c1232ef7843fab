"""The ``rbd-estimator`` console script.

    rbd-estimator warm-cache [ROBOT ...]
    rbd-estimator replay INPUT OUTPUT --params config.yaml [--robot-description URDF] [--plot FILE]
                                      [--storage mcap|sqlite3] [--no-compress] [--namespace NS]
    rbd-estimator replay-fleet RECORDING ... -o OUTPUT --params [ROBOT=]FILE ... [--engine local|ray]

``warm-cache`` compiles the kernels of the shipped configurations into the package's cache
(:mod:`rbd_estimator.warm`), so that the first ``configure`` takes seconds. ``replay`` runs the estimator node's tick logic over a rosbag2 recording (MCAP or sqlite3) and writes
the input topics plus the estimate topics to a new bag (see :mod:`rbd_estimator.replay`);
``replay-fleet`` does it for many recordings in parallel, with tables and a report
(:mod:`rbd_estimator.fleet`). ``replay`` exit
status: 0 on success, 1 when the input ended early or was corrupt (the partial output is a valid
bag), 2 when the replay could not start.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import warnings


@contextlib.contextmanager
def plain_warnings():
    """The library's warnings (a weak direction at planning, a doubtful inertia) as a command-line
    tool prints them, ``warning: <message>`` on stderr, instead of Python's form, which names the
    library's source file and line (of no use to the user, whose input is at fault)."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: print(
            f"warning: {message}", file=file or sys.stderr)
        yield


def _replay(args) -> int:
    from .replay import Progress, ReplayError, load_config, plot, replay_bag

    try:
        config = load_config(args.params, args.node_name if args.node_section else None)
        xml = None
        if args.robot_description:
            try:
                with open(args.robot_description, encoding="utf-8") as fh:
                    xml = fh.read()
            except OSError as exc:
                raise ReplayError(f"cannot read --robot-description: {exc}") from None
        progress = None if args.quiet else Progress()
        try:
            summary, rep = replay_bag(args.input, args.output, config, xml, storage=args.storage,
                                      compress=not args.no_compress, namespace=args.namespace,
                                      node_name=args.node_name, collect=bool(args.plot), progress=progress,
                                      copy_inputs=not args.estimates_only)
        finally:
            if progress is not None:
                progress.close()
    except ReplayError as exc:
        print(f"rbd-estimator replay: error: {exc}", file=sys.stderr)
        return 2
    print(summary.text())
    if args.plot:
        res = rep.results()
        if len(res["times"]):
            plot(res, args.plot)
            print(f"  plot saved to {args.plot}")
        else:
            print("  no estimate to plot", file=sys.stderr)
    if summary.error:
        print(f"rbd-estimator replay: error: {summary.error}", file=sys.stderr)
        return 1
    return 0


def _replay_fleet(args) -> int:
    from .fleet import FleetError, run_fleet, text
    from .replay import ReplayError

    try:
        rows = run_fleet(args.inputs, args.output, args.params, args.robot_description, engine=args.engine,
                         workers=args.workers, address=args.address, max_retries=args.max_retries,
                         report=not args.no_report, progress=not args.quiet, copy_inputs=args.copy_inputs,
                         compress=not args.no_compress, storage=args.storage, namespace=args.namespace,
                         node_name=args.node_name)
    except (FleetError, ReplayError, ImportError) as exc:
        print(f"rbd-estimator replay-fleet: error: {exc}", file=sys.stderr)
        return 2
    print(text(rows))
    return 1 if any(r["status"] in ("failed", "partial") for r in rows) else 0


def _fleet_parser(sub) -> None:
    fp = sub.add_parser("replay-fleet", help="replay many recordings in parallel (local cores or Ray)",
                        description="Replay every recording (one task each) into OUTPUT/<recording>/: the estimate "
                                    "bag as 'replay' writes it, a Parquet table with a row per tick, a completion "
                                    "marker; then OUTPUT/fleet_summary.parquet and fleet_report.png/.pdf. Complete "
                                    "recordings are skipped. See docs/fleet.md.")
    fp.add_argument("inputs", nargs="+", help="recordings (rosbag2 folders), folders of recordings, or globs")
    fp.add_argument("-o", "--output", required=True, help="output folder (created; reruns skip what is complete)")
    fp.add_argument("--params", action="append", required=True, metavar="[ROBOT=]FILE",
                    help="parameter file for every recording, or per robot: a recording belongs to ROBOT when a "
                         "folder of its path is named ROBOT (repeat the option)")
    fp.add_argument("--robot-description", action="append", metavar="[ROBOT=]URDF",
                    help="URDF (per robot as --params); default: the parameters', else the recording's topic")
    fp.add_argument("--engine", choices=("local", "ray"), default="local",
                    help="local: this machine's cores, no Ray needed (default); ray: a Ray cluster")
    fp.add_argument("--workers", type=int, help="worker processes (default: one per core); with --engine ray and "
                                                "no --address: the CPUs of the local Ray")
    fp.add_argument("--address", help="ray engine: the cluster's address (default: a local Ray started here)")
    fp.add_argument("--max-retries", type=int, default=3, help="runs of a task whose worker died (default 3)")
    fp.add_argument("--copy-inputs", action="store_true", help="also copy the input topics into the estimate bags")
    fp.add_argument("--storage", choices=("mcap", "sqlite3"), help="estimate bags' storage (default: mcap)")
    fp.add_argument("--no-compress", action="store_true", help="MCAP: no zstd chunk compression")
    fp.add_argument("--namespace", default="/", help="the node's namespace (default /)")
    fp.add_argument("--node-name", default="rbd_estimator", help="the node's name (output topics)")
    fp.add_argument("--no-report", action="store_true", help="no report figure")
    fp.add_argument("-q", "--quiet", action="store_true", help="no progress line")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="rbd-estimator", description="rbd_estimator command-line tools")
    sub = ap.add_subparsers(dest="command", required=True)
    wc = sub.add_parser("warm-cache", help="compile the kernels ahead of time (container images, CI)",
                        description="Compile the estimator's kernels for the shipped configurations into the "
                                    "package's cache, so that the first configure loads instead of compiling.")
    wc.add_argument("robots", nargs="*", help="shipped robots to warm (default: all that are installed)")
    rp = sub.add_parser("replay", help="run the node's tick logic over a rosbag2 recording",
                        description="Replay a rosbag2 recording (MCAP or sqlite3) through the estimator node's "
                                    "tick logic and write the input topics plus the estimates to a new bag.")
    rp.add_argument("input", help="input bag (rosbag2 directory)")
    rp.add_argument("output", help="output bag (a new directory)")
    rp.add_argument("--params", required=True, help="the node's parameter file (as for the node)")
    rp.add_argument("--robot-description", metavar="URDF",
                    help="URDF file; default: the robot_description parameter, else the bag's robot_description_topic")
    rp.add_argument("--storage", choices=("mcap", "sqlite3"),
                    help="output storage (default: mcap; sqlite3 when OUTPUT ends in .db3)")
    rp.add_argument("--no-compress", action="store_true", help="MCAP: no zstd chunk compression")
    rp.add_argument("--estimates-only", action="store_true",
                    help="write the estimate topics only, not a copy of the input topics (about 1.25x as fast)")
    rp.add_argument("--namespace", default="/", help="the node's namespace, to resolve relative topics (default /)")
    rp.add_argument("--node-name", default="rbd_estimator", help="the node's name: output topics are "
                    "<namespace>/<node-name>/joint_torques and .../contact_wrenches/<contact>")
    rp.add_argument("--node-section", action="store_true",
                    help="pick the parameter-file section of --node-name (files with several nodes)")
    rp.add_argument("--plot", metavar="FILE", help="save a figure of torques and contact wrenches over time")
    rp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _fleet_parser(sub)
    args = ap.parse_args(argv)
    with plain_warnings():
        if args.command == "replay-fleet":
            return _replay_fleet(args)
        if args.command == "replay":
            return _replay(args)
        if args.command == "warm-cache":
            from .warm import warm
            return 0 if warm(args.robots or None) else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Cold start of the node after a fresh install (issue 14; not a test).

    python benchmarks/bench_cold_start.py [--source DIR | --rev GIT_REV] [--robot humanoid]

Installs the package from a source tree (this checkout by default, or ``--rev`` exported from
git, e.g. the commit before the cache existed) into an empty temporary prefix, the way a user or
a container build does (``pip install --no-deps --prefix PREFIX SOURCE``, the package's own
build environment, this interpreter's runtime dependencies), with every compiled-code cache empty: numba's
(``NUMBA_CACHE_DIR``), the per-user one (``XDG_CACHE_HOME``) and the package's own. Then, from
that installation, it starts the node (``python -m rbd_estimator.node``, its own process), asks
it to configure with the shipped robot's parameters, activates it, publishes one reading per
millisecond of a standing robot and reports

* the installation time (whatever the installation compiles ahead of time included);
* node up: from starting the process to its lifecycle services answering (imports, discovery);
* ``configure``: from the configure request to its success, as the demo prints it;
* first estimate: from the configure request to the first ``~/joint_torques`` message received,
  and from starting the process to it;
* what the node itself logged about configure (total and compile seconds).

The driving process imports no compiled kernel of the package, so it cannot warm the caches for
the node. Figures depend on the machine: the README's are from the 2-core development machine.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run inside the fresh installation (PYTHONPATH = the prefix): node process, configure, first estimate.
_DRIVER = r"""
import json, os, re, sys, time
import numpy as np
import rclpy
from rbd_estimator.ros.demo_runner import Client, NodeProcess, publish_loop

robot, share = sys.argv[1], sys.argv[2]
try:
    from rbd_estimator import robots
    params, urdf = robots.params_file(robot), robots.urdf_file(robot)
except ImportError:                     # a revision from before rbd_estimator.robots: the humanoid only
    params, urdf = (os.path.join(share, "config", f"{robot}.yaml"), os.path.join(share, "urdf", f"{robot}.urdf"))
xml = open(urdf, encoding="utf-8").read()
import yaml
p = yaml.safe_load(open(params, encoding="utf-8"))["rbd_estimator"]["ros__parameters"]


class Standing:                         # readings of a robot standing still (values do not matter)
    def __init__(self, joint_names, ft_names, steps=3000):
        self.joint_names, self.ft_names, self.contact_names = joint_names, ft_names, ()
        self.q = np.zeros((steps, len(joint_names)))
        self.dq = np.zeros_like(self.q)
        self.ft = np.zeros((steps, len(ft_names), 6))
        self.ft[:, :, 2] = 100.0
        self.imu = [(np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), np.array([0.0, 0.0, 9.81]))] * steps


import xml.etree.ElementTree as ET
names = [j.get("name") for j in ET.fromstring(xml).iter("joint")
         if j.get("type") in ("revolute", "continuous", "prismatic") and j.find("mimic") is None]
rec = Standing(names, list(p.get("ft_sensors", [])))
rclpy.init()
ns = f"/rbd_cold_{os.getpid()}"
t_spawn = time.monotonic()
proc = NodeProcess(xml, params, ns, overrides={"oracle_every_n": 0})
out = {}
try:
    client = Client(ns, rec.joint_names, rec.ft_names, ())
    client.state()                                      # the node process is up and discovered
    t0 = time.monotonic()
    out["node_up"] = t0 - t_spawn
    ok = client.transition("configure")
    out["configure"] = time.monotonic() - t0
    if not ok or not client.transition("activate") or not client.wait_matched():
        raise SystemExit("the node did not configure/activate:\n" + proc.log_tail())
    import threading
    th = threading.Thread(target=publish_loop, args=(client, rec, 1000.0), daemon=True)
    th.start()
    while not client.arrival and time.monotonic() - t0 < 120.0:
        time.sleep(0.001)
    out["first_estimate"] = time.monotonic() - t0 if client.arrival else float("nan")
    out["spawn_to_first_estimate"] = out["first_estimate"] + out["node_up"]
    th.join()
    client.close()
finally:
    proc.stop()
    rclpy.try_shutdown()
log = open(proc.log_path, encoding="utf-8", errors="replace").read()
m = re.search(r"configured .*? in ([0-9.]+) s \(([0-9.]+) s compiling", log)
out["node_log"] = [float(m.group(1)), float(m.group(2))] if m else None
print("RESULT " + json.dumps(out))
"""


def _export(rev: str, dest: str) -> str:
    src = os.path.join(dest, "src")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    return src


def cold_start(source: str, robot: str, work: str) -> dict:
    """Install ``source`` into ``work/prefix`` with empty caches; time the node's first start."""
    prefix = os.path.join(work, "prefix")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RBD_ESTIMATOR_CACHE_DIR")}
    env.update(NUMBA_CACHE_DIR=os.path.join(work, "numba_cache"), XDG_CACHE_HOME=os.path.join(work, "xdg"),
               PIP_NO_CACHE_DIR="1")
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--prefix", prefix, source],
                   check=True, env=env, cwd=work)
    install = time.monotonic() - t0
    env["PYTHONPATH"] = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                                     "site-packages")
    res = subprocess.run([sys.executable, "-c", _DRIVER, robot, os.path.join(prefix, "share", "rbd_estimator")], env=env, cwd=work, capture_output=True,
                         text=True, timeout=600)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if res.returncode != 0 or not line:
        raise RuntimeError(f"cold start of {source} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    import json
    out = json.loads(line[0][len("RESULT "):])
    out["install"] = install
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--source", default=None, help="source tree to install (default: this checkout)")
    g.add_argument("--rev", default=None, help="git revision of this repository to install instead")
    ap.add_argument("--robot", default="humanoid", help="shipped robot (default humanoid)")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from benchmarks.common import machine
    work = tempfile.mkdtemp(prefix="rbd_cold_")
    try:
        source = _export(args.rev, work) if args.rev else os.path.abspath(args.source or ROOT)
        label = args.rev or source
        r = cold_start(source, args.robot, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(machine())
    print(f"{'source':>24}{'robot':>10}{'install s':>11}{'node up s':>11}{'configure s':>13}"
          f"{'first estimate s':>18}{'from spawn s':>14}{'node: configure / compile s':>30}")
    nl = r.get("node_log")
    node = f"{nl[0]:.2f} / {nl[1]:.2f}" if nl else "(not logged)"
    print(f"{label[-24:]:>24}{args.robot:>10}{r['install']:>11.1f}{r['node_up']:>11.2f}{r['configure']:>13.2f}"
          f"{r['first_estimate']:>18.2f}{r['spawn_to_first_estimate']:>14.2f}{node:>30}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

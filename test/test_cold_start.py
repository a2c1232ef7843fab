"""Issue 14: a read-only installation with an empty user cache still configures the node.

The package is installed (pip, into a temporary prefix) the way a binary package or a container
image is built, its compiled-code cache pre-warmed as ``rbd-estimator warm-cache`` leaves it (here:
copied from this source tree's, which the quick start warms), the installation is then made
read-only and the per-user cache directory is empty. A separate process configures the shipped
humanoid's node from that installation. How long it takes is ``benchmarks/bench_cold_start.py``'s
business; this test checks that it works, that nothing is written into the installation and that
the per-user cache was used instead of the installation's folder."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest

pytest.importorskip("rclpy")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r"""
import sys
import rclpy
from rclpy.parameter import Parameter
from rbd_estimator import jit, robots
from rbd_estimator.node import EstimatorNode

rclpy.init(args=["--ros-args", "--params-file", robots.params_file("humanoid")])
xml = open(robots.urdf_file("humanoid"), encoding="utf-8").read()
node = EstimatorNode(parameter_overrides=[Parameter("robot_description", value=xml),
                                          Parameter("prepare_fallbacks", value=False)])
ret = node.trigger_configure()
print("PACKAGE", jit.PACKAGE_DIR)
print("CACHE", jit.cache_root())
print("STATE", node.lifecycle_state, ret)
node.destroy_node()
rclpy.shutdown()
"""


def _snapshot(tree):
    """Every path under ``tree`` with its size and modification time."""
    out = {}
    for base, _dirs, files in os.walk(tree):
        for f in files:
            p = os.path.join(base, f)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def _chmod_tree(tree, writable):
    for base, dirs, files in os.walk(tree):
        for p in [base] + [os.path.join(base, f) for f in files]:
            mode = os.stat(p).st_mode
            os.chmod(p, mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _read_only_command(prefix, cmd):
    """``cmd`` with ``prefix`` read-only: file modes for a normal user; for root (who writes
    through modes, as in many CI containers) a read-only bind mount in a private user and mount
    namespace (``unshare``), as a read-only image layer or a read-only volume would be."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return cmd
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("running as root without unshare: cannot make the installation read-only")
    mount = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
    return ["unshare", "-rm", "sh", "-c", mount, str(prefix), *cmd]


def test_read_only_install_with_empty_user_cache_configures(tmp_path):
    prefix, xdg = tmp_path / "prefix", tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RBD_ESTIMATOR_CACHE_DIR", "NUMBA_CACHE_DIR")}
    env.update(RBD_ESTIMATOR_SKIP_WARM="1", PIP_NO_CACHE_DIR="1")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--ignore-installed", "--prefix", str(prefix), ROOT], check=True, env=env, cwd=tmp_path)
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    installed = site / "rbd_estimator"
    assert (installed / "node.py").is_file()
    warm = os.path.join(ROOT, "rbd_estimator", "_jit_cache")
    if os.path.isdir(warm):                       # the image was pre-warmed at build time
        shutil.copytree(warm, installed / "_jit_cache")
    _chmod_tree(prefix, writable=False)
    try:
        before = _snapshot(prefix)
        env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg), HOME=str(tmp_path))
        env.pop("RBD_ESTIMATOR_SKIP_WARM")
        res = subprocess.run(_read_only_command(prefix, [sys.executable, "-c", DRIVER]), env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=900)
        out = dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
        assert out["PACKAGE"] == str(installed)                      # the installed copy ran
        assert out["CACHE"] == str(xdg / "rbd_estimator" / "jit")    # the per-user cache, not the package's
        assert out["STATE"].startswith("inactive"), res.stdout + res.stderr[-4000:]
        assert _snapshot(prefix) == before                           # nothing written into the installation
        cached = [f for _b, _d, fs in os.walk(xdg) for f in fs if f.endswith((".nbi", ".nbc"))]
        assert cached, "the per-user cache holds no compiled code"
    finally:
        _chmod_tree(prefix, writable=True)        # let pytest remove tmp_path

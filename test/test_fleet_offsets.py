"""Issue 22 item 3, tracked offsets in the fleet's outputs: three generated recordings of the demo
humanoid (300 ms each, windows of the first 400 ms of one walk) with ``l_leg_ft_sensor``'s force
offsets tracked and a known step injected into its ``fz`` readings (15, −10, 25 N from the 80th
step: reading = true + offset, as in test/test_offsets_replay.py). The oracle of each recording is
a single ``rbd-estimator replay`` of it, run in a process of its own (which also fills the
compiled-code cache the fleet's workers load, so both run the same machine code:
test_fleet._warm_cache): the Parquet table's offset columns equal its ``~/sensor_offsets`` messages
(decoded by rosbags), and the fleet summary's final offset is the injected step. The local engine
(Ray runs the same task: test_fleet.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import yaml

rosbags = pytest.importorskip("rosbags")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from test_fleet import PARAMS, ROOT, _window  # noqa: E402

from rbd_estimator.fleet import run_fleet  # noqa: E402
from rbd_estimator.fleet.report import _offset_trace  # noqa: E402

TS = get_typestore(Stores.ROS2_JAZZY)
SENSOR, DRIFT = "l_leg_ft_sensor", 2.0            # N/√s: force_offset_drift of the tracked sensor
STEPS, STEP_AT = 300, 80                          # per recording: 300 ms at 1 kHz, the step from step 80
STEP = {"r0": 15.0, "r1": -10.0, "r2": 25.0}      # N, injected on SENSOR fz
ENTRIES = [f"{SENSOR} {a}" for a in ("fx", "fy", "fz")]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The recordings, the tracking parameter file and each recording's single-replay oracle bag."""
    base = tmp_path_factory.mktemp("fleet_offsets")
    with open(PARAMS, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    doc["rbd_estimator"]["ros__parameters"]["ft"][SENSOR]["force_offset_drift"] = DRIFT
    params = str(base / "tracking.yaml")
    with open(params, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from make_demo_bag import write_bag
    from rbd_estimator.demo import share_file, simulate
    from rbd_estimator.estimation import SensorConfig
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    sim = simulate(xml, SensorConfig.from_yaml(PARAMS), 0.4, 1000.0, 1.0, 3, log=lambda *a: None)
    i = list(sim.ft_names).index(SENSOR)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    paths, oracle = {}, {}
    for k, (name, step) in enumerate(STEP.items()):
        rec = _window(sim, 50 * k, STEPS)
        rec = replace(rec, ft=rec.ft.copy())
        rec.ft[STEP_AT:, i, 2] += step                                # the sensor's offset steps
        paths[name] = str(base / "fleet" / name)
        write_bag(paths[name], xml, rec, 1000.0)
        oracle[name] = str(base / "single" / name)
        subprocess.run([sys.executable, "-m", "rbd_estimator.cli", "replay", paths[name], oracle[name], "--params",
                        params, "--estimates-only", "-q"], env=env, check=True, capture_output=True)
    return dict(base=base, params=params, paths=paths, oracle=oracle)


def _published(bag: str):
    """The ``~/sensor_offsets`` messages of a bag: names, stamps, offsets and variances."""
    names, stamps, o, v = None, [], [], []
    with Reader(bag) as r:
        conns = [c for c in r.connections if c.topic == "/rbd_estimator/sensor_offsets"]
        for c, _, raw in r.messages(connections=conns):
            m = TS.deserialize_cdr(raw, c.msgtype)
            names = list(m.name)
            stamps.append(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec)
            o.append(np.array(m.position))
            v.append(np.array(m.effort))
    return names, np.array(stamps), np.array(o), np.array(v)


def test_fleet_tables_and_summary_hold_the_tracked_offsets(fleet, tmp_path):
    """Per recording: the table's ``offset/<entry>`` and ``offset_var/<entry>`` columns (entries named as
    ``~/sensor_offsets`` names them, listed in the metadata) equal the single replay's messages, value
    for value, on the ticks with an estimate (NaN on the others); the summary's final offset is the last
    message's, within 1 N of the injected step (220 ms after it), its peak |offset| at least the step's
    less 1 N, the untouched fx, fy within 1 N of 0; the report plots them. (Later in the walk, in single
    support, the finite-difference accelerations' error moves the offsets by up to 2 N.)"""
    out = str(tmp_path / "out")
    rows = {r["recording"]: r for r in run_fleet([str(fleet["base"] / "fleet")], out, [fleet["params"]],
                                                   workers=2, progress=False)}
    assert sorted(rows) == sorted(STEP)
    summary = {r["recording"]: r for r in pq.read_table(os.path.join(out, "fleet_summary.parquet")).to_pylist()}
    for name, step in STEP.items():
        row = rows[name]
        assert row["status"] == "done", row
        path = os.path.join(out, name, "ticks.parquet")
        schema, table = pq.read_schema(path), pq.read_table(path)
        assert json.loads(schema.metadata[b"rbd_estimator"])["offset_names"] == ENTRIES
        assert schema.names[-6:] == [f"{k}/{e}" for k in ("offset", "offset_var") for e in ENTRIES]
        names, stamps, o, v = _published(fleet["oracle"][name])
        assert names == ENTRIES and len(stamps) > STEPS - 10
        est = np.asarray(table.column("estimated"))
        assert np.array_equal(np.asarray(table.column("stamp_ns"))[est], stamps)
        got_o = np.column_stack([np.asarray(table.column(f"offset/{e}")) for e in ENTRIES])
        got_v = np.column_stack([np.asarray(table.column(f"offset_var/{e}")) for e in ENTRIES])
        assert np.array_equal(got_o[est], o) and np.array_equal(got_v[est], v)
        assert np.isnan(got_o[~est]).all() and np.isnan(got_v[~est]).all()
        final, peak, sd = row["offset_final"], row["offset_peak_abs"], row["offset_final_stddev"]
        print(f"\n{name}: injected {step:+.1f} N on {SENSOR} fz; final tracked {final[ENTRIES[2]]:+.3f} N "
              f"(± {sd[ENTRIES[2]]:.3f}), fx {final[ENTRIES[0]]:+.3f}, fy {final[ENTRIES[1]]:+.3f} N; "
              f"peak |fz| {peak[ENTRIES[2]]:.3f} N")
        assert list(final) == ENTRIES and list(final.values()) == o[-1].tolist()
        assert list(sd.values()) == np.sqrt(v[-1]).tolist()
        assert list(peak.values()) == np.abs(o).max(axis=0).tolist()
        assert abs(final[ENTRIES[2]] - step) < 1.0 and peak[ENTRIES[2]] > abs(step) - 1.0
        assert abs(final[ENTRIES[0]]) < 1.0 and abs(final[ENTRIES[1]]) < 1.0
        assert dict(summary[name]["offset_final"]) == final
        t, trace = _offset_trace(path, ENTRIES)                  # the report's panel: thinned, in log time
        assert 0 < len(t) <= len(stamps) and trace.shape == (len(t), 3) and trace[-1, 2] == pytest.approx(step, abs=2)
    assert os.path.getsize(os.path.join(out, "fleet_report.png")) > 10_000

"""The pages under docs/ hold as written: their snippets run against the package, the parameter
files they quote are the shipped ones, the messages they quote are the ones printed, and the
files, benchmark options and tests they name exist (test_readme.py does the same for the README)."""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest
import yaml
from groundtruth import GroundTruth
from oracle import rel_err, robots_dir, urdf_xml

from rbd_estimator import IllPosedError, robots
from rbd_estimator.errors import ConditioningWarning
from rbd_estimator.estimation import SensorConfig, estimator_for
from rbd_estimator.sensors import KINDS, unregister

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def _page(name: str) -> str:
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as fh:
        return fh.read()


def _block(page: str, after: str, lang: str) -> str:
    """The first ```lang block of ``page`` after the text ``after``."""
    text = _page(page)
    start = text.index(after)
    return re.search(rf"```{lang}\n(.*?)```", text[start:], re.S).group(1)


def _run(code: str, **given) -> dict:
    ns = dict(given)
    exec(compile(code, "docs", "exec", dont_inherit=True), ns)     # not this file's __future__ annotations
    return ns


def _icub_urdf() -> str:
    return os.path.join(robots_dir(), "icub_description", "robots", "icub.urdf")


def test_library_snippet_runs(monkeypatch):
    """docs/library.md's first snippet, with the iCub URDF of example-robot-data for ``icub.urdf``
    and zero readings for the names it leaves to the reader."""
    monkeypatch.chdir(ROOT)
    code = _block("library.md", "# Library API", "python").replace('"icub.urdf"', repr(_icub_urdf()))
    n = 32
    q = np.r_[0, 0, 1, 0, 0, 0, 1, np.zeros(n)]
    z = np.zeros(n)
    ns = _run(code, q=q, v=np.zeros(n + 6), a=np.zeros(n + 6), q_j=z, dq_j=z, ddq_j=z,
              orientation_xyzw=[0, 0, 0, 1], gyro=np.zeros(3), proper_acceleration=[0, 0, 9.81],
              ft_readings=np.zeros((6, 6)))
    est, r = ns["est"], ns["r"]
    assert len(est.joint_names) == n and len(est.ft_names) == 6      # "(6, 6) array in est.ft_names order"
    assert ns["tau"] is ns["data"].tau
    assert np.all(np.isfinite(r.tau)) and r.tau_variance.shape == (n,)


def test_sensor_kind_example_plans_estimates_and_subscribes(monkeypatch):
    """docs/adding_a_sensor_kind.md: the complete kind and its parameter file, as printed, plan on
    iCub, estimate to 1e-9 of pinocchio's ground truth through ``sole_wrenches=``, and the runtime
    of the node and the replay subscribes to their topics."""
    from rbd_estimator.runtime.session import Session
    ns = _run(_block("adding_a_sensor_kind.md", "## 3. A complete kind", "python"))
    kind = ns["SoleWrench"]
    try:
        params = yaml.safe_load(_block("adding_a_sensor_kind.md", "Then, in a parameter file:", "yaml"))
        cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link"), contacts=["l_foot", "r_foot"],
                                          contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="r_sole")),
                                          **params))
        xml = urdf_xml("icub")
        est = estimator_for(xml, cfg)
        gt = GroundTruth(xml, est)
        inputs, truth = gt.sample(np.random.default_rng(0))
        r = est.estimate(**inputs, sole_wrenches=truth["wrenches"][:2])
        assert rel_err(r.tau, truth["tau"]) <= 1e-9 and rel_err(r.contact_wrenches, truth["wrenches"][:2]) <= 1e-9
        topics = {i.key[1]: i.topic for i in Session(xml, cfg).inputs_needed() if i.key[0] == "sensor"}
        assert topics["l_sole_sensor"] == "sole_wrench/l_sole_sensor"
    finally:
        unregister(kind)
    assert kind.LIST not in KINDS


def _ros_parameters(text: str) -> dict:
    return yaml.safe_load(text)["rbd_estimator"]["ros__parameters"]


def _shipped(name: str) -> dict:
    with open(os.path.join(ROOT, "config", name), encoding="utf-8") as fh:
        return _ros_parameters(fh.read())


@pytest.mark.parametrize("after, shipped", [("Complete example for iCub", "icub.yaml"),
                                            ("A load-cell humanoid on slippery ground", "loadcell_humanoid.yaml")])
def test_sensor_examples_are_the_shipped_files(after, shipped):
    """docs/sensors.md quotes the shipped parameter files: every value it prints is the file's."""
    def contained(doc, cfg, path=""):
        if isinstance(doc, dict):
            for k, v in doc.items():
                assert k in cfg, f"{shipped}: no '{path}{k}'"
                contained(v, cfg[k], f"{path}{k}.")
        else:
            assert doc == cfg, f"{shipped}: '{path}' is {cfg!r}, the page says {doc!r}"
    contained(_ros_parameters(_block("sensors.md", after, "yaml")), _shipped(shipped))


def test_load_cell_refusal_is_quoted_as_printed():
    """docs/sensors.md: with full-wrench feet the load-cell humanoid is refused with the message it
    quotes; slippery feet (the shipped file) plan."""
    quoted = re.search(r'`IllPosedError`: "(.*?)", Remark 5', _page("sensors.md"), re.S).group(1)
    params = _shipped("loadcell_humanoid.yaml")
    with open(robots.urdf_file("humanoid"), encoding="utf-8") as fh:
        xml = fh.read()
    with pytest.warns(ConditioningWarning, match="l_foot tz, r_foot tz"):     # the yaw split: the prior's
        estimator_for(xml, SensorConfig.from_dict(params))
    for c in params["contact"].values():
        c["type"] = "full_wrench"
    with pytest.raises(IllPosedError) as refused:
        estimator_for(xml, SensorConfig.from_dict(params))
    assert " ".join(quoted.split()) in str(refused.value)


def test_walking_snippet_runs():
    """docs/walking.md's library snippet on Go2 with its feet commanded (the page's example)."""
    params = _shipped("go2.yaml")
    for c in params["contact"].values():
        c["mode"] = "commanded"
    with open(robots.urdf_file("go2"), encoding="utf-8") as fh:
        xml = fh.read()
    z = np.zeros(12)
    from rbd_estimator import ImuSample
    ns = _run(_block("walking.md", "## Library", "python"), estimator_for=estimator_for, xml=xml,
              config=SensorConfig.from_dict(params), q=z, dq=z, ddq=z, tau_m=z,
              imu=ImuSample([0, 0, 0, 1], np.zeros(3), [0, 0, 9.81]))
    assert type(ns["est"]).__name__ == "SwitchingEstimator"
    assert list(ns["r"].active) == [True, False, False, True]          # the page's comment
    assert not np.any(ns["r"].contact_wrenches[[1, 2]])                # "zero for FR and RL"
    assert len(ns["est"].coverage()) == 16


def test_offset_tracker_snippet_runs():
    """docs/offsets.md's snippet, with the page's drift rates on the shipped humanoid."""
    params = _shipped("humanoid.yaml")
    params["ft"]["l_foot_ft_sensor"].update(yaml.safe_load(_block("offsets.md", "## Switching it on", "yaml"))
                                            ["ft"]["l_foot_ft_sensor"])
    config = SensorConfig.from_dict(params)
    with open(robots.urdf_file("humanoid"), encoding="utf-8") as fh:
        est = estimator_for(fh.read(), config)
    from rbd_estimator import ImuSample
    n = len(est.joint_names)
    y = est.measurements.fill(imu=ImuSample([0, 0, 0, 1], np.zeros(3), [0, 0, 9.81]), ft=np.zeros((6, 6))).copy()
    z = np.zeros(n)
    ns = _run(_block("offsets.md", "## Switching it on", "python"), config=config, calibrated=np.zeros(6), est=est,
              q=z, dq=z, ddq=z, y=y, dt=1e-3, active=None)
    tracker = ns["tracker"]
    assert tracker.labels[2] == "l_foot_ft_sensor fz"
    assert list(tracker.by_sensor()) == ["l_foot_ft_sensor"]


def test_loops_snippet_runs(monkeypatch):
    """docs/loops.md's snippet on the MIT leg it names: CE-RNEA returns the efforts CE-ABA was given."""
    monkeypatch.chdir(ROOT)
    rng = np.random.default_rng(0)
    y, dy, tau = rng.normal(size=5) * 0.3, rng.normal(size=5), rng.normal(size=5)
    code = _block("loops.md", "# Robots with actuation loops", "python")
    first, spanning, rest = code.partition('ddq = ce_aba(tree, q, dq, tau_tree, state="spanning")')
    ns = _run(first + rest, y=y, dy=dy, tau=tau)                        # the spanning call needs a closed state
    assert ns["tree"].independent_joint_names == ("hip_rz", "hip_rx", "hip_ry", "knee", "ankle")
    assert rel_err(ns["tau"], tau) <= 1e-12


# ---------------------------------------------------------------------------- names the pages give
#: paths a page names that are not in this tree on purpose
ELSEWHERE = {"urdf/jvrc1.urdf",                                     # papers_in_time.md: jvrc_description's
             "model/spatial_kernels.py", "dynamics/spatial_jit.py"}  # kernels.md: what the kernel library replaced


def _backticked_paths(text: str):
    for tok in re.findall(r"`((?:test|docs|benchmarks|scripts|config|urdf|launch|requirements|rbd_estimator|ros|runtime|"
                          r"estimation|model|dynamics|kernels|sensors|replay|fleet)/[^`\s]+)`",
                          text):
        path = tok.split("::")[0].rstrip(",.;:")
        if not any(c in path for c in "<*{") and path not in ELSEWHERE:
            yield path


@pytest.mark.parametrize("page", [os.path.basename(p) for p in PAGES])
def test_named_files_tests_and_benchmark_options_exist(page):
    """Every repository path a page names in backticks exists; every ``test_…`` it names is a test
    file or function; every option it gives a benchmark script is one of the script's options."""
    text = _page(page)
    def exists(path):       # a file, or a module (`dynamics/reference`) or a module's function (`…/input_core.ingest`)
        return any(os.path.exists(os.path.join(ROOT, d, p)) for d in ("", "rbd_estimator")
                   for p in (path, path + ".py", path.rsplit(".", 1)[0] + ".py"))
    missing = [p for p in _backticked_paths(text) if not exists(p)]
    assert not missing, f"docs/{page} names missing files: {missing}"
    tests = "".join(open(f, encoding="utf-8").read() for f in glob.glob(os.path.join(ROOT, "test", "*.py")))
    for name in set(re.findall(r"\b(test_[a-z0-9_]+)", text)):
        if not os.path.exists(os.path.join(ROOT, "test", f"{name.rstrip('_')}.py")):
            assert re.search(rf"def {name}", tests), f"docs/{page} names the test {name}, which does not exist"
    flat = text.replace("\n", " ")
    for m in re.finditer(r"benchmarks/(\w+\.py)((?:\s+\[?--[\w-]+(?:\s+[^\s`\-\[\]][^\s`\[\]]*)*\]?)*)", flat):
        with open(os.path.join(ROOT, "benchmarks", m.group(1)), encoding="utf-8") as fh:
            src = fh.read()
        with open(os.path.join(ROOT, "benchmarks", "common.py"), encoding="utf-8") as fh:
            src += fh.read()
        unknown = [o for o in re.findall(r"(--[\w-]+)", m.group(2)) if f'"{o}"' not in src and f"'{o}'" not in src]
        assert not unknown, f"docs/{page}: benchmarks/{m.group(1)} has no option {unknown}"


@pytest.mark.parametrize("page, command", [("replay.md", "replay"), ("fleet.md", "replay-fleet")])
def test_command_synopsis_matches_the_parser(page, command, capsys):
    """The synopsis at the top of the page gives every option of ``rbd-estimator COMMAND`` (in its
    short or long form) and no other."""
    from rbd_estimator.cli import main
    with pytest.raises(SystemExit):
        main([command, "--help"])
    options = [set(re.findall(r"(?<![\w-])(--?[\w-]+)", line.strip().split("  ")[0]))
               for line in capsys.readouterr().out.split("options:")[1].splitlines() if line.strip().startswith("-")]
    options = [o for o in options if "--help" not in o]
    synopsis = re.search(r"```\n(rbd-estimator .*?)```", _page(page), re.S).group(1)
    given = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", synopsis))
    missing = [sorted(o) for o in options if not o & given]
    unknown = given - set().union(*options)
    assert not missing and not unknown, f"docs/{page}: missing {missing}, unknown {sorted(unknown)}"


def _anchors(path: str) -> set:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    with open(path, encoding="utf-8") as fh:
        heads = re.findall(r"^#+\s+(.*)$", fh.read(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("page", ["README.md"] + [os.path.relpath(p, ROOT) for p in PAGES])
def test_relative_links_and_anchors_resolve(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        text = fh.read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path)) if path else os.path.join(ROOT, page)
        assert os.path.exists(full), f"{page}: dead link {target}"
        if anchor and full.endswith(".md"):
            assert anchor in _anchors(full), f"{page}: no heading for #{anchor} in {path or page}"

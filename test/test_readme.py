"""The README is the front door: its library example runs as written, its page table has no dead
link, and its table of shipped robots is the one the launch file resolves."""
import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        return fh.read()


def test_library_example_runs_as_written(monkeypatch):
    code = re.search(r"## The library in 20 lines\n\n```python\n(.*?)```", _readme(), re.S).group(1)
    assert len(code.strip().splitlines()) <= 22
    monkeypatch.chdir(ROOT)  # the example opens urdf/ and config/ relative to the repository
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    est, r = ns["est"], ns["r"]
    assert r.tau.shape == (len(est.joint_names),) and np.all(np.isfinite(r.tau))
    assert np.all(np.isfinite(ns["tau"]))


def test_readme_links_exist():
    links = re.findall(r"\]\(((?:docs/)[^)#]+)\)", _readme())
    assert links, "the README links no page"
    missing = [p for p in links if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, f"README links missing pages: {missing}"


def test_shipped_robots_table_is_the_robots_module():
    """The README's table of shipped robots names every robot of ``robots.SHIPPED``, each with its
    URDF, its number of joints and its parameter file as the launch file resolves them."""
    import warnings

    from rbd_estimator import RobotModel, robots
    text = _readme()
    rows = re.findall(r"^\| `(\w+)` \| (?:example-robot-data )?`([\w./]+)` \((\d+) joints"
                      r"|^\| `(\w+)` \| `([\w./]+)` \(fixed base\)", text, re.M)
    table = {r[0] or r[3]: (r[1] or r[4], int(r[2]) if r[2] else None) for r in rows}
    assert set(table) == set(robots.SHIPPED)
    for name, (urdf, joints) in table.items():
        path = robots.urdf_file(name)
        assert os.path.basename(path) == os.path.basename(urdf), name
        if joints is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # CAD inertias warn (docs/robot_descriptions.md)
                assert len(RobotModel.from_urdf_file(path).joint_names) == joints, name
        params = os.path.basename(robots.params_file(name))
        assert params == f"{name}.yaml" or f"`config/{params}`" in text, f"{name}: {params} is not named"

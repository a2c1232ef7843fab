"""The README is the front door: its library example runs as written, and its page table has no dead link."""
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

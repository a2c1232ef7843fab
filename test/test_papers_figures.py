"""docs/papers_in_time.md against the code: every generated count block is what the code computes.

``benchmarks/papers_figures.py`` writes the page's generated blocks; this test recomputes the
deterministic ones (operation counts, the §VI-C torques) and fails, naming the block, when the page
and the code disagree — rerun ``python benchmarks/papers_figures.py`` after changing the plan, the
counting or the models. Timing blocks are not checked (they are measurements).
"""
from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import papers_figures as pf  # noqa: E402


@pytest.fixture(scope="module")
def page():
    with open(pf.DOC, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture(scope="module")
def computed():
    blocks = pf.count_blocks()
    blocks.pop("_rows")
    return blocks


def test_every_count_block_of_the_page_is_what_the_code_computes(page, computed):
    have = pf.read_blocks(page)
    assert set(computed) <= set(have), f"blocks missing from the page: {set(computed) - set(have)}"
    for name, body in computed.items():
        assert have[name].strip() == body.strip(), (
            f"docs/papers_in_time.md block '{name}' is out of date; rerun benchmarks/papers_figures.py.\n"
            f"page:\n{have[name]}\ncode:\n{body}")


def test_a_drifted_figure_is_caught(page, computed):
    """The comparison can fail: change one digit of a count in a copy of the page."""
    name = "nori-fig1-counts"
    body = pf.read_blocks(page)[name]
    drifted = pf.write_blocks(page, {name: body.replace("| 100 | ", "| 100 | 9", 1)})
    assert pf.read_blocks(drifted)[name].strip() != computed[name].strip()
    with pytest.raises(KeyError, match="no-such-block"):
        pf.write_blocks(page, {"no-such-block": "x"})


def test_the_timing_blocks_exist_and_are_filled(page):
    """Every measured table has its block on the page, generated at least once."""
    have = pf.read_blocks(page)
    for name in ("machine", "algorithms-time", "featherstone-time", "carpentier-time", "nori-fig1-time",
                 "chignoli-time", "chignoli-fig12-time", "chignoli-fig10-time"):
        assert name in have and have[name].strip(), f"timing block '{name}' is empty or missing"

"""Perft-style tables: positions with the expected number of results and why each row is there.

tests/data/perft.tsv (default rules) and perft_variants.tsv (with a rules
column) were written from RULES.md with the plain reference and checked by
hand where small; tests/test_reference_selfcheck.py keeps them honest against
the reference, and this file holds the core to them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from nardy_env import Rules, legal_afterstates, parse_npn

DATA = Path(__file__).resolve().parent.parent / "data"


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _rules(cell: str) -> Rules:
    kwargs: dict = {}
    for part in filter(None, cell.split(";")):
        key, _, value = part.partition("=")
        if key == "head_exception":
            kwargs[key] = tuple(int(x) for x in value.split(",") if x)
        else:
            kwargs[key] = value
    return Rules(**kwargs)


PERFT = _rows("perft.tsv")
VARIANTS = _rows("perft_variants.tsv")


def test_tables_are_big_enough_and_explained():
    assert len(PERFT) >= 40
    assert all(row["why"].strip() for row in PERFT + VARIANTS)


@pytest.mark.parametrize("row", PERFT + VARIANTS, ids=lambda r: r["why"][:60])
def test_core_result_count_matches_the_table(row):
    state, _ = parse_npn(row["position"])
    d1, d2 = (int(x) for x in row["dice"].split("-"))
    rules = _rules(row.get("rules") or "")
    found = legal_afterstates(state[None], np.array([[d1, d2]]), rules)
    assert int(found.counts()[0]) == int(row["results"]), row["why"]


def test_max_results_is_the_bound_the_tool_proves():
    import importlib.util

    from nardy_env import MAX_RESULTS

    path = Path(__file__).resolve().parents[2] / "tools" / "max_results_bound.py"
    spec = importlib.util.spec_from_file_location("max_results_bound", path)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    doubles = tool.double_bound()
    assert [doubles[k][0] for k in range(1, 5)] == [15, 120, 680, 3060]
    assert doubles[4][1] == [1] * 15  # reached with 15 checkers on 15 points
    assert MAX_RESULTS == max(doubles[4][0], tool.non_double_bound())
    largest = max(int(row["results"]) for row in PERFT)
    assert largest <= MAX_RESULTS

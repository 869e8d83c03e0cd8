"""nardy's warnings are one family: a user can silence them, or one kind of them, by category."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from nardy_env import NardyWarning, NumbaCacheWarning, RulesMismatchWarning

ROOT = Path(__file__).resolve().parent.parent
FAMILY = {"NardyWarning", "RulesMismatchWarning", "NumbaCacheWarning"}


def _warn_calls():
    for package in ("nardy_env", "agents", "train"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warn":
                    owner = node.func.value  # warnings.warn, or Gymnasium's logger.warn / gym.logger.warn
                    if getattr(owner, "id", None) in ("warnings", "logger") or getattr(owner, "attr", None) == "logger":
                        yield path, node


def test_every_warning_nardy_gives_is_a_nardy_warning():
    calls = list(_warn_calls())
    assert len(calls) >= 16  # the scan finds them (Gymnasium's logger.warn too)
    for path, node in calls:
        given = {k.arg: k.value for k in node.keywords}
        category = given.get("category", node.args[1] if len(node.args) > 1 else None)
        assert isinstance(category, ast.Name) and category.id in FAMILY, \
            f"{path.relative_to(ROOT)}:{node.lineno}: a warning without a NardyWarning category"
    assert issubclass(RulesMismatchWarning, NardyWarning) and issubclass(NumbaCacheWarning, NardyWarning)
    assert issubclass(NardyWarning, UserWarning) and issubclass(NumbaCacheWarning, RuntimeWarning)


def test_a_category_filter_silences_nardys_warnings_and_only_those():
    from agents.search import SearchPlayer

    class Flat:
        def outcomes(self, raw):
            import numpy as np
            return np.tile(np.float32([0.4, 0.1, 0.4, 0.1]), (len(raw), 1))

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=NardyWarning)
        SearchPlayer(Flat(), ply=3)  # warns of its cost
        warnings.warn("a user's own", UserWarning, stacklevel=1)
    assert [str(w.message) for w in said] == ["a user's own"]
    with pytest.warns(NardyWarning, match="3-ply search multiplies the cost"):
        SearchPlayer(Flat(), ply=3)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RulesMismatchWarning)
        SearchPlayer(Flat(), ply=3)  # not a rules mismatch: still said
    assert [w.category for w in said] == [NardyWarning]


def test_a_workers_warning_keeps_its_nardy_category(tmp_path):
    """A warning said in a worker process is said again here: as a RulesMismatchWarning, which a
    filter by category silences, not as a plain UserWarning."""
    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import Rules
    from train.evaluate import evaluate

    torch.manual_seed(0)
    path = str(save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((4,)), Rules(block_rule="home")))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        evaluate(path, "random", games=4, seed=0, workers=2, chunk_pairs=1, rules=Rules())
    kinds = {w.category for w in said if "was trained under rules" in str(w.message)}
    assert kinds == {RulesMismatchWarning}, [(w.category, str(w.message)) for w in said]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RulesMismatchWarning)
        evaluate(path, "random", games=4, seed=0, workers=2, chunk_pairs=1, rules=Rules())
    assert not [w for w in said if "trained under rules" in str(w.message)], [str(w.message) for w in said]

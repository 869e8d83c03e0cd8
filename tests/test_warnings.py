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
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                # warnings.warn, a bare warn, Gymnasium's logger.warn / deprecation, logging's warning
                if name in ("warn", "deprecation", "warning") or (name == "warn_explicit" and not _resaid(path, node)):
                    yield path, node


def _resaid(path: Path, node: ast.Call) -> bool:
    """evaluate's re-saying of a worker's warning, in the worker's own category."""
    return path.name == "evaluate.py" and "_stand_in" in ast.unparse(node)


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


def test_a_worker_sends_a_nardy_warning_subclass_as_the_nardy_class_it_is():
    """A player's own class deriving from RulesMismatchWarning cannot cross processes: the nearest
    of nardy's classes does, with the Python classes it adds."""
    from train.evaluate import _sendable_category, _stand_in

    class Mine(RulesMismatchWarning):
        pass

    class Both(NardyWarning, DeprecationWarning):
        pass

    assert _stand_in(_sendable_category(Mine)) is RulesMismatchWarning
    both = _stand_in(_sendable_category(Both))
    assert issubclass(both, NardyWarning) and issubclass(both, DeprecationWarning)
    assert _stand_in(_sendable_category(NumbaCacheWarning)) is NumbaCacheWarning
    assert _stand_in(_sendable_category(DeprecationWarning)) is DeprecationWarning
    assert _stand_in(("nardy_env._runtime:Gone",)) is UserWarning  # a newer worker's class: the safe fallback

"""Third-party players through the nardy.players entry point: order, and a broken plugin."""

from __future__ import annotations

import importlib.metadata

import pytest

import nardy_env.players as players
from nardy_env.players import load_player


class _EntryPoint:
    def __init__(self, name: str, value: str, target=None, error: Exception | None = None):
        self.name, self.value, self._target, self._error = name, value, target, error

    def load(self):
        if self._error is not None:
            raise self._error
        return self._target


def test_a_broken_plugin_is_skipped_with_a_warning_and_the_bots_still_load(monkeypatch):
    from agents.registry import resolve

    def mine(spec, rules):  # claims "heuristic" too: nardy's own resolver is asked first
        return players.RandomPlayer() if spec in ("mine", "heuristic") else None

    fake = [_EntryPoint("zzz-broken", "brokenbot:resolve", error=ModuleNotFoundError("No module named 'x'")),
            _EntryPoint("aaa-mybots", "mybots:resolve", mine),
            _EntryPoint("agents", "agents.registry:resolve", resolve)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    with pytest.warns(UserWarning, match="'zzz-broken' .brokenbot:resolve. failed to load"):
        assert load_player("heuristic").__class__.__name__ == "HeuristicBot"
    with pytest.warns(UserWarning):
        assert isinstance(load_player("mine"), players.RandomPlayer)


def test_the_real_entry_point_is_nardys_own():
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="nardy.players")}
    assert names.get("agents") == "agents.registry:resolve"


_AGENT = '''
import numpy as np


class FirstPlay:
    name = "first"

    def choose(self, states, found, rng, colors=None):
        return np.zeros(len(states), dtype=np.int64)


class NeedsArgs:
    def __init__(self, depth):
        self.depth = depth


def last_play(states, found, rng):
    return np.diff(found.offsets) - 1


not_a_player = 3
'''


def test_your_own_player_by_file_or_module_name(tmp_path, monkeypatch):
    """FILE.py:NAME and module:NAME name a player without packaging it: usable wherever names are."""
    from train.evaluate import evaluate

    (tmp_path / "my_agent.py").write_text(_AGENT)
    by_file = load_player(f"{tmp_path / 'my_agent.py'}:FirstPlay")
    assert type(by_file).__name__ == "FirstPlay" and by_file.name == "first"
    assert load_player(f"{tmp_path / 'my_agent.py'}:last_play").choose is not None
    monkeypatch.syspath_prepend(str(tmp_path))
    assert type(load_player("my_agent:FirstPlay")).__name__ == "FirstPlay"
    # Named, it plays in worker processes too, exactly as the object does in this one.
    named = evaluate(f"{tmp_path / 'my_agent.py'}:last_play", "race", 400, seed=2, workers=2).summary()
    mine = evaluate(load_player(f"{tmp_path / 'my_agent.py'}:last_play"), "race", 400, seed=2).summary()
    assert {k: v for k, v in named.items() if k != "player_a"} == {k: v for k, v in mine.items() if k != "player_a"}
    for spec, message in ((f"{tmp_path / 'nothere.py'}:X", "there is no file"),
                          (f"{tmp_path / 'my_agent.py'}:Nope", "has no 'Nope'"),
                          ("no_such_module_here:X", "no module 'no_such_module_here' to import from here"),
                          (f"{tmp_path / 'my_agent.py'}:NeedsArgs", "makes with no arguments"),
                          (f"{tmp_path / 'my_agent.py'}:not_a_player", "must be a name, have a choose")):
        with pytest.raises(ValueError if "arguments" in message or "choose" in message else players.PlayerNotFound,
                           match=message):
            load_player(spec)


def test_your_own_player_file_imports_like_a_script_and_its_errors_are_named(tmp_path):
    folder = tmp_path / "agentdir"
    folder.mkdir()
    (folder / "helper_mod.py").write_text("import numpy as np\n\ndef pick(n):\n    return np.zeros(n, dtype=np.int64)\n")
    (folder / "uses_helper.py").write_text("from helper_mod import pick\n\ndef first(states, found, rng):\n"
                                          "    return pick(len(states))\n\nSELF = 'x'\n")
    assert load_player(f"{folder / 'uses_helper.py'}:first").choose is not None  # its folder is importable
    with pytest.raises(ValueError, match="SELF is a str, not a player"):
        load_player(f"{folder / 'uses_helper.py'}:SELF")
    (folder / "broken.py").write_text("def first(:\n")
    with pytest.raises(ValueError, match=r"running .*broken.py failed: SyntaxError"):
        load_player(f"{folder / 'broken.py'}:first")
    with pytest.raises(ValueError, match="your own players do not search; drop '@1'"):
        load_player(f"{folder / 'uses_helper.py'}:first@1")


def test_a_plugin_name_with_a_colon_is_still_the_plugins(monkeypatch):
    """'gnubg:expert' looks like module:NAME; with no such module, the plugins are asked as before."""
    from agents.registry import resolve

    def mine(spec, rules):
        return players.RandomPlayer() if spec == "nomodulehere:expert" else None

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve), _EntryPoint("mine", "mine:resolve", mine)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    assert isinstance(load_player("nomodulehere:expert"), players.RandomPlayer)
    with pytest.raises(players.PlayerNotFound, match="no module 'nomodulehere2'"):
        load_player("nomodulehere2:expert")

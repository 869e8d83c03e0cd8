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

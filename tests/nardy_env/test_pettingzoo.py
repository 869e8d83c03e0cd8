"""The PettingZoo AEC view of Long Nardy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test  # noqa: E402

from nardy_env.envs import PASS_ACTION  # noqa: E402
from nardy_env.pettingzoo_env import env, raw_env  # noqa: E402
from tests.helpers import npn  # noqa: E402


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_api(action_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # naming and dict-observation recommendations
        api_test(env(action_mode=action_mode), num_cycles=300)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_random_game_is_zero_sum_and_alternates(action_mode):
    game = env(action_mode=action_mode)
    game.reset(seed=4)
    rng = np.random.default_rng(4)
    totals = {"white": 0.0, "black": 0.0}
    steps = 0
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        totals[agent] += reward
        other = "black" if agent == "white" else "white"
        assert not game.observe(other)["action_mask"].any()  # only the player to move has actions
        if terminated or truncated:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            steps += 1
        game.step(action)
    assert steps > 50
    assert sorted(totals.values()) in ([-1.0, 1.0], [-2.0, 2.0])


def test_blocked_player_passes():
    game = raw_env(action_mode="checker")
    game.reset(seed=0, options={"position": npn({24: 15}, {23: 3, 22: 3, 21: 3, 20: 3, 19: 3}), "dice": [2, 1]})
    assert game.agent_selection == "white"
    assert np.flatnonzero(game.observe("white")["action_mask"]).tolist() == [PASS_ACTION]
    game.step(PASS_ACTION)
    assert game.agent_selection == "black"


def test_non_integer_actions_are_rejected_not_truncated():
    from nardy_env.envs import IllegalActionError

    aec = raw_env()
    aec.reset(seed=0)
    for bad in (0.7, "0", np.float64(0.9), True):
        with pytest.raises(IllegalActionError):
            aec.step(bad)


def test_without_pettingzoo_the_import_names_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "pettingzoo", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "nardy_env.pettingzoo_env")
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'nardy\[pettingzoo\]'"):
        importlib.import_module("nardy_env.pettingzoo_env")

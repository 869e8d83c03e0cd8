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


def test_the_raw_env_says_reset_first_and_game_over():
    game = raw_env(render_mode="ansi")
    for call, what in ((lambda: game.observe("white"), "observe"), (lambda: game.step(0), "step"),
                       (game.render, "render")):  # made-up answers, a TypeError and a StateError before
        with pytest.raises(RuntimeError, match=rf"{what}\(\) before reset\(\): call reset\(\)"):
            call()
    game.reset(seed=0)
    while game.agents:
        obs, _, term, trunc, _ = game.last()
        game.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match=r"step\(\) after the game is over"):  # was KeyError: 'white'
        game.step(0)


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


def test_the_winner_sees_the_end_first_then_the_loser():
    game = env()
    game.reset(seed=5)
    rng = np.random.default_rng(5)
    while True:
        mover = game.agent_selection
        obs, _, terminated, _, _ = game.last()
        game.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if game.terminations[mover]:
            break
    loser = "black" if mover == "white" else "white"
    points = game.rewards[mover]
    assert game.agent_selection == mover and points in (1, 2) and game.last()[1] == points
    game.step(None)  # the winner's step after the end: it leaves, and the loser sees its loss
    assert game.agent_selection == loser and game.last()[1] == -points


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


def test_turn_mode_info_says_what_each_action_plays_and_both_infos_have_the_same_keys():
    from nardy_env import flip
    from nardy_env.encoding import raw_positions

    game = env(action_mode="turn")
    game.reset(seed=5)
    rng = np.random.default_rng(5)
    checked = 0
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        other = "black" if agent == "white" else "white"
        if terminated or truncated:
            game.step(None)
            continue
        assert set(game.infos[other]) == {"player", "dice", "action_mask"}
        assert not game.infos[other]["action_mask"].any()
        found = info["afterstates"]
        legal = np.flatnonzero(info["action_mask"])
        assert list(legal) == list(range(found.offsets[1]))  # action i plays afterstate i
        action = int(rng.choice(legal))
        game.step(action)
        if not game.terminations[other] and game.agent_selection == other:
            # The next agent sees that afterstate from its own side.
            expected = raw_positions(flip(found.states[action][None]))[0]
            np.testing.assert_array_equal(game.observe(other)["observation"][:50], expected)
            checked += 1
    assert checked > 20
    assert "afterstates" not in env(action_mode="checker").unwrapped.infos.get("white", {})


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_state_is_the_whole_game_from_whites_view_whoever_moves(action_mode):
    game = env(action_mode=action_mode)
    game.reset(seed=6)
    rng = np.random.default_rng(6)
    space = game.unwrapped.state_space
    for _agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        state = game.unwrapped.state()
        assert space.contains(state)
        np.testing.assert_array_equal(state[:50], game.observe("white")["observation"][:50])
        if not terminated:
            assert state[-1] == (0 if game.agent_selection == "white" else 1)
            np.testing.assert_array_equal(state[50:57], obs["observation"][-7:])  # dice left, head moves
        game.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_reset_options_that_are_not_a_dict_are_refused_clearly():
    game = raw_env()
    with pytest.raises(TypeError, match="options must be a dict, got list"):
        game.reset(seed=0, options=[1])
    game.reset(seed=0)
    with pytest.raises(KeyError, match=r"no agent 'red' in this game: its agents are \['white', 'black'\]"):
        game.observe("red")  # once "tuple.index(x): x not in tuple"


def test_unknown_reset_options_are_named_in_a_nardy_warning_even_with_a_percent_sign():
    """Gymnasium's logger formats its message with %: a key holding one once raised TypeError."""
    from nardy_env import NardyWarning

    game = raw_env()
    with pytest.warns(NardyWarning, match=r"ignoring unknown reset option\(s\) \['%s', '50%'\]"):  # sorted
        game.reset(seed=0, options={"50%": 1, "%s": 2})
    assert game.agent_selection in ("white", "black")


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_the_turn_based_parallel_conversion_passes_the_parallel_api_test(action_mode):
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        parallel_api_test(turn_based_aec_to_parallel(env(action_mode=action_mode)), num_cycles=100)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_tests_that_sample_without_the_mask_pass_behind_terminate_illegal(action_mode):
    """docs/environments.md: state_test and parallel_seed_test pick actions without the mask, so
    they run on the env behind TerminateIllegalWrapper (bare, an illegal pick raises)."""
    from pettingzoo.test import parallel_seed_test, state_test
    from pettingzoo.utils import OrderEnforcingWrapper, TerminateIllegalWrapper
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    def wrapped():
        return OrderEnforcingWrapper(TerminateIllegalWrapper(raw_env(action_mode=action_mode), -1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's notes on wrappers and illegal moves
        state_test(wrapped(), raw_env(action_mode=action_mode))
        parallel_seed_test(lambda: turn_based_aec_to_parallel(wrapped()))


def test_seeds_are_read_as_the_gymnasium_envs_read_them():
    game = raw_env()
    with pytest.raises(TypeError, match="got the bool True"):  # Gymnasium's seeding reads it as 1
        game.reset(seed=True)
    game.reset(seed=np.int64(5))  # a numpy integer is an int, as for the envs
    first = game.infos[game.agent_selection]["dice"].tolist()
    game.reset(seed=5)
    assert game.infos[game.agent_selection]["dice"].tolist() == first

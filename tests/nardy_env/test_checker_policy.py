"""A checker-mode policy as a player: the env's observations and masks, the env's end positions."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from nardy_env import flip, format_npn, legal_afterstates
from nardy_env.envs import CheckerPolicy, LongNardyEnv
from nardy_env.players import choose_indices
from tests.nardy_env.test_against_reference import random_game_positions


def _pick(obs: np.ndarray, mask: np.ndarray) -> int:
    """A deterministic choice among the allowed actions that depends on the whole observation."""
    allowed = np.flatnonzero(mask)
    return int(allowed[hashlib.sha256(obs.tobytes()).digest()[0] % allowed.size])


def _recording_policy(seen: list):
    def policy(obs, masks):
        seen.append((obs.copy(), masks.copy()))
        return np.array([_pick(o, m) for o, m in zip(obs, masks, strict=True)])
    return policy


@pytest.mark.parametrize("obs_mode", ["raw", "features"])
def test_a_policy_sees_what_the_checker_env_shows_and_ends_where_the_env_ends(obs_mode):
    positions = random_game_positions(6, seed=11)[:300]
    states = np.stack([s for s, _, _ in positions])
    dice = np.array([d for _, _, d in positions], dtype=np.int64)
    found = legal_afterstates(states, dice)
    rng = np.random.default_rng(0)
    batched = choose_indices(CheckerPolicy(_recording_policy([]), obs_mode=obs_mode), states, found, rng,
                             dice=dice) - found.offsets[:-1]
    rows = np.flatnonzero(found.counts() > 1)
    for row in rows[:: max(1, rows.size // 60)]:
        state, side, roll = positions[row]
        one = legal_afterstates(state[None], np.array([roll]))
        seen: list = []
        pick = int(choose_indices(CheckerPolicy(_recording_policy(seen), obs_mode=obs_mode), state[None], one, rng,
                                  dice=np.array([roll]))[0])
        assert pick == batched[row]  # alone as in a batch
        # The env, from the same position and roll, with the same choices.
        env = LongNardyEnv(action_mode="checker", obs_mode=obs_mode)
        obs, info = env.reset(seed=0, options={"position": format_npn(state, side), "dice": list(roll)})
        shown = []
        terminated = False
        while info["player"] == side and not terminated:
            shown.append((obs, info["action_mask"]))
            obs, _, terminated, _, info = env.step(_pick(obs, info["action_mask"]))
        assert len(shown) == len(seen)
        for (o1, m1), (o2, m2) in zip(shown, seen, strict=True):
            assert np.array_equal(o1, o2[0]) and np.array_equal(m1, m2[0])
        end = one.states[pick]  # the mover's view; the env now holds it from the next mover's
        assert np.array_equal(env.unwrapped.batch.state[0], end if terminated else flip(end[None])[0])


def test_evaluation_plays_a_checker_policy_with_paired_dice():
    from train.evaluate import evaluate

    def first_allowed(obs, masks):
        return masks.argmax(axis=1)

    a = evaluate(CheckerPolicy(first_allowed, name="first"), "race", games=20, seed=4).summary()
    b = evaluate(CheckerPolicy(first_allowed, name="first"), "race", games=20, seed=4).summary()
    assert a == b and a["games"] == 20 and a["player_a"] == "first"
    # Against itself, the second game of each pair replays the first with the sides swapped.
    out = evaluate(CheckerPolicy(first_allowed, name="first"), CheckerPolicy(first_allowed), games=20, seed=4)
    assert (out.points_a.reshape(-1, 2).sum(axis=1) == 0).all() and (np.ptp(out.plies.reshape(-1, 2), axis=1) == 0).all()


def test_a_checker_policy_is_an_env_opponent():
    import gymnasium as gym

    asked: list = []

    def first_allowed(obs, masks):
        asked.append(masks.shape[0])
        return masks.argmax(axis=1)

    env = gym.make("LongNardy-v0", action_mode="checker", opponent=CheckerPolicy(first_allowed))
    obs, info = env.reset(seed=3)
    for _ in range(2000):
        obs, reward, terminated, truncated, info = env.step(int(info["action_mask"].argmax()))
        if terminated:
            break
    assert terminated and reward in (-2.0, -1.0, 1.0, 2.0)
    assert len(asked) > 20  # the policy played the other side's turns, checker by checker


def test_bad_answers_and_missing_dice_are_named():
    states = np.stack([s for s, _, _ in random_game_positions(2, seed=5)][:8])
    dice = np.full((len(states), 2), [6, 5])
    found = legal_afterstates(states, dice)
    rng = np.random.default_rng(0)
    cases = [(lambda o, m: np.full(len(o), 143), "which its mask does not allow"),
             (lambda o, m: np.full(len(o), 500), "which its mask does not allow"),
             (lambda o, m: m.argmax(1).astype(float), "returned float64 actions"),
             (lambda o, m: m.argmax(1)[:1] if len(o) > 1 else m.argmax(1)[:0], "actions for"),
             (lambda o, m: np.stack([m.argmax(1)] * 2, axis=1), r"an array of shape \[\d+, 2\]")]
    for policy, message in cases:
        with pytest.raises(ValueError, match=message):
            choose_indices(CheckerPolicy(policy), states, found, rng, dice=dice)
    with pytest.raises(ValueError, match="needs each position's dice"):
        choose_indices(CheckerPolicy(lambda o, m: m.argmax(1)), states, found, rng)
    with pytest.raises(ValueError, match="obs_mode must be one of"):
        CheckerPolicy(lambda o, m: m.argmax(1), obs_mode="pixels")


def test_players_and_functions_that_take_dice_get_each_positions_roll():
    states = np.stack([s for s, _, _ in random_game_positions(2, seed=5)][:6])
    dice = np.array([[6, 5], [1, 1], [3, 2], [4, 4], [2, 6], [5, 1]])
    found = legal_afterstates(states, dice)
    got = []

    def by_function(states, found, rng, dice):
        got.append(dice.copy())
        return np.zeros(len(states), dtype=np.int64)

    class ByMethod:
        def choose(self, states, found, rng, colors=None, dice=None):
            got.append(dice.copy())
            return np.zeros(len(states), dtype=np.int64)

    from agents.bots import RaceBot
    from nardy_env.players import load_player

    for player in (load_player(by_function), ByMethod()):
        choose_indices(player, states, found, np.random.default_rng(0), dice=dice)
    assert len(got) == 2 and all(np.array_equal(g, dice) for g in got)

    class Logged:  # a wrapper written for colors=, passing its keywords on to a bot without dice
        def choose(self, states, found, rng, **given):
            return RaceBot().choose(states, found, rng, **given)

    picks = choose_indices(Logged(), states, found, np.random.default_rng(0), np.zeros(len(states)), dice=dice)
    assert picks.shape == (len(states),)  # **kwargs get colours, not dice


def test_a_checker_policy_named_as_file_py_name_plays_on_the_command_line(tmp_path):
    from tests.train.test_cli import run

    (tmp_path / "ppo_agent.py").write_text(
        "from nardy_env.envs import CheckerPolicy\n\n"
        "def greedy(obs, masks):  # stands for a trained network's masked argmax\n"
        "    return masks.argmax(axis=1)\n\n"
        "player = CheckerPolicy(greedy, name='ppo')\n")
    out = run("eval", f"{tmp_path / 'ppo_agent.py'}:player", "race", "--games", "400", "--workers", "2", "--json")
    assert out.returncode == 0, out.stderr
    import json

    summary = json.loads(out.stdout.splitlines()[-1])
    one = run("eval", f"{tmp_path / 'ppo_agent.py'}:player", "race", "--games", "400", "--workers", "1", "--json")
    assert summary["games"] == 400 and json.loads(one.stdout.splitlines()[-1])["points_per_game"] == summary["points_per_game"]
    out = run("play", "--against", f"{tmp_path / 'ppo_agent.py'}:player", "--seed", "2", "--color", "black",
              stdin="1\ny\n" * 3 + "quit\ny\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "ppo" in out.stdout


def test_a_sampling_policy_draws_from_the_generator_it_is_given():
    from train.evaluate import evaluate

    def sample(obs, masks, rng):
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks])

    a = evaluate(CheckerPolicy(sample, name="s"), "race", games=40, seed=4)
    b = evaluate(CheckerPolicy(sample, name="s"), "race", games=40, seed=4)
    assert a.summary() == b.summary() and np.array_equal(a.plies, b.plies)  # the seed decides its choices too
    # The generator it gets is the one the caller hands over, not one of its own.
    given: list = []
    states = np.stack([s for s, _, _ in random_game_positions(2, seed=5)][:8])
    dice = np.full((len(states), 2), [6, 5])
    rng = np.random.default_rng(0)
    choose_indices(CheckerPolicy(lambda o, m, rng: given.append(rng) or m.argmax(1)), states,
                   legal_afterstates(states, dice), rng, dice=dice)
    assert given and all(g is rng for g in given)


def test_a_checker_policy_under_other_rules_than_the_game_is_refused_when_loaded():
    import gymnasium as gym

    from nardy_env import Rules
    from nardy_env.players import load_player

    player = CheckerPolicy(lambda o, m: m.argmax(1), rules={"head_exception": []})
    with pytest.raises(ValueError, match=r"lists its checker moves under rules .*make it with rules= the game's"):
        load_player(player, Rules())
    with pytest.raises(ValueError, match="lists its checker moves under rules"):
        gym.make("LongNardy-v0", opponent=player).reset(seed=0)
    assert load_player(player, Rules(head_exception=())) is player


def test_an_error_inside_the_policy_says_what_it_was_given():
    states = np.stack([s for s, _, _ in random_game_positions(2, seed=5)][:8])
    dice = np.full((len(states), 2), [6, 5])
    found = legal_afterstates(states, dice)

    def wants_features(obs, masks):
        if obs.shape[1] != 211:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
        return masks.argmax(1)

    with pytest.raises(RuntimeError, match="cannot be multiplied") as caught:
        choose_indices(CheckerPolicy(wants_features), states, found, np.random.default_rng(0), dice=dice)
    assert "obs_mode='raw'" in "".join(caught.value.__notes__) and ", 57]" in "".join(caught.value.__notes__)


def test_a_swapped_in_policy_gets_the_generator_if_it_takes_one():
    states = np.stack([s for s, _, _ in random_game_positions(2, seed=5)][:8])
    dice = np.full((len(states), 2), [6, 5])
    found = legal_afterstates(states, dice)
    player = CheckerPolicy(lambda o, m: m.argmax(1))
    choose_indices(player, states, found, np.random.default_rng(0), dice=dice)
    player.policy = lambda o, m, rng: np.array([rng.choice(np.flatnonzero(row)) for row in m])  # refreshed
    a = choose_indices(player, states, found, np.random.default_rng(3), dice=dice)
    assert np.array_equal(a, choose_indices(player, states, found, np.random.default_rng(3), dice=dice))
    assert not np.array_equal(a, choose_indices(player, states, found, np.random.default_rng(4), dice=dice))


def test_play_pairs_refuses_a_checker_policy_under_other_rules():
    from train.evaluate import play_pairs

    player = CheckerPolicy(lambda o, m: m.argmax(1), rules={"block_rule": "home"})
    with pytest.raises(ValueError, match="lists its checker moves under rules"):
        play_pairs(player, "race", [0], seed=0)

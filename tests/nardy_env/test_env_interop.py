"""The envs in the code RL users write: action_masks(), vector info, wrappers, copies, rendering."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import nardy_env  # noqa: F401  (registers LongNardy-v0)
from nardy_env.envs import VectorAnyActionLegal, split_afterstates

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "default"

# Black (to move) has one checker left, on its personal point 5 (common 17):
# any roll bears it off, so an opponent playing black wins at once.
_pts = [0] * 24
_pts[16] = -1
_pts[4] = 1
BLACK_WINS_AT_ONCE = ",".join(map(str, _pts)) + ":14,14:b"


def make_vec(num_envs: int, **kwargs) -> gym.vector.VectorEnv:
    return gym.make_vec("LongNardy-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_action_masks_method_equals_the_info_mask(action_mode):
    env = gym.make("LongNardy-v0", action_mode=action_mode, opponent="random")
    with pytest.raises(gym.error.ResetNeeded):
        env.get_wrapper_attr("action_masks")()
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):
        masks = env.get_wrapper_attr("action_masks")()  # how sb3-contrib reaches it
        assert masks.dtype == bool and masks.shape == (env.action_space.n,)
        np.testing.assert_array_equal(masks, info["action_mask"].astype(bool))
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(masks))))
        if terminated:
            obs, info = env.reset()


def test_vector_action_masks_and_key_masks():
    env = make_vec(3)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(3, dtype=np.int64))
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(env.unwrapped.action_masks(), info["action_mask"].astype(bool))
    for key in ("player", "dice", "action_mask", "afterstates"):
        assert info[f"_{key}"].dtype == bool and info[f"_{key}"].all() and info[f"_{key}"].shape == (3,)
    env.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.reset()


def test_split_afterstates_gives_each_sub_env_what_the_single_env_lists():
    vec = make_vec(4)
    _, info = vec.reset(seed=11)
    pieces = split_afterstates(info["afterstates"])
    assert len(pieces) == 4
    for i, piece in enumerate(pieces):
        single = gym.make("LongNardy-v0")
        _, single_info = single.reset(seed=11 + i)
        for mine, theirs in zip(piece, single_info["afterstates"], strict=True):
            np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(TypeError, match=r"takes the vector env's info\['afterstates'\]"):
        split_afterstates(None)  # type: ignore[arg-type]


def test_sync_mode_info_layout_is_as_documented():
    native = make_vec(3)
    sync = gym.make_vec("LongNardy-v0", num_envs=3, vectorization_mode="sync")
    _, a = native.reset(seed=2)
    _, b = sync.reset(seed=2)
    assert b["player"].dtype == object
    np.testing.assert_array_equal(b["player"].astype(np.int8), a["player"])
    pieces = split_afterstates(a["afterstates"])
    for i in range(3):
        np.testing.assert_array_equal(b["afterstates"][i].states, pieces[i].states)
    _, reward_a, *_ = native.step(np.zeros(3, dtype=np.int64))
    _, reward_b, *_ = sync.step(np.zeros(3, dtype=np.int64))
    assert reward_a.dtype == np.float32 and reward_b.dtype == np.float64


def test_dict_info_to_list_works_on_the_native_env_in_checker_mode():
    env = gym.wrappers.vector.DictInfoToList(make_vec(3, action_mode="checker"))
    _, infos = env.reset(seed=0)
    assert isinstance(infos, list) and len(infos) == 3
    assert set(infos[0]) == {"player", "dice", "action_mask"}
    assert infos[2]["action_mask"].shape == (145,)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_vector_any_action_legal_finishes_games_with_any_actions(action_mode):
    env = VectorAnyActionLegal(make_vec(6, action_mode=action_mode))
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(6, dtype=np.int64))
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    finished = 0
    for _ in range(1500 if action_mode == "checker" else 400):
        _, reward, terminated, _, _ = env.step(rng.integers(-50, 10**6, 6))
        finished += int(terminated.sum())
        assert set(np.unique(reward[terminated])) <= {1.0, 2.0}
    assert finished > 0


def test_vector_any_action_legal_keeps_the_masks_a_partial_reset_of_a_sync_env_leaves_out():
    """Gymnasium's sync env returns zero mask rows for sub-envs a partial reset did not restart."""
    env = VectorAnyActionLegal(gym.make_vec("LongNardy-v0", num_envs=4, vectorization_mode="sync",
                                            action_mode="checker"))
    env.reset(seed=0)
    rng = np.random.default_rng(3)
    for step in range(40):
        env.step(rng.integers(0, 10**6, 4))
        if step % 5 == 4:
            _, info = env.reset(options={"reset_mask": np.array([True, False, step % 2 == 0, False])})
            assert not info["action_mask"][1].any()  # what Gymnasium gives: the wrapper must not use it
            assert env._mask is not None and env._mask.any(axis=1).all()


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_vector_any_action_legal_plays_exactly_the_expected_action(action_mode):
    plain = make_vec(4, action_mode=action_mode)
    wrapped = VectorAnyActionLegal(make_vec(4, action_mode=action_mode))
    _, info = plain.reset(seed=9)
    wrapped.reset(seed=9)
    assert wrapped.action_masks().all()  # a masking algorithm sees every action as legal
    rng = np.random.default_rng(2)
    finished = 0
    for _ in range(300 if action_mode == "turn" else 1200):
        mask = info["action_mask"].astype(bool)
        k = rng.integers(0, 1000, 4)
        expected = np.array([np.flatnonzero(m)[j % m.sum()] for m, j in zip(mask, k, strict=True)])
        obs_a, rew_a, term_a, _, info = plain.step(expected)
        obs_b, rew_b, term_b, _, _ = wrapped.step(k)
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a, term_b)
        finished += int(term_a.sum())
    assert finished > 0  # through games' ends and autoresets


def test_reset_refuses_a_preset_the_opponent_wins_before_the_agent_moves():
    env = gym.make("LongNardy-v0", opponent="random", agent_color="white")
    with pytest.raises(ValueError, match="opponent moved first"):
        env.reset(seed=0, options={"position": BLACK_WINS_AT_ONCE, "dice": [6, 6]})
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    obs, info = env.reset(seed=0)  # and a plain reset starts a normal game
    assert info["action_mask"].any()

    # A refused preset does not lose the env's seeding: what follows is still reproducible.
    def after_a_refusal() -> list[np.ndarray]:
        e = gym.make("LongNardy-v0", opponent="random", agent_color="white")
        e.reset(seed=5)
        with pytest.raises(ValueError):
            e.reset(options={"position": BLACK_WINS_AT_ONCE, "dice": [6, 6]})
        obs, info = e.reset()
        seen = [obs]
        for _ in range(20):
            obs, _reward, _terminated, _truncated, info = e.step(int(np.flatnonzero(info["action_mask"])[0]))
            seen.append(obs)
        return seen

    for a, b in zip(after_a_refusal(), after_a_refusal(), strict=True):
        np.testing.assert_array_equal(a, b)
    # The agent itself to move from that position is fine.
    env = gym.make("LongNardy-v0", opponent="random", agent_color="black")
    _, info = env.reset(seed=0, options={"position": BLACK_WINS_AT_ONCE, "dice": [6, 6]})
    assert int(info["player"]) == 1

    vec = make_vec(2, opponent="random", agent_color="white")
    with pytest.raises(ValueError, match=r"sub-env\(s\) \[0, 1\]"):
        vec.reset(seed=0, options={"position": BLACK_WINS_AT_ONCE})
    with pytest.raises(gym.error.ResetNeeded):
        vec.step(np.zeros(2, dtype=np.int64))


@pytest.mark.skipif(not (SHIPPED / "policy.onnx").exists(), reason="needs the shipped export")
def test_an_env_with_an_exported_opponent_can_be_copied_and_pickled():
    env = gym.make("LongNardy-v0", opponent=str(SHIPPED), agent_color="white")
    env.reset(seed=4)
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    rng = np.random.default_rng(0)
    for _ in range(30):
        action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        results = [e.step(action) for e in (env, *copies)]
        for other in results[1:]:
            np.testing.assert_array_equal(results[0][0], other[0])
            assert results[0][1:4] == other[1:4]
        if results[0][2]:
            break


def test_human_render_mode_prints_the_board_on_reset_and_step(capsys):
    env = gym.make("LongNardy-v0", render_mode="human")
    env.reset(seed=0)
    first = capsys.readouterr().out
    assert "Dice" in first or "dice" in first
    env.step(0)
    assert capsys.readouterr().out.strip() and env.render() is None


def test_pettingzoo_render_test_and_masks_at_the_end():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import render_test, seed_test

    from nardy_env.pettingzoo_env import env as aec_env
    render_test(aec_env)
    seed_test(aec_env, num_cycles=50)

    game = aec_env()
    game.reset(seed=0, options={"position": BLACK_WINS_AT_ONCE, "dice": [6, 6]})
    assert game.agent_selection == "black"
    game.step(0)
    for agent in ("white", "black"):
        assert game.terminations[agent]
        assert game.infos[agent]["action_mask"].shape == (3060,) and not game.infos[agent]["action_mask"].any()
        assert not game.observe(agent)["action_mask"].any()

"""The native vector env: autoreset, determinism, and agreement with N single envs."""

from __future__ import annotations

import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import nardy_env  # noqa: F401  (registers LongNardy-v0)
from nardy_env import NUM_CHECKERS, OFF_MOVER, OFF_OPPONENT, NPNError
from nardy_env.envs import IllegalActionError, LongNardyEnv, LongNardyVectorEnv


def sample(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row."""
    cum = np.cumsum(mask, axis=1)
    pick = (rng.random(mask.shape[0]) * cum[:, -1]).astype(np.int64)
    return (cum <= pick[:, None]).sum(axis=1)


def make_vec(num_envs: int, **kwargs) -> gym.vector.VectorEnv:
    return gym.make_vec("LongNardy-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def test_native_vector_env_declares_next_step_autoreset():
    env = make_vec(4)
    assert isinstance(env.unwrapped, LongNardyVectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 57) and obs.dtype == np.float32
    assert obs in env.observation_space
    assert info["action_mask"].shape == (4, 3060)
    assert env.action_space.shape == (4,)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_same_seed_same_trajectory(action_mode):
    def run(seed=9):
        env = make_vec(5, action_mode=action_mode)
        rng = np.random.default_rng(0)
        obs, info = env.reset(seed=seed)
        trace = [obs]
        for _ in range(120):
            obs, reward, terminated, truncated, info = env.step(sample(info["action_mask"], rng))
            trace += [obs, reward[:, None], terminated[:, None]]
        return np.concatenate(trace, axis=1)

    assert (run() == run()).all()
    assert not np.array_equal(run(), run(seed=10))  # and the seed decides it


def _compare_with_single_envs(action_mode: str, steps: int, num_envs: int = 4, **kwargs) -> int:
    vec = make_vec(num_envs, action_mode=action_mode, **kwargs)
    singles = [LongNardyEnv(action_mode=action_mode, **kwargs) for _ in range(num_envs)]
    rng = np.random.default_rng(1)
    obs, info = vec.reset(seed=100)
    firsts = [env.reset(seed=100 + i) for i, env in enumerate(singles)]
    for i, (o, inf) in enumerate(firsts):
        assert (obs[i] == o).all()
        assert (info["action_mask"][i] == inf["action_mask"]).all()
    done = np.zeros(num_envs, dtype=bool)
    ended = 0
    for _ in range(steps):
        actions = sample(info["action_mask"], rng)
        obs, reward, terminated, truncated, info = vec.step(actions)
        for i, env in enumerate(singles):
            if done[i]:  # next-step autoreset: the vector env starts a new game now
                o, inf = env.reset()
                r, t = 0.0, False
            else:
                o, r, t, _, inf = env.step(int(actions[i]))
            assert (obs[i] == o).all(), f"sub-env {i}"
            assert reward[i] == r and terminated[i] == t and not truncated[i]
            assert info["player"][i] == inf["player"]
            assert (info["dice"][i] == inf["dice"]).all()
            assert (info["action_mask"][i] == inf["action_mask"]).all()
            if action_mode == "turn":
                af = info["afterstates"]
                assert (af.states[af.offsets[i]:af.offsets[i + 1]] == inf["afterstates"].states).all()
        ended += int(terminated.sum())
        done = terminated
    return ended


def test_vector_env_matches_single_envs_turn_mode():
    assert _compare_with_single_envs("turn", 400) >= 4  # games ended and restarted on the way


def test_vector_env_matches_single_envs_checker_mode():
    assert _compare_with_single_envs("checker", 500, num_envs=3) >= 1


def test_vector_env_matches_single_envs_with_a_deterministic_opponent():
    def last_afterstate(states, found, rng):
        return found.counts() - 1

    assert _compare_with_single_envs("turn", 150, opponent=last_afterstate, agent_color="black") >= 1


def native_and_sync(num_envs: int, seed: int, **kwargs):
    """The native vector env and Gymnasium's sync one over single envs, both reset with ``seed``:
    (native, sync, its (obs, info), its (obs, info))."""
    native = make_vec(num_envs, **kwargs)
    sync = gym.make_vec("LongNardy-v0", num_envs=num_envs, vectorization_mode="sync", **kwargs)
    return native, sync, native.reset(seed=seed), sync.reset(seed=seed)


def step_both(native, sync, actions):
    """One step of the native env and of Gymnasium's sync one with the same actions: their rewards
    and terminations must agree; returns (obs, info) of the native env, then of the sync one."""
    o1, r1, t1, _, i1 = native.step(actions)
    o2, r2, t2, _, i2 = sync.step(actions)
    assert (r1 == r2).all() and (t1 == t2).all()
    return o1, i1, o2, i2


def test_vector_env_matches_gymnasiums_sync_vector_env():
    native, sync, (o1, i1), (o2, i2) = native_and_sync(3, seed=7)
    rng = np.random.default_rng(2)
    for _ in range(250):
        assert (o1 == o2).all() and (i1["action_mask"] == i2["action_mask"]).all()
        o1, i1, o2, i2 = step_both(native, sync, sample(i1["action_mask"], rng))


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_partial_reset_with_reset_mask_matches_gymnasiums_sync_vector_env(action_mode):
    """Gymnasium's reset(options={"reset_mask": m}) restarts the masked sub-envs only."""
    native, sync, (o1, i1), (o2, i2) = native_and_sync(4, seed=3, action_mode=action_mode)
    rng = np.random.default_rng(5)
    for step in range(120):
        if step in (20, 70):
            mask = np.array([True, False, step == 70, False])
            kept = o1[~mask].copy()
            options = {"reset_mask": mask}
            o1, i1 = native.reset(seed=[40 + step, None, 41 + step, None], options=options)
            o2, i2 = sync.reset(seed=[40 + step, None, 41 + step, None], options={"reset_mask": mask.copy()})
            assert options.keys() == {"reset_mask"} and options["reset_mask"] is mask  # the caller's
            assert mask.tolist() == [True, False, step == 70, False]  # dict is left alone
            assert (o1[~mask] == kept).all()  # the others go on where they were
            # sync reports the info of the reset sub-envs only; the native env, of all (unchanged ones too)
            assert (i2["_action_mask"] == mask).all() and i1["_action_mask"].all()
            assert (i1["action_mask"][mask] == i2["action_mask"][mask]).all()
            i2["action_mask"] = i1["action_mask"]
        assert (o1 == o2).all() and (i1["action_mask"] == i2["action_mask"]).all()
        o1, i1, o2, i2 = step_both(native, sync, sample(i1["action_mask"], rng))


@pytest.mark.parametrize("partial", [False, True])
def test_a_none_in_a_seed_list_carries_that_sub_envs_dice_on_as_sync_does(partial):
    """A single env's reset(seed=None) carries on with its generator; a None in the native env's
    seed list drew fresh entropy instead, and the two modes no longer matched."""
    native, sync, (o1, i1), (o2, i2) = native_and_sync(3, seed=11)
    rng = np.random.default_rng(9)
    for step in range(60):
        if step in (15, 40):
            options = {"reset_mask": np.array([True, True, False])} if partial else None
            o1, i1 = native.reset(seed=[None, 60 + step, None], options=options)
            o2, i2 = sync.reset(seed=[None, 60 + step, None], options=options)
            if partial:
                for key in ("action_mask", "dice"):  # sync reports the reset sub-envs only
                    i2[key][2] = i1[key][2]
        assert (o1 == o2).all() and (i1["dice"] == i2["dice"]).all()
        assert (i1["action_mask"] == i2["action_mask"]).all()
        o1, i1, o2, i2 = step_both(native, sync, sample(i1["action_mask"], rng))


def test_bad_seeds_reset_mask_and_max_episode_steps_are_refused_before_anything_changes():
    env = make_vec(3)
    obs, _ = env.reset(seed=1)
    bad_resets = [
        (dict(seed="123"), TypeError, "seed must be None, an int"),
        (dict(seed=1.5), TypeError, "seed must be None, an int"),
        (dict(seed=[1, 2.5, 3]), TypeError, r"seed\[1\] must be an int or None"),
        (dict(seed=[1, 2]), ValueError, "one seed per sub-env"),
        (dict(seed=True), TypeError, "got the bool True"),
        (dict(seed=[1, True, 3]), TypeError, r"seed\[1\] must be an int or None, got bool"),
        (dict(seed=-1), ValueError, "at least 0"),
        (dict(seed=[0, 1, -3]), ValueError, r"seed\[2\] must be at least 0"),
        (dict(options={"reset_mask": np.array([1, 0, 1])}), ValueError, "bool array of shape"),
        (dict(options={"reset_mask": np.zeros(3, dtype=bool)}), ValueError, "at least one True"),
        (dict(options={"reset_mask": np.ones(2, dtype=bool)}), ValueError, "bool array of shape"),
        (dict(options={"reset_mask": np.ones(3, dtype=bool), "colour": 1}), ValueError, "reset_mask"),
    ]
    for kwargs, kind, message in bad_resets:
        with pytest.raises(kind, match=message):
            env.reset(**kwargs)
        assert (env.unwrapped.batch.observations() == obs).all(), kwargs
    assert (env.reset(seed=[1, None, 3])[0][[0, 2]] == obs[[0, 2]]).all()  # None entries are taken
    fresh = make_vec(2)
    with pytest.raises(gym.error.ResetNeeded, match="without it first"):
        fresh.reset(options={"reset_mask": np.array([True, False])})
    for steps in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_episode_steps"):
            make_vec(2, max_episode_steps=steps)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_random_play_finishes_games_with_valid_rewards(action_mode):
    env = make_vec(16, action_mode=action_mode)
    rng = np.random.default_rng(3)
    obs, info = env.reset(seed=3)
    unwrapped = env.unwrapped
    games = 0
    autoreset = np.zeros(16, dtype=bool)
    for _ in range(400 if action_mode == "turn" else 900):
        obs, reward, terminated, truncated, info = env.step(sample(info["action_mask"], rng))
        assert not truncated.any()
        assert (reward[autoreset] == 0).all() and not terminated[autoreset].any()
        assert (reward[~terminated] == 0).all()
        for i in np.flatnonzero(terminated):
            final = unwrapped.batch.state[i]  # seen by the loser
            assert final[OFF_OPPONENT] == NUM_CHECKERS
            assert reward[i] == (2 if final[OFF_MOVER] == 0 else 1)
        games += int(terminated.sum())
        autoreset = terminated
    assert games >= (30 if action_mode == "turn" else 20)


def test_illegal_action_raises_and_changes_nothing():
    env = make_vec(4)
    ref = make_vec(4)
    obs, info = env.reset(seed=5)
    ref.reset(seed=5)
    legal = sample(info["action_mask"], np.random.default_rng(0))
    bad = legal.copy()
    bad[2] = int(info["action_mask"][2].sum())  # one past the last legal afterstate
    with pytest.raises(IllegalActionError, match="sub-env 2"):
        env.step(bad)
    with pytest.raises(IllegalActionError):
        env.step(legal[:3])
    a = env.step(legal)
    b = ref.step(legal)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()


def test_actions_of_autoresetting_sub_envs_are_ignored():
    env = make_vec(2, max_episode_steps=3)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(sample(info["action_mask"], rng))
    assert truncated.all()
    obs, reward, terminated, truncated, info = env.step(np.array([3059, -7]))  # ignored
    assert not truncated.any() and (reward == 0).all()
    assert (obs[:, 23] == 15).all()  # a new game: everyone on the head
    for step in range(3):  # the new episode's step count starts again: truncated at its third step
        obs, reward, terminated, truncated, info = env.step(sample(info["action_mask"], rng))
        assert (truncated == (step == 2)).all() and not terminated.any()


def test_render_all_sub_envs():
    env = make_vec(2, render_mode="ansi")
    env.reset(seed=0)
    frames = env.render()
    assert len(frames) == 2 and all("to move" in f for f in frames)


def test_vector_env_rejects_non_integer_actions_and_counts():
    envs = make_vec(2)
    envs.reset(seed=0)
    for bad in (np.zeros(2), np.array([True, False]), np.array(["0", "0"]), np.zeros(3, dtype=np.int64)):
        with pytest.raises(IllegalActionError):
            envs.step(bad)
    with pytest.raises(IllegalActionError, match=r"actions is None.*shape \(2,\)"):
        envs.step(None)
    before = envs.unwrapped.batch.state.copy()
    for mixed in ([True, 0], (0, np.bool_(True))):  # numpy reads the list as [1, 0]: it was played as action 1
        with pytest.raises(IllegalActionError, match="not True or False"):
            envs.step(mixed)
    assert (envs.unwrapped.batch.state == before).all()
    for bad_count in (0, "4", 1.5, True):
        with pytest.raises(ValueError, match="num_envs"):
            LongNardyVectorEnv(num_envs=bad_count)


def test_afterstates_in_info_are_read_only():
    envs = make_vec(2)
    _, info = envs.reset(seed=0)
    with pytest.raises(ValueError, match="read-only"):
        info["afterstates"].states[:] = 0
    envs.step(np.zeros(2, dtype=np.int64))  # the games go on from untouched positions
    assert (np.abs(envs.unwrapped.batch.state[:, :24]).sum(axis=1) > 0).all()


def test_reset_options_start_sub_envs_from_given_positions():
    start = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:b"
    other = start[:-1] + "w"
    envs = make_vec(3)
    _, info = envs.reset(seed=0, options={"position": [start, other, start], "dice": [[1, 2], [3, 3], [6, 5]]})
    assert info["player"].tolist() == [1, 0, 1]
    assert info["dice"].tolist() == [[1, 2], [3, 3], [6, 5]]
    _, info = envs.reset(seed=0, options={"position": other, "dice": [4, 4]})
    assert info["player"].tolist() == [0, 0, 0] and info["dice"].tolist() == [[4, 4]] * 3
    one = make_vec(1)
    _, info = one.reset(seed=0, options={"position": [start], "dice": [[6, 5]]})
    assert info["dice"].tolist() == [[6, 5]]
    for bad, words in (({"posn": start}, "posn"), ({"position": [start]}, "list of 3"),
                       ({"position": start, "dice": [[1, 2]]}, "3 pairs"),
                       ({"position": start, "dice": [[1, 2], [3, 4], [5]]}, "one pair or 3 pairs")):
        with pytest.raises(ValueError, match=words):
            envs.reset(options=bad)


def test_a_bad_entry_of_a_reset_option_is_named_by_its_sub_env_in_a_short_message():
    start = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:w"
    envs, same = make_vec(1024), make_vec(1024)
    envs.reset(seed=0)
    same.reset(seed=0)
    for bad, said in (({"position": [start] * 700 + ["0,0:0,0:w"] + [start] * 323},
                       'reset option "position"[700]: bad NPN points'),
                      ({"position": start, "dice": [[1, 2]] * 700 + [[0, 2]] + [[1, 2]] * 323},
                       'reset option "dice"[700]: dice must be two integers 1..6, got [0, 2]'),
                      ({"position": [start] * 1023}, "a list of 1024, got a list of 1023"),
                      ({"position": start, "dice": [6, 5] * 1024}, 'reset option "dice": dice must be two')):
        with pytest.raises(ValueError) as caught:
            envs.reset(seed=1, options=bad)
        assert said in str(caught.value) and len(str(caught.value)) < 300, str(caught.value)[:300]
        refused, _, _, _, _ = envs.step(np.zeros(1024, dtype=np.int64))  # the games go on, untouched
        assert np.array_equal(refused, same.step(np.zeros(1024, dtype=np.int64))[0])
    # A numpy array of positions (a curriculum drawn with numpy) is a list of them; Gymnasium's other
    # vector envs hand each sub-env the whole list, which is said so.
    _, info = make_vec(3).reset(seed=0, options={"position": np.array([start, start[:-1] + "b", start])})
    assert info["player"].tolist() == [0, 1, 0]
    sync = gym.make_vec("LongNardy-v0", num_envs=3, vectorization_mode="sync")
    with pytest.raises(ValueError, match=r"got a list of 3 \(a list with one for each sub-env is the native"):
        sync.reset(seed=0, options={"position": [start] * 3})
    # Gymnasium's async vector env raises a worker's error again as type(error)(error).
    async_envs = gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="async")
    try:
        with pytest.raises(NPNError, match='^reset option "position": bad NPN fields'), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Gymnasium logs the workers' errors as warnings too
            async_envs.reset(seed=0, options={"position": "junk"})
    finally:
        async_envs.close(terminate=True)
    # An opponent that wins before the agent moves: which sub-envs, and the position once, not 1024 times.
    wins = "0,0,0,0,0,0,0,0,0,0,0,0,-1,0,0,0,0,0,0,0,0,0,0,15:0,14:b"
    envs = make_vec(1024, opponent="heuristic", agent_color="white")
    for position, which in (([start] * 1023 + [wins], "sub-env(s) [1023]: "), (wins, "sub-env(s) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19] ... (1024 in all): ")):
        with pytest.raises(ValueError, match="the opponent moved first") as caught:
            envs.reset(seed=0, options={"position": position})
        assert str(caught.value).startswith(which) and str(caught.value).count(wins) == 1
        assert len(str(caught.value)) < 400 and f"'{wins}'" in str(caught.value)  # the NPN, not np.str_(...)
    with pytest.raises(ValueError, match=f"sub-env\\(s\\) \\[1\\]: reset option \"position\" '{wins}'"):
        make_vec(2, opponent="heuristic", agent_color="white").reset(seed=0, options={"position": np.array([start, wins])})
    with pytest.raises(ValueError, match=f"^reset option \"position\" '{wins}'"):  # a list of one, its NPN
        gym.make("LongNardy-v0", opponent="heuristic", agent_color="white").reset(seed=0, options={"position": [wins]})


def _step_in_a_forked_child(queue) -> None:
    from nardy_env import initial_states, legal_afterstates

    legal_afterstates(initial_states(1024), np.tile([[6, 5]], (1024, 1)), threads=2)  # even on one CPU
    envs = gym.make_vec("LongNardy-v0", num_envs=256, vectorization_mode="vector_entry_point")
    envs.reset(seed=1)
    envs.step(np.zeros(256, dtype=np.int64))
    queue.put("ok")


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no fork")
def test_a_forked_process_can_use_the_batched_core_and_the_vector_env():
    """The core's thread pool does not survive a fork: a child that used the parent's would hang."""
    import multiprocessing

    from nardy_env import initial_states, legal_afterstates

    legal_afterstates(initial_states(1024), np.tile([[6, 5]], (1024, 1)), threads=2)  # the parent's pool
    envs = gym.make_vec("LongNardy-v0", num_envs=256, vectorization_mode="vector_entry_point")
    envs.reset(seed=1)
    envs.step(np.zeros(256, dtype=np.int64))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_step_in_a_forked_child, args=(queue,))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung in the batched core")
    assert child.exitcode == 0 and queue.get(timeout=5) == "ok"


def test_only_next_step_autoreset_is_offered_and_another_mode_is_refused_by_name():
    envs = gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        autoreset_mode=AutoresetMode.NEXT_STEP)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    with pytest.raises(ValueError, match="next-step mode only .*vectorization_mode='sync'"):
        gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point",
                     autoreset_mode=AutoresetMode.SAME_STEP)


def test_a_game_ending_exactly_at_max_episode_steps_is_truncated_as_with_time_limit():
    # Gymnasium's TimeLimit (and so the sync vector env) reports truncated at the limit even
    # when that step also ends the game; the native env reports the same flags.
    env = gym.make("LongNardy-v0")
    env.reset(seed=0)
    length, done = 0, False
    while not done:
        _, _, done, _, _ = env.step(0)
        length += 1
    flags = {}
    for mode in ("vector_entry_point", "sync"):
        envs = gym.make_vec("LongNardy-v0", num_envs=1, vectorization_mode=mode, max_episode_steps=length)
        envs.reset(seed=0)
        for _ in range(length):
            _, _, terminated, truncated, _ = envs.step(np.zeros(1, dtype=np.int64))
        flags[mode] = (bool(terminated[0]), bool(truncated[0]))
    assert flags["sync"] == (True, True)
    assert flags["vector_entry_point"] == flags["sync"]

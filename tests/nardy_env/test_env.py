"""LongNardy-v0, the single environment: API conformance, rewards, passes, illegal actions, variants."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import nardy_env  # noqa: F401  (registers LongNardy-v0)
from nardy_env import (
    MAX_RESULTS,
    NUM_CHECKERS,
    OFF_MOVER,
    START_NPN,
    Color,
    NPNError,
    Rules,
    StateError,
    flip,
    legal_afterstates,
    parse_npn,
)
from nardy_env.encoding import NUM_FEATURES, RAW_SIZE, features, raw_positions
from nardy_env.envs import (
    PASS_ACTION,
    AnyActionLegal,
    GameOverError,
    IllegalActionError,
    LongNardyEnv,
    LongNardyVectorEnv,
    checker_action,
)
from tests.helpers import npn

MODES = [("turn", "raw"), ("turn", "features"), ("checker", "raw"), ("checker", "features")]
BLOCKED = npn({24: 15}, {23: 3, 22: 3, 21: 3, 20: 3, 19: 3})  # white to move; 1s and 2s are blocked


def random_action(info, rng) -> int:
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def test_registered_with_both_entry_points():
    spec = gym.spec("LongNardy-v0")
    assert spec.entry_point == "nardy_env.envs.long_nardy:LongNardyEnv"
    assert spec.vector_entry_point == "nardy_env.envs.vector:LongNardyVectorEnv"
    assert isinstance(gym.make("LongNardy-v0").unwrapped, LongNardyEnv)
    vec = gym.make_vec("LongNardy-v0", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(vec.unwrapped, LongNardyVectorEnv)


@pytest.mark.parametrize("action_mode,obs_mode", MODES)
def test_check_env(action_mode, obs_mode):
    env = AnyActionLegal(gym.make("LongNardy-v0", action_mode=action_mode, obs_mode=obs_mode))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped.*")
        check_env(env)


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_check_env_with_an_opponent(action_mode):
    env = AnyActionLegal(gym.make("LongNardy-v0", opponent="random", action_mode=action_mode))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped.*")
        check_env(env)


@pytest.mark.parametrize("action_mode,obs_mode", MODES)
def test_spaces(action_mode, obs_mode):
    env = LongNardyEnv(action_mode=action_mode, obs_mode=obs_mode)
    size = (RAW_SIZE if obs_mode == "raw" else NUM_FEATURES) + 7
    assert env.observation_space.shape == (size,)
    assert env.observation_space.dtype == np.float32
    assert env.action_space.n == (MAX_RESULTS if action_mode == "turn" else PASS_ACTION + 1)
    obs, info = env.reset(seed=0)
    assert info["action_mask"].shape == (env.action_space.n,) and info["action_mask"].dtype == np.int8


def test_raw_observation_layout():
    env = LongNardyEnv()
    obs, info = env.reset(seed=4)
    state = env.batch.state[0]
    assert (obs[:RAW_SIZE] == raw_positions(state)).all()
    d1, d2 = info["dice"]
    expected = np.zeros(6)
    expected[d1 - 1] += 1
    expected[d2 - 1] += 1
    assert (obs[RAW_SIZE:RAW_SIZE + 6] == expected).all() and obs[-1] == 0
    env = LongNardyEnv(obs_mode="features")
    obs, _ = env.reset(seed=4)
    assert (obs[:NUM_FEATURES] == features(raw_positions(state))).all()


def test_afterstates_are_the_cores_and_actions_index_them():
    env = LongNardyEnv()
    obs, info = env.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(30):
        b = env.batch
        found = legal_afterstates(b.state, b.dice)
        assert (info["afterstates"].states == found.states).all()
        assert (info["afterstates"].moves == found.moves).all()
        assert info["action_mask"].sum() == found.states.shape[0]
        a = int(rng.integers(found.states.shape[0]))
        obs, reward, terminated, _, info = env.step(a)
        assert (env.batch.state[0] == flip(found.states[a])).all()
        if terminated:
            break


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_same_seed_same_trajectory(action_mode):
    def run(seed):
        env = LongNardyEnv(action_mode=action_mode)
        rng = np.random.default_rng(seed)
        obs, info = env.reset(seed=seed)
        out = [obs]
        for _ in range(150):
            obs, r, term, _, info = env.step(random_action(info, rng))
            out.append(np.append(obs, [r, term]))
            if term:
                obs, info = env.reset()
                out.append(obs)
        return np.concatenate(out)

    assert (run(5) == run(5)).all()
    assert not np.array_equal(run(5), run(6))
    assert (run(np.int64(5)) == run(5)).all()  # a numpy seed, as the vector env takes one


def test_a_generator_assigned_to_np_random_rolls_the_dice_from_then_on():
    def dice(generator_seed, assign_before_reset=False):
        env = gym.make("LongNardy-v0")
        if assign_before_reset:
            env.np_random = np.random.default_rng(generator_seed)
            obs, info = env.reset()
        else:
            obs, info = env.reset(seed=0)
            env.np_random = np.random.default_rng(generator_seed)  # through the wrappers, mid-game
        rolls = []
        for _ in range(12):
            obs, _, terminated, _, info = env.step(0)
            rolls.append(tuple(info["dice"]))
        return rolls

    assert dice(123) == dice(123) != dice(999)
    with pytest.raises(TypeError, match="np_random must be a numpy Generator"):
        gym.make("LongNardy-v0").np_random = np.random.RandomState(0)  # once failed 128 rolls later
    assert dice(123, assign_before_reset=True) == dice(123, assign_before_reset=True) \
        != dice(999, assign_before_reset=True)


@pytest.mark.parametrize("assign_before_reset", [True, False])
def test_a_generator_assigned_to_np_random_also_seeds_a_random_opponent(assign_before_reset):
    def game(generator, history_seed=0):
        env = gym.make("LongNardy-v0", opponent="random", agent_color="white")
        if assign_before_reset:  # once: the dice followed it, the opponent's choices were fresh each time
            env.np_random = generator
        else:  # mid-game, after games of their own: once, the opponent went on with the old seed's draws
            env.reset(seed=history_seed)
            for _ in range(25):
                env.step(0)
            env.np_random = generator
        obs, info = env.reset()
        seen = [obs]
        for _ in range(60):
            obs, _, terminated, _, info = env.step(0)
            seen.append(obs)
            if terminated:
                obs, info = env.reset()
        return np.concatenate(seen)

    rng = np.random.default_rng
    assert np.array_equal(game(rng(42)), game(rng(42), history_seed=1))
    assert not np.array_equal(game(rng(42)), game(rng(43)))


def test_two_envs_given_one_generator_get_opponents_of_their_own():
    shared = np.random.default_rng(7)
    envs = [gym.make("LongNardy-v0", opponent="random", agent_color="white") for _ in range(2)]
    for env in envs:
        env.reset(seed=0)
        env.np_random = shared
    opponent = [env.unwrapped.batch.opponent_rng.random(4) for env in envs]
    assert not np.array_equal(*opponent)
    # A generator without a seed sequence to spawn from (legacy seeding) is taken too, reproducibly.
    def legacy():
        bits = np.random.MT19937()
        bits._legacy_seeding(5)
        env = gym.make("LongNardy-v0", opponent="random", agent_color="white")
        env.np_random = np.random.Generator(bits)
        env.reset()
        return env.unwrapped.batch.opponent_rng.random(4)

    assert np.array_equal(legacy(), legacy())


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_random_play_finishes_games_with_valid_rewards(action_mode):
    env = LongNardyEnv(action_mode=action_mode)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=1)
    games, steps = 0, 0
    while games < (4 if action_mode == "turn" else 2):
        player = info["player"]
        obs, reward, terminated, truncated, info = env.step(random_action(info, rng))
        steps += 1
        assert not truncated
        assert obs in env.observation_space
        if not terminated:
            assert reward == 0
            continue
        # The side that just moved won: it bore off its 15th checker.
        final = env.batch.state[0]  # seen by the loser, who would move next
        assert final[OFF_MOVER + 1] == NUM_CHECKERS
        assert reward == (2 if final[OFF_MOVER] == 0 else 1)
        assert info["player"] == Color(player).other
        assert np.flatnonzero(info["action_mask"]).tolist() == [0 if action_mode == "turn" else PASS_ACTION]
        with pytest.raises(GameOverError):
            env.step(0)
        with pytest.raises(gym.error.ResetNeeded):  # one except for "reset first", before or after a game
            env.step(0)
        games += 1
        obs, info = env.reset()
    assert steps > 50 * games


@pytest.mark.parametrize("obs_mode", ["raw", "features"])
def test_observations_stay_in_the_space_for_a_whole_game(obs_mode):
    env = LongNardyEnv(obs_mode=obs_mode)
    rng = np.random.default_rng(8)
    obs, info = env.reset(seed=8)
    observations = [obs]
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = env.step(random_action(info, rng))
        observations.append(obs)
    observations = np.array(observations)
    low, high = env.observation_space.low, env.observation_space.high
    assert ((observations >= low) & (observations <= high)).all()
    assert (observations[-1, -7:] == 0).all()  # no dice once the game is over


@pytest.mark.parametrize("action_mode", ["turn", "checker"])
def test_illegal_action_raises_and_changes_nothing(action_mode):
    def fresh():
        env = LongNardyEnv(action_mode=action_mode)
        return env, *env.reset(seed=3)

    env, obs, info = fresh()
    import torch  # a tensor is how a torch agent hands its action over

    first = int(np.flatnonzero(info["action_mask"])[0])
    illegal = [int(np.flatnonzero(info["action_mask"] == 0)[0]), -1, env.action_space.n, 2.5, 0.0,
               True, "0", None, 2**70, torch.tensor(True), np.array([first]), torch.tensor([first])]
    for a in illegal:
        with pytest.raises(IllegalActionError):
            env.step(a)
    legal = int(np.flatnonzero(info["action_mask"])[0])
    after = env.step(legal)
    ref, _, _ = fresh()
    expected = ref.step(legal)
    assert (after[0] == expected[0]).all() and after[1:4] == expected[1:4]
    assert (after[4]["action_mask"] == expected[4]["action_mask"]).all()
    env, obs, info = fresh()  # a scalar tensor or array is an integer action
    assert (env.step(torch.tensor(legal))[0] == expected[0]).all()
    env, obs, info = fresh()
    assert (env.step(np.array(legal))[0] == expected[0]).all()
    with pytest.raises(TypeError, match="got the bool True"):  # Gymnasium's own check reads it as 1
        env.reset(seed=True)


def test_single_env_seeds_and_options_are_checked_as_the_vector_envs_are():
    env = LongNardyEnv()
    obs, info = env.reset(seed=4)
    dice = info["dice"].copy()
    assert (env.reset(seed=np.array(4))[1]["dice"] == dice).all()  # a 0-d array is an int, as in the vector env
    for seed, kind, says in [(1.5, TypeError, "seed must be None or an int, got float 1.5"),
                             ("3", TypeError, "got str '3'"), (np.float64(1), TypeError, "got float64"),
                             (np.bool_(True), TypeError, "got the bool True"), (-1, ValueError, "at least 0")]:
        with pytest.raises(kind, match=says):
            env.reset(seed=seed)
    for options in ([], "", ()):  # empty, but no dict of options either: refused, not read as none
        with pytest.raises(TypeError, match="options must be a dict"):
            env.reset(options=options)
    with pytest.raises(TypeError, match="options must be a dict"):
        gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point").reset(options=[])
    assert (env.reset(seed=4, options={})[1]["dice"] == dice).all()


def test_blocked_turn_passes_with_the_single_afterstate_in_turn_mode():
    env = LongNardyEnv()
    state, _ = parse_npn(BLOCKED)
    obs, info = env.reset(seed=0, options={"position": BLOCKED, "dice": [2, 1]})
    assert info["player"] == Color.WHITE
    assert np.flatnonzero(info["action_mask"]).tolist() == [0]
    assert (info["afterstates"].states == state[None]).all()
    obs, reward, terminated, _, info = env.step(0)
    assert (reward, terminated) == (0, False)
    assert info["player"] == Color.BLACK
    assert (env.batch.state[0] == flip(state)).all()


def test_blocked_turn_passes_with_the_pass_action_in_checker_mode():
    env = LongNardyEnv(action_mode="checker")
    state, _ = parse_npn(BLOCKED)
    obs, info = env.reset(seed=0, options={"position": BLOCKED, "dice": [1, 1]})
    assert np.flatnonzero(info["action_mask"]).tolist() == [PASS_ACTION]
    obs, reward, terminated, _, info = env.step(PASS_ACTION)
    assert info["player"] == Color.BLACK and not terminated
    assert (env.batch.state[0] == flip(state)).all()


def test_checker_mode_plays_a_turn_one_checker_at_a_time():
    env = LongNardyEnv(action_mode="checker")
    obs, info = env.reset(seed=0, options={"position": nardy_env.START_NPN, "dice": [6, 5]})
    # First turn: one checker from the head, 24 -> 18 -> 13 or 24 -> 19 -> 13 (the head is
    # personal 24; black's head on 12 blocks nothing here).
    assert set(np.flatnonzero(info["action_mask"])) == {checker_action(24, 6), checker_action(24, 5)}
    obs, reward, terminated, _, info = env.step(checker_action(24, 6))
    assert info["player"] == Color.WHITE and obs[RAW_SIZE + 4] == 1 and obs[RAW_SIZE + 5] == 0
    assert obs[-1] == 1  # one checker has left the head
    assert set(np.flatnonzero(info["action_mask"])) == {checker_action(18, 5)}
    obs, reward, terminated, _, info = env.step(checker_action(18, 5))
    assert info["player"] == Color.BLACK


def test_checker_action_numbers_convert_both_ways_and_refuse_what_they_would_misread():
    from nardy_env.envs.checker import checker_move

    for source in range(1, 25):
        for die in range(1, 7):
            assert checker_move(checker_action(source, die)) == (source, die)
            assert checker_move(np.int64(checker_action(source, die))) == (source, die)
            # The core's moves are int8: (24 - 1) * 6 must not wrap there.
            assert checker_action(np.int8(source), np.int8(die)) == checker_action(source, die)
    assert checker_move(PASS_ACTION) == (0, 0) and checker_move(np.array(PASS_ACTION)) == (0, 0)
    for bad in (2.7, -1, PASS_ACTION + 1, True, "3"):  # 2.7 was once read as action 2
        with pytest.raises(ValueError, match="checker actions are whole numbers 0..144"):
            checker_move(bad)
    for source, die in ((24.5, 6), (0, 6), (25, 1), (24, 7), (True, 1)):
        with pytest.raises(ValueError, match="source must be a whole number 1..24 and die 1..6"):
            checker_action(source, die)


def test_opponent_plays_the_other_side_inside_step():
    calls = []

    def first_afterstate(states, found, rng):
        calls.append(states.shape[0])
        return np.zeros(states.shape[0], dtype=np.int64)

    outcomes = set()
    for colour, seed in [(c, s) for s in range(2, 6) for c in (Color.WHITE, Color.BLACK)]:
        env = LongNardyEnv(opponent=first_afterstate, agent_color=colour.name.lower())
        obs, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            assert info["player"] == colour
            obs, reward, terminated, _, info = env.step(random_action(info, rng))
            if terminated:
                assert reward in (-2.0, -1.0, 1.0, 2.0)
                winner = Color(int(env.batch.side[0])).other  # the side that bore off its 15th
                assert reward == (1 if winner == colour else -1) * env.batch.last_points[0]
                outcomes.add(winner == colour)
                break
            assert reward == 0
        assert calls
    assert outcomes == {True, False}  # the agent's wins and its losses, each with its sign


def test_random_agent_colour_per_episode_and_named_opponent():
    env = LongNardyEnv(opponent="random")
    colours = {env.reset(seed=s)[1]["player"] for s in range(12)}
    assert colours == {Color.WHITE, Color.BLACK}
    with pytest.raises(ValueError, match="agent_color needs an opponent"):
        LongNardyEnv(agent_color="white")  # a colour means nothing without an opponent
    for seed in range(4):  # with one, the agent plays the colour it asked for
        assert LongNardyEnv(opponent="random", agent_color="white").reset(seed=seed)[1]["player"] == Color.WHITE
        assert LongNardyEnv(opponent="random", agent_color="black").reset(seed=seed)[1]["player"] == Color.BLACK
    with pytest.raises(LookupError, match="no player named 'no-such-bot'"):
        LongNardyEnv(opponent="no-such-bot")


def test_rules_variant_passes_through():
    # Black's first turn after white's: 6-6 lets two checkers leave the head, unless the
    # variant has no head exception.
    position = npn({24: 14, 18: 1}, {12: 15}, side="b")
    counts = {}
    for name, rules in (("default", None), ("none", Rules(head_exception=()))):
        env = LongNardyEnv(rules=rules)
        _, info = env.reset(seed=0, options={"position": position, "dice": [6, 6]})
        counts[name] = info["afterstates"].states[:, 23].tolist()  # checkers left on black's head
    assert counts == {"default": [13], "none": [14]}
    env = gym.make("LongNardy-v0", rules={"block_rule": "home"})
    assert env.unwrapped.rules.block_rule == "home"


def test_render_modes():
    env = gym.make("LongNardy-v0", render_mode="ansi", action_mode="checker")
    env.reset(seed=0)
    text = env.render()
    assert "to move" in text and "pips" in text and "dice" in text
    env = gym.make("LongNardy-v0", render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 8  # a picture, not a blank


def test_pictures_refuse_what_they_cannot_draw():
    from nardy_env.render import board_text, board_words
    from nardy_env.render_rgb import board_image

    state, side = parse_npn(START_NPN)
    for draw in (board_text, board_words, board_image):
        name = draw.__name__
        for dice in ((9, 3), (3,), (2.0, 1), (True, 1), "65"):
            with pytest.raises(StateError, match=f"{name}: dice must be two whole numbers 1..6"):
                draw(state, side, dice)
        with pytest.raises(StateError, match=rf"{name} draws one state row \(shape \[26\]\), got shape \[1, 26\]"):
            draw(state[None], side)
        broken = state.copy()
        broken[0] += 1
        with pytest.raises(StateError, match="16 checkers"):
            draw(broken, side)
    with pytest.raises(StateError, match="dice_left holds"):
        board_image(state, side, (6, 5), dice_left=[1, 1])
    assert "dice 6-5" in board_text(state, side, np.array([6, 5]))
    for winner, points, message in ((True, 1, "a colour is"), ("w", -3, "points must be 1 .* or 2"),
                                    ("w", None, "points must be 1")):  # True was drawn as black, -3 as "-3 points"
        with pytest.raises(ValueError, match=message):
            board_image(state, side, None, winner=winner, points=points)
    assert board_image(state, side, None, winner="b", points=2).shape[2] == 3


def test_unknown_reset_options_are_rejected_by_name():
    env = LongNardyEnv()
    with pytest.raises(NPNError, match='^reset option "position": bad NPN fields') as caught:
        env.reset(seed=0, options={"position": "junk"})
    again = pickle.loads(pickle.dumps(caught.value))  # as AsyncVectorEnv sends it back from a worker,
    assert str(again) == str(caught.value) and again.field == "fields"
    assert str(type(again)(again)) == str(caught.value)  # and raises it again there: exctype(value)
    with pytest.raises(TypeError, match="name the part of the NPN that is wrong"):
        NPNError("points")
    with pytest.raises(gym.error.ResetNeeded):  # the failed reset started nothing
        env.step(0)
    with pytest.raises(ValueError, match="posn"):
        env.reset(seed=0, options={"posn": BLOCKED})
    with pytest.raises(ValueError, match="position"):
        env.reset(seed=0, options={"dice": [2, 1]})
    for dice in ([True, 2], [2, 1.0], [7, 1], [2]):  # True would read as a 1
        with pytest.raises(ValueError, match=r'^reset option "dice": dice must be two integers 1..6, got \['):
            env.reset(seed=0, options={"position": BLOCKED, "dice": dice})
        with pytest.raises(ValueError, match=r"dice must be two integers 1..6, got \["):
            gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point").reset(
                seed=0, options={"position": BLOCKED, "dice": dice})
    with pytest.raises(ValueError, match="already over"):
        env.reset(seed=0, options={"position": "0," * 11 + "-15," + "0," * 11 + "0:15,0:b"})


def test_any_action_legal_wrapper_maps_every_action_to_a_legal_one():
    env = AnyActionLegal(LongNardyEnv(opponent="random"))
    obs, info = env.reset(seed=5)
    legal = np.flatnonzero(info["action_mask"])
    ref = LongNardyEnv(opponent="random")
    ref.reset(seed=5)
    k = legal.size + 1  # wraps around to the second legal action
    got = env.step(k)
    expected = ref.step(int(legal[k % legal.size]))
    assert (got[0] == expected[0]).all() and got[1:4] == expected[1:4]
    with pytest.raises(IllegalActionError):
        env.step(0.5)


@pytest.mark.parametrize("vector", [False, True])
def test_an_opponent_that_raises_leaves_the_env_needing_a_reset_not_half_moved(vector):
    calls = {"n": 0, "fail": False}

    def flaky(states, found, rng):
        calls["n"] += 1
        if calls["fail"]:
            raise RuntimeError("bot crashed")
        return np.zeros(len(states), dtype=np.int64)

    env = (LongNardyVectorEnv(2, opponent=flaky, agent_color="white") if vector
           else LongNardyEnv(opponent=flaky, agent_color="white"))
    env.reset(seed=1)
    calls["fail"] = True
    with pytest.raises(RuntimeError, match="bot crashed") as raised:
        for _ in range(10):  # until the opponent's turn comes
            env.step(np.zeros(2, dtype=np.int64) if vector else 0)
    assert "call reset() to start a new one" in " ".join(raised.value.__notes__)
    # The agent's move was made and the opponent's was not: no step plays on from there.
    with pytest.raises(gym.error.ResetNeeded, match="failed mid-turn: RuntimeError: bot crashed"):
        env.step(np.zeros(2, dtype=np.int64) if vector else 0)
    calls["fail"] = False
    env.reset(seed=2)  # a reset starts afresh
    env.step(np.zeros(2, dtype=np.int64) if vector else 0)
    # A reset that fails in the opponent's opening turn (white, to move in START_NPN) alike.
    black = (LongNardyVectorEnv(2, opponent=flaky, agent_color="black") if vector
             else LongNardyEnv(opponent=flaky, agent_color="black"))
    black.reset(seed=0, options={"position": START_NPN})
    calls["fail"] = True
    with pytest.raises(RuntimeError, match="bot crashed"):
        black.reset(seed=0, options={"position": START_NPN})
    with pytest.raises(gym.error.ResetNeeded, match="failed mid-turn"):
        black.step(np.zeros(2, dtype=np.int64) if vector else 0)


def test_an_opponent_cannot_write_into_the_envs_afterstates():
    def vandal(states, found, rng):
        found.states[:] = 0
        return np.zeros(len(states), dtype=np.int64)

    env = LongNardyEnv(opponent=vandal, agent_color="black")  # the opponent (white) may move first
    with pytest.raises(ValueError, match="read-only"):
        for seed in range(20):
            env.reset(seed=seed)
            for _ in range(4):
                env.step(0)


def test_a_colour_or_a_choice_that_is_no_whole_number_is_refused():
    for colour in (1.7, True, 2, "red"):
        with pytest.raises(ValueError, match="agent_color must be 'white', 'black' or None"):
            LongNardyEnv(opponent="random", agent_color=colour)
    assert LongNardyEnv(opponent="random", agent_color=np.int64(1)).batch.agent_color == Color.BLACK

    def sloppy(states, found, rng):
        return np.full(len(states), 0.99)

    env = LongNardyEnv(opponent=sloppy, agent_color="black")
    with pytest.raises(ValueError, match="returned float64 choices .*integer indices"):
        for seed in range(20):  # until the opponent opens
            env.reset(seed=seed)


def test_the_pictures_dice_are_greyed_only_once_played():
    """Turn mode draws the roll as rolled; checker mode greys each die once it is played. The
    README's docs/board.png (tools/board_picture.py) shows a roll before any move."""
    from PIL import Image

    from nardy_env.render_rgb import USED_DIE

    def greyed(img: np.ndarray) -> int:
        return int((img == USED_DIE).all(axis=2).sum())

    position = "7,4,2,0,0,0,0,0,0,0,0,0,-8,-3,0,0,0,0,0,0,0,0,0,0:2,4:w"
    env = gym.make("LongNardy-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"position": position, "dice": [2, 6]})
    assert greyed(env.render()) == 0
    checker = gym.make("LongNardy-v0", render_mode="rgb_array", action_mode="checker")
    obs, info = checker.reset(seed=0, options={"position": position, "dice": [2, 6]})
    assert greyed(checker.render()) == 0
    checker.step(int(np.flatnonzero(info["action_mask"])[0]))  # one die played, one to go
    assert greyed(checker.render()) > 100
    shipped = np.asarray(Image.open(Path(__file__).resolve().parents[2] / "docs" / "board.png").convert("RGB"))
    assert greyed(shipped) == 0


def test_the_opponent_and_the_agents_colour_are_readable_through_wrappers():
    from agents.bots import HeuristicBot

    env = gym.make("LongNardy-v0", opponent="heuristic", agent_color="black")
    assert isinstance(env.get_wrapper_attr("opponent"), HeuristicBot)  # a name, loaded: its object
    assert env.get_wrapper_attr("agent_color") == Color.BLACK
    mine = HeuristicBot()
    assert gym.make("LongNardy-v0", opponent=mine).unwrapped.opponent is mine
    self_play = gym.make("LongNardy-v0").unwrapped
    assert self_play.opponent is None and self_play.agent_color is None
    vec = gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point", opponent=mine,
                       agent_color="white")
    assert vec.opponent is mine and vec.agent_color == Color.WHITE
    for made in (env, vec):  # once silently set an attribute nothing read
        with pytest.raises(AttributeError, match="opponent is set when it is made"):
            made.unwrapped.opponent = HeuristicBot()
    import copy

    assert isinstance(copy.deepcopy(env).unwrapped.opponent, HeuristicBot)
    with pytest.raises(ValueError, match="vectorization_mode='sync'"):  # the native env draws no 'human' boards
        gym.make_vec("LongNardy-v0", num_envs=2, vectorization_mode="vector_entry_point", render_mode="human")

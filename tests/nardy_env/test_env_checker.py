"""Checker-level play reaches exactly the afterstates of turn-level play, for every roll tried."""

from __future__ import annotations

import numpy as np
import pytest

from nardy_env import (
    DEFAULT_RULES,
    NUM_CHECKERS,
    OFF_MOVER,
    Rules,
    flip,
    initial_states,
    legal_afterstates,
    parse_npn,
)
from nardy_env.core import HEAD_INDEX
from nardy_env.envs.checker import (
    NUM_CHECKER_ACTIONS,
    PASS_ACTION,
    TurnTargets,
    checker_action,
    checker_move,
    checker_options,
    dice_left,
    turn_need,
)
from nardy_env.game import opening_roll, roll_dice
from tests.helpers import npn

ALL_ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], dtype=np.int64)


def checker_end_sets(states: np.ndarray, dice: np.ndarray, rules: Rules = DEFAULT_RULES) -> list[set[bytes]]:
    """Every end position reachable by playing checker moves until the play is complete."""
    found = legal_afterstates(states, dice, rules)
    targets = TurnTargets(found)
    need = turn_need(found, dice)
    n = states.shape[0]
    ends: list[set[bytes]] = [set() for _ in range(n)]
    # A frontier node: (position index, state, dice left, heads used, moves played).
    pos = np.arange(n)
    st = states.copy()
    left = dice_left(dice)
    heads = np.zeros(n, dtype=np.int64)
    played = np.zeros(n, dtype=np.int64)
    first = states[:, HEAD_INDEX] == NUM_CHECKERS
    while pos.size:
        opts = checker_options(st, dice[pos], left, heads, first[pos], played, need[pos], targets, pos, rules)
        assert opts.mask.any(axis=1).all(), "a partial play with no allowed move"
        node, action = np.nonzero(opts.mask)
        child = opts.results[node, action]
        passing = action == PASS_ACTION
        die = np.where(passing, 0, action % 6 + 1)
        source = np.where(passing, 0, action // 6 + 1)
        c_left = left[node].copy()
        moving = np.flatnonzero(~passing)
        c_left[moving, die[moving] - 1] -= 1
        c_heads = heads[node] + (source == HEAD_INDEX + 1)
        c_played = played[node] + ~passing
        c_pos = pos[node]
        complete = passing | (c_played >= need[c_pos]) | (child[:, OFF_MOVER] == NUM_CHECKERS)
        for i in np.flatnonzero(complete):
            ends[c_pos[i]].add(child[i].tobytes())
        go = np.flatnonzero(~complete)
        seen: dict[tuple, int] = {}
        for i in go:
            key = (int(c_pos[i]), child[i].tobytes(), c_left[i].tobytes(), int(c_heads[i]))
            seen.setdefault(key, int(i))
        keep = np.array(sorted(seen.values()), dtype=np.int64)
        pos, st, left, heads, played = c_pos[keep], child[keep], c_left[keep], c_heads[keep], c_played[keep]
    return ends


def turn_end_sets(states: np.ndarray, dice: np.ndarray, rules: Rules = DEFAULT_RULES) -> list[set[bytes]]:
    found = legal_afterstates(states, dice, rules)
    return [
        {row.tobytes() for row in found.states[found.offsets[i]:found.offsets[i + 1]]}
        for i in range(states.shape[0])
    ]


def random_game_positions(n_games: int, rng: np.random.Generator, rules: Rules = DEFAULT_RULES) -> np.ndarray:
    """Every position of ``n_games`` random games (mover's view), start and end included."""
    states = initial_states(n_games)
    _, dice = opening_roll(rng, n_games, rules)
    seen = [states.copy()]
    active = np.arange(n_games)
    while active.size:
        found = legal_afterstates(states[active], dice[active], rules)
        counts = found.counts()
        pick = found.offsets[:-1] + (rng.random(active.size) * counts).astype(np.int64)
        after = found.states[pick]
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        states[active] = flip(after)
        seen.append(states[active[~over]].copy())
        active = active[~over]
        dice[active] = roll_dice(rng, active.size)
    return np.concatenate(seen)


def assert_same_ends(states: np.ndarray, dice: np.ndarray, rules: Rules = DEFAULT_RULES) -> None:
    by_checker = checker_end_sets(states, dice, rules)
    by_turn = turn_end_sets(states, dice, rules)
    for i, (c, t) in enumerate(zip(by_checker, by_turn, strict=True)):
        assert c == t, (
            f"position {states[i].tolist()} dice {dice[i].tolist()}: checker mode reaches "
            f"{len(c)} end positions, turn mode {len(t)}; only by checker: {len(c - t)}, only by turn: {len(t - c)}"
        )


def test_action_layout_round_trips():
    for source in range(1, 25):
        for die in range(1, 7):
            assert checker_move(checker_action(source, die)) == (source, die)
    assert PASS_ACTION == NUM_CHECKER_ACTIONS - 1 == 144
    assert checker_move(PASS_ACTION) == (0, 0)


def test_same_end_positions_on_positions_from_random_games():
    rng = np.random.default_rng(20260)
    positions = random_game_positions(60, rng)
    assert positions.shape[0] >= 5000
    pick = rng.choice(positions.shape[0], size=5000, replace=False)
    states = positions[pick]
    dice = roll_dice(rng, states.shape[0])
    # Doubles are where partial plays branch most: give a third of the positions one.
    doubles = rng.random(states.shape[0]) < 1 / 3
    dice[doubles, 1] = dice[doubles, 0]
    assert_same_ends(states, dice)


def test_same_end_positions_for_every_roll_in_bear_off_and_late_positions():
    rng = np.random.default_rng(7)
    positions = random_game_positions(6, rng)
    late = positions[(positions[:, :6] > 0).sum(axis=1) >= 3]  # several home points held: bearing off
    late = late[rng.choice(late.shape[0], size=min(60, late.shape[0]), replace=False)]
    states = np.repeat(late, len(ALL_ROLLS), axis=0)
    dice = np.tile(ALL_ROLLS, (late.shape[0], 1))
    assert_same_ends(states, dice)


@pytest.mark.parametrize("rules", [Rules(), Rules(head_exception=()), Rules(block_rule="home")], ids=str)
def test_same_end_positions_for_every_roll_from_the_first_turns(rules):
    # The second player's first turn (all 15 on the head), where the head exception lives;
    # a non-double's last die must not borrow it.
    start = initial_states(1)
    after_first = []
    for roll in ALL_ROLLS:
        found = legal_afterstates(start, roll[None], rules)
        after_first.extend(flip(found.states))
    states = np.concatenate([np.repeat(start, len(ALL_ROLLS), axis=0),
                             np.repeat(np.array(after_first), len(ALL_ROLLS), axis=0)])
    dice = np.tile(ALL_ROLLS, (states.shape[0] // len(ALL_ROLLS), 1))
    assert_same_ends(states, dice, rules)


def test_non_double_on_the_first_turn_takes_one_checker_from_the_head():
    start = initial_states(1)
    ends = checker_end_sets(start, np.array([[6, 3]]))[0]
    heads = {np.frombuffer(e, dtype=np.int8)[HEAD_INDEX] for e in ends}
    assert heads == {14}


def test_blocked_turn_allows_only_the_pass():
    state, _ = parse_npn(npn({24: 15}, {23: 3, 22: 3, 21: 3, 20: 3, 19: 3}))
    dice = np.array([[2, 1]])
    found = legal_afterstates(state[None], dice)
    opts = checker_options(state[None], dice, dice_left(dice), [0], [True], [0], turn_need(found, dice),
                           TurnTargets(found), [0])
    assert np.flatnonzero(opts.mask[0]).tolist() == [PASS_ACTION]
    assert (opts.results[0, PASS_ACTION] == state).all()


def test_one_playable_die_must_be_the_larger():
    # All white checkers on the head: one may leave. 24->19 (5) and 24->21 (3) are open,
    # but both go on to 16, which black holds: one die only, and it must be the 5.
    state, _ = parse_npn(npn({24: 15}, {16: 3, 13: 3, 12: 9}))
    dice = np.array([[5, 3]])
    found = legal_afterstates(state[None], dice)
    need = turn_need(found, dice)
    assert need.tolist() == [1]
    opts = checker_options(state[None], dice, dice_left(dice), [0], [True], [0], need, TurnTargets(found), [0])
    assert {checker_move(a) for a in np.flatnonzero(opts.mask[0])} == {(24, 5)}
    assert checker_end_sets(state[None], dice)[0] == turn_end_sets(state[None], dice)[0]

"""The batched core against the plain reference (tests/reference.py), position by position.

Positions come from random games (both sides, first turns included) and from
generators that stress blocks and bearing off; every roll's set of results must
be equal, and every move sequence the core reports must reach its result.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nardy_env import (
    DEFAULT_RULES,
    Color,
    Rules,
    flip,
    format_npn,
    initial_states,
    legal_afterstates,
    parse_npn,
)
from nardy_env.core import HALF, NUM_POINTS
from nardy_env.game import opening_roll, roll_dice
from tests.reference import reference_turn

ALL_DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]


def random_game_positions(games: int, seed: int) -> list[tuple[np.ndarray, Color, tuple[int, int]]]:
    """(state, side, dice) of every turn of random games."""
    rng = np.random.default_rng(seed)
    states = initial_states(games)
    first, dice = opening_roll(rng, games)
    side = first.astype(np.int64)
    out = []
    active = np.arange(games)
    while active.size:
        for g in active:
            out.append((states[g].copy(), Color(int(side[g])), (int(dice[g, 0]), int(dice[g, 1]))))
        found = legal_afterstates(states[active], dice[active])
        pick = found.offsets[:-1] + (rng.random(active.size) * found.counts()).astype(np.int64)
        after = found.states[pick]
        over = after[:, 24] == 15
        states[active] = flip(after)
        side[active] = 1 - side[active]
        active = active[~over]
        dice[active] = roll_dice(rng, active.size)
    return out


def _place(state: np.ndarray, rng: np.random.Generator, count: int, sign: int, allowed: np.ndarray) -> None:
    """Put ``count`` checkers of one side on random free points among ``allowed`` indices."""
    for _ in range(count):
        free = [i for i in allowed if state[i] * sign > 0 or state[i] == 0]
        i = int(rng.choice(free))
        state[i] += sign


def stress_position(rng: np.random.Generator, kind: str) -> np.ndarray:
    """A valid mover's-view state built to exercise blocks or bearing off."""
    while True:
        s = np.zeros(26, dtype=np.int8)
        if kind == "block":
            # Five (sometimes six) of the mover's points in a row along the
            # opponent's route, the rest scattered; opponent checkers sometimes
            # ahead, sometimes all behind, sometimes borne off.
            start = int(rng.integers(0, NUM_POINTS - 5))
            run = [(start + k + HALF) % NUM_POINTS for k in range(int(rng.integers(4, 7)))]
            for i in run:
                s[i] = 1
            gap = (start + len(run) + HALF) % NUM_POINTS
            mine_left = 15 - len(run)
            s[24] = int(rng.integers(0, 3)) if rng.random() < 0.2 else 0
            mine_left -= s[24]
            behind = [(r + HALF) % NUM_POINTS for r in range(start + len(run) + 1, NUM_POINTS)]
            ahead = [(r + HALF) % NUM_POINTS for r in range(0, start)]
            opp_total = 15
            if rng.random() < 0.2:
                s[25] = int(rng.integers(1, 4))
                opp_total -= s[25]
            opp_ahead = int(rng.integers(0, 3)) if ahead and rng.random() < 0.5 else 0
            opp_ahead = min(opp_ahead, opp_total)
            if opp_ahead:
                _place(s, rng, opp_ahead, -1, np.array(ahead))
            where_opp = np.array(behind if behind else [gap])
            where_opp = where_opp[where_opp != gap] if where_opp.size > 1 else where_opp
            _place(s, rng, opp_total - opp_ahead, -1, where_opp)
            _place(s, rng, mine_left, 1, np.array([i for i in range(NUM_POINTS) if s[i] >= 0]))
        elif kind == "bearoff":
            s[24] = int(rng.integers(0, 15))
            mine = 15 - s[24]
            outside = int(rng.integers(0, 2)) if rng.random() < 0.4 else 0
            outside = min(outside, mine)
            if outside:
                _place(s, rng, outside, 1, np.arange(6, 10))
            _place(s, rng, mine - outside, 1, np.arange(0, 6))
            s[25] = int(rng.integers(0, 15))
            _place(s, rng, 15 - s[25], -1, np.array([i for i in range(NUM_POINTS) if s[i] <= 0]))
        else:
            s[24] = int(rng.integers(0, 6)) if rng.random() < 0.3 else 0
            s[25] = int(rng.integers(0, 6)) if rng.random() < 0.3 else 0
            _place(s, rng, 15 - s[24], 1, np.arange(NUM_POINTS))
            _place(s, rng, 15 - s[25], -1, np.array([i for i in range(NUM_POINTS) if s[i] <= 0]))
        if (np.where(s[:24] > 0, s[:24], 0).sum() + s[24]) == 15 and (np.where(s[:24] < 0, -s[:24], 0).sum() + s[25]) == 15:
            return s


def _apply(npn: str, moves: list[list[int]]) -> str:
    """Apply common-numbered moves for the side to move, naively (no legality)."""
    fields = npn.split(":")
    cells = [int(x) for x in fields[0].split(",")]
    offs = [int(x) for x in fields[1].split(",")]
    sign = 1 if fields[2] == "w" else -1
    for src, dst in moves:
        cells[src - 1] -= sign
        if dst == 0:
            offs[0 if sign > 0 else 1] += 1
        else:
            cells[dst - 1] += sign
    return f"{','.join(map(str, cells))}:{offs[0]},{offs[1]}:{'b' if sign > 0 else 'w'}"


def check(cases: list[tuple[np.ndarray, Color, tuple[int, int]]], rules: Rules = DEFAULT_RULES) -> int:
    """Compare core and reference on every case; returns how many were compared."""
    from nardy_env import to_common_point

    states = np.stack([c[0] for c in cases])
    dice = np.array([c[2] for c in cases])
    found = legal_afterstates(states, dice, rules)
    flipped = flip(found.states)
    for k, (state, side, (d1, d2)) in enumerate(cases):
        npn = format_npn(state, side)
        sl = slice(found.offsets[k], found.offsets[k + 1])
        # validate=False: a malformed state would not match the reference's strings anyway.
        results = [format_npn(s, side.other, validate=False) for s in flipped[sl]]
        core = set(results)
        ref, used = reference_turn(npn, d1, d2, head_exception=rules.head_exception, block_rule=rules.block_rule)
        assert core == ref, (
            f"{npn} dice {d1}-{d2}: core has {len(core)} results, reference {len(ref)}; "
            f"only core: {sorted(core - ref)[:3]}, only reference: {sorted(ref - core)[:3]}"
        )
        common = to_common_point(found.moves[sl], side).tolist()  # every move of the segment at once
        for row, result in zip(range(sl.start, sl.stop), results, strict=True):
            n = int(found.num_moves[row])
            moves = common[row - sl.start][:n]
            assert _apply(npn, moves) == result
            if found.states[row, 24] < 15:
                assert n == used, (npn, d1, d2, moves)
    return len(cases)


def test_random_games_match_the_reference():
    cases = random_game_positions(40, seed=101)
    assert len(cases) >= 3000
    assert check(cases) == len(cases)


def test_every_first_turn_roll_matches_the_reference():
    first = initial_states(1)[0]
    second, _ = parse_npn("0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b")
    cases = [(s, c, d) for s, c in ((first, Color.WHITE), (first, Color.BLACK), (second, Color.BLACK))
             for d in ALL_DICE]
    check(cases)
    check(cases, Rules(opening="reroll", head_exception=()))


@pytest.mark.parametrize("kind, count, seed", [("block", 1200, 1), ("bearoff", 1000, 2), ("scatter", 600, 3)])
def test_generated_positions_match_the_reference(kind, count, seed):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        state = stress_position(rng, kind)
        d = ALL_DICE[int(rng.integers(36))]
        cases.append((state, Color(int(rng.integers(2))), d))
    check(cases)


@pytest.mark.parametrize("rules", [Rules(block_rule="home"), Rules(head_exception=()), Rules(head_exception=(6,))],
                         ids=["block-home", "no-head-exception", "head-exception-6"])
def test_variants_match_the_reference(rules):
    rng = np.random.default_rng(7)
    cases = [(stress_position(rng, "block"), Color(int(rng.integers(2))), ALL_DICE[int(rng.integers(36))])
             for _ in range(300)]
    cases += random_game_positions(3, seed=8)[:300]
    check(cases, rules)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["block", "bearoff", "scatter"]),
       d1=st.integers(1, 6), d2=st.integers(1, 6), white=st.booleans())
def test_hypothesis_positions_match_the_reference(seed, kind, d1, d2, white):
    state = stress_position(np.random.default_rng(seed), kind)
    check([(state, Color.WHITE if white else Color.BLACK, (d1, d2))])


def test_the_roll_with_the_most_results_known_matches_the_reference():
    # docs/rules.md's record (2140 results): far more than random play ever meets.
    state, side = parse_npn("0,0,1,1,0,1,1,0,1,1,0,1,1,0,1,1,0,1,1,1,0,1,1,-15:0,0:w")
    assert check([(state, side, (1, 1))]) == 1


JIT_OFF = """
import hashlib, sys
import numpy as np
import nardy_env as ne
from tests.nardy_env.test_against_reference import random_game_positions
pos = random_game_positions(1, seed=3)[:60]
states, dice = np.stack([s for s, _, _ in pos]), np.array([d for _, _, d in pos])
found = ne.legal_afterstates(states, dice, threads=int(sys.argv[1]))
print(hashlib.sha256(found.states.tobytes() + found.moves.tobytes() + found.offsets.tobytes()).hexdigest())
bad = np.zeros((1, 26), dtype=np.int8)
bad[0, 0:9], bad[0, 20] = 15, -15  # 135 of the mover's checkers: int8 sums wrap past 127
try:
    ne.legal_afterstates(bad, np.array([[1, 2]]), validate=False)
except ne.StateError as err:
    print(err)
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_with_numbas_jit_off_the_core_plays_the_same_without_a_warning(threads):
    """NUMBA_DISABLE_JIT=1 (to step through the core in a debugger) runs the same code as Python: its
    hash once warned of overflow at every call (numpy's uint64 scalars, where compiled code wraps)
    and its bounds check summed int8 and let 135 checkers through."""
    import hashlib
    import os
    import subprocess
    import sys

    pos = random_game_positions(1, seed=3)[:60]
    states, dice = np.stack([s for s, _, _ in pos]), np.array([d for _, _, d in pos])
    found = legal_afterstates(states, dice, threads=threads)
    want = hashlib.sha256(found.states.tobytes() + found.moves.tobytes() + found.offsets.tobytes()).hexdigest()
    out = subprocess.run([sys.executable, "-W", "error", "-c", JIT_OFF, str(threads)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.splitlines() == [want, "state 0: the mover has 135 checkers on board plus off, not 15 "
                                       "(validate=False skips the other checks, not the bounds the compiled "
                                       "code needs)"]

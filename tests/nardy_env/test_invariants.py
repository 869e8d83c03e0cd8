"""Invariants of the rules core over many random games."""

from __future__ import annotations

import numpy as np
import pytest

from nardy_env import (
    NUM_CHECKERS,
    OFF_MOVER,
    Afterstates,
    StateError,
    flip,
    initial_states,
    legal_afterstates,
    legal_continuations,
    outcome,
    pip_counts,
    validate_states,
)
from nardy_env.encoding import features, raw_positions
from nardy_env.game import opening_roll, roll_dice


def _random_games(n: int, seed: int):
    """Yield (states, dice, afterstates) per ply of n random games played in lockstep."""
    rng = np.random.default_rng(seed)
    states = initial_states(n)
    _, dice = opening_roll(rng, n)
    active = np.arange(n)
    plies = 0
    while active.size:
        found = legal_afterstates(states[active], dice[active])
        yield states[active].copy(), dice[active].copy(), found
        counts = found.counts()
        pick = found.offsets[:-1] + (rng.random(active.size) * counts).astype(np.int64)
        after = found.states[pick]
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        states[active] = flip(after)
        active = active[~over]
        dice[active] = roll_dice(rng, active.size)
        plies += 1
        assert plies < 2000, "a game did not end"


@pytest.fixture(scope="module")
def plies():
    return list(_random_games(300, seed=11))


def test_every_game_ends_with_a_winner(plies):
    # _random_games asserts termination; the last ply ends the last game.
    last_states, _, found = plies[-1]
    assert (found.states[:, OFF_MOVER] == NUM_CHECKERS).any()


def test_fifteen_checkers_per_side_in_every_afterstate(plies):
    for _, _, found in plies:
        validate_states(found.states)


def test_opponent_checkers_never_move_during_the_movers_turn(plies):
    for states, _, found in plies:
        before = np.repeat(states, found.counts(), axis=0)
        theirs_before = np.where(before[:, :24] < 0, before[:, :24], 0)
        theirs_after = np.where(found.states[:, :24] < 0, found.states[:, :24], 0)
        assert (theirs_before == theirs_after).all()
        assert (before[:, 25] == found.states[:, 25]).all()


def test_results_are_distinct_and_sorted(plies):
    for _, _, found in plies:
        for i in range(len(found.offsets) - 1):
            rows = found.states[found.offsets[i]:found.offsets[i + 1]]
            keys = [tuple(r) for r in rows.tolist()]
            assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_dice_used_is_at_most_the_roll(plies):
    for _, dice, found in plies:
        per = np.repeat(np.where(dice[:, 0] == dice[:, 1], 4, 2), found.counts())
        assert (found.num_moves <= per).all()
        # All results of one position play the same number of dice, unless the game ended.
        for i in range(len(found.offsets) - 1):
            sl = slice(found.offsets[i], found.offsets[i + 1])
            ongoing = found.states[sl, OFF_MOVER] < NUM_CHECKERS
            assert len(set(found.num_moves[sl][ongoing].tolist())) <= 1


def test_pass_only_when_no_single_die_can_be_played(plies):
    checked = 0
    for states, dice, found in plies:
        passes = np.flatnonzero((found.counts() == 1) & (found.num_moves[found.offsets[:-1]] == 0))
        for i in passes:
            assert (found.states[found.offsets[i]] == states[i]).all()
            for die in set(dice[i].tolist()):
                single = legal_continuations(states[i], [die, die], 1, 0, 1)
                assert single.num_moves.max() == 0
            checked += 1
    assert checked > 0  # random games do produce passes


def test_outcome_is_zero_until_the_end(plies):
    for states, _, _ in plies:
        assert (outcome(states) == 0).all()


def test_threads_do_not_change_results():
    rng = np.random.default_rng(5)
    plies = list(_random_games(40, seed=3))
    states = np.concatenate([s for s, _, _ in plies])
    dice = roll_dice(rng, len(states))
    one = legal_afterstates(states, dice, threads=1)
    two = legal_afterstates(states, dice, threads=2)
    for a, b in zip(one, two, strict=True):
        assert (a == b).all()
    # legal_continuations too, and its unchecked path (the checker-mode env's) gives the same.
    n = len(states)
    faces = np.stack([dice[:, 0], dice[:, 0]], axis=1)
    args = (states, faces, np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64))
    checked = legal_continuations(*args, threads=1)
    assert n >= 512 and checked.counts().sum() > n
    for other in (legal_continuations(*args, threads=2), legal_continuations(*args, validate=False, threads=2)):
        for a, b in zip(checked, other, strict=True):
            assert (a == b).all()


def test_unchecked_calls_still_refuse_what_would_read_outside_the_arrays():
    # validate=False skips the checks of the contents, not of the shapes and the dice's range:
    # the compiled code does not check bounds, and these crashed the interpreter (a segfault).
    states = initial_states(600)
    dice = np.full((600, 2), 3)
    one = np.ones(600, dtype=np.int64)
    with pytest.raises(StateError, match=r"dice must have shape \[600, 2\].*\[1, 2\]"):
        legal_afterstates(states, [[6, 6]], validate=False)
    with pytest.raises(StateError, match=r"states must have shape"):
        legal_afterstates(states[:, :10], dice, validate=False)
    for bad in (-2, 0, 7):
        with pytest.raises(StateError, match=rf"dice must be integers 1..6, got \[\[{bad}, {bad}\]\]"):
            legal_afterstates(states, np.full((600, 2), bad), validate=False)
    with pytest.raises(StateError, match=r"dice_left must have one entry per position \(600\), got shape \[1\]"):
        legal_continuations(states, dice, 4, 0, 1, validate=False)
    with pytest.raises(StateError, match=r"head_limit must have one entry per position"):
        legal_continuations(states, dice, 4 * one, 0 * one, one[:5], validate=False)
    with pytest.raises(StateError, match=r"dice_left must be 1..4, got 9..9"):
        legal_continuations(states, dice, 9 * one, 0 * one, one, validate=False)
    with pytest.raises(StateError, match=r"dice_left must be at most 2 for two different dice"):
        legal_continuations(states, np.tile([6, 5], (600, 1)), 3 * one, 0 * one, one, validate=False)
    # Contents the compiled code cannot hold: 20 single checkers to move overran its scratch space
    # (glibc aborted the process), 20 on a point its packed keys (a made-up result).
    many = np.zeros((2, 26), dtype=np.int8)
    many[:, 23], many[:, 25] = -1, 14  # the opponent: one checker left
    many[1, :20] = 1
    many[0, 22] = 15
    whose = r"state 1: the mover has 20 checkers on board plus off, not 15 \(validate=False skips the other"
    for rows, message in ((many, whose),
                          (np.where(np.arange(26) == 22, 20, many[0])[None], r"state 0: point 23 holds 20")):
        with pytest.raises(StateError, match=message):
            legal_afterstates(rows, [[1, 1]] * len(rows), validate=False)
        with pytest.raises(StateError, match=message):
            legal_continuations(rows, [[1, 1]] * len(rows), [4] * len(rows), [0] * len(rows), [1] * len(rows),
                                validate=False)
    wide = initial_states(1).astype(np.int16)
    wide[0, 24] = 271  # the cast to int8 would make it 15, a finished game
    with pytest.raises(StateError, match=r"states hold -15..271"):
        legal_afterstates(wide, [[6, 5]], validate=False)
    with pytest.raises(StateError, match=r"states must be integers, got dtype float64"):
        legal_afterstates(initial_states(1).astype(float), [[6, 5]], validate=False)
    for roll in ([[3.7, 1.2]], [[6.0, 5.0]], [[True, True]]):  # 3.7 was played as 3; floats refused as checked
        with pytest.raises(StateError, match=r"dice must be integers 1..6, got dtype (float64|bool)"):
            legal_afterstates(initial_states(1), roll, validate=False)
    start = initial_states(1)
    for counters, name in ((([2.9], [0], [1]), "dice_left"), (([2], [True], [1]), "heads_used"),
                           (([2], [0], ["1"]), "head_limit"), (([2], [0], [None]), "head_limit")):
        with pytest.raises(StateError, match=rf"{name} must be integers, got dtype"):  # 2.9 was played as 2
            legal_continuations(start, [[6, 5]], *counters, validate=False)
    opponent_wide = many[:1].copy()
    opponent_wide[0, 23] = -20
    with pytest.raises(StateError, match=r"state 0: point 24 holds -20; a point holds -15..15"):
        legal_afterstates(opponent_wide, [[1, 1]], validate=False)
    off_wide = many[:1].copy()
    off_wide[0, 25] = 16
    with pytest.raises(StateError, match=r"state 0: borne-off counts must be 0..15, got \[0, 16\]"):
        legal_afterstates(off_wide, [[1, 1]], validate=False)
    # and right arguments give what the checked call gives
    unchecked = legal_continuations(states, dice, 4 * one, 0 * one, one, validate=False)
    for a, b in zip(unchecked, legal_continuations(states, dice, 4, 0, 1), strict=True):
        assert (a == b).all()


def test_bad_states_and_dice_raise_clear_errors():
    from nardy_env import Rules

    good = initial_states(1)
    with pytest.raises(StateError, match="shape"):
        legal_afterstates(good[:, :20], [[6, 5]])
    with pytest.raises(StateError, match="dice"):
        legal_afterstates(good, [[7, 1]])
    with pytest.raises(StateError, match="dice must have shape"):
        legal_afterstates(good, [[6, 5], [1, 1]])
    bad = good.copy()
    bad[0, 0] = 1
    with pytest.raises(StateError, match="mover has 16 checkers"):
        legal_afterstates(bad, [[6, 5]])
    with pytest.raises(StateError, match="signed integers"):
        legal_afterstates(good.astype(np.uint8), [[6, 5]])  # -15 read as 241
    with pytest.raises(StateError, match="26 columns"):
        flip(np.zeros((2, 30), dtype=np.int8))
    # Ranges are checked before any cast, which would wrap a large count into range.
    wide = good.astype(np.int64)
    wide[0, 23] = 2**32 + 15
    with pytest.raises(StateError, match="state 0: point 24 holds 4294967311; a point holds -15..15"):
        legal_afterstates(wide, [[6, 5]])
    wide = good.astype(np.uint64)
    wide[0, 24] = 2**32 + 1
    with pytest.raises(StateError, match="signed integers|borne-off counts must be 0..15"):
        validate_states(wide)
    wide = good.astype(np.int64)
    wide[0, 24] = 2**32
    with pytest.raises(StateError, match=r"borne-off counts must be 0..15, got \[4294967296, 0\]"):
        validate_states(wide)
    # The cheap helpers check shape and dtype: a uint8 -15 would read as 241, a width 50 row as garbage.
    for helper in (flip, outcome, pip_counts):
        with pytest.raises(StateError, match="signed integers"):
            helper(good.astype(np.uint8))
        with pytest.raises(StateError, match="26 columns"):
            helper(np.zeros((3, 5), dtype=np.int8))
    with pytest.raises(StateError, match="26 columns"):
        raw_positions(np.zeros((2, 50), dtype=np.int8))
    with pytest.raises(StateError, match="signed integers"):  # 241 of the mover's, none of the opponent's
        raw_positions(good.astype(np.uint8))
    # Features are of checker counts: a network would score anything else as if it meant something.
    raw = raw_positions(good)
    for value in (0.5, -1.0, 16.0, np.nan):
        bad = np.concatenate([raw, raw])
        bad[1, 30] = value
        with pytest.raises(ValueError, match=rf"row 1, column 30 holds {value}"):
            features(bad)
    batched = np.stack([np.concatenate([raw, raw])] * 3)  # [3, 2, 50]: the row named as the caller indexes it
    batched[2, 1, 7] = 0.5
    with pytest.raises(ValueError, match=r"row 2, 1, column 7 holds 0.5"):
        features(batched)
    for width in (26, 60):
        with pytest.raises(ValueError, match="raw positions must have 50 columns"):
            features(np.zeros((2, width), dtype=np.float32))
    with pytest.raises(ValueError, match="checker counts, not True/False"):
        features(raw > 0)  # a mask would be scored as one checker on each held point
    for value, column in ((14.99999999, 3), (1e-46, 7)):  # float32 would round them to counts, 15 and 0
        near = np.repeat(raw[:1], 3, axis=0).astype(np.float64)
        near[2, column] = value
        with pytest.raises(ValueError, match=rf"row 2, column {column} holds {value}"):
            features(near)
    assert np.array_equal(features(raw.astype(np.float64)), features(raw))  # whole counts as float64 play
    # Both sides with all 15 off is no position: outcome and the network's known outcomes disagreed on it.
    both_off = np.zeros((1, 26), dtype=np.int8)
    both_off[0, 24:] = NUM_CHECKERS
    validate_states(both_off)  # FORMATS.md's readers take it (test_notation round-trips it) ...
    with pytest.raises(StateError, match="state 1: both sides have borne off all 15.*no result"):
        outcome(np.concatenate([good[:1], both_off]))  # ... but it has no result
    wide = np.zeros((1, 26), dtype=np.int16)
    wide[0, 24] = 271  # unchecked counts are not cast to int8 first, where 271 wraps to a won game (+2)
    assert outcome(wide).tolist() == [0]
    for dice in (["6", "5"], [6.0, 5.0], [True, True], [True, 2], (np.True_, 3)):  # [True, 2] reads as ints
        with pytest.raises(StateError, match="dice must be integers 1..6"):
            legal_afterstates(good, [dice])
    # Rules as a dict of variant keys, as the environments take them; other things are named.
    as_dict = legal_afterstates(good, [[6, 6]], {"head_exception": []})
    assert (as_dict.states == legal_afterstates(good, [[6, 6]], Rules(head_exception=())).states).all()
    assert as_dict.states[0, 23] == 14  # one checker off the head, not the default's two
    with pytest.raises(TypeError, match="rules must be a Rules object or a dict"):
        legal_afterstates(good, [[6, 5]], "home")
    # Nested lists of unequal lengths are named, not numpy's "inhomogeneous shape".
    with pytest.raises(StateError, match=r"states must be a rectangular array of numbers \(rows of equal length\)"):
        validate_states([[0] * 26, [0] * 25])
    with pytest.raises(StateError, match=r"states must be a rectangular array of numbers \(rows of equal length\)"):
        flip([[0] * 26, [0] * 25])
    with pytest.raises(StateError, match=r"dice must be a rectangular array of numbers"):
        legal_afterstates(initial_states(3), [[1, 2], [3, 4], [5]])
    with pytest.raises(StateError, match="a row mixed with numbers"):
        validate_states([[0] * 26, 5])

    class Refuses:  # an array-like's own ValueError is its own, not a ragged list
        def __array__(self, dtype=None, copy=None):
            raise ValueError("the device is busy")

    with pytest.raises(ValueError, match="the device is busy"):
        validate_states(Refuses())
    for n in (-1, 2.0, True, None):
        with pytest.raises(ValueError, match="n must be a whole number, 0 or more"):
            initial_states(n)  # type: ignore[arg-type]
    assert initial_states(np.int64(2)).shape == (2, 26) and initial_states(0).shape == (0, 26)


def test_continuing_a_non_double_never_grants_the_head_exception():
    # First turn, 6-3 after 24/18: the 3 left is passed as [3, 3] but is not a double.
    from nardy_env import Rules, turn_head_limit

    start = initial_states(1)
    assert turn_head_limit(start, np.array([[6, 3]])).tolist() == [1]
    assert turn_head_limit(start, np.array([[6, 6]])).tolist() == [2]
    assert turn_head_limit(start, np.array([[6, 6]]), Rules(head_exception=())).tolist() == [1]
    after = start.copy()
    after[0, 23] -= 1
    after[0, 17] += 1
    found = legal_continuations(after, [3, 3], 1, 1, turn_head_limit(start, np.array([[6, 3]])))
    assert (found.states[:, 23] == 14).all()  # no second checker off the head
    with pytest.raises(StateError, match="head_limit"):
        legal_continuations(after, [3, 3], 1, 1, 3)
    with pytest.raises(StateError, match="dice_left"):
        legal_continuations(after, [6, 3], 1, 1, 1)
    # The counts of a turn under way are checked, not read as whatever they convert to.
    with pytest.raises(StateError, match="heads_used must be 0..head_limit"):
        legal_continuations(after, [3, 3], 1, -5, 2)
    with pytest.raises(StateError, match="heads_used is more than the checkers that are off the head"):
        legal_continuations(after, [3, 3], 1, 2, 2)
    # A limit of 2 only where the first-turn exception can be (it once let two checkers off the head).
    midgame = start.copy()
    midgame[0, 23], midgame[0, 20] = 13, 2
    for state, dice, left in ((midgame, [6, 6], 4), (start, [6, 5], 2), (start, [5, 5], 4)):
        with pytest.raises(StateError, match="head_limit 2 is the first-turn exception"):
            legal_continuations(state, dice, left, 0, 2)
    assert legal_continuations(start, [6, 6], 4, 0, 2).states[0, 23] == 13  # the exception itself
    assert legal_continuations(after, [6, 6], 3, 1, 2).counts().sum() > 0  # one off, a second may follow
    for name, args in (("dice_left", (1.5, 1, 1)), ("heads_used", (1, 1.9, 1)), ("head_limit", (1, 1, 1.7))):
        with pytest.raises(StateError, match=f"{name} must be integers"):
            legal_continuations(after, [3, 3], *args)
    with pytest.raises(StateError, match="dice_left must be one integer or one per position"):
        legal_continuations(after, [3, 3], [1, 1], 1, 1)
    with pytest.raises(StateError, match="dice must be integers 1..6"):
        turn_head_limit(start, np.array([[-1, -1]]))


def test_strided_and_fortran_order_inputs_run_the_compiled_core_already_there():
    from nardy_env import core

    states = initial_states(16)
    dice = np.tile([[6, 5], [3, 3]], (8, 1))
    want = legal_afterstates(states, dice)
    compiled = len(core._generate.signatures)
    frozen = states.copy()
    frozen.setflags(write=False)  # as the env hands out its afterstates
    for s, d in ((states[::2], dice[::2]), (np.asfortranarray(states), np.asfortranarray(dice)),
                 (states, np.ascontiguousarray(np.tile(dice, 2))[:, ::2]), (frozen, dice)):
        got = legal_afterstates(s, d)
        assert got.counts().sum() > 0
    assert len(core._generate.signatures) == compiled  # no second compiled version (seconds each)
    assert np.array_equal(legal_afterstates(np.asfortranarray(states), dice).states, want.states)


def test_a_cgroup_cpu_quota_caps_the_cpus_the_core_uses(tmp_path, monkeypatch):
    from nardy_env import core

    def quota(files: dict[str, str]) -> int | None:
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        root.mkdir()
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return core.cgroup_cpu_quota(str(root))

    assert quota({"cpu.max": "200000 100000\n"}) == 2  # docker --cpus=2, cgroup v2
    assert quota({"cpu.max": "150000 100000\n"}) == 2  # 1.5 CPUs: rounded up
    assert quota({"cpu.max": "max 100000\n"}) is None and quota({}) is None
    assert quota({"cpu/cpu.cfs_quota_us": "100000", "cpu/cpu.cfs_period_us": "100000"}) == 1  # cgroup v1
    assert quota({"cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000"}) is None
    monkeypatch.setattr(core, "cgroup_cpu_quota", lambda: 1)
    assert core.available_cpus() == 1


def test_an_empty_batch_may_give_its_counters_as_empty_lists():
    from nardy_env.notation import to_common_point

    found = legal_continuations(np.zeros((0, 26), np.int8), np.zeros((0, 2), np.int64), [], [], [])
    assert found.counts().size == 0 and found.offsets.tolist() == [0]
    assert to_common_point([], 1).size == 0


def test_dice_helpers_name_a_wrong_generator_or_count():
    rng = np.random.default_rng(0)
    assert roll_dice(rng, 0).shape == (0, 2) and roll_dice(rng, np.int64(3)).shape == (3, 2)
    for helper in (roll_dice, opening_roll):
        for bad in (None, np.random.RandomState(0), 7):
            with pytest.raises(TypeError, match="rng must be a numpy Generator"):
                helper(bad, 2)
        for n in (-1, 2.5, True):
            with pytest.raises(ValueError, match="n must be a whole number, 0 or more"):
                helper(rng, n)


def test_afterstates_print_as_a_summary_not_their_arrays():
    found = legal_afterstates(initial_states(10), np.tile([[3, 3]], (10, 1)))
    text = repr(found)
    assert text == f"Afterstates(10 positions, {found.states.shape[0]} results; per position [2, 2, 2, 2, 2, 2, 2, 2, ...])"
    assert repr(legal_afterstates(initial_states(1), [[3, 3]])) == "Afterstates(1 position, 2 results; per position [2])"
    assert repr(Afterstates([], [], [], [0])) == "Afterstates(0 positions, 0 results; per position [])"  # lists too
    assert repr(legal_afterstates(initial_states(1), [[6, 5]])) == "Afterstates(1 position, 1 result; per position [1])"
    states, moves, num_moves, offsets = found  # still the named tuple it was
    assert offsets.tolist() == list(range(0, 21, 2))

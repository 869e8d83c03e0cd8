"""The baseline bots' documented preferences, on hand-built positions."""

from __future__ import annotations

import numpy as np
import pytest

from agents.bots import HeuristicBot, RaceBot, heuristic_values, race_values
from agents.common import segment_argmax
from nardy_env import legal_afterstates, parse_npn
from nardy_env.core import OFF_MOVER
from nardy_env.encoding import raw_positions
from tests.helpers import npn


def raw_of(*positions: str) -> np.ndarray:
    """Raw layout of positions seen by the side that just moved (the side NOT to move in the NPN)."""
    from nardy_env import flip

    return raw_positions(flip(np.stack([parse_npn(p)[0] for p in positions])))


def test_segment_argmax_takes_the_first_of_ties():
    values = np.array([1.0, 3.0, 3.0, 0.0, -1.0, -1.0])
    assert segment_argmax(values, np.array([0, 3, 4, 6])).tolist() == [1, 0, 0]


def test_race_prefers_fewer_pips():
    near = npn({5: 15}, {12: 15}, side="b")
    far = npn({6: 15}, {12: 15}, side="b")
    v = race_values(raw_of(near, far))
    assert v[0] > v[1]


def test_race_prefers_borne_off_checkers():
    # Equal pips (58) and no stacks: the afterstates differ only in the checker borne off.
    off = npn({6: 3, 5: 3, 4: 3, 3: 3, 2: 2}, {12: 15}, off=(1, 0), side="b")
    home = npn({6: 3, 5: 3, 4: 3, 3: 3, 2: 1, 1: 2}, {12: 15}, side="b")
    raw = raw_of(off, home)
    assert (raw[:, :24] @ np.arange(1, 25)).tolist() == [58, 58]
    v = race_values(raw)
    assert v[0] > v[1]


def test_race_prefers_few_tall_stacks_at_equal_pips():
    spread = npn({9: 3, 8: 3, 7: 3, 6: 3, 5: 3}, {12: 15}, side="b")
    stacked = npn({9: 1, 8: 6, 7: 1, 6: 6, 5: 1}, {12: 15}, side="b")
    v = race_values(raw_of(spread, stacked))
    assert v[0] > v[1]


@pytest.mark.parametrize("block, loose", [
    # White holds 10..5, or the same pips spread with its longest run four.
    ({24: 9, 10: 1, 9: 1, 8: 1, 7: 1, 6: 1, 5: 1}, {24: 9, 11: 1, 9: 1, 8: 1, 7: 1, 6: 1, 4: 1}),
    # A run of three (10..8), or the same pips on three points apart: no run at all.
    ({24: 12, 10: 1, 9: 1, 8: 1}, {24: 12, 11: 1, 9: 1, 7: 1}),
])
def test_heuristic_values_a_block_in_front_of_opponent_checkers(block, loose):
    # Equal pips, points held and stacks. With black's checkers behind the block (on its head,
    # 12) the block is worth more; with black's checkers all past it (home, on 18 and 17) it is
    # worth nothing, however long.
    behind = heuristic_values(raw_of(npn(block, {12: 14, 20: 1}, side="b"), npn(loose, {12: 14, 20: 1}, side="b")))
    assert behind[0] > behind[1]
    past = heuristic_values(raw_of(npn(block, {18: 14, 17: 1}, side="b"), npn(loose, {18: 14, 17: 1}, side="b")))
    assert past[0] == pytest.approx(past[1])


def test_heuristic_takes_checkers_off_the_head():
    # Early in the game, same pips (347), points held (two, a run of two each in front of black's
    # head) and stacks: one checker more off the head versus the same checkers moved further.
    off_head = {24: 12, 20: 2, 19: 1}
    stay = {24: 13, 18: 1, 17: 1}
    assert sum(p * n for p, n in off_head.items()) == sum(p * n for p, n in stay.items()) == 347
    v = heuristic_values(raw_of(npn(off_head, {12: 15}, side="b"), npn(stay, {12: 15}, side="b")))
    assert v[0] > v[1]


def test_heuristic_fears_an_opponent_block_in_front_of_its_checkers():
    # White's 15 wait on the head; black holds 23..18 in front of them, or the same pips with
    # four stacked on 23 (no block). Nothing but black's block differs for the heuristic.
    block = {23: 1, 22: 1, 21: 1, 20: 1, 19: 1, 18: 1, 12: 9}
    stacked = {23: 4, 18: 1, 13: 1, 12: 9}
    v = heuristic_values(raw_of(npn({24: 15}, stacked, side="b"), npn({24: 15}, block, side="b")))
    assert v[0] > v[1]
    # With white's checkers all past it (on 11), black's block is nothing to fear.
    v = heuristic_values(raw_of(npn({11: 15}, stacked, side="b"), npn({11: 15}, block, side="b")))
    assert v[0] == pytest.approx(v[1])


def test_heuristic_penalises_checkers_left_on_the_head_by_themselves():
    # Equal pips, points held, points in black's path, stacks and blocks (black's one checker,
    # on 13, has nothing in front of it): the afterstates differ only in checkers on the head.
    fewer = npn({24: 12, 18: 2, 12: 1}, {13: 1}, off=(0, 14), side="b")
    more = npn({24: 13, 14: 1, 10: 1}, {13: 1}, off=(0, 14), side="b")
    v = heuristic_values(raw_of(fewer, more))
    assert v[0] > v[1]


def test_heuristic_hurries_home_when_mars_threatens():
    # Black has 10 off; white has none off. Bringing a checker home beats a
    # move of the same length that stays outside.
    home = npn({6: 1, 8: 14}, {13: 5}, off=(0, 10), side="b")
    outside = npn({7: 1, 8: 13, 9: 1}, {13: 5}, off=(0, 10), side="b")
    v = heuristic_values(raw_of(home, outside))
    assert v[0] > v[1]


@pytest.mark.parametrize("position, dice", [
    # White, nothing off, all home; black, 9 off, two turns from done: 1-2 bears two off (or one).
    ("3,2,3,3,3,1,0,0,0,0,0,0,-3,-1,0,-1,0,-1,0,0,0,0,0,0:0,9:w", (1, 2)),
    ("3,3,3,3,3,0,0,0,0,0,0,0,-2,-2,-1,-1,-1,0,0,0,0,0,0,0:0,8:w", (2, 1)),
    # Black in the same danger (its home is 13 to 18).
    ("3,1,0,1,0,1,0,0,0,0,0,0,-3,-2,-3,-3,-3,-1,0,0,0,0,0,0:9,0:b", (1, 2)),
])
def test_heuristic_bears_off_to_escape_the_mars_when_it_can(position, dice):
    """Found by an endgame audit: the hurry home, worth 4 a checker home while nothing is off,
    was lost with the first checker off, so the bot moved inside home instead and was marsed."""
    state, _ = parse_npn(position)
    found = legal_afterstates(state[None], np.array([dice]))
    off = found.states[:, OFF_MOVER]  # the afterstates are the mover's view
    assert off.max() > 0  # some play bears a checker off
    pick = int(HeuristicBot().choose(state[None], found, np.random.default_rng(0))[0])
    assert off[pick] == off.max()


def test_bots_pick_their_best_valued_afterstate():
    state, _ = parse_npn(npn({24: 10, 20: 2, 16: 3}, {12: 13, 5: 2}))
    found = legal_afterstates(state[None], np.array([[4, 2]]))
    for bot, values in ((RaceBot(), race_values), (HeuristicBot(), heuristic_values)):
        pick = int(bot.choose(state[None], found, np.random.default_rng(0))[0])
        v = values(raw_positions(found.states))
        assert v[pick] == v.max()
        assert pick == int(np.argmax(v))  # the earliest of equal values


def test_segment_argmax_refuses_nan_instead_of_picking_from_another_segment():
    """NaN spread to its segment's max, so no element was 'best' and the pick fell into the next segment."""
    values = np.array([np.nan, np.nan, np.nan, 0.5, 0.2, 0.1, 0.1, 0.2, 0.3])
    for rank in (None, np.arange(9)):
        with pytest.raises(ValueError, match=r"value 0 \(segment 0\) is NaN"):
            segment_argmax(values, np.array([0, 3, 6, 9]), rank)
    values[:3] = -np.inf  # infinities are ordered: fine
    assert segment_argmax(values, np.array([0, 3, 6, 9])).tolist() == [0, 0, 2]


def test_segment_argmax_breaks_ties_by_the_given_rank():
    values = np.array([1.0, 3.0, 3.0, 0.0, -1.0, -1.0])
    rank = np.array([0, 2, 1, 0, 1, 0])
    assert segment_argmax(values, np.array([0, 3, 4, 6]), rank).tolist() == [2, 0, 1]



def test_bot_values_take_the_self_play_records_uint8_positions():
    # SelfPlayWorker.play records raw positions as uint8: "head - 1" and "stack - 3" wrapped there.
    from nardy_env import initial_states

    found = legal_afterstates(initial_states(1), [[6, 5]])
    raw = raw_positions(found.states)
    for values in (race_values, heuristic_values):
        expected = values(raw)
        for dtype in (np.uint8, np.int8, np.int64, np.float64):
            assert np.array_equal(values(raw.astype(dtype)), expected), (values.__name__, dtype)
        with pytest.raises(ValueError, match="not True/False"):
            values(raw > 0)
    both_off = raw[:1].copy()
    both_off[0, :48], both_off[0, 48:] = 0, 15
    with pytest.raises(ValueError, match="row 0: both sides have borne off all 15"):
        heuristic_values(both_off)


@pytest.mark.parametrize("bot", [HeuristicBot(), RaceBot()], ids=["heuristic", "race"])
def test_bots_score_a_large_batch_in_parts_with_the_same_scores_and_choices(bot, monkeypatch):
    import agents.bots
    from tests.nardy_env.test_against_reference import random_game_positions

    cases = random_game_positions(2, seed=4)
    states = np.stack([c[0] for c in cases])
    found = legal_afterstates(states, np.array([c[2] for c in cases]))
    whole = bot.values(raw_positions(found.states))
    seen: list[int] = []
    values = bot.values
    monkeypatch.setattr(bot, "values", lambda raw: seen.append(len(raw)) or values(raw))
    monkeypatch.setattr(agents.bots, "VALUE_ROWS", 97)  # a part boundary inside positions' afterstates
    assert np.array_equal(bot.equities(found), whole)
    assert max(seen) == 97 and sum(seen) == found.states.shape[0]
    picks = bot.choose(states, found, np.random.default_rng(0))
    assert np.array_equal(picks, segment_argmax(whole, found.offsets))


def test_every_bot_has_a_version_that_matches_record():
    """Match results name a bot's version (raised whenever its play changes); one without any
    would fail every match it plays."""
    from agents.bots import BOTS
    from nardy_env.players import RandomPlayer

    for bot in (RandomPlayer, *BOTS.values()):
        assert type(bot.version) is int and bot.version >= 1, bot
    assert HeuristicBot.version == 2  # bears off to escape a mars; its own blocks weigh 1 (2026-12-05)

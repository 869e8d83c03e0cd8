"""One named test per rule of RULES.md, on hand-built positions.

Positions are written in common numbering: white moves 24 -> 1 (home 1-6),
black 12 -> 1 -> 24 -> 13 (home 13-18).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from nardy_env import (
    DEFAULT_RULES,
    START_NPN,
    Rules,
    flip,
    initial_states,
    legal_afterstates,
    outcome,
    parse_npn,
)
from nardy_env.core import legal_continuations
from nardy_env.game import opening_roll
from tests.helpers import board, npn, off, plays, results

# The second player's first turn: white opened with 6-5 (24/18/13).
SECOND = npn({24: 14, 13: 1}, {12: 15}, side="b")


# --- RULES.md "Worked checks" -------------------------------------------------


@pytest.mark.parametrize("dice", [(6, 5), (3, 1)])
def test_worked_check_first_player_non_double_moves_one_checker(dice):
    out = plays(START_NPN, *dice)
    assert len(out) == 1
    assert len(out[0]["moves"]) == 2
    assert board(out[0]["result"])[24] == 14  # one checker left the head
    assert board(out[0]["result"])[24 - sum(dice)] == 1


def test_head_exception_second_player_6_6():
    out = plays(SECOND, 6, 6)
    assert len(out) == 1
    # Two checkers 24->18 (black: common 12 -> 6); the next 6 would land on
    # white's head, so only two dice are played.
    assert out[0]["moves"] == [[12, 6], [12, 6]]
    assert board(out[0]["result"])[6] == -2


def test_head_exception_second_player_4_4():
    out = plays(SECOND, 4, 4)
    assert len(out) == 1
    assert len(out[0]["moves"]) == 4
    assert board(out[0]["result"])[4] == -2  # two checkers to personal 16 = common 4
    assert board(out[0]["result"])[12] == -13


def test_head_exception_second_player_3_3():
    res = results(SECOND, 3, 3)
    assert len(res) == 2
    shapes = sorted(tuple(sorted((p, -v) for p, v in board(r).items() if v < 0 and p != 12)) for r in res)
    # {15, 21} personal = common {3, 9}; {18, 18} personal = common 6 twice.
    assert shapes == [((3, 1), (9, 1)), ((6, 2),)]
    assert all(len(p["moves"]) == 4 for p in plays(SECOND, 3, 3))


@pytest.mark.parametrize("face", [5, 2, 1])
def test_head_rule_other_doubles_on_first_turn_move_one_checker_four_times(face):
    out = plays(SECOND, face, face)
    assert len(out) == 1
    assert len(out[0]["moves"]) == 4
    assert board(out[0]["result"])[12] == -14
    assert all(m[0] != 12 for m in out[0]["moves"][1:])


# --- Movement ---------------------------------------------------------------


def test_checker_never_stops_on_an_opponent_point_but_passes_over():
    pos = npn({24: 14, 10: 1}, {12: 14, 7: 1})
    out = plays(pos, 3, 1)
    assert all(m[1] != 7 for p in out for m in p["moves"])
    # 10/9 9/6 jumps over black's checker on 7.
    assert any(board(p["result"]).get(6) == 1 and 10 not in board(p["result"]) for p in out)


def test_one_checker_takes_both_dice_only_through_an_open_point():
    blocked = npn({24: 14, 10: 1}, {12: 13, 7: 1, 4: 1})  # 10-3 and 10-6 both black
    assert all(board(r).get(1) != 1 for r in results(blocked, 6, 3))
    open_ = npn({24: 14, 10: 1}, {12: 14, 4: 1})  # 10-3 = 7 open
    assert any(board(r).get(1) == 1 for r in results(open_, 6, 3))


def test_double_is_played_four_times():
    pos = npn({24: 12, 20: 1, 16: 1, 8: 1}, {12: 15})
    out = plays(pos, 2, 2)
    assert out and all(len(p["moves"]) == 4 for p in out)


def test_head_rule_one_checker_leaves_the_head_after_the_first_turn():
    pos = npn({24: 14, 20: 1}, {12: 14, 19: 1})
    for dice in [(6, 5), (3, 3), (4, 4), (6, 6)]:
        from_head = [sum(1 for m in p["moves"] if m[0] == 24) for p in plays(pos, *dice)]
        assert from_head and max(from_head) == 1, (dice, from_head)  # one leaves; never two


def test_head_exception_needs_all_fifteen_on_the_head():
    # Black has 14 on its head and one checker out: 4-4 lets only one leave.
    pos = npn({24: 13, 13: 1, 19: 1}, {12: 14, 8: 1}, side="b")
    from_head = [sum(1 for m in p["moves"] if m[0] == 12) for p in plays(pos, 4, 4)]
    assert from_head == [1]


def test_head_exception_variant_empty_never_lets_two_leave():
    rules = Rules(head_exception=())
    out = plays(SECOND, 4, 4, rules)
    assert len(out) == 1
    # One checker 12 -> 8 -> 4; the next 4 lands on white's head; two dice played.
    assert out[0]["moves"] == [[12, 8], [8, 4]]


def test_head_exception_subset_variant_applies_only_to_listed_faces():
    rules = Rules(head_exception=(6,))
    assert len(plays(SECOND, 6, 6, rules)[0]["moves"]) == 2
    assert board(plays(SECOND, 6, 6, rules)[0]["result"])[6] == -2
    out = plays(SECOND, 3, 3, rules)
    assert len(out) == 1 and board(out[0]["result"])[12] == -14


def test_head_exception_applies_to_first_player_double_under_reroll_opening():
    # Under opening="reroll" the first player may roll 6-6 and the exception applies.
    out = plays(START_NPN, 6, 6, Rules(opening="reroll"))
    assert len(out) == 1
    assert board(out[0]["result"])[18] == 2 and board(out[0]["result"])[24] == 13


# --- Block rule ---------------------------------------------------------------

# White holds 9-8-7-6-5; a checker on 13 could complete 10-5 (six in a row of
# black's route) with a 3.
BLOCK_WHITE = {24: 9, 13: 1, 9: 1, 8: 1, 7: 1, 6: 1, 5: 1}


def _holds_block(result: str) -> bool:
    b = board(result)
    return all(b.get(p, 0) > 0 for p in range(5, 11))


def test_block_of_six_without_opponent_ahead_is_illegal():
    pos = npn(BLOCK_WHITE, {12: 15})
    res = results(pos, 3, 5)
    assert res and not any(_holds_block(r) for r in res)


def test_block_of_six_with_opponent_checker_ahead_is_legal():
    pos = npn(BLOCK_WHITE, {12: 14, 20: 1})  # black personal 8: past the block
    assert any(_holds_block(r) for r in results(pos, 3, 5))


def test_block_is_legal_once_the_opponent_has_borne_off():
    pos = npn(BLOCK_WHITE, {12: 14}, off=(0, 1))
    assert any(_holds_block(r) for r in results(pos, 3, 5))


def test_block_rule_applies_after_every_single_die():
    # 13/10 10/9 ends without a block but makes one after the first die; the
    # 1 cannot be played first (12 is black's head), so the play is illegal.
    pos = npn(BLOCK_WHITE, {12: 15})
    assert not any(board(r).get(9) == 2 and 13 not in board(r) for r in results(pos, 3, 1))
    ahead = npn(BLOCK_WHITE, {12: 14, 20: 1})
    assert any(board(r).get(9) == 2 and 13 not in board(r) for r in results(ahead, 3, 1))


def test_six_in_a_row_straddling_black_seam_12_13_is_allowed():
    # White completes common 15..10, which is black personal 3..1 and 24..22:
    # not six in a row of black's route.
    pos = npn({24: 5, 16: 1, 15: 1, 14: 1, 13: 1, 11: 1, 10: 5}, {20: 15})
    assert any(all(board(r).get(p, 0) > 0 for p in range(10, 16)) for r in results(pos, 4, 1))


def test_six_in_a_row_across_common_1_24_is_a_block_against_black():
    # Common 3,2,1,24,23,22 is black personal 15..10: consecutive on black's route.
    white = {24: 10, 23: 1, 2: 1, 1: 1, 6: 1, 20: 1}
    behind = npn(white, {12: 15})  # no black checker ahead of the block
    ahead = npn(white, {12: 14, 16: 1})  # black personal 4: ahead

    def makes(r):
        return all(board(r).get(p, 0) > 0 for p in (3, 2, 1, 24, 23, 22))

    assert not any(makes(r) for r in results(behind, 3, 2))
    assert any(makes(r) for r in results(ahead, 3, 2))


def test_six_in_a_row_straddling_white_seam_1_24_is_allowed_for_black():
    # Black moves 1 -> 24 (its personal 13 -> 12) and holds common 3..1 and
    # 24..21: white personal 3..1 and 24..21, not six in a row of white's route,
    # although no white checker is off or ahead of either part.
    black = {3: 1, 2: 1, 1: 2, 23: 1, 22: 1, 21: 1, 12: 8}
    pos = npn({13: 15}, black, side="b")
    seam = (3, 2, 1, 24, 23, 22, 21)
    assert any(all(board(r).get(p, 0) < 0 for p in seam) for r in results(pos, 1, 2))


def test_block_rule_home_variant_needs_an_opponent_checker_in_its_home():
    # Black checker at common 20 (black personal 8) is ahead of the block but not home.
    pos = npn(BLOCK_WHITE, {12: 14, 20: 1})
    home = Rules(block_rule="home")
    assert not any(_holds_block(r) for r in results(pos, 3, 5, home))
    in_home = npn(BLOCK_WHITE, {12: 14, 16: 1})  # black personal 4: home
    assert any(_holds_block(r) for r in results(in_home, 3, 5, home))


def test_block_rule_home_variant_counts_both_ends_of_the_opponents_home():
    home = Rules(block_rule="home")
    white = {24: 9, 15: 1, 9: 1, 8: 1, 7: 1, 6: 1, 5: 1}  # 15/10 completes 10-5
    for point, legal in ((13, True), (18, True), (19, False)):  # black personal 1, 6 (home), 7 (not)
        pos = npn(white, {12: 14, point: 1})
        assert any(_holds_block(r) for r in results(pos, 5, 3, home)) == legal, point


def test_block_touching_the_opponents_head_point_is_a_block():
    # White holds common 8-12 (black personal 20-24: up to black's head point) and 13; taking 7
    # makes a six-run 7-12 along black's route. Under "home" with no black checker home: illegal.
    pos = "0,-3,-3,-3,-3,-3,0,1,1,1,1,1,1,0,9,0,0,0,0,0,0,0,0,0:0,0:w"
    res = results(pos, 6, 1, Rules(block_rule="home"))
    assert len(res) == 13 and not any(all(board(r).get(p, 0) > 0 for p in range(7, 13)) for r in res)


def test_a_block_in_the_opponents_home_needs_a_checker_past_it():
    # Common 13-18 is black's home (personal 1-6): a block there has no black checker past it.
    pos = npn({13: 2, 14: 2, 15: 2, 16: 2, 17: 2, 24: 5}, {12: 15})
    res = results(pos, 6, 5)
    assert res and not any(all(board(r).get(p, 0) > 0 for p in range(13, 19)) for r in res)
    # One step further from black's end, with a black checker on 13 (personal 1) past it: legal.
    pos = npn({14: 2, 15: 2, 16: 2, 17: 2, 18: 2, 24: 5}, {12: 14, 13: 1})
    assert any(all(board(r).get(p, 0) > 0 for p in range(14, 20)) for r in results(pos, 5, 6))


def test_a_run_of_seven_or_more_is_a_block_too():
    # 13-15 and 17-19 held: filling 16 makes a run of seven with no black checker past it.
    pos = npn({13: 2, 14: 2, 15: 2, 17: 2, 18: 2, 19: 2, 24: 3}, {12: 15})
    res = results(pos, 6, 2)
    assert len(res) == 30 and not any(all(board(r).get(p, 0) > 0 for p in range(13, 20)) for r in res)


def test_a_forbidden_block_already_standing_must_be_broken():
    # A typed position (it cannot arise in play): white already holds 13-18 with no black checker
    # past it. docs/rules.md's reading: only moves that leave no forbidden block standing are legal.
    pos = npn({13: 1, 14: 2, 15: 2, 16: 2, 17: 2, 18: 2, 24: 4}, {12: 15})
    out = plays(pos, 6, 5)
    assert out and all(p["moves"][0][0] == 13 for p in out)  # only 13/7 or 13/8 breaks it
    assert not any(all(board(p["result"]).get(q, 0) > 0 for q in range(13, 19)) for p in out)
    assert all(len(p["moves"]) == 2 for p in out)
    # With two checkers on every point of it no single move breaks it: the turn passes.
    stuck = npn({13: 2, 14: 2, 15: 2, 16: 2, 17: 2, 18: 2, 24: 3}, {12: 15})
    assert [p["moves"] for p in plays(stuck, 6, 5)] == [[]]


# --- Using the dice -----------------------------------------------------------

# White: 14 checkers on 1 (cannot move: not all home), one checker on 20.
STUCK = {1: 14, 20: 1}


def test_both_dice_must_be_played_when_possible():
    pos = npn({1: 13, 20: 1, 10: 1}, {11: 15})
    out = plays(pos, 6, 3)
    assert out and all(len(p["moves"]) == 2 for p in out)


def test_a_play_that_strands_the_other_die_is_not_legal_when_both_can_be_played():
    # 20/14 leaves no 3 (14/11, 10/7 and 9/6 land on black), while 20/17 with 9/3 plays both.
    pos = npn({1: 12, 20: 1, 10: 1, 9: 1}, {11: 1, 7: 1, 6: 1, 4: 1, 12: 11})
    assert [p["moves"] for p in plays(pos, 6, 3)] == [[[9, 3], [20, 17]]]


def test_larger_die_must_be_played_when_only_one_die_can_be():
    # 20/14 or 20/17 are possible alone; 14-3 and 17-6 both hit black's 11.
    pos = npn(STUCK, {11: 15})
    out = plays(pos, 6, 3)
    assert [p["moves"] for p in out] == [[[20, 14]]]


def test_smaller_die_is_played_when_the_larger_cannot_be():
    pos = npn(STUCK, {11: 14, 14: 1})
    out = plays(pos, 6, 3)
    assert [p["moves"] for p in out] == [[[20, 17]]]


def test_no_legal_move_passes_the_turn_with_the_same_checkers():
    pos = npn(STUCK, {11: 13, 14: 1, 17: 1})
    out = plays(pos, 6, 3)
    assert len(out) == 1 and out[0]["moves"] == []
    assert out[0]["result"] == pos[:-1] + "b"


def test_partial_double_plays_as_many_dice_as_possible():
    pos = npn(STUCK, {11: 14, 8: 1})  # 20/17/14 then 11 black: two of four 3s
    out = plays(pos, 3, 3)
    assert [p["moves"] for p in out] == [[[20, 17], [17, 14]]]


# --- Bearing off --------------------------------------------------------------


def test_bear_off_with_the_exact_die():
    pos = npn({6: 2, 3: 2, 1: 1}, {12: 15}, off=(10, 0))
    res = results(pos, 6, 3)
    assert any(off(r)[0] == 12 and board(r).get(6) == 1 and board(r).get(3) == 1 for r in res)


def test_bear_off_from_the_highest_point_when_the_die_is_higher():
    pos = npn({3: 2, 1: 3}, {12: 15}, off=(10, 0))
    res = results(pos, 6, 5)
    assert len(res) == 1 and off(res[0])[0] == 12 and board(res[0]) == {1: 3, 12: -15}


def test_die_must_move_inside_home_when_a_higher_checker_stands():
    pos = npn({6: 1, 2: 1}, {12: 15}, off=(13, 0))
    out = plays(pos, 4, 3)
    assert len(out) == 1
    assert off(out[0]["result"])[0] == 14 and board(out[0]["result"]).get(2) == 1
    # The checker on 2 never bears off while 6 is still on the board.
    assert out[0]["moves"][0][0] == 6


def test_bearing_off_needs_every_checker_home():
    pos = npn({7: 1, 1: 14}, {12: 15})
    bearing_off = 0
    for p in plays(pos, 1, 1):
        first_off = next((k for k, m in enumerate(p["moves"]) if m[1] == 0), None)
        if first_off is not None:
            bearing_off += 1
            assert any(m[0] == 7 for m in p["moves"][:first_off])
    assert bearing_off == 3  # 7/6 then one, two or three off (7/6/5/4/3 bears none)


def test_checker_entering_home_with_first_die_bears_off_with_second():
    pos = npn({8: 1, 1: 14}, {12: 15})
    out = plays(pos, 2, 6)
    assert len(out) == 1 and off(out[0]["result"])[0] == 1 and board(out[0]["result"]) == {1: 14, 12: -15}
    # Entering on 6 itself (the home's far edge), the other way round blocked by black on 3.
    out = plays(npn({9: 1, 1: 14}, {3: 1, 12: 14}), 3, 6)
    assert [p["moves"] for p in out] == [[[9, 6], [6, 0]]] and off(out[0]["result"])[0] == 1


def test_lone_last_checker_moves_inside_home_when_it_cannot_bear_off():
    pos = npn({4: 1}, {12: 15}, off=(14, 0))
    out = plays(pos, 2, 1)
    assert [p["result"] for p in out] == [npn({1: 1}, {12: 15}, off=(14, 0), side="b")]


def test_moving_inside_home_instead_of_bearing_off_is_allowed():
    pos = npn({6: 1, 5: 1}, {12: 15}, off=(13, 0))
    res = results(pos, 6, 1)
    assert sorted(board(r).get(5, 0) + board(r).get(4, 0) * 10 for r in res) == [1, 10]
    # One die of 2 with checkers on 4 and 2: bearing off 2 exactly, or 4/2 inside home.
    state = parse_npn(npn({4: 1, 2: 1}, {12: 15}, off=(13, 0)))[0]
    one = legal_continuations(state[None], np.array([[2, 2]]), np.array([1]), np.array([0]), np.array([1]))
    assert sorted(one.moves[:, 0].tolist()) == [[2, 0], [4, 2]]


def test_bearing_off_the_last_checker_ends_the_game_leaving_dice_unused():
    pos = npn({2: 1}, {12: 15}, off=(14, 0))
    for dice in [(6, 6), (2, 1), (5, 3)]:
        out = plays(pos, *dice)
        assert len(out) == 1 and off(out[0]["result"]) == (15, 0)
    assert len(plays(pos, 6, 6)[0]["moves"]) == 1


# --- Result -------------------------------------------------------------------


def test_mars_when_loser_has_borne_off_none_and_oin_otherwise():
    mars, _ = parse_npn(npn({}, {12: 15}, off=(15, 0), side="b"))
    oin, _ = parse_npn(npn({}, {12: 14}, off=(15, 1), side="b"))
    going, _ = parse_npn(START_NPN)
    assert outcome(np.stack([mars, oin, going])).tolist() == [-2, -1, 0]
    assert outcome(flip(np.stack([mars, oin]))).tolist() == [2, 1]


def test_no_koks_a_loser_still_in_the_winners_home_loses_a_mars_only():
    # Backgammon's triple game does not exist: a black checker left in white's home changes nothing.
    koks, _ = parse_npn(npn({}, {12: 14, 3: 1}, off=(15, 0), side="b"))
    home_oin, _ = parse_npn(npn({}, {12: 13, 3: 1}, off=(15, 1), side="b"))
    assert outcome(np.stack([koks, home_oin])).tolist() == [-2, -1]


# --- Starting the game --------------------------------------------------------


def test_opening_roll_never_gives_a_double_and_the_higher_die_moves_first():
    rng = np.random.default_rng(7)
    first, dice = opening_roll(rng, 5000)
    assert (dice[:, 0] != dice[:, 1]).all()
    assert set(np.unique(first).tolist()) == {0, 1}
    # White rolled the first die: white moves first exactly when it is higher.
    assert ((first == 0) == (dice[:, 0] > dice[:, 1])).all()


def test_opening_reroll_variant_may_give_a_double():
    _, dice = opening_roll(np.random.default_rng(7), 5000, Rules(opening="reroll"))
    assert (dice[:, 0] == dice[:, 1]).mean() == pytest.approx(1 / 6, abs=0.03)


def test_starting_position_is_the_same_from_either_side():
    assert (flip(initial_states(1)) == initial_states(1)).all()


# --- Input checks of the core and the variants -------------------------------


def test_finished_game_has_no_moves():
    # Bearing off the last checker ends the game at once (RULES.md, "A turn" 7).
    from nardy_env import StateError, legal_afterstates

    over, _ = parse_npn("0," * 11 + "-15," + "0," * 11 + "0:15,0:b")
    with pytest.raises(StateError, match="game is over"):
        legal_afterstates(over[None], np.array([[6, 5]]))


@pytest.mark.parametrize("faces", [3, None, "36", [3.7], [True], ["4"], [7], [0]])
def test_head_exception_accepts_only_die_faces(faces):
    from nardy_env.rules import RulesError

    with pytest.raises(RulesError, match="head_exception"):
        Rules(head_exception=faces)
    with pytest.raises(RulesError, match="head_exception"):
        Rules.from_dict({"head_exception": faces})


def test_cube_and_match_keys_accept_only_the_cubeless_single_game_played():
    from nardy_env.rules import RulesError

    assert Rules.from_dict({"cube": False, "match_length": 0, "block_rule": "home"}) == Rules(block_rule="home")
    for bad in ({"cube": True}, {"cube": 0}, {"match_length": 7}, {"match_length": False}):
        with pytest.raises(RulesError, match="not implemented yet") as info:
            Rules.from_dict(bad)
        assert next(iter(bad)) in str(info.value)
    with pytest.raises(RulesError, match="unknown rules key"):
        Rules.from_dict({"crawford": True})
    with pytest.raises(RulesError, match=r"rules keys must be strings \(variant names\), got \['1', 'x'\]"):
        Rules.from_dict({1: 2, "x": 3})


def test_resignation_without_mars_article_50_7():
    from nardy_env import StateError
    from nardy_env.game import resignation_points

    # White, all 15 on point 6, nothing off: a 6 bears one off, 5-4 cannot
    # (the 5 moves 6/1, the 4 must then move inside home), so only some rolls
    # secure the escape from mars.
    six, _ = parse_npn("0,0,0,0,0,15,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0:0,0:w")
    assert resignation_points(six, [6, 1]) == 1  # secured by the dice just rolled
    assert resignation_points(six, [5, 4]) == 2
    assert resignation_points(six) == 2  # not certain whatever is rolled
    # A checker on point 1 and all in home: every roll bears one off.
    spread, _ = parse_npn("1,2,2,2,4,4,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0:0,0:w")
    assert resignation_points(spread) == 1 and resignation_points(spread, [1, 1]) == 1
    # Not all home yet: nothing can come off this turn.
    outside, _ = parse_npn("0,0,0,0,0,0,1,2,2,2,4,4,-15,0,0,0,0,0,0,0,0,0,0,0:0,0:w")
    assert resignation_points(outside, [6, 5]) == 2
    # One already off: no mars is possible, whatever the dice.
    escaped, _ = parse_npn("0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,14:1,0:w")
    assert resignation_points(escaped, [6, 5]) == 1
    # Its inputs are checked as the core checks them, not cut or wrapped into something else.
    with pytest.raises(StateError, match="dice must be integers 1..6"):
        resignation_points(six, [6.7, 5.2])  # once played as 6-5
    with pytest.raises(StateError, match="the mover has 3 checkers"):
        resignation_points(np.array([0] * 24 + [3, 0]))  # once 1, read from the off count alone
    wrapped = six.astype(np.int64)
    wrapped[5] = 2**32 + 15  # once cast to int8: 15
    with pytest.raises(StateError, match="point 6 holds 4294967311"):
        resignation_points(wrapped)
    with pytest.raises(StateError, match=r"one state row \(shape \[26\]\)"):
        resignation_points(six[None])
    with pytest.raises(StateError, match="game is over"):
        resignation_points(flip(parse_npn("0," * 11 + "-15," + "0," * 11 + "0:15,0:b")[0]))


def test_resignation_without_mars_is_judged_over_the_turns_the_opponent_needs_once_out_of_contact():
    from nardy_env import StateError
    from nardy_env.game import escape_turns, resignation_points

    # 7 on point 3, 4 on 4, 4 on 6: 5-5 bears nothing off this turn (the 5s must move 6/1 inside
    # home), but whatever is rolled, a checker comes off within two turns.
    mine = "0,0,7,4,0,4,0,0,0,0,0,0"
    home, _ = parse_npn(f"{mine},-15,0,0,0,0,0,0,0,0,0,0,0:0,0:w")  # black needs 4 turns at least
    assert resignation_points(home) == 1 and resignation_points(home, [5, 5]) == 1
    # Black can finish in one turn (4 checkers left, a double): only this roll counts.
    near, _ = parse_npn(f"{mine},-4,0,0,0,0,0,0,0,0,0,0,0:0,11:w")
    assert resignation_points(near) == 2 and resignation_points(near, [5, 5]) == 2
    assert resignation_points(near, [2, 1]) == 1  # 3/1/off: secured by the dice just rolled
    # 8 checkers left: black needs 2 turns, white's next turn is the one that counts.
    two, _ = parse_npn(f"{mine},-8,0,0,0,0,0,0,0,0,0,0,0:0,7:w")
    assert resignation_points(two) == 1
    # A black checker still to pass white's: its plays could block the way, so only this roll counts.
    contact, _ = parse_npn("0,0,7,4,0,4,0,0,-1,0,0,0,-14,0,0,0,0,0,0,0,0,0,0,0:0,0:w")
    assert resignation_points(contact) == 2 and resignation_points(contact, [2, 1]) == 1
    # Black outside its home: under the home block rule white's six-blocks are illegal until a black
    # checker comes home, so white's plays change as black moves and only this roll counts; under
    # the sports code black is past white for good.
    outside, _ = parse_npn(f"{mine},0,0,0,0,0,0,0,0,-15,0,0,0:0,0:w")
    assert resignation_points(outside) == 1
    assert resignation_points(outside, rules=Rules(block_rule="home")) == 2
    one_home, _ = parse_npn(f"{mine},0,0,0,0,0,-1,0,0,-14,0,0,0:0,0:w")  # one black checker home: for good
    assert resignation_points(one_home, rules=Rules(block_rule="home")) == 1
    on_seven, _ = parse_npn(f"{mine},0,0,0,0,0,0,-1,0,-14,0,0,0:0,0:w")  # black's point 7: not home yet
    assert resignation_points(on_seven, rules=Rules(block_rule="home")) == 2
    assert escape_turns(on_seven, Rules(block_rule="home")) is None and escape_turns(on_seven) == 3
    assert escape_turns(home) == 3 and escape_turns(near) == 1 and escape_turns(two) == 2
    assert escape_turns(contact) is None
    with pytest.raises(StateError, match="game is over"):
        escape_turns(parse_npn(f"{mine},0,0,0,0,0,0,0,0,0,0,0,0:0,15:w")[0])
    # Secured by the dice just rolled, or sure from the play they allow, however far the rest is:
    # 6-6 bears two off (12/6/off twice); after 5-5 (12/7/2 twice), every roll bears one off.
    far, _ = parse_npn("13,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,-15,0,0,0,0,0:0,0:w")
    assert resignation_points(far, [6, 6]) == 1 and resignation_points(far, [5, 5]) == 1
    assert resignation_points(far, [2, 1]) == 2
    # 15 on point 6 is not certain even over three turns: 5-4, then 4-4 twice, moves inside home.
    six, _ = parse_npn("0,0,0,0,0,15,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0:0,0:w")
    assert resignation_points(six) == 2 and resignation_points(six, [5, 4]) == 2


def test_the_look_ahead_of_resignation_agrees_with_a_plain_recursion():
    # The batched look-ahead against the definition written out: every roll has a play that
    # bears off now, or one from which the next turns are sure.

    from nardy_env.game import ROLLS, _sure_to_bear_off

    @functools.cache
    def sure(key: bytes, turns: int) -> bool:
        row = np.frombuffer(key, dtype=np.int8)
        for roll in ROLLS:
            found = legal_afterstates(row[None], roll[None])
            if (found.states[:, 24] > 0).any():
                continue
            if turns == 1 or not any(sure(s.tobytes(), turns - 1) for s in found.states):
                return False
        return True

    rng = np.random.default_rng(1)
    seen = {True: 0, False: 0}
    for k in range(40):
        s = np.zeros(26, dtype=np.int8)
        outside = int(rng.integers(0, 3))
        for _ in range(15 - outside):
            s[rng.integers(0, 6)] += 1
        for _ in range(outside):
            s[rng.integers(6, 9 if k % 2 else 12)] += 1
        s[12] = -15
        for turns in ((1, 2, 3) if k < 6 else (1, 2)):
            expected = sure(s.tobytes(), turns)
            assert bool(_sure_to_bear_off(s[None], turns, DEFAULT_RULES)[0]) == expected, (s[:12], turns)
            seen[expected] += 1
        # The dice of this turn already rolled: each roll on its own, big ones too.
        for roll in ROLLS[[0, 6, 15, 18, 20]]:  # 1-1, 2-2, 4-4, 5-5, 6-6
            found = legal_afterstates(s[None], roll[None])
            expected = bool((found.states[:, 24] > 0).any()) or any(sure(a.tobytes(), 1) for a in found.states)
            assert bool(_sure_to_bear_off(s[None], 2, DEFAULT_RULES, roll[None])[0]) == expected, (s[:12], roll)
            seen[expected] += 1
    assert min(seen.values()) > 10  # both answers met


def test_rules_differences_name_only_the_keys_that_differ_with_both_values():
    home = Rules(block_rule="home", head_exception=(6,))
    assert Rules().differences(home) == ('head_exception [3, 4, 6], block_rule "ahead"',
                                         'head_exception [6], block_rule "home"')
    assert home.differences(Rules.from_dict(home.to_dict())) == ("", "")

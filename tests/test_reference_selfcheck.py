"""Self-checks of the plain reference move generator (tests/reference.py).

The reference is checked against the worked checks of RULES.md and a few
cases verified by hand, and tests/data/perft.tsv and perft_variants.tsv are
checked against the reference, so the tables can never silently drift.
"""

import csv
import importlib.util
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data"

# Load tests/reference.py by path, so this works whether or not tests/ is a
# package and whatever else is on sys.path.
_spec = importlib.util.spec_from_file_location("nardy_tests_reference", HERE / "reference.py")
ref = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ref
_spec.loader.exec_module(ref)

START = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:w"
SECOND = "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b"


def pos(white, black, white_off=0, black_off=0, side="w"):
    """Build an NPN from {common point: count} dicts."""
    pts = [0] * 24
    for c, n in white.items():
        pts[c - 1] = n
    for c, n in black.items():
        assert pts[c - 1] == 0
        pts[c - 1] = -n
    return ",".join(map(str, pts)) + f":{white_off},{black_off}:{side}"


def mirror(npn):
    """Swap colours and rotate the board by 12 points: the same position
    seen from the other side, so it must have the same number of results."""
    p = ref.parse_npn(npn)
    new = [0] * 24
    for c in range(1, 25):
        m = c + 12 if c <= 12 else c - 12
        new[m - 1] = -p.points[c - 1]
    side = "b" if p.side == "w" else "w"
    return ",".join(map(str, new)) + f":{p.black_off},{p.white_off}:{side}"


def replay(npn, moves):
    """Apply a move list (common numbers, 0 = off) naively; other side to move."""
    p = ref.parse_npn(npn)
    pts = list(p.points)
    off = {"w": p.white_off, "b": p.black_off}
    sign = 1 if p.side == "w" else -1
    for frm, to in moves:
        assert pts[frm - 1] * sign > 0, (frm, to)
        pts[frm - 1] -= sign
        if to == 0:
            off[p.side] += 1
        else:
            assert pts[to - 1] * sign >= 0, (frm, to)
            pts[to - 1] += sign
    other = "b" if p.side == "w" else "w"
    return ",".join(map(str, pts)) + f":{off['w']},{off['b']}:{other}"


def end_points(results, side):
    """The set of multisets of `side`'s occupied common points, for compact
    comparisons in hand-verified cases."""
    out = set()
    for r in results:
        p = ref.parse_npn(r)
        pts = []
        for c in range(1, 25):
            pts += [c] * p.count(side, c)
        out.add(tuple(pts))
    return out


# ---------------------------------------------------------------------------
# Worked checks of RULES.md
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "npn,dice,n_results,dice_used",
    [
        (START, (6, 5), 1, 2),
        (START, (3, 1), 1, 2),
        (SECOND, (6, 6), 1, 2),
        (SECOND, (4, 4), 1, 4),
        (SECOND, (3, 3), 2, 4),
        (SECOND, (5, 5), 1, 4),
        (SECOND, (2, 2), 1, 4),
        (SECOND, (1, 1), 1, 4),
        (START, (5, 5), 1, 4),
        (START, (2, 2), 1, 4),
        (START, (1, 1), 1, 4),
    ],
)
def test_worked_checks(npn, dice, n_results, dice_used):
    assert len(ref.reference_results(npn, *dice)) == n_results
    assert ref.reference_dice_used(npn, *dice) == dice_used


def test_worked_check_details():
    # 6-5 from the start gives exactly the position FORMATS' example implies.
    assert ref.reference_results(START, 6, 5) == {SECOND}
    # Second player 6-6: two checkers 24->18 personal = common 12->6.
    black = end_points(ref.reference_results(SECOND, 6, 6), "b")
    assert black == {tuple([6, 6] + [12] * 13)}
    # 4-4: two checkers to personal 16 = common 4.
    assert end_points(ref.reference_results(SECOND, 4, 4), "b") == {tuple([4, 4] + [12] * 13)}
    # 3-3: personal {15, 21} or {18, 18} = common {3, 9} or {6, 6}.
    assert end_points(ref.reference_results(SECOND, 3, 3), "b") == {
        tuple([3, 9] + [12] * 13),
        tuple([6, 6] + [12] * 13),
    }
    # 5-5, 2-2, 1-1: one checker makes all four moves.
    assert end_points(ref.reference_results(SECOND, 5, 5), "b") == {tuple([12] * 14 + [16])}
    assert end_points(ref.reference_results(SECOND, 2, 2), "b") == {tuple([4] + [12] * 14)}
    assert end_points(ref.reference_results(SECOND, 1, 1), "b") == {tuple([8] + [12] * 14)}


# ---------------------------------------------------------------------------
# Hand-verified cases
# ---------------------------------------------------------------------------


def test_head_rule_not_first_turn():
    npn = pos({24: 14, 13: 1}, {12: 13, 6: 2})
    got = end_points(ref.reference_results(npn, 6, 5), "w")
    rest = [24] * 13
    assert got == {
        tuple([13, 13] + rest),        # 24-18-13
        tuple([8, 18] + rest),         # 24-18, 13-8
        tuple([7, 19] + rest),         # 24-19, 13-7
        tuple([2] + [24] * 14),        # 13-7-2
    }
    # No exception with 14 on the head: 6-6 plays one checker, one die.
    npn = pos({24: 14, 18: 1}, {12: 14, 6: 1})
    assert ref.reference_dice_used(npn, 6, 6) == 1
    assert end_points(ref.reference_results(npn, 6, 6), "w") == {tuple([18, 18] + [24] * 13)}


def test_illegal_block_is_avoided_and_legal_block_allowed():
    base = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 11: 1, 19: 4}
    illegal = pos(base, {12: 10, 10: 5})     # black all behind common 1-6
    legal = pos(base, {12: 10, 20: 5})       # black on 20 is ahead of it
    borne = pos(base, {12: 10, 10: 4}, black_off=1)
    low = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    three = {
        tuple(low + [11, 13, 14, 19, 19]),
        tuple(low[:] + [8, 11, 19, 19, 19]),
        tuple(sorted(low + [5, 14, 19, 19, 19])),
    }
    assert end_points(ref.reference_results(illegal, 6, 5), "w") == three
    four = three | {tuple(sorted(low + [6, 13, 19, 19, 19]))}
    assert end_points(ref.reference_results(legal, 6, 5), "w") == four
    assert end_points(ref.reference_results(borne, 6, 5), "w") == four
    # Variant: the black checker on 20 is not in its home.
    assert end_points(ref.reference_results(legal, 6, 5, block_rule="home"), "w") == three


def test_transient_block_is_illegal():
    npn = pos({1: 3, 2: 3, 3: 3, 4: 3, 5: 2, 9: 1}, {12: 10, 7: 3, 8: 2})
    plays = ref.reference_plays(npn, 3, 2)
    assert len(plays) == 6
    # 9-6 (making common 1-6 with no black checker ahead) then 6-4 would end
    # without a block, but is illegal because of the moment in between.
    assert all((9, 6) not in seq for seq in plays.values())


def test_seam_straddle_is_not_a_block():
    npn = pos({1: 1, 10: 1, 11: 1, 13: 1, 14: 1, 15: 1, 18: 1, 24: 8},
              {4: 3, 5: 3, 6: 3, 7: 2, 8: 2, 9: 2})
    plays = ref.reference_plays(npn, 6, 5)
    assert sorted(plays.values()) == sorted([
        [(18, 13), (24, 18)],
        [(18, 12), (24, 19)],   # holds common 10..15 across black's 12|13 seam
        [(15, 10), (24, 18)],
        [(15, 10), (18, 12)],
    ])
    assert len(ref.reference_results(mirror(npn), 6, 5)) == 4


def test_larger_die_smaller_die_and_pass():
    forced = pos({24: 15}, {12: 14, 13: 1})
    assert ref.reference_plays(forced, 6, 5) == {replay(forced, [(24, 18)]): [(24, 18)]}
    assert ref.reference_plays(forced, 5, 6) == {replay(forced, [(24, 18)]): [(24, 18)]}
    smaller = pos({24: 15}, {12: 13, 18: 1, 15: 1})
    assert list(ref.reference_plays(smaller, 6, 3).values()) == [[(24, 21)]]
    blocked = pos({24: 15}, {12: 13, 18: 1, 19: 1})
    assert ref.reference_results(blocked, 6, 5) == {blocked[:-1] + "b"}
    assert ref.reference_dice_used(blocked, 6, 5) == 0
    assert ref.reference_results(mirror(blocked), 6, 5) == {mirror(blocked)[:-1] + "w"}


def test_doubles_partial():
    for black_at, used in ((14, 1), (9, 2), (4, 3)):
        npn = pos({24: 15}, {12: 14, black_at: 1})
        assert ref.reference_dice_used(npn, 5, 5) == used
        assert len(ref.reference_results(npn, 5, 5)) == 1


def test_bearing_off():
    home_black = {13: 5, 14: 5, 15: 5}
    # exact dice
    npn = pos({6: 2, 3: 1}, home_black, white_off=12)
    assert end_points(ref.reference_results(npn, 6, 3), "w") == {(6,), (3, 3)}
    # higher-point rule
    npn = pos({4: 1, 2: 1, 1: 1}, home_black, white_off=12)
    assert end_points(ref.reference_results(npn, 6, 5), "w") == {(1,)}
    # a 4 cannot bear off the 2 while 6 is occupied: 6-2 is forced
    npn = pos({6: 1, 2: 1}, home_black, white_off=13)
    assert end_points(ref.reference_results(npn, 4, 3), "w") == {(2,)}
    # enter home with one die, bear off with the other
    npn = pos({8: 1, 4: 2}, home_black, white_off=12)
    assert end_points(ref.reference_results(npn, 5, 3), "w") == {(4, 4), (1, 3, 4)}
    # the last checker ends the game; leftover dice are void
    npn = pos({1: 1}, {13: 4, 14: 5, 15: 5}, white_off=14, black_off=1)
    (res,) = ref.reference_results(npn, 6, 6)
    assert ref.reference_dice_used(npn, 6, 6) == 4
    assert ref.reference_terminal(res) == ("w", 1)
    npn = pos({3: 1}, home_black, white_off=14)
    (res,) = ref.reference_results(npn, 1, 1)
    assert ref.reference_plays(npn, 1, 1)[res] == [(3, 2), (2, 1), (1, 0)]
    assert ref.reference_terminal(res) == ("w", 2)


def test_terminal():
    assert ref.reference_terminal(START) is None
    assert ref.reference_terminal(
        "0,0,0,0,0,0,0,0,0,0,0,0,-3,0,0,0,0,0,0,0,0,0,0,0:15,12:b") == ("w", 1)
    assert ref.reference_terminal(
        "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,15:0,15:w") == ("b", 2)


@pytest.mark.parametrize(
    "bad,field",
    [
        ("0,0:0,0:w", "points"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0", "position"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,14:0,0:w", "white"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,1:w", "black"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:x", "side"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,16:0,0:w", "point 24"),
        ("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:-1,0:w", "white off"),
    ],
)
def test_npn_rejects(bad, field):
    with pytest.raises(ValueError, match=field):
        ref.parse_npn(bad)


def test_npn_round_trip():
    text = "  " + SECOND + "\n"
    assert ref.format_npn(ref.parse_npn(text)) == SECOND


# ---------------------------------------------------------------------------
# The perft tables agree with the reference
# ---------------------------------------------------------------------------


def _rows(name):
    with open(DATA / name, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


PERFT = _rows("perft.tsv")
VARIANTS = _rows("perft_variants.tsv")


def _dice(text):
    a, b = text.split("-")
    return int(a), int(b)


def test_perft_table_shape():
    assert len(PERFT) >= 45
    assert len(VARIANTS) >= 8
    assert list(PERFT[0].keys()) == ["position", "dice", "results", "why"]
    assert list(VARIANTS[0].keys()) == ["position", "dice", "results", "why", "rules"]
    changed = 0
    for row in VARIANTS:
        d = _dice(row["dice"])
        kw = ref.parse_rules(row["rules"])
        if len(ref.reference_results(row["position"], *d, **kw)) != len(
                ref.reference_results(row["position"], *d)):
            changed += 1
    assert changed >= 8


@pytest.mark.parametrize("row", PERFT, ids=[f"{i + 2}" for i in range(len(PERFT))])
def test_perft_row(row):
    npn = row["position"]
    d = _dice(row["dice"])
    ref.parse_npn(npn)  # valid: 15 checkers a side counting borne-off
    assert not ref.reference_illegal_block(npn)
    plays = ref.reference_plays(npn, *d)
    assert len(plays) == int(row["results"]), row["why"]
    # Same count seen from the other side of the board.
    assert len(ref.reference_results(mirror(npn), *d)) == int(row["results"])
    # Every listed play really leads to its result.
    for result, seq in plays.items():
        assert replay(npn, seq) == result


@pytest.mark.parametrize("row", VARIANTS, ids=[f"{i + 2}" for i in range(len(VARIANTS))])
def test_perft_variant_row(row):
    npn = row["position"]
    d = _dice(row["dice"])
    kw = ref.parse_rules(row["rules"])
    assert len(ref.reference_results(npn, *d, **kw)) == int(row["results"]), row["why"]
    assert len(ref.reference_results(mirror(npn), *d, **kw)) == int(row["results"])

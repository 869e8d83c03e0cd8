"""NPN strings: round trips and one error per malformed kind of input."""

from __future__ import annotations

import numpy as np
import pytest

from nardy_env import START_NPN, Color, NPNError, StateError, flip, format_npn, initial_states, parse_npn
from tests.helpers import npn


def test_start_position_parses_to_the_initial_state():
    state, side = parse_npn(START_NPN)
    assert side == Color.WHITE
    assert (state == initial_states(1)[0]).all()
    assert format_npn(state, side) == START_NPN


@pytest.mark.parametrize("text", [
    START_NPN,
    START_NPN[:-1] + "b",
    "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b",
    "2,0,-3,1,0,0,0,-1,0,0,0,-9,1,0,0,0,0,-1,0,0,0,0,0,4:7,1:w",
    "0,0,0,0,0,0,0,0,0,0,0,-3,0,0,0,0,0,0,0,0,0,0,0,0:15,12:b",  # a finished game
    "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0:15,15:b",  # no game reaches it, but FORMATS.md reads it
])
def test_npn_round_trip(text):
    state, side = parse_npn(text)
    assert format_npn(state, side) == text


def test_black_to_move_is_stored_from_blacks_view():
    state, side = parse_npn(START_NPN[:-1] + "b")
    assert side == Color.BLACK
    # Black's head (common 12) is its personal 24, white's head its personal 12.
    assert state[23] == 15 and state[11] == -15


def test_flip_gives_the_same_position_with_the_other_side_to_move():
    text = npn({24: 10, 13: 2, 5: 3}, {12: 7, 20: 4, 16: 2}, off=(0, 2))
    state, side = parse_npn(text)
    other, _ = parse_npn(text[:-1] + "b")
    assert (flip(state) == other).all()
    assert (flip(flip(state)) == state).all()


def test_leading_zeros_are_read_as_the_number():
    state, side = parse_npn(START_NPN.replace(",15:", "," + "0" * 5000 + "15:"))
    assert format_npn(state, side) == START_NPN


def test_surrounding_whitespace_is_ignored():
    state, side = parse_npn(f"  {START_NPN}\n")
    assert format_npn(state, side) == START_NPN


@pytest.mark.parametrize("text, field", [
    ("0,0,0", "fields"),
    (START_NPN + ":x", "fields"),
    ("0," * 22 + "15:0,0:w", "points"),
    (START_NPN.replace("-15", "-16", 1), "point 12"),
    (START_NPN.replace("-15", "x", 1), "point 12"),
    (START_NPN.replace(":0,0:", ":0:"), "off"),
    (START_NPN.replace(":0,0:", ":a,0:"), "white off"),
    (START_NPN.replace(":0,0:", ":0,16:"), "black off"),
    (START_NPN.replace(":0,0:", ":1,0:"), "white checkers"),  # 15 on the points + 1 off
    (START_NPN.replace(":0,0:", ":0,-1:"), "black off"),
    (START_NPN.replace(",15:", ",14:"), "white checkers"),  # no one field is wrong: the total
    (START_NPN.replace("-15", "-14", 1), "black checkers"),
    (START_NPN[:-1] + "x", "side to move"),
    (START_NPN[:-1] + "white", "side to move"),
    (START_NPN[:-1] + "W", "side to move"),  # FORMATS.md: w or b, lower case
    # Integers only as every language reads them: no sign, separators or non-ASCII digits.
    (START_NPN.replace(",15:", ",+15:"), "point 24"),
    (START_NPN.replace(",15:", ",1_5:"), "point 24"),
    (START_NPN.replace(",15:", ",\uff11\uff15:"), "point 24"),
    # Integers too large for any machine word, or for Python's digit limit.
    (START_NPN.replace(",15:", ",99999999999999999999:"), "point 24"),
    (START_NPN.replace(",15:", ",-" + "1" * 30 + ":"), "point 24"),
    (START_NPN.replace(",15:", "," + "9" * 5000 + ":"), "point 24"),
    (START_NPN.replace(":0,0:", ":" + "9" * 5000 + ",0:"), "white off"),
    (START_NPN.replace(",15:", "," + "0" * 5000 + "16:"), "point 24"),
    (START_NPN.replace(",15:", ",100:"), "point 24"),
])
def test_malformed_npn_names_the_wrong_field(text, field):
    import pickle

    with pytest.raises(NPNError) as info:
        parse_npn(text)
    assert info.value.field == field
    assert field in str(info.value)
    copy = pickle.loads(pickle.dumps(info.value))  # as a worker process's error comes back
    assert (type(copy), copy.field, str(copy)) == (NPNError, field, str(info.value))


def test_not_a_string_is_rejected():
    with pytest.raises(NPNError, match="string"):
        parse_npn(None)  # type: ignore[arg-type]


def test_format_rejects_nothing_it_parsed_randomly():
    rng = np.random.default_rng(3)
    for _ in range(200):
        cells = [0] * 24
        points = rng.permutation(24)
        w, b = int(rng.integers(0, 16)), int(rng.integers(0, 16))
        wl, bl = 15 - w, 15 - b
        k = 0
        while wl:
            n = int(rng.integers(1, wl + 1)); cells[points[k]] = n; wl -= n; k += 1
        while bl:
            n = int(rng.integers(1, bl + 1)); cells[points[k]] = -n; bl -= n; k += 1
        text = f"{','.join(map(str, cells))}:{w},{b}:{'wb'[int(rng.integers(2))]}"
        assert format_npn(*parse_npn(text)) == text


def test_results_rank_is_the_order_of_the_sorted_npn_strings():
    from nardy_env import Color, flip, legal_afterstates
    from nardy_env.notation import results_rank
    from tests.nardy_env.test_against_reference import random_game_positions

    cases = random_game_positions(4, seed=5)
    states = np.stack([c[0] for c in cases])
    movers = np.array([int(c[1]) for c in cases])
    found = legal_afterstates(states, np.array([c[2] for c in cases]))
    rank = results_rank(found.states, movers, found.offsets)
    assert {0, 1} <= set(movers.tolist()) and found.counts().max() > 20
    for i in range(len(cases)):
        rows = slice(found.offsets[i], found.offsets[i + 1])
        text = [format_npn(flip(s), Color(movers[i]).other) for s in found.states[rows]]
        assert [text[j] for j in np.argsort(rank[rows])] == sorted(text)
    # npn_sort_keys takes one Color for all rows, as results_rank does, and names what it can't read.
    from nardy_env.notation import npn_sort_keys

    white = found.states[: found.offsets[1]]
    assert np.array_equal(npn_sort_keys(white, Color.WHITE), npn_sort_keys(white, np.zeros(len(white), int)))
    for movers_given in (np.full(len(white), 0.5), [0, 1], 2):
        with pytest.raises(ValueError, match=r"movers must be one Color \(0 white, 1 black\) or one per row"):
            npn_sort_keys(white, movers_given)
    with pytest.raises(StateError, match=r"states must have shape \[M, 26\]"):
        npn_sort_keys(white[0], 0)


def test_point_conversion_and_formatting_refuse_what_they_would_misread():
    from nardy_env.notation import to_common_point

    assert to_common_point(5, "b") == to_common_point(5, Color.BLACK) == 17  # a side letter is a colour
    for colour in Color:  # one point (plain int or numpy scalar) and an array agree, 0 (off) included
        points = np.arange(25, dtype=np.int8)
        as_array = to_common_point(points, colour).tolist()
        assert [to_common_point(int(p), colour) for p in points] == as_array
        assert [to_common_point(p, colour) for p in points] == as_array
        assert all(type(to_common_point(p, colour)) is int for p in points)
        assert to_common_point(as_array, colour).tolist() == points.tolist()  # its own inverse
    assert to_common_point(0, Color.BLACK) == 0 and to_common_point(24, Color.BLACK) == 12
    for point in (-1, True, np.int64(25), np.timedelta64(5), np.array([5], dtype="m8[s]"), [True]):
        with pytest.raises(ValueError, match="whole numbers 0..24"):
            to_common_point(point, Color.WHITE)
    for point, colour, message in ((25, Color.BLACK, "whole numbers 0..24"), (3.7, Color.WHITE, "whole numbers"),
                                   (5, "x", "a colour is"), (5, 2, "a colour is")):
        with pytest.raises(ValueError, match=message):
            to_common_point(point, colour)
    start = initial_states(1)
    for rows, validate in ((start, True), (start, False), (start[0, :20], False), (np.zeros((), np.int8), True)):
        with pytest.raises(ValueError, match=r"one state row \(shape \[26\]\)"):
            format_npn(rows, Color.WHITE, validate=validate)
    with pytest.raises(StateError):
        format_npn(start[0, :20], Color.WHITE)
    with pytest.raises(ValueError, match=r"initial_states\(9223372036854775808\): .* do not fit in memory"):
        initial_states(2**63)
    bad = start[0].copy()
    bad[0] = 3  # 18 white checkers
    with pytest.raises(StateError):
        format_npn(bad, Color.WHITE)

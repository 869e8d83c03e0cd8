"""The move filter of SearchPlayer: beyond 0-ply only the best filter_k candidates (by 0-ply) are searched."""

from __future__ import annotations

import numpy as np
import pytest

from agents.search import EQUITY, ROLL_WEIGHTS, ROLLS, UNSEARCHED, SearchPlayer, searched
from nardy_env import flip, legal_afterstates
from nardy_env.encoding import raw_positions
from tests.nardy_env.test_against_reference import random_game_positions


class SoftmaxLinear:
    """float32 softmax of a fixed random linear map of the raw input: deterministic and cheap."""

    def __init__(self, seed: int) -> None:
        self.w = np.random.default_rng(seed).normal(0, 0.3, size=(50, 4))

    def outcomes(self, raw: np.ndarray) -> np.ndarray:
        z = np.asarray(raw, dtype=np.float64) @ self.w
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return (z / z.sum(axis=1, keepdims=True)).astype(np.float32)


def positions(count: int, low: int, high: int, seed: int):
    """(states, dice) of ``count`` turns of random games with low..high distinct results each."""
    cases = random_game_positions(3, seed=seed)
    states = np.stack([c[0] for c in cases])
    dice = np.array([c[2] for c in cases])
    counts = legal_afterstates(states, dice).counts()
    pick = np.flatnonzero((counts >= low) & (counts <= high))
    pick = pick[np.linspace(0, pick.size - 1, count).astype(int)]  # spread over the games
    return states[pick], dice[pick]


def static(ev, states: np.ndarray) -> np.ndarray:
    """0-ply equity as the player computes it (terminal afterstates get their exact points)."""
    out = np.where(states[:, 25] == 0, 2.0, 1.0)
    live = states[:, 24] != 15
    if live.any():
        weights = EQUITY.astype(np.float32)
        # Each row summed left to right, as the player does (whatever the batch holds).
        out[live] = [sum((o * w for o, w in zip(row, weights, strict=True)), np.float32(0))  # float32 on numpy 1 too
                     for row in ev.outcomes(raw_positions(states[live]))]
    return out


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the best ``k`` values, earliest first on ties."""
    return np.argsort(-values, kind="stable")[:k]


def filtered_value(ev, state: np.ndarray, ply: int, k: int) -> float:
    """n-ply value with the filter at every level, by plain recursion over the 21 rolls."""
    if state[24] == 15:
        return 2.0 if state[25] == 0 else 1.0
    if ply == 0:
        return float(static(ev, state[None])[0])
    total = 0.0
    for roll, weight in zip(ROLLS, ROLL_WEIGHTS, strict=True):
        replies = legal_afterstates(flip(state)[None], roll[None]).states
        s = static(ev, replies)
        if ply == 1:
            best = s.max()
        else:  # the opponent chooses at ply - 1 among its best k replies by 0-ply
            best = max(filtered_value(ev, r, ply - 1, k) for r in replies[top_k(s, k)])
        total += weight * best
    return -total


def segments(found):
    return [slice(int(a), int(b)) for a, b in zip(found.offsets[:-1], found.offsets[1:], strict=True)]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_two_ply_searches_only_the_best_k_candidates_by_zero_ply(k):
    ev = SoftmaxLinear(k)
    states, dice = positions(4, 4, 10, seed=20 + k)
    found = legal_afterstates(states, dice)
    player = SearchPlayer(ev, ply=2, filter_k=k)
    values = player.evaluate(found)
    zero = static(ev, found.states)
    assert np.array_equal(SearchPlayer(ev).static_equity(found.states), zero)

    kept_rows = []
    for seg in segments(found):
        v, s = values[seg], zero[seg]
        kept = np.sort(top_k(s, k))
        assert np.flatnonzero(searched(v)).tolist() == kept.tolist(), seg
        rest = np.setdiff1d(np.arange(v.size), kept)
        assert rest.size == v.size - k
        # Unsearched candidates: below every searched one, in their 0-ply order.
        assert (v[rest] < v[kept].min()).all()
        assert np.allclose(v[rest] - UNSEARCHED, s[rest], atol=1e-6)
        kept_rows.extend((seg.start + kept).tolist())

    kept_rows = np.array(kept_rows)
    # The searched values are the 2-ply equities of those candidates ...
    fresh = SearchPlayer(ev, ply=2, filter_k=k).equity(found.states[kept_rows])
    assert np.allclose(values[kept_rows], fresh, atol=1e-9)
    # ... which filter the opponent's replies the same way, as a plain recursion does.
    want = [filtered_value(ev, found.states[r], 2, k) for r in kept_rows]
    assert np.allclose(values[kept_rows], want, atol=1e-6)
    assert np.abs(values[kept_rows]).max() <= 2.0 + 1e-9


def test_the_filter_applies_at_every_level_of_two_ply():
    # With the reply filter on, the opponent's 1-ply reply is chosen among fewer candidates,
    # so some searched values differ from the unfiltered 2-ply search of the same afterstates.
    ev = SoftmaxLinear(7)
    states, dice = positions(2, 3, 5, seed=31)
    found = legal_afterstates(states, dice)
    some = np.arange(0, found.states.shape[0], 2)[:4]
    filtered = SearchPlayer(ev, ply=2, filter_k=1).equity(found.states[some])
    unfiltered = SearchPlayer(ev, ply=2, filter_k=10**6).equity(found.states[some])
    assert not np.allclose(filtered, unfiltered)
    want = [filtered_value(ev, found.states[r], 2, 1) for r in some]
    assert np.allclose(filtered, want, atol=1e-6)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_one_ply_searched_values_equal_the_unfiltered_search(k):
    # At 1-ply the only filter is over the candidates themselves: the ones kept get their full 1-ply value.
    ev = SoftmaxLinear(10 + k)
    states, dice = positions(8, 3, 30, seed=40 + k)
    found = legal_afterstates(states, dice)
    values = SearchPlayer(ev, ply=1, filter_k=k).evaluate(found)
    full = SearchPlayer(ev, ply=1, filter_k=10**6).evaluate(found)
    assert searched(full).all()
    zero = static(ev, found.states)
    for seg in segments(found):
        kept = np.sort(top_k(zero[seg], k))
        assert np.flatnonzero(searched(values[seg])).tolist() == kept.tolist()
        assert np.allclose(values[seg][kept], full[seg][kept], atol=1e-12)


def test_one_ply_with_filter_k_1_plays_the_zero_ply_best():
    ev = SoftmaxLinear(5)
    states, dice = positions(12, 4, 40, seed=50)
    found = legal_afterstates(states, dice)
    rng = np.random.default_rng(0)
    zero_pick = SearchPlayer(ev, ply=0).choose(states, found, rng)
    one_pick = SearchPlayer(ev, ply=1, filter_k=1).choose(states, found, rng)
    assert one_pick.tolist() == zero_pick.tolist()
    for seg, pick in zip(segments(found), zero_pick, strict=True):
        assert pick == int(np.argmax(static(ev, found.states[seg])))
    # Not a vacuous check: searching every candidate at 1-ply picks differently somewhere.
    full_pick = SearchPlayer(ev, ply=1, filter_k=10**6).choose(states, found, rng)
    assert full_pick.tolist() != zero_pick.tolist()


def test_the_filter_breaks_exact_ties_by_the_sorted_results_when_colours_are_given():
    # A network that values everything alike: every candidate ties at 0-ply, so with
    # filter_k=1 the one searched (and played) must be the earliest sorted result.
    from nardy_env import Color, format_npn
    from nardy_env.notation import results_rank

    class Flat:
        def outcomes(self, raw):
            return np.full((raw.shape[0], 4), 0.25, dtype=np.float32)

    cases = random_game_positions(1, seed=21)[:40]
    states = np.stack([c[0] for c in cases])
    colors = np.array([int(c[1]) for c in cases])
    found = legal_afterstates(states, np.array([c[2] for c in cases]))
    assert (found.counts() > 1).sum() > 10 and {0, 1} <= set(colors.tolist())
    picks = SearchPlayer(Flat(), ply=1, filter_k=1).choose(states, found, np.random.default_rng(0), colors=colors)
    rank = results_rank(found.states, colors, found.offsets)
    for i in range(len(cases)):
        rows = slice(found.offsets[i], found.offsets[i + 1])
        assert rank[rows][picks[i]] == 0
        texts = [format_npn(flip(s), Color(int(colors[i])).other) for s in found.states[rows]]
        assert texts[picks[i]] == min(texts)

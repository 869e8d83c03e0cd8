"""Helpers shared by players: per-position argmax over flat afterstate lists."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from nardy_env import NUM_CHECKERS, outcome
from nardy_env.encoding import RAW_SIZE, are_counts

__all__ = ["OUTCOMES", "EQUITY_WEIGHTS", "segment_argmax", "segment_max", "MAX_PARAMETERS", "MAX_LAYERS", "network_parameters",
           "checked_raw", "unsound_row", "outcome_one_hot", "SWAP"]

OUTCOMES = ("win", "win_mars", "lose", "lose_mars")
"""Names of a network's four outcome probabilities, in output order, from the view of the
side that has just moved."""
EQUITY_WEIGHTS = (1.0, 2.0, -1.0, -2.0)
"""Points of each outcome: equity = sum(outcomes * EQUITY_WEIGHTS) (cubeless points)."""
SWAP = np.array([2, 3, 0, 1])
"""``outcomes[..., SWAP]``: the same probabilities seen by the other side (its win is my loss)."""


def outcome_one_hot(states: np.ndarray) -> np.ndarray:
    """Exact outcome of finished positions as one-hot rows in ``OUTCOMES`` order, from the view of
    the row (an afterstate's: its mover, the winner): a mars when the loser has borne off none
    (``nardy_env.outcome``); ValueError for a game not over."""
    points = outcome(states)
    if (points == 0).any():
        raise ValueError(f"row {int(np.flatnonzero(points == 0)[0])} is a game not over: it has no outcome yet")
    out = np.zeros((states.shape[0], 4), dtype=np.float32)
    out[np.arange(states.shape[0]), np.select([points == 1, points == 2, points == -1], [0, 1, 2], 3)] = 1.0
    return out


def checked_raw(raw: np.ndarray) -> np.ndarray:
    """``raw`` as float32 ``[N, 50]`` (C order) for an evaluator, or ValueError saying what is wrong:
    the 50 numbers of docs/policy.md are checker counts, whole numbers 0..15, and a network would
    score anything else (a negative or fractional count, a NaN) as if it meant something."""
    if np.asarray(raw).dtype == np.bool_:  # a mask such as raw > 0 would be scored as one checker per point
        raise ValueError("positions are checker counts, not True/False (a mask such as raw > 0?)")
    given = np.asarray(raw)
    raw = np.ascontiguousarray(given, dtype=np.float32)
    if raw.ndim != 2 or raw.shape[1] != RAW_SIZE:
        raise ValueError(f"positions must have shape [N, {RAW_SIZE}], got {list(raw.shape)}")
    # Checked as given: the cast to float32 rounds 14.99999999 to 15 and 1e-46 to 0.
    fine = are_counts(given if given.dtype.kind in "iuf" else raw)
    if not fine.all():
        raise ValueError(f"positions are checker counts, whole numbers 0..{NUM_CHECKERS} (docs/policy.md's 50 "
                         f"numbers); row {int(np.flatnonzero(~fine.all(axis=1))[0])} is not")
    both = np.flatnonzero((raw[:, 48] == NUM_CHECKERS) & (raw[:, 49] == NUM_CHECKERS))
    if both.size:
        raise ValueError(f"row {int(both[0])}: both sides have borne off all {NUM_CHECKERS}, which no game "
                         "reaches (it ends when the first does): it has no result to score")
    return raw


def unsound_row(outcomes: np.ndarray, equity: np.ndarray | None = None, tol: float = 1e-2) -> int | None:
    """The first row whose evaluation is not what an evaluator promises, or None: outcome
    probabilities (finite, non-negative, summing to 1 within ``tol``: float32 graphs round) and,
    when given, the equity they make (``outcomes @ EQUITY_WEIGHTS``, within -2..+2). A network
    whose arithmetic overflows, or a damaged graph, says something else, which would be played
    and reported as if it meant something."""
    outcomes = np.asarray(outcomes, dtype=np.float64)
    sound = np.isfinite(outcomes).all(axis=1) & (outcomes >= 0).all(axis=1) & (np.abs(outcomes.sum(axis=1) - 1) <= tol)
    if equity is not None:
        equity = np.asarray(equity, dtype=np.float64)
        made = outcomes @ np.asarray(EQUITY_WEIGHTS)
        sound &= np.isfinite(equity) & (np.abs(equity) <= 2 + 1e-3) & (np.abs(equity - made) <= 1e-3)
    return None if sound.all() else int(np.flatnonzero(~sound)[0])


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Largest value of each segment ``offsets[i]:offsets[i + 1]`` (segments are never empty)."""
    return np.maximum.reduceat(values, offsets[:-1])


def segment_argmax(values: np.ndarray, offsets: np.ndarray, tie_rank: np.ndarray | None = None) -> np.ndarray:
    """Index within each segment of its largest value.

    Exact ties go to the smallest ``tie_rank`` (per element; players pass
    ``nardy_env.notation.results_rank``, FORMATS.md's order), or without one to
    the earliest element. A NaN value is an error (ValueError naming the
    segment): it has no order, and a choice made with it would be arbitrary.
    """
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        first = int(np.flatnonzero(np.isnan(values))[0])
        where = int(np.searchsorted(offsets, first, side="right")) - 1
        raise ValueError(f"segment_argmax: value {first} (segment {where}) is NaN; the player's "
                         "evaluations are not numbers (a network with non-finite weights?)")
    if tie_rank is not None:
        counts = np.diff(offsets)
        segment = np.repeat(np.arange(counts.shape[0]), counts)
        order = np.lexsort((np.asarray(tie_rank), -values, segment))
        return order[offsets[:-1]] - offsets[:-1]
    counts = np.diff(offsets)
    best = np.repeat(segment_max(values, offsets), counts)
    is_best = values >= best
    # The first True per segment: its flat position minus the segment start.
    flat = np.flatnonzero(is_best)
    # flat is ascending and every segment holds its maximum: the first flat index at or after
    # a segment's start is its earliest best.
    return flat[np.searchsorted(flat, offsets[:-1])] - offsets[:-1]


MAX_PARAMETERS = 20_000_000
"""The largest network nardy builds (80 MB of float32 weights; the shipped one has about 35,000).
A checkpoint or config asking for more is refused before any memory is taken for it."""
MAX_LAYERS = 16


def network_parameters(hidden: Iterable[int]) -> int:
    """Weights and biases of a ``TDNetwork`` with these hidden layer sizes (without torch)."""
    from nardy_env.encoding import NUM_FEATURES

    widths = [NUM_FEATURES, *[int(h) for h in hidden], len(OUTCOMES)]
    return sum((a + 1) * b for a, b in zip(widths[:-1], widths[1:], strict=True))

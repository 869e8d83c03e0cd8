"""Encodings of positions: the raw 50-number layout of FORMATS.md and the TD features.

``raw_positions`` turns mover's-view states into the layout the exported policy
reads: columns 0..23 my counts on my personal points 1..24, 24..47 the
opponent's counts on its personal points 1..24, 48 my borne-off count, 49 the
opponent's. ``features`` turns that layout into the network's inputs. The
feature function is versioned: any change of its output bumps
``FEATURES_VERSION``, which every checkpoint and export records.

Features, version ``nardy-features/1``: 102 per side, mine (columns 0..101) then the
opponent's (102..203), each side's in this order, with n the side's checkers on a point:

- 0..95: 24 points x 4 TD-Gammon units, point-major (personal point 1's four units, then
  point 2's, ...): n >= 1, n >= 2, n >= 3 (each 0 or 1), max(n - 3, 0) / 2
- 96: borne off / 15
- 97: pip count / 360 (the starting count; borne-off checkers count 0)
- 98: checkers on the head (personal point 24) / 15
- 99: checkers home (personal points 1..6) / 15
- 100: min(longest run, 6) / 6, the longest run of consecutive points holding at least one
  of the side's checkers, read along the other side's route (the side's personal points
  13..24, then 1..12): a run of 7 or more counts as 6
- 101: 1 if every checker not borne off is home (bearing off possible), else 0
"""

from __future__ import annotations

import numba as nb
import numpy as np
import numpy.typing as npt

from ._runtime import from_numba_cache, numba_cache, numba_cache_placed, without_numba_cache
from .core import HALF, HOME_SIZE, NUM_CHECKERS, NUM_POINTS, OFF_MOVER, OFF_OPPONENT, _columns

__all__ = ["RAW_SIZE", "FEATURES_VERSION", "NUM_FEATURES", "raw_positions", "features", "are_counts"]

RAW_SIZE = 50
"""Numbers in the raw layout."""
FEATURES_VERSION = "nardy-features/1"
"""Name of the feature function; recorded in checkpoints and exports."""
_PER_SIDE = NUM_POINTS * 4 + 6
NUM_FEATURES = 2 * _PER_SIDE
"""Length of a feature vector (204)."""
_START_PIPS = float(NUM_CHECKERS * NUM_POINTS)  # the start position's pip count, 360
_OFF_RAW = 2 * NUM_POINTS
"""Index of the mover's borne-off count in the raw layout (the opponent's follows it)."""


def raw_positions(states: npt.ArrayLike) -> np.ndarray:
    """Mover's-view states ``[..., 26]`` -> float32 raw layout ``[..., 50]`` seen by the mover."""
    states = _columns(states)  # signed integers: an unsigned array's opponent would vanish
    board = states[..., :NUM_POINTS].astype(np.float32)
    raw = np.empty(states.shape[:-1] + (RAW_SIZE,), dtype=np.float32)
    raw[..., :NUM_POINTS] = np.maximum(board, 0)
    # The opponent's personal point y is my index (y - 1 + 12) % 24.
    theirs = np.maximum(-board, 0)
    raw[..., NUM_POINTS:2 * NUM_POINTS] = np.roll(theirs, -HALF, axis=-1)
    raw[..., _OFF_RAW] = states[..., OFF_MOVER]
    raw[..., _OFF_RAW + 1] = states[..., OFF_OPPONENT]
    return raw


def are_counts(raw: np.ndarray) -> np.ndarray:
    """Elementwise: whether each of the raw numbers is a checker count, a whole number 0..15
    (NaN is not)."""
    return (raw >= 0) & (raw <= NUM_CHECKERS) & (raw == np.floor(raw))


_CACHE = numba_cache()  # as the rules core's (nardy_env/_runtime.py)


@nb.njit(cache=_CACHE, nogil=True)
def _encode(raw):
    """``features`` of float32 ``[N, RAW_SIZE]`` rows, compiled: one pass over each row.
    Returns (features, -1), or (unfinished, the first row) if a row holds anything but checker counts.

    Exactly the features listed above, bit for bit as ``agents.network.RawFeatures``
    computes them in the graph on the CPU for whole checker counts (every sum is of
    whole numbers, exact in float32, then divided once), so a network scores the
    same either way.
    """
    n = raw.shape[0]
    out = np.empty((n, NUM_FEATURES), dtype=np.float32)
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for row in range(n):
        for k in range(RAW_SIZE):  # checker counts, whole numbers 0..15 (NaN fails too)
            c = raw[row, k]
            if not (c >= zero and c <= np.float32(NUM_CHECKERS) and c == np.floor(c)):
                return out, row
        for side in range(2):
            base = side * _PER_SIDE
            first = side * NUM_POINTS  # this side's counts on its personal points 1..24
            pips = zero
            home = zero
            for p in range(NUM_POINTS):
                c = raw[row, first + p]
                o = base + 4 * p
                out[row, o] = one if c >= 1 else zero
                out[row, o + 1] = one if c >= 2 else zero
                out[row, o + 2] = one if c >= 3 else zero
                out[row, o + 3] = max(c - np.float32(3.0), zero) / np.float32(2.0)
                pips += c * np.float32(p + 1)
                if p < HOME_SIZE:
                    home += c
            # Longest run of held points along the other side's route: this side's
            # personal points 13..24, then 1..12.
            run = 0
            best = 0
            for k in range(NUM_POINTS):
                if raw[row, first + (k + HALF) % NUM_POINTS] > 0:
                    run += 1
                    best = max(best, run)
                else:
                    run = 0
            off = raw[row, _OFF_RAW + side]
            out[row, base + 96] = off / np.float32(NUM_CHECKERS)
            out[row, base + 97] = pips / np.float32(_START_PIPS)
            out[row, base + 98] = raw[row, first + NUM_POINTS - 1] / np.float32(NUM_CHECKERS)
            out[row, base + 99] = home / np.float32(NUM_CHECKERS)
            out[row, base + 100] = np.float32(min(best, 6)) / np.float32(6.0)
            out[row, base + 101] = one if home + off == np.float32(NUM_CHECKERS) else zero
    return out, -1


numba_cache_placed()


def features(raw: npt.ArrayLike) -> np.ndarray:
    """Raw layout ``[..., 50]`` -> float32 features ``[..., NUM_FEATURES]`` (version above).

    The 50 numbers are checker counts, whole numbers 0..15; anything else is a ValueError naming
    the row (a network would score it as if it meant something)."""
    raw = np.asarray(raw)
    if raw.dtype == np.bool_:  # a mask such as raw > 0 would be scored as one checker per point
        raise ValueError("raw positions are checker counts, not True/False (a mask such as raw > 0?)")
    if raw.shape[-1:] != (RAW_SIZE,):
        raise ValueError(f"raw positions must have {RAW_SIZE} columns (raw_positions of the states), got shape "
                         f"{list(raw.shape)}")
    if raw.dtype != np.float32 and raw.size and raw.dtype.kind in "iuf":  # integers and floats
        # Checked before the cast to float32, which would round 14.99999999 to 15 and 1e-46 to 0.
        wrong = np.flatnonzero(~are_counts(raw.reshape(-1, RAW_SIZE)).all(axis=1))
        if wrong.size:
            raise _not_counts(raw, int(wrong[0]))
    raw = raw.astype(np.float32, copy=False)
    flat = np.require(raw.reshape(-1, RAW_SIZE), np.float32, ["C", "W"])  # one array type: one compiled version
    try:
        out, bad = _encode(flat)
    except Exception as exc:
        if not from_numba_cache(exc):
            raise
        where = getattr(getattr(_encode, "_cache", None), "_cache_path", "numba's cache folder")
        without_numba_cache(exc, [_encode], where, "the compiled feature encoding")
        out, bad = _encode(flat)
    if bad >= 0:
        raise _not_counts(raw, bad)
    return out.reshape(raw.shape[:-1] + (NUM_FEATURES,))


def _not_counts(raw: np.ndarray, bad: int) -> ValueError:
    """The error for the ``bad``-th row (flat index) of ``raw``, naming its first wrong column."""
    row = raw.reshape(-1, RAW_SIZE)[bad]
    column = int(np.flatnonzero(~are_counts(row))[0])
    where = np.unravel_index(bad, raw.shape[:-1]) if raw.ndim > 2 else (bad,)
    return ValueError(f"raw positions are checker counts, whole numbers 0..{NUM_CHECKERS} (the {RAW_SIZE} "
                      f"numbers of raw_positions); row {', '.join(str(int(i)) for i in where)}, column "
                      f"{column} holds {row[column]}")

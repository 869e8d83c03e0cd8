"""Encodings of positions: the raw 50-number layout of FORMATS.md and the TD features.

``raw_positions`` turns mover's-view states into the layout the exported policy
reads: columns 0..23 my counts on my personal points 1..24, 24..47 the
opponent's counts on its personal points 1..24, 48 my borne-off count, 49 the
opponent's. ``features`` turns that layout into the network's inputs. The
feature function is versioned: any change of its output bumps
``FEATURES_VERSION``, which every checkpoint and export records.

Features, version ``nardy-features/1`` (per side, mine first, then the opponent's):

- 24 points x 4 TD-Gammon units: n >= 1, n >= 2, n >= 3, (n - 3) / 2 for n > 3
- borne off / 15
- pip count / 360 (the starting count)
- checkers on the head / 15
- checkers home (personal 1..6) / 15
- longest run of held points along the other side's route / 6
- whether every remaining checker is home (bearing off possible)
"""

from __future__ import annotations

import numpy as np

from .core import HALF, NUM_CHECKERS, NUM_POINTS, OFF_MOVER, OFF_OPPONENT, STATE_SIZE, StateError

__all__ = ["RAW_SIZE", "FEATURES_VERSION", "NUM_FEATURES", "raw_positions", "features"]

RAW_SIZE = 50
"""Numbers in the raw layout."""
FEATURES_VERSION = "nardy-features/1"
"""Name of the feature function; recorded in checkpoints and exports."""
_PER_SIDE = NUM_POINTS * 4 + 6
NUM_FEATURES = 2 * _PER_SIDE
"""Length of a feature vector (204)."""
_START_PIPS = 360.0


def raw_positions(states: np.ndarray) -> np.ndarray:
    """Mover's-view states ``[..., 26]`` -> float32 raw layout ``[..., 50]`` seen by the mover."""
    states = np.asarray(states)
    if states.shape[-1:] != (STATE_SIZE,):
        raise StateError(f"states must have {STATE_SIZE} columns (the mover's-view state), got shape "
                         f"{list(states.shape)}")
    board = states[..., :NUM_POINTS].astype(np.float32)
    raw = np.empty(states.shape[:-1] + (RAW_SIZE,), dtype=np.float32)
    raw[..., :NUM_POINTS] = np.maximum(board, 0)
    # The opponent's personal point y is my index (y - 1 + 12) % 24.
    theirs = np.maximum(-board, 0)
    raw[..., NUM_POINTS:2 * NUM_POINTS] = np.roll(theirs, -HALF, axis=-1)
    raw[..., 48] = states[..., OFF_MOVER]
    raw[..., 49] = states[..., OFF_OPPONENT]
    return raw


def _side_features(counts: np.ndarray, off: np.ndarray, other_held_route: np.ndarray) -> list[np.ndarray]:
    """Features of one side from its counts on its personal points 1..24."""
    units = np.stack([
        (counts >= 1).astype(np.float32),
        (counts >= 2).astype(np.float32),
        (counts >= 3).astype(np.float32),
        np.maximum(counts - 3, 0) / 2,
    ], axis=-1).reshape(counts.shape[:-1] + (NUM_POINTS * 4,))
    personal = np.arange(1, NUM_POINTS + 1, dtype=np.float32)
    pips = counts @ personal
    home = counts[..., :6].sum(-1)
    # Longest run of this side's held points along the other side's route.
    run = np.zeros(counts.shape[:-1], dtype=np.float32)
    best = np.zeros_like(run)
    for k in range(NUM_POINTS):
        run = (run + 1) * other_held_route[..., k]
        best = np.maximum(best, run)
    return [
        units,
        (off / NUM_CHECKERS)[..., None],
        (pips / _START_PIPS)[..., None],
        (counts[..., NUM_POINTS - 1] / NUM_CHECKERS)[..., None],
        (home / NUM_CHECKERS)[..., None],
        (np.minimum(best, 6) / 6)[..., None],
        ((home + off) == NUM_CHECKERS).astype(np.float32)[..., None],
    ]


def features(raw: np.ndarray) -> np.ndarray:
    """Raw layout ``[..., 50]`` -> float32 features ``[..., NUM_FEATURES]`` (version above)."""
    raw = np.asarray(raw, dtype=np.float32)
    if raw.shape[-1:] != (RAW_SIZE,):
        raise ValueError(f"raw positions must have {RAW_SIZE} columns (raw_positions of the states), got shape "
                         f"{list(raw.shape)}")
    mine = raw[..., :NUM_POINTS]
    theirs = raw[..., NUM_POINTS:2 * NUM_POINTS]
    # My points in the opponent's route order are my personal 13..24 then 1..12,
    # i.e. the opponent's personal 1..24; and symmetrically for the opponent.
    mine_on_their_route = np.roll(mine > 0, -HALF, axis=-1).astype(np.float32)
    theirs_on_my_route = np.roll(theirs > 0, -HALF, axis=-1).astype(np.float32)
    parts = _side_features(mine, raw[..., 48], mine_on_their_route)
    parts += _side_features(theirs, raw[..., 49], theirs_on_my_route)
    return np.concatenate(parts, axis=-1).astype(np.float32)

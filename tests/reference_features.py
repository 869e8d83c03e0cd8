"""Plain numpy reference for the TD features (``nardy-features/1``), as the docstring of
``nardy_env.encoding`` lists them.

Whole-array numpy, one feature at a time, for the tests to hold the compiled
``nardy_env.encoding.features`` and the in-graph ``agents.network.RawFeatures``
against, bit for bit.
"""

from __future__ import annotations

import numpy as np

NUM_POINTS = 24
HALF = 12
NUM_CHECKERS = 15
START_PIPS = 360.0


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
        (pips / START_PIPS)[..., None],
        (counts[..., NUM_POINTS - 1] / NUM_CHECKERS)[..., None],
        (home / NUM_CHECKERS)[..., None],
        (np.minimum(best, 6) / 6)[..., None],
        ((home + off) == NUM_CHECKERS).astype(np.float32)[..., None],
    ]


def features(raw: np.ndarray) -> np.ndarray:
    """Raw layout ``[..., 50]`` -> float32 features ``[..., 204]``."""
    raw = np.asarray(raw, dtype=np.float32)
    mine = raw[..., :NUM_POINTS]
    theirs = raw[..., NUM_POINTS:2 * NUM_POINTS]
    # My points in the opponent's route order are my personal 13..24 then 1..12,
    # i.e. the opponent's personal 1..24; and symmetrically for the opponent.
    mine_on_their_route = np.roll(mine > 0, -HALF, axis=-1).astype(np.float32)
    theirs_on_my_route = np.roll(theirs > 0, -HALF, axis=-1).astype(np.float32)
    parts = _side_features(mine, raw[..., 48], mine_on_their_route)
    parts += _side_features(theirs, raw[..., 49], theirs_on_my_route)
    return np.concatenate(parts, axis=-1).astype(np.float32)

"""Throughput of the rules core: random games played in lockstep batches (``nardy bench``)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from nardy_env import OFF_MOVER, OFF_OPPONENT, Rules, flip, initial_states, legal_afterstates
from nardy_env.core import available_cpus
from nardy_env.game import opening_roll, roll_dice
from nardy_env.rules import DEFAULT_RULES

__all__ = ["play_random_games", "bench_core"]


def play_random_games(
    n: int,
    rng: np.random.Generator,
    rules: Rules = DEFAULT_RULES,
    threads: int | None = None,
    batch: int = 4096,
) -> dict[str, Any]:
    """Play ``n`` games, each turn uniform over the legal afterstates.

    Games run in lockstep batches of ``batch``: one core call per ply for every
    unfinished game. Returns counts: games, positions (turns generated),
    results (afterstates listed), the largest result count seen, and points
    won by the first player.
    """
    positions = results = 0
    max_results = 0
    first_player_points = 0
    mars = 0
    for start in range(0, n, batch):
        size = min(batch, n - start)
        states = initial_states(size)
        _, dice = opening_roll(rng, size, rules)
        mover_is_first = np.ones(size, dtype=bool)
        active = np.arange(size)
        while active.size:
            found = legal_afterstates(states[active], dice[active], rules, validate=False, threads=threads)
            counts = found.counts()
            positions += active.size
            results += int(counts.sum())
            max_results = max(max_results, int(counts.max()))
            pick = found.offsets[:-1] + (rng.random(active.size) * counts).astype(np.int64)
            after = found.states[pick]
            over = after[:, OFF_MOVER] == 15
            if over.any():
                ended = active[over]
                points = np.where(after[over, OFF_OPPONENT] == 0, 2, 1)
                mars += int((points == 2).sum())
                first_player_points += int(np.where(mover_is_first[ended], points, -points).sum())
            states[active] = flip(after)
            mover_is_first[active] = ~mover_is_first[active]
            active = active[~over]
            dice[active] = roll_dice(rng, active.size)
    return {
        "positions": positions,
        "results": results,
        "max_results": max_results,
        "mars": mars,
        "first_player_points": first_player_points,
    }


def bench_core(games: int, seed: int = 0, rules: Rules = DEFAULT_RULES, threads: int | None = None) -> dict[str, Any]:
    """Time ``play_random_games`` (after a warm-up that compiles the core)."""
    play_random_games(8, np.random.default_rng(seed + 1), rules, threads)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    counts = play_random_games(games, rng, rules, threads)
    seconds = time.perf_counter() - t0
    return {
        "games": games,
        "seconds": round(seconds, 4),
        "games_per_s": round(games / seconds, 1),
        "positions_per_s": round(counts["positions"] / seconds, 1),
        "plies_per_game": round(counts["positions"] / games, 2),
        "max_results": counts["max_results"],
        "mars_rate": round(counts["mars"] / games, 4),
        "threads": threads if threads is not None else available_cpus(),
    }

"""Throughput of the rules core: random games played in lockstep batches (``nardy bench``)."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from nardy_env import NUM_CHECKERS, OFF_MOVER, flip, initial_states, legal_afterstates, outcome
from nardy_env.core import available_cpus, is_whole
from nardy_env.game import opening_roll, roll_dice
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules

__all__ = ["play_random_games", "bench_core"]


def _whole(name: str, value: Any, at_least: int = 1) -> int:
    if not is_whole(value, at_least):
        raise ValueError(f"{name} must be a whole number, {at_least} or more, got {value!r}")
    return int(value)


def _seed(seed: Any) -> int:
    from train.evaluate import check_seed

    return check_seed(seed)


def play_random_games(
    n: int,
    rng: np.random.Generator,
    rules: RulesLike | None = DEFAULT_RULES,
    threads: int | None = None,
    batch: int = 4096,
) -> dict[str, Any]:
    """Play ``n`` games, each turn uniform over the legal afterstates.

    Games run in lockstep batches of ``batch``: one core call per ply for every
    unfinished game. Returns counts: ``positions`` (turns generated),
    ``results`` (afterstates listed), ``max_results`` (the largest result count
    seen), ``mars`` (games won by mars) and ``first_player_points`` (points won
    by the side that moved first).
    """
    n, batch = _whole("n", n, 0), _whole("batch", batch)
    rules = as_rules(rules)
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
            over = after[:, OFF_MOVER] == NUM_CHECKERS
            if over.any():
                ended = active[over]
                points = outcome(after[over]).astype(np.int64)
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


def bench_core(games: int, *, seed: int = 0, rules: RulesLike | None = DEFAULT_RULES, threads: int | None = None) -> dict[str, Any]:
    """Time ``play_random_games`` (after a warm-up that compiles the core)."""
    games, seed = _whole("games", games), _seed(seed)
    rules = as_rules(rules)
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
        "seed": seed,
        "rules": rules.to_dict(),
    }


def _sample_legal(mask: np.ndarray, rng: np.random.Generator, prefix: bool) -> np.ndarray:
    """One uniformly random legal action per row of an action mask.

    ``prefix``: the mask is known to allow exactly actions 0..n-1 (turn mode),
    so n is the position of its first 0 (``argmin`` over a boolean view stops
    there, far cheaper than a sum over 3060 columns).
    """
    if prefix:
        n = np.where(mask[:, -1] == 1, mask.shape[1], np.argmin(mask.view(bool), axis=1))
        return (rng.random(mask.shape[0]) * n).astype(np.int64)
    cum = np.cumsum(mask, axis=1, dtype=np.int32)
    pick = (rng.random(mask.shape[0]) * cum[:, -1]).astype(np.int32)
    return (cum <= pick[:, None]).sum(axis=1)


def bench_env(games: int, *, num_envs: int = 256, action_mode: str = "turn", seed: int = 0,
              rules: RulesLike | None = DEFAULT_RULES) -> dict[str, Any]:
    """Random legal play through ``gymnasium.make_vec("LongNardy-v0", ...)`` (``nardy bench --env``).

    One native vector env of ``num_envs`` sub-envs (self-play); every step each
    sub-env's action is drawn uniformly from ``info["action_mask"]``. Timing
    starts after a warm-up of ``num_envs`` finished games (so that the games in
    flight are at all stages, not all at the start) and stops once ``games``
    more games have ended.
    ``steps_per_s`` counts sub-env steps (one per turn in turn mode, one per
    checker move in checker mode); ``cpu_seconds`` is this process's CPU time
    (all threads), which stays meaningful when other work shares the machine.
    """
    games, num_envs, seed = _whole("games", games), _whole("num_envs", num_envs), _seed(seed)
    rules = as_rules(rules)
    import gymnasium as gym

    import nardy_env  # noqa: F401  (registers LongNardy-v0)

    env = gym.make_vec(
        "LongNardy-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", action_mode=action_mode,
        rules=rules,
    )
    rng = np.random.default_rng(seed)
    prefix = action_mode == "turn"
    _, info = env.reset(seed=seed)
    warm = 0
    while warm < num_envs:
        _, _, terminated, _, info = env.step(_sample_legal(info["action_mask"], rng, prefix))
        warm += int(terminated.sum())
    finished = steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while finished < games:
        _, _, terminated, _, info = env.step(_sample_legal(info["action_mask"], rng, prefix))
        finished += int(terminated.sum())
        steps += 1
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    env.close()
    return {
        "games": finished,
        "seconds": round(seconds, 4),
        "games_per_s": round(finished / seconds, 1),
        "steps_per_s": round(steps * num_envs / seconds, 1),
        "cpu_seconds": round(cpu, 4),
        "num_envs": num_envs,
        "action_mode": action_mode,
        "seed": seed,
        "rules": as_rules(rules).to_dict(),
    }


__all__ += ["bench_env"]


def bench_search(player: str | os.PathLike[str], *, plies: tuple[int, ...] = (0, 1, 2), positions: int = 40, seed: int = 0,
                 rules: RulesLike | None = DEFAULT_RULES, filter_k: int | None = None) -> list[dict[str, Any]]:
    """Cost of each search depth: positions evaluated and milliseconds per decision, on average and
    at the slowest (``nardy bench --search``); ``filter_k``: the move filter to search with beyond
    0-ply (default: the player's own); each level beyond 0-ply reports the filter it searched with.

    Decisions are taken on positions from games of the player against itself,
    one at a time, as ``nardy play`` and ``nardy hint`` take them.
    """
    from agents.registry import split_ply
    from agents.search import MAX_PLY
    from nardy_env.players import load_player

    if not isinstance(player, str | os.PathLike):
        raise TypeError(f"player must be a name or path of a network player, got {type(player).__name__}")
    player = os.fspath(player)
    base, depth = split_ply(player)
    if depth:
        raise ValueError(f"player {player!r}: name it without @N; plies gives the depths measured")
    given = plies
    try:
        plies = tuple(plies) if not isinstance(plies, str | bytes) else ()
    except TypeError:  # not a sequence at all
        plies = ()
    if not plies or not all(is_whole(p) and p <= MAX_PLY for p in plies):
        plies = given
        raise ValueError(f"plies must be search depths, whole numbers from 0 to {MAX_PLY}, got {plies!r}")
    positions, seed = _whole("positions", positions), _seed(seed)
    rules = as_rules(rules)
    rng = np.random.default_rng(seed)
    # Positions from the player's own games (0-ply), spread over whole games.
    scout = load_player(base, rules)
    states = initial_states(8)
    _, dice = opening_roll(rng, 8, rules)
    pool: list[np.ndarray] = []
    pool_dice: list[np.ndarray] = []
    active = np.arange(8)
    while active.size and len(pool) < 20 * positions:
        found = legal_afterstates(states[active], dice[active], rules)
        pool.extend(states[active])
        pool_dice.extend(dice[active])
        pick = found.offsets[:-1] + scout.choose(states[active], found, rng)
        after = found.states[pick]
        states[active] = flip(after)
        active = active[after[:, OFF_MOVER] < 15]
        dice[active] = roll_dice(rng, active.size)
    chosen = rng.choice(len(pool), size=min(positions, len(pool)), replace=False)
    out = []
    for ply in plies:
        searcher: Any = load_player(f"{base}@{ply}" if ply else base, rules)
        if ply and filter_k is not None:
            if not hasattr(searcher, "filter_k"):
                raise ValueError(f"{base}@{ply} has no move filter to set (filter_k)")
            searcher.filter_k = filter_k
        searcher.evaluations = 0
        took = []  # each decision's time: a game's frame budget is set by the slow ones, not the mean
        for k in chosen:
            t0 = time.perf_counter()
            found = legal_afterstates(pool[k][None], pool_dice[k][None], rules)
            searcher.choose(pool[k][None], found, rng)
            took.append(time.perf_counter() - t0)
        out.append({"ply": ply, **({"filter_k": searcher.filter_k} if ply and hasattr(searcher, "filter_k") else {}),
                    "decisions": len(chosen),
                    "positions_per_decision": round(searcher.evaluations / len(chosen), 1),
                    "ms_per_decision": round(1000 * sum(took) / len(chosen), 2),
                    "ms_max": round(1000 * max(took), 2)})
    return out

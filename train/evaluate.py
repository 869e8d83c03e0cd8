"""Matches between players with paired dice, and round-robin ladders.

Paired dice: every game is played twice with the same sequence of rolls (the
opening roll included) and the players' sides swapped, so luck cancels within
a pair. Results are reported as points per game for the first player with a
95% confidence interval computed over pairs (the unit that is independent),
the win rate with its interval, and both sides' mars rates.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import functools
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from nardy_env import Afterstates, NardyWarning, Rules, flip, initial_states, legal_afterstates, outcome
from nardy_env._runtime import caught_warnings
from nardy_env.core import HALF, NUM_CHECKERS, NUM_POINTS, OFF_MOVER, available_cpus, is_whole
from nardy_env.game import opening_roll
from nardy_env.players import (
    Player,
    PlayerFailed,
    PlayerSpec,
    choose_indices,
    code_file,
    load_player,
    player_name,
)
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules
from train.moves import format_move_sequence

__all__ = ["MatchResult", "play_pairs", "evaluate", "ladder", "ladder_provenance", "subset", "summarize",
           "elo_ratings", "bot_version", "same_bot_version", "BOT_VERSION_BEFORE_RECORDED", "MAX_SEED", "GAMES_PER_WORKER", "WorkerDied"]

_DICE_BLOCK = 128
_MAX_PLIES = 5000  # far beyond any real game; a guard against a player that never finishes
CHUNK_PAIRS = 100
"""Pairs played together in one batch (and one worker task) by default. Fixed, so that a
randomising player's choices, drawn per batch, do not depend on the workers or the machine."""

MAX_GAMES = 10_000_000
"""The most games in one match (hours to days of play; the results are held in memory). For
more, play several matches with different seeds."""

GAMES_PER_WORKER = 1000
"""Below this many games a match gains nothing from another worker process (each costs
seconds to start: imports, numba cache, the players). Measured on 2 CPUs: two workers
broke even with one process at about 1,000 games (default or race against heuristic) and
were a quarter slower at 400."""


def subset(found: Afterstates, positions: np.ndarray) -> Afterstates:
    """The afterstates of some positions only, re-based to their own offsets."""
    counts = found.counts()[positions]
    starts = found.offsets[positions]
    rows = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(counts.sum())
    return Afterstates(found.states[rows], found.moves[rows], found.num_moves[rows],
                       np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


class _PairDice:
    """The opening roll and the roll sequence of each pair, from (seed, pair index)."""

    def __init__(self, seed: int, pair_ids: np.ndarray, rules: Rules) -> None:
        self.rngs = [np.random.default_rng([seed, int(j)]) for j in pair_ids]
        first = np.empty(len(pair_ids), dtype=np.int8)
        opening = np.empty((len(pair_ids), 2), dtype=np.int64)
        for k, rng in enumerate(self.rngs):
            f, d = opening_roll(rng, 1, rules)
            first[k], opening[k] = f[0], d[0]
        self.first, self.opening = first, opening
        self.table = np.zeros((len(pair_ids), 0, 2), dtype=np.int64)

    def at(self, pairs: np.ndarray, ply: np.ndarray) -> np.ndarray:
        """Dice of ply ``ply`` (>= 1) of each given pair."""
        need = int(ply.max()) if ply.size else 0
        while self.table.shape[1] < need:
            block = np.stack([rng.integers(1, 7, size=(_DICE_BLOCK, 2)) for rng in self.rngs])
            self.table = np.concatenate([self.table, block], axis=1)
        return self.table[pairs, ply - 1]


def play_pairs(player_a: PlayerSpec, player_b: PlayerSpec, pair_ids: Sequence[int], seed: int,
               rules: RulesLike | None = DEFAULT_RULES, on_games_done: Callable[[int], None] | None = None,
               threads: int | None = None, records: bool = False) -> dict[str, Any]:
    """Play each pair's two games (A white, then A black) in lockstep.

    Returns per-game arrays in pair order (game ``2k`` is pair k with A white):
    ``points_a`` (A's points: +-1 oin, +-2 mars), ``plies``; with ``records``,
    also ``records``: per game ``{"pair", "first", "opening", "plays"}``, the
    plays as ``[[d1, d2], "24/18 18/13"]`` in common point numbers, one per ply
    from the opening roll on, the sides alternating from ``first``.
    """
    rules = as_rules(rules)
    check_seed(seed)
    given = np.asarray(list(pair_ids) if isinstance(pair_ids, range) else pair_ids)
    if given.ndim != 1 or (given.size and (given.dtype == np.bool_ or not np.issubdtype(given.dtype, np.integer)
                                            or (given < 0).any())):
        raise ValueError(f"pair_ids must be a sequence of pair numbers (whole numbers, 0 or more), got {pair_ids!r}")
    pair_array = given.astype(np.int64)
    # Names and plain functions become players here; player objects are used as they are, checked
    # against the rules again quietly (their warnings came where they were loaded; what cannot
    # play these rules at all, a CheckerPolicy under others, is refused).
    with caught_warnings():
        warnings.simplefilter("ignore")
        players = [load_player(p, rules) for p in (player_a, player_b)]
    n_pairs = len(pair_array)
    dice_src = _PairDice(seed, pair_array, rules)
    games = 2 * n_pairs
    pair_of = np.repeat(np.arange(n_pairs), 2)
    a_is_white = np.tile([True, False], n_pairs)
    first_is_white = np.repeat(dice_src.first == 0, 2)
    a_to_move = a_is_white == first_is_white
    states = initial_states(games)
    dice = np.repeat(dice_src.opening, 2, axis=0)
    plies = np.zeros(games, dtype=np.int64)
    points_a = np.zeros(games, dtype=np.int64)
    # Only players that randomise draw from it: one stream per batch of pairs, keyed by its first
    # pair, so a chunk of a match plays the same whichever worker or machine plays it.
    rng = np.random.default_rng([seed, 1 << 30, int(pair_array[0]) if n_pairs else 0])
    active = np.arange(games)
    log: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    while active.size:
        found = legal_afterstates(states[active], dice[active], rules, validate=False, threads=threads)
        picks = np.empty(active.size, dtype=np.int64)
        for role, player, mask in (("A", players[0], a_to_move[active]), ("B", players[1], ~a_to_move[active])):
            idx = np.flatnonzero(mask)
            if idx.size:
                sub = subset(found, idx)
                games_now = active[idx]
                colors = np.where(a_to_move[games_now] == a_is_white[games_now], 0, 1)  # Color values
                try:
                    chosen = choose_indices(player, states[games_now], sub, rng, colors, dice[games_now],
                                            name_failures=True)
                except PlayerFailed as exc:  # say where in the match; the player's own exception stays the cause
                    raise _in_match(exc, role, games_now, pair_array[pair_of], a_is_white, plies,
                                    seed) from (exc.__cause__ or exc)
                picks[idx] = found.offsets[idx] + (chosen - sub.offsets[:-1])
        after = found.states[picks]
        if records:  # who moved (0 white), with which dice, which moves (the mover's points)
            white_moved = a_to_move[active] == a_is_white[active]
            log.append((active.copy(), np.where(white_moved, 0, 1), dice[active].copy(),
                        found.moves[picks].copy(), found.num_moves[picks].copy()))
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        if over.any():
            ended = active[over]
            pts = outcome(after[over]).astype(np.int64)
            points_a[ended] = np.where(a_to_move[ended], pts, -pts)
            if on_games_done:
                on_games_done(int(over.sum()))
        states[active] = flip(after)
        a_to_move[active] = ~a_to_move[active]
        plies[active] += 1
        active = active[~over]
        if active.size and plies[active].max() > _MAX_PLIES:
            raise RuntimeError(f"a game passed {_MAX_PLIES} plies; a player never finishes")
        dice[active] = dice_src.at(pair_of[active], plies[active])
    out: dict[str, Any] = {"points_a": points_a, "plies": plies}
    if records:
        out["records"] = _records(log, games, pair_array, dice_src)
    return out


def _records(log, games: int, pair_array: np.ndarray, dice_src: _PairDice) -> list[dict[str, Any]]:
    """Each game's plays as text, from the per-ply log of ``play_pairs``."""
    plays: list[list[Any]] = [[] for _ in range(games)]
    for rows, movers, dice, moves, num in log:
        # Common point numbers for the whole ply at once: white's are its own, black's turned by 12.
        black = (movers == 1)[:, None, None] & (moves > 0)
        common = np.where(black, (moves.astype(np.int64) + HALF - 1) % NUM_POINTS + 1, moves).tolist()
        for g, d, m, n in zip(rows.tolist(), dice.tolist(), common, num.tolist(), strict=True):
            plays[g].append([d, format_move_sequence(m[:n])])
    first = ["white" if f == 0 else "black" for f in dice_src.first.tolist()]
    return [{"pair": int(pair_array[g // 2]), "first": first[g // 2], "opening": dice_src.opening[g // 2].tolist(),
             "plays": plays[g]} for g in range(games)]


@dataclass
class MatchResult:
    """Per-game results of a paired match, and their summary."""

    player_a: str
    player_b: str
    points_a: np.ndarray
    plies: np.ndarray
    seed: int
    rules: dict[str, Any] | None = None
    """The rule variant keys played (None: not recorded)."""
    chunk_pairs: int | None = None
    """Pairs per batch (None: not recorded)."""
    provenance: dict[str, Any] | None = None
    """What else a reader needs to reproduce the match: versions, the players' network files."""
    records: list[dict[str, Any]] | None = None
    """Every game's record, in game order (``evaluate(..., records=True)``), else None."""

    def __repr__(self) -> str:  # the summary line: a notebook shows this, not 2,000 games' arrays
        points, plies = np.asarray(self.points_a), np.asarray(self.plies)
        if points.size < 2 or points.size % 2 or plies.shape != points.shape:  # not paired games (made by hand)
            return (f"MatchResult({self.player_a!r} vs {self.player_b!r}, {points.size} "
                    f"game{'' if points.size == 1 else 's'})")
        s = summarize(self.player_a, self.player_b, points, plies, self.seed)
        low, high = s["ci95"]
        win_low, win_high = s["win_rate_ci95"]
        return (f"MatchResult({self.player_a!r} vs {self.player_b!r}, {s['games']} games, seed {self.seed}: "
                f"{s['points_per_game']:+.3f} points/game [{low:+.3f}, {high:+.3f}], win rate "
                f"{s['win_rate']:.1%} [{win_low:.1%}, {win_high:.1%}]; .summary() for the rest)")

    def summary(self) -> dict[str, Any]:
        """The match as ``nardy eval --json`` prints it (docs/agents.md lists the keys)."""
        out = summarize(self.player_a, self.player_b, self.points_a, self.plies, self.seed)
        out["rules"] = self.rules
        out["chunk_pairs"] = self.chunk_pairs
        out.update(self.provenance or {})
        return out


def provenance(player_a: Any, player_b: Any) -> dict[str, Any]:
    """The versions that decide a match's games (nardy's rules and players, numpy's random
    streams for the dice) and the SHA-256 of each named player's file (its network, or the
    source of a FILE.py:NAME player; None for bots, plugins' names and objects)."""
    import nardy_env
    from agents.files import file_sha256
    from agents.registry import level_temperature, player_file, split_ply

    out: dict[str, Any] = {"nardy_version": nardy_env.__version__, "numpy_version": np.__version__}
    player_a, player_b = (os.fspath(p) if isinstance(p, os.PathLike) else p for p in (player_a, player_b))
    for side, player in (("a", player_a), ("b", player_b)):
        # A network's file, or the source of your own player (FILE.py:NAME).
        path = (player_file(player) or code_file(player)) if isinstance(player, str) else None
        out[f"player_{side}_sha256"] = file_sha256(path) if path is not None else None
    for side, player in (("a", player_a), ("b", player_b)):  # the same file searched deeper is another player
        ply = split_ply(player)[1] if isinstance(player, str) else getattr(player, "ply", 0)
        out[f"player_{side}_ply"] = int(ply) if isinstance(ply, int) else 0
    for side, player in (("a", player_a), ("b", player_b)):  # a level of the network is another player too
        temperature = level_temperature(player) if isinstance(player, str) else getattr(player, "temperature", 0.0)
        out[f"player_{side}_temperature"] = float(temperature) if isinstance(temperature, int | float) else 0.0
    for side, player in (("a", player_a), ("b", player_b)):  # a bot made stronger keeps its name
        out[f"player_{side}_bot_version"] = bot_version(player)
    return out


def same_bot_version(recorded: Any, version: int | None) -> bool:
    """Whether an evaluation record's ``player_bot_version`` (None where the record has none)
    stands for the bot at ``version`` (None: not one of nardy's bots): a record from before bots
    had versions met version 1; anything but a whole number is another player."""
    if version is None:
        return recorded is None
    if recorded is None:
        recorded = BOT_VERSION_BEFORE_RECORDED
    return type(recorded) is int and recorded == version


BOT_VERSION_BEFORE_RECORDED = 1
"""The version of every bot in evaluation records made before versions were recorded (2026-12-05)."""


def bot_version(player: Any) -> int | None:
    """The version of nardy's own bot that ``player`` names or is (``random``, ``race``,
    ``heuristic``, with or without ``@0``; names go to the bots before any file, as
    ``load_player`` has it), None for any other player (your own subclass of a bot, or a bot
    named as ``module:NAME``, included)."""
    from agents.registry import NAMED_BOTS, split_ply

    bots: dict[str, Any] = NAMED_BOTS
    if isinstance(player, os.PathLike):
        player = os.fspath(player)
    if isinstance(player, str):
        try:
            bot = bots.get(split_ply(player)[0])
        except ValueError:  # a bad depth: the match refuses the name itself
            return None
    else:
        bot = type(player) if type(player) in bots.values() else None
    return None if bot is None else int(bot.version)


def mean_ci(pair_values: np.ndarray, low: float, high: float) -> tuple[float, float, float]:
    """Mean of independent pair values in ``[low, high]`` and its 95% interval.

    A normal interval over pairs after adding one pseudo-pair at each end of
    the range (the idea of Agresti and Coull's "plus four" for proportions), then
    clipped to the range: a match in which every pair ends alike, or a very
    short one, still gets an honest interval of non-zero width rather than
    [x, x] or infinity, and no bound lies outside what is possible. For an
    even match the padding widens the points-per-game interval by about 3% at
    300 pairs and 1% at 1,000 (docs/agents.md has the measured figures); for
    a lopsided one near the end of the range it widens the
    interval (by 2.5 times at 1000 pairs and -1.994 points per game), where
    the plain normal interval is too narrow anyway.
    """
    values = np.asarray(pair_values, dtype=np.float64)
    padded = np.concatenate([values, [low, high]])
    centre = float(padded.mean())
    half = 1.96 * padded_se(values, low, high)
    return float(values.mean()), max(low, centre - half), min(high, centre + half)


def padded_se(pair_values: np.ndarray, low: float, high: float) -> float:
    """The standard error behind ``mean_ci``'s interval, before that is clipped to the range
    (clipping narrows a lopsided match's interval on one side only; the ladder's fit needs
    the whole error)."""
    padded = np.concatenate([np.asarray(pair_values, dtype=np.float64), [low, high]])
    return float(padded.std(ddof=1)) / math.sqrt(padded.size)


def summarize(player_a: str, player_b: str, points_a: np.ndarray, plies: np.ndarray, seed: int) -> dict[str, Any]:
    """The match summary: points per game and win rate with 95% intervals, mars rates.

    ``mars_rate_a``: the share of all games that A won by mars (B bore off
    nothing); ``mars_rate_b`` likewise for B. ``*_a_white`` / ``*_a_black``:
    A's results in the games it played as white (the first of each pair) and
    as black; who moves first is decided by the opening roll either way.
    """
    pairs = points_a.reshape(-1, 2)
    ppg, ppg_lo, ppg_hi = mean_ci(pairs.mean(axis=1), -2.0, 2.0)
    win_rate, win_lo, win_hi = mean_ci((pairs > 0).mean(axis=1), 0.0, 1.0)
    return {
        "player_a": player_a,
        "player_b": player_b,
        "games": int(points_a.size),
        "pairs": int(pairs.shape[0]),
        "seed": seed,
        "win_rate": round(win_rate, 4),
        "win_rate_ci95": [round(win_lo, 4), round(win_hi, 4)],
        "points_per_game": round(ppg, 4),
        "ci95": [round(ppg_lo, 4), round(ppg_hi, 4)],
        # The interval's standard error before it is clipped to [-2, 2] (a ladder weighs matches by it).
        "points_se": round(padded_se(pairs.mean(axis=1), -2.0, 2.0), 6),
        "mars_rate_a": round(float((points_a == 2).mean()), 4),
        "mars_rate_b": round(float((points_a == -2).mean()), 4),
        # Exact counts (the rates above are rounded): wins and mars wins of each side.
        "wins_a": int((points_a > 0).sum()),
        "wins_b": int((points_a < 0).sum()),
        "mars_wins_a": int((points_a == 2).sum()),
        "mars_wins_b": int((points_a == -2).sum()),
        "points_per_game_a_white": round(float(pairs[:, 0].mean()), 4),
        "points_per_game_a_black": round(float(pairs[:, 1].mean()), 4),
        "win_rate_a_white": round(float((pairs[:, 0] > 0).mean()), 4),
        "win_rate_a_black": round(float((pairs[:, 1] > 0).mean()), 4),
        "mean_plies": round(float(plies.mean()), 2),
        "sd_plies": round(float(plies.std()), 2),
    }


def _in_match(exc: PlayerFailed, role: str, games_now: np.ndarray, pair_of_game: np.ndarray,
              a_is_white: np.ndarray, plies: np.ndarray, seed: int) -> PlayerFailed:
    """``exc`` with where in the match it happened: the side, and the pair, game and ply (of the
    position it chose badly for, else of the first position it was asked about)."""
    game = int(games_now[exc.position if exc.position is not None else 0])
    pair = int(pair_of_game[game])
    others = ("" if exc.position is not None or games_now.size == 1
              else f" and {games_now.size - 1} other game{'s' if games_now.size > 2 else ''}")
    failed = PlayerFailed(f"{exc} [playing as {role}; at ply {int(plies[game]) + 1} of pair {pair}'s game with A "
                          f"{'white' if a_is_white[game] else 'black'}{others}, seed {seed}]")
    failed.position = exc.position
    return failed


def _exit_with_parent() -> None:
    """Worker initializer: end this worker once the process that started it is gone (killed by
    SIGKILL or SIGHUP, with no chance to stop its workers), instead of waiting for work for ever."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)  # ready once the parent process has ended
    if sentinel is None:
        return

    def watch() -> None:
        wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="nardy-exit-with-parent", daemon=True).start()


def _worker(spec_a: str, spec_b: str, pair_ids: Sequence[int], seed: int,
            rules: dict, records: bool = False) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """Process-pool entry: load both players by name and play some pairs.

    Returns the results and the warnings loading the players raised (category bases,
    text, file, line, module), for the calling process to show once (``_say_once``) as its own
    filters decide, rather than once per worker.
    """
    # One thread each for torch: OMP_NUM_THREADS, which torch starts from, for a player that brings
    # it (a checkpoint, or your player importing it as it plays); set_num_threads below for a torch
    # imported before (a __main__ that imports it). Bots and exported policies play without torch,
    # and importing it anyway cost each worker some 180 MB.
    os.environ["OMP_NUM_THREADS"] = "1"
    r = Rules.from_dict(rules)
    # All of it, for the calling process's filters to decide (a script's own filters stay there);
    # but an "error" from -W or PYTHONWARNINGS, which a spawned worker inherits, still fails the
    # load here at once, as it would in the calling process.
    errors = [f for f in warnings.filters if f[0] == "error"]
    with caught_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _, message, category, module, lineno in reversed(errors):
            warnings.filterwarnings("error", message.pattern if message else "", cast(type[Warning], category),
                                    module.pattern if module else "", lineno)
        players = load_player(spec_a, r), load_player(spec_b, r)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    modules = {getattr(m, "__file__", None): name for name, m in list(sys.modules.items())}
    said = [(_sendable_category(w.category), str(w.message), w.filename, w.lineno, modules.get(w.filename))
            for w in caught]
    return play_pairs(*players, pair_ids, seed, r, threads=1, records=records), said


def _sendable_category(category: type[Warning]) -> tuple[str, ...]:
    """How a worker names a warning's category to the calling process: nardy's own classes
    (``NardyWarning`` and its kinds) by module and name, else the names of Python's own warning
    classes it is, the most derived ones (a player's own class, defined in its file, cannot be
    sent between processes)."""
    ours = next((c for c in category.__mro__ if c.__module__ == NardyWarning.__module__), None)
    builtin = [c for c in category.__mro__ if c.__module__ == "builtins" and issubclass(c, Warning)
               and not (ours is not None and issubclass(ours, c))]
    names = tuple(c.__name__ for c in builtin if not any(d is not c and issubclass(d, c) for d in builtin))
    return ((f"{ours.__module__}:{ours.__qualname__}",) if ours is not None else ()) + names


@functools.cache
def _stand_in(bases: tuple[str, ...]) -> type[Warning]:
    """A warning category here that is what a worker's was: nardy's own class, one of Python's
    own, or a class deriving from the several it derived from (so that filters by category
    match as they did)."""
    def found(name: str) -> Any:
        module, _, own = name.partition(":")
        return getattr(sys.modules[module], own, None) if module == NardyWarning.__module__ else getattr(builtins, name, None)

    classes = tuple(c for c in map(found, bases) if isinstance(c, type) and issubclass(c, Warning)) or (UserWarning,)
    return classes[0] if len(classes) == 1 else type("_".join(c.__name__ for c in classes), classes, {})


_SAID: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("nardy_load_said", default=None)
"""Texts of the warnings loading players has said in the command or call in progress."""


@contextlib.contextmanager
def saying_once() -> Iterator[set[str]]:
    """A scope in which what loading players says (``load_saying_once``) is said once: a
    command, one ``evaluate()`` or ``ladder()`` call (its matches load their players again,
    chunk by chunk and in each worker). Nested scopes share the outer one's."""
    said = _SAID.get()
    if said is not None:
        yield said
        return
    said = set()
    token = _SAID.set(said)
    try:
        yield said
    finally:
        _SAID.reset(token)


def load_saying_once(spec: PlayerSpec, rules: RulesLike | None = DEFAULT_RULES) -> Player:
    """``load_player``, what it says (warnings: a plugin that failed, a network trained under
    other rules, a player file's own) said once in the scope in progress (``saying_once``),
    also when it fails (it may say why)."""
    caught: list = []
    try:
        with caught_warnings(record=True) as caught:  # under the filters in force
            return load_player(spec, rules)
    finally:  # shown through the showwarning in force outside the recording
        _show_new(caught)


def _say_once(bases: tuple[str, ...], text: str, filename: str, lineno: int, module: str | None) -> None:
    """A warning a worker's load raised, once in the scope in progress, as raised there (its
    category, file, line and module) and as the filters here decide (a player file's
    DeprecationWarning stays hidden, as it is when the player is loaded here); counted as said
    only if shown."""
    said = _SAID.get()
    if said is not None and text in said:
        return
    with caught_warnings(record=True) as caught:  # the filters in force decide
        warnings.warn_explicit(text, _stand_in(tuple(bases)), filename, lineno, module=module)
    _show_new(caught)


def _show_new(caught: list) -> None:
    """Show recorded warnings not yet said in the scope in progress, and count them as said."""
    said = _SAID.get()
    for w in caught:
        text = str(w.message)
        if said is not None:
            if text in said:
                continue
            said.add(text)
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def display_name(player: Any) -> str:
    """How a match names a player: its spec string, else its ``name``, else its ``__name__``, else its
    class's name (a nameless object: FirstPlay)."""
    return player if isinstance(player, str) else player_name(player, type(player).__name__)


def default_workers(games: int) -> int:
    """Worker processes for a match of ``games`` when none are asked for."""
    return max(1, min(available_cpus(), games // GAMES_PER_WORKER))


def _check_match(games: Any, seed: Any) -> None:
    if not is_whole(games, 2) or games % 2:
        raise ValueError(f"games must be an even number of at least 2 (pairs of games), got {games!r}")
    if games > MAX_GAMES:
        raise ValueError(f"games must be at most {MAX_GAMES:,} in one match, got {games:,}; for more, play "
                         "several matches with different seeds")
    check_seed(seed)


def _check_flags(**flags: Any) -> None:
    """``records``, ``progress``: True or False ("no" is true, and was taken so)."""
    for name, value in flags.items():
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {value!r}")


MAX_SEED = 2**32 - 1
"""The largest dice seed. Each pair's dice come from numpy's ``default_rng([seed, pair])``, which
reads a larger seed as two numbers: seed ``2**32 * k + s`` would replay seed ``s``'s pair ``k``."""


def check_seed(seed: Any) -> int:
    """``seed`` as an int, or ValueError unless it is a whole number from 0 to ``MAX_SEED`` (every
    seed of a match, a benchmark and an export's check positions)."""
    if not is_whole(seed) or seed > MAX_SEED:
        raise ValueError(f"seed must be a whole number from 0 to 2**32 - 1, got {seed!r}")
    return int(seed)


@saying_once()  # one scope a call (or the command's): its matches load the players again
def evaluate(player_a: PlayerSpec, player_b: PlayerSpec, games: int, seed: int = 0,
             rules: RulesLike | None = DEFAULT_RULES, workers: int | None = None, progress: bool = False,
             chunk_pairs: int | None = None, records: bool = False) -> MatchResult:
    """Play ``games`` games (an even number, 2 or more: ``games // 2`` pairs) of A against B with
    paired dice, the dice from ``seed`` (0 to 2**32 - 1, ``MAX_SEED``). Players are names, player objects or plain
    functions (``PlayerSpec``); ``rules`` a ``Rules`` or a dict of variant keys. Raises
    ``ValueError`` for bad arguments and ``PlayerNotFound`` for a name nothing resolves.

    Players named by strings run in ``workers`` processes when there are enough
    games (default: one per CPU, but no more than one per ``GAMES_PER_WORKER``
    games, since starting a worker process costs seconds); player objects run
    in this process. Every
    pair's dice come from (seed, pair index), and a randomising player draws
    from one stream per chunk of ``chunk_pairs`` pairs (keyed by the seed and
    the chunk's first pair), so the result depends only on the players, the
    games, the seed and ``chunk_pairs``, never on the workers or the machine.
    Worker processes are spawned, so a script that calls this with named
    players needs the usual ``if __name__ == "__main__":``. ``records``: keep
    every game's record (``MatchResult.records``; docs/agents.md). ``progress``:
    a bar on stderr (on a terminal or in a Jupyter notebook; a line every 30 s
    in a log).
    """
    rules = as_rules(rules)
    _check_match(games, seed)
    _check_flags(records=records, progress=progress)
    n_pairs = games // 2
    name_a, name_b = display_name(player_a), display_name(player_b)
    # How the result names them: distinct even when a player meets itself ("race", "race #2").
    label_a, label_b = _distinct([name_a, name_b])
    if workers is not None and not is_whole(workers, 1):
        raise ValueError(f"workers must be None (one per CPU) or an integer of at least 1, got {workers!r}")
    by_name = isinstance(player_a, str) and isinstance(player_b, str)
    if workers is not None and int(workers) > 1 and not by_name:
        warnings.warn(f"workers={workers} is not used: a player object plays in this process; name both "
                      "players by strings to play in worker processes", category=NardyWarning, stacklevel=3)  # 3: past saying_once's wrapper
    workers = default_workers(games) if workers is None else int(workers)
    seed = int(seed)  # a numpy integer too: the summary is JSON
    if chunk_pairs is None:
        chunk_pairs = CHUNK_PAIRS
    if not is_whole(chunk_pairs, 1):
        raise ValueError(f"chunk_pairs must be an integer of at least 1, got {chunk_pairs!r}")
    chunk_pairs = int(chunk_pairs)  # a numpy integer too: the summary is JSON
    chunks = [range(s, min(s + chunk_pairs, n_pairs)) for s in range(0, n_pairs, chunk_pairs)]
    if by_name and min(workers, len(chunks)) > max(available_cpus(), 1):
        warnings.warn(f"workers={workers} is more than the {available_cpus()} CPUs here: the match plays the same, "
                      "only slower (the processes compete for the CPUs)", category=NardyWarning, stacklevel=3)
    bar = _progress(games, f"{label_a} vs {label_b}", progress)
    try:
        if by_name and workers > 1 and len(chunks) > 1:
            import multiprocessing as mp

            ctx = mp.get_context("spawn")  # numba and torch threads do not survive fork
            # The core compiled here first: on a cold numba cache the workers then load it
            # instead of each compiling it at once (seconds each, all competing for the CPUs).
            legal_afterstates(initial_states(1), np.array([[6, 5]]), rules)
            results: dict[int, dict[str, np.ndarray]] = {}
            pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx,
                                       initializer=_exit_with_parent)
            try:
                futures = {pool.submit(_worker, name_a, name_b, chunk, seed, rules.to_dict(), records): k
                           for k, chunk in enumerate(chunks)}
                notes: dict[tuple[Any, ...], None] = {}
                for fut in as_completed(futures):
                    results[futures[fut]], caught = fut.result()
                    notes.update(dict.fromkeys(caught))
                    bar.update(2 * len(chunks[futures[fut]]))
            except BrokenProcessPool as exc:
                _stop_workers(pool)
                raise WorkerDied(
                    f"a worker process of the match died or could not start ({exc}). Worker processes "
                    "are spawned and import the calling script again: a script that calls evaluate() "
                    "must keep its code under `if __name__ == \"__main__\":`; or pass workers=1 "
                    "(one process). A worker killed for memory ends a match the same way.") from exc
            except BaseException:
                # Interrupted (Ctrl-C, SIGTERM from a job scheduler) or a worker failed: stop the
                # workers now rather than wait for their chunks (shutdown would), or leave them running.
                _stop_workers(pool)
                raise
            pool.shutdown()
            for note in notes:  # each worker loaded the players: their warnings, once
                _say_once(*note)
            parts = [results[k] for k in range(len(chunks))]
        else:
            pa = load_saying_once(player_a, rules)
            pb = load_saying_once(player_b, rules)
            parts = [play_pairs(pa, pb, chunk, seed, rules, on_games_done=bar.update, records=records)
                     for chunk in chunks]
    finally:
        bar.close()
    points_a = np.concatenate([p["points_a"] for p in parts])
    game_records = None
    if records:
        game_records = []
        raw = [r for p in parts for r in p["records"]]
        for g, (r, pts) in enumerate(zip(raw, points_a.tolist(), strict=True)):
            a_white = g % 2 == 0  # the first game of each pair has A white
            game_records.append({
                "game": g, "pair": r["pair"], "white": label_a if a_white else label_b,
                "black": label_b if a_white else label_a, "first": r["first"], "opening": r["opening"],
                "winner": "white" if (pts > 0) == a_white else "black", "points": abs(pts), "points_a": pts,
                "plays": r["plays"],
                # Enough to replay the game and to play the match again, in every record of a file.
                "seed": seed, "rules": rules.to_dict(),
            })
    return MatchResult(label_a, label_b, points_a, np.concatenate([p["plies"] for p in parts]), seed,
                       rules.to_dict(), chunk_pairs, provenance(player_a, player_b), game_records)


class WorkerDied(RuntimeError):
    """A worker process of a match died (killed for memory, say) or could not start."""


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End a pool's worker processes at once (the executor offers no public way to)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NoBar()
    from .progress import progress_bar

    return progress_bar(total, desc, unit="game", leave=False)


@saying_once()
def ladder(players: Sequence[PlayerSpec], games: int, seed: int = 0, rules: RulesLike | None = DEFAULT_RULES,
           workers: int | None = None, progress: bool = False, chunk_pairs: int | None = None,
           on_match: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Round robin of paired matches and ratings in points per game.

    Ratings solve r_i - r_j = ppg(i, j) by weighted least squares (weights
    1 / se^2, se each match's ``points_se`` but at least 0.01), anchored so the first
    player's rating is 0; their 95% intervals come from the fit's covariance.
    ``elo``: Bradley-Terry ratings of the win rates on the Elo scale
    (``elo_ratings``), which do not saturate the way points per game do.
    ``on_match``: called with each match's summary as it finishes (so an
    interrupted ladder's finished matches need not be lost). Two entrants that
    are the same player (one network file at one depth: ``default`` and
    ``default@0``; or one bot: ``race`` and ``race@0``) are warned about: they
    count twice in the ratings.
    """
    if isinstance(players, str):
        raise TypeError(f"players must be a list of players, got the string {players!r}")
    if len(players) < 2:
        raise ValueError("a ladder needs at least two players")
    keys = [p if isinstance(p, str) else id(p) for p in players]
    if len(set(keys)) != len(players):
        i = next(i for i, k in enumerate(keys) if keys.count(k) > 1)
        raise ValueError(f"each player may appear only once in a ladder; {display_name(players[i])} is given "
                         f"{keys.count(keys[i])} times")
    rules = as_rules(rules)
    _check_match(games, seed)
    _check_flags(progress=progress)
    games = int(games)  # a numpy integer too: the result is JSON
    for player in players:  # a name that is wrong fails now, not after the matches before it
        load_saying_once(player, rules)  # what it says, said now (the matches load it again)
    names = _distinct(display_name(p) for p in players)
    _warn_same_players(players, names)
    matches = []
    wins: list[int] = []
    errors: list[float] = []  # the standard error of each match's points per game
    for i in range(len(players)):
        for j in range(i + 1, len(players)):
            result = evaluate(players[i], players[j], games, seed=seed, rules=rules,
                              workers=workers, progress=progress, chunk_pairs=chunk_pairs)
            summary = result.summary()
            summary["player_a"], summary["player_b"] = names[i], names[j]  # as the ratings name them
            points = np.asarray(result.points_a, dtype=np.float64)
            wins.append(int((points > 0).sum()))  # exact: win_rate is rounded
            errors.append(padded_se(points.reshape(-1, 2).mean(axis=1), -2.0, 2.0))  # summary's points_se, unrounded
            matches.append((i, j, summary))
            if on_match is not None:
                on_match(summary)
    n = len(players)
    rows, targets, weights = [], [], []
    for (i, j, s), error in zip(matches, errors, strict=True):
        row = np.zeros(n)
        row[i], row[j] = 1.0, -1.0
        # From the unclipped, unrounded interval: a clipped one is too narrow for a lopsided match.
        se = max(error, 1e-2)  # never collapses (the padding); keep any one match from ruling
        rows.append(row[1:])  # rating of player 0 fixed at 0
        targets.append(s["points_per_game"])
        weights.append(1.0 / se**2)
    x, y, w = np.array(rows), np.array(targets), np.array(weights)
    cov = np.linalg.pinv(x.T @ (w[:, None] * x))
    fit = cov @ x.T @ (w * y)
    # Goodness of fit: with more matches than ratings, a chi-square above its degrees of
    # freedom says one linear scale does not explain the round robin; the intervals are
    # widened by sqrt(chi2 / df) (never narrowed) so that they cover the misfit too.
    df = len(matches) - (n - 1)
    chi2 = float(np.sum(w * (y - x @ fit) ** 2))
    scale = max(1.0, chi2 / df) if df > 0 else 1.0
    cov = cov * scale
    won = [(i, j, float(w), s["games"]) for (i, j, s), w in zip(matches, wins, strict=True)]
    elo, elo_half, elo_fit = elo_ratings(n, won, with_fit=True)
    groups = _sweep_groups(n, won)
    ratings = [{"player": names[0], "rating": 0.0, "ci95": [0.0, 0.0], "elo": 0.0, "elo_ci95": [0.0, 0.0]}]
    def shown(value: float, places: int) -> float:
        return round(float(value), places) + 0.0  # -0.0 (an even player's fit) reads as 0.0

    for k in range(1, n):
        half = 1.96 * math.sqrt(max(cov[k - 1, k - 1], 0.0))
        ratings.append({"player": names[k], "rating": shown(fit[k - 1], 4),
                        "ci95": [shown(fit[k - 1] - half, 4), shown(fit[k - 1] + half, 4)],
                        "elo": shown(elo[k], 1), "elo_ci95": [shown(elo[k] - elo_half[k], 1), shown(elo[k] + elo_half[k], 1)]})
    for k, entry in enumerate(ratings):
        entry["group"] = groups[k]
    return {"games_per_pair": games, "seed": int(seed), "matches": [m[2] for m in matches], "ratings": ratings,
            "fit": {"rating": {"chi2": round(chi2, 2), "df": df, "ci_scale": round(math.sqrt(scale), 3)},
                    "elo": elo_fit, "sweep_groups": max(groups) + 1}}


def ladder_provenance(result: dict[str, Any]) -> str:
    """``seed S[, --chunk-pairs C][, rules R], nardy V`` of a ``ladder`` result (the chunk size
    where it is not the default: a randomising player's draws depend on it; the rules where they
    differ from the sports code), or "" if it does not say its seed (one of an older version)."""
    if "seed" not in result:
        return ""
    first = (result.get("matches") or [{}])[0]
    rules = first.get("rules")
    changes = as_rules(rules).changes() if rules is not None else {}
    version = first.get("nardy_version")
    chunk = first.get("chunk_pairs")
    return (f"seed {result['seed']}" + (f", --chunk-pairs {chunk}" if chunk not in (None, CHUNK_PAIRS) else "")
            + (f", rules {json.dumps(changes)}" if changes else "") + (f", nardy {version}" if version else ""))


def _warn_same_players(players: Sequence[PlayerSpec], names: Sequence[str]) -> None:
    """Warn about entrants that are one player under two names: one network file (by its
    SHA-256) searched to one depth (``default`` and ``default@0``), or one bot (``race`` and
    ``race@0``)."""
    from agents.files import file_sha256
    from agents.registry import is_bot, level_temperature, player_file, split_ply

    seen: dict[tuple[str, int, float], str] = {}
    for player, name in zip(players, names, strict=True):
        if not isinstance(player, str):
            continue
        base, ply = split_ply(player)
        path = player_file(player)
        if path is None and not is_bot(base):
            continue  # a plugin's or your own file's player: not known to be the same as another
        key = (file_sha256(path) if path is not None else base, int(ply) if isinstance(ply, int) else 0,
               level_temperature(player))  # a level of the network is another player: easy is not hard
        if key in seen:
            what = f"one network file, searched {key[1]} plies" if path is not None else "one bot"
            warnings.warn(f"{seen[key]} and {name} are the same player ({what}): their match is even by "
                          "construction, and the ratings count that player twice", category=NardyWarning, stacklevel=4)  # past ladder and saying_once's wrapper
        else:
            seen[key] = name


def _distinct(names: Iterable[str]) -> list[str]:
    """Display names made distinct (``first``, ``first #2``) so a table row names one player."""
    out: list[str] = []
    for name in names:
        k, candidate = 1, name
        while candidate in out:
            k += 1
            candidate = f"{name} #{k}"
        out.append(candidate)
    return out


def _sweep_groups(n: int, results: Sequence[tuple[int, int, float, int]]) -> list[int]:
    """Groups of players whose Elo ratings against each other the games determine.

    Player i "reaches" j if i won a game against j, directly or through others.
    Players that reach each other both ways form a group; between groups every
    game went one way (a clean sweep), so only the pseudo-wins of ``elo_ratings``
    keep their difference finite: it is a lower bound, not an estimate. Groups
    are numbered from the strongest (0) down; one group (all 0) is the usual case.
    """
    reach = np.eye(n, dtype=bool)
    for i, j, won, games in results:
        reach[i, j] |= won > 0
        reach[j, i] |= won < games
    for k in range(n):  # transitive closure (Floyd-Warshall)
        reach |= reach[:, k:k + 1] & reach[k:k + 1, :]
    component = [-1] * n
    roots: list[int] = []
    for i in range(n):
        if component[i] < 0:
            for j in range(n):
                if reach[i, j] and reach[j, i]:
                    component[j] = len(roots)
            roots.append(i)
    # Order groups: a group that reaches another (beat it) comes first.
    order = sorted(range(len(roots)), key=lambda g: -sum(reach[roots[g], r] for r in roots))
    rank = {g: k for k, g in enumerate(order)}
    return [rank[c] for c in component]


ELO_PER_LOGIT = 400 / math.log(10)
"""Elo points per unit of log-odds."""


def elo_ratings(n: int, results: Sequence[tuple[int, int, float, int]], with_fit: bool = False) -> Any:
    """Bradley-Terry ratings on the Elo scale from (i, j, games i won, games) per match.

    Player 0 is fixed at 0. Each match gets one pseudo-win for each side (so a
    clean sweep gives a large, finite rating instead of infinity, as the
    intervals of ``mean_ci`` do: ``_sweep_groups`` says when that is what holds
    a rating up). Games are treated as independent, which with paired dice
    overstates the sampling error (the two games of a pair are negatively
    correlated); the intervals are widened by sqrt(chi2 / df) of Pearson's
    goodness of fit, over the matches within sweep groups (``_sweep_groups``),
    when the model fits worse than chance would make it.
    Returns the ratings and the half-widths of their 95% intervals (from the
    inverse Hessian), and with ``with_fit`` also ``{"chi2", "df", "ci_scale"}``.
    ValueError for fewer than two players, a match that is not two of them with 0..games won, or
    players that no chain of matches connects (nothing then relates their ratings).
    """
    if not is_whole(n, 2):
        raise ValueError(f"n must be a whole number of players, 2 or more, got {n!r}")
    results = list(results)
    linked = {0}
    for row in results:
        i, j, won, games = row
        if not (is_whole(i) and is_whole(j) and i < n and j < n and i != j and is_whole(games, 1)
                and isinstance(won, int | float | np.integer | np.floating) and not isinstance(won, bool)
                and 0 <= won <= games):
            raise ValueError(f"each match is (i, j, games i won, games): two different players 0..{n - 1} and "
                             f"0..games won of at least one game, got {tuple(row)!r}")
    for _ in range(n):  # the players a chain of matches reaches from player 0
        linked |= {b for i, j, *_ in results for a, b in ((i, j), (j, i)) if a in linked}
    if len(linked) < n:
        raise ValueError(f"players {sorted(set(range(n)) - linked)} meet no chain of matches to player 0: "
                         "their ratings have nothing to be measured against")
    r = np.zeros(n)
    for _ in range(100):
        grad = np.zeros(n)
        hess = np.zeros((n, n))
        for i, j, won, games in results:
            p = 1 / (1 + math.exp(r[j] - r[i]))
            g = (won + 1) - (games + 2) * p
            grad[i] += g
            grad[j] -= g
            h = (games + 2) * p * (1 - p)
            hess[i, i] += h
            hess[j, j] += h
            hess[i, j] -= h
            hess[j, i] -= h
        step = np.linalg.solve(hess[1:, 1:], grad[1:])
        r[1:] += step
        if np.abs(step).max() < 1e-10:
            break
    cov = np.linalg.inv(hess[1:, 1:])
    # The fit is judged within sweep groups only: between two groups every game went one way and
    # only the pseudo-wins hold the gap, so a chain of sweeps (A > B > C, each log(G + 1) logits
    # apart, which cannot add up) would read as a misfit made by the padding alone and widen
    # every interval, those of an even match included.
    groups = _sweep_groups(n, results)
    chi2 = 0.0
    within = 0
    for i, j, won, games in results:
        if groups[i] != groups[j]:
            continue
        within += 1
        p = 1 / (1 + math.exp(r[j] - r[i]))
        chi2 += (won + 1 - (games + 2) * p) ** 2 / ((games + 2) * p * (1 - p))
    df = within - (n - len(set(groups)))  # each group's ratings relative to its own first player
    scale = max(1.0, chi2 / df) if df > 0 else 1.0
    half = np.concatenate([[0.0], 1.96 * np.sqrt(np.maximum(np.diag(cov) * scale, 0.0))])
    if with_fit:
        return ELO_PER_LOGIT * r, ELO_PER_LOGIT * half, {"chi2": round(chi2, 2), "df": df,
                                                        "ci_scale": round(math.sqrt(scale), 3)}
    return ELO_PER_LOGIT * r, ELO_PER_LOGIT * half

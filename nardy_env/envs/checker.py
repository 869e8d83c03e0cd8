"""Checker-level play: one checker moved by one die per step, masked to legal maximal plays.

A turn-level action picks a whole afterstate; a checker-level action moves one
checker from a source point by one die. Such a move is allowed only if it begins
some legal maximal play of the turn, i.e. if the dice still left can finish the
turn in one of the turn's afterstates ``F = legal_afterstates(...)`` with exactly
as many dice as the whole turn needs (a play that bears off the last checker is
complete at once). Played to the end, checker moves therefore reach exactly the
afterstates of turn mode, no more and no fewer.

Action layout (``NUM_CHECKER_ACTIONS`` = 145)::

    action = (source - 1) * 6 + (die - 1)    source: the mover's personal point 1..24
                                             (24 = the head), die: 1..6
    action = PASS_ACTION (144)               the turn has no legal move at all

Everything here works on batches of partial turns described by plain arrays:

    states  int8 [B, 26]   the position so far, mover's view
    dice    int64 [B, 2]   the turn's roll
    left    int8 [B, 6]    single-die moves still to play, per face 1..6
    heads   int64 [B]      checkers that have already left the head this turn
    first   bool [B]       the turn began with all 15 checkers on the head
    played  int64 [B]      single-die moves already played this turn
    need    int64 [B]      single-die moves the whole turn plays (``turn_need``)
    targets TurnTargets    the turn's afterstates F of every row
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core import (
    HEAD,
    MAX_DICE_MOVES,
    NUM_CHECKERS,
    NUM_POINTS,
    OFF_MOVER,
    STATE_SIZE,
    Afterstates,
    is_whole,
    legal_continuations,
)
from ..rules import DEFAULT_RULES, Rules, as_rules

__all__ = [
    "NUM_FACES",
    "NUM_CHECKER_ACTIONS",
    "PASS_ACTION",
    "checker_action",
    "checker_move",
    "dice_left",
    "turn_need",
    "TurnTargets",
    "CheckerOptions",
    "checker_options",
    "play_checker_moves",
]

NUM_FACES = 6
"""Faces of a die."""
PASS_ACTION = NUM_POINTS * NUM_FACES
"""The checker-mode action of a turn that has no legal move (legal only then)."""
NUM_CHECKER_ACTIONS = PASS_ACTION + 1
"""Size of the checker-mode action space: 24 sources x 6 dice, plus the pass."""


def checker_action(source: int | np.integer[Any], die: int | np.integer[Any]) -> int:
    """The action that moves a checker from personal point ``source`` (1..24) by ``die`` (1..6)."""
    if not (is_whole(source, 1) and is_whole(die, 1) and source <= NUM_POINTS and die <= NUM_FACES):
        raise ValueError(f"source must be a whole number 1..{NUM_POINTS} and die 1..{NUM_FACES}, "
                         f"got {source!r}, {die!r}")
    # Python ints first: numpy int8 inputs (a core move's points) would wrap at 127.
    return (int(source) - 1) * NUM_FACES + (int(die) - 1)


def checker_move(action: int | np.integer[Any]) -> tuple[int, int]:
    """``(source, die)`` of a checker-mode action (``(0, 0)`` for ``PASS_ACTION``)."""
    if isinstance(action, np.ndarray) and action.ndim == 0:
        action = action[()]
    if not is_whole(action) or action > PASS_ACTION:
        raise ValueError(f"checker actions are whole numbers 0..{PASS_ACTION}, got {action!r}")
    action = int(action)
    if action == PASS_ACTION:
        return 0, 0
    return action // NUM_FACES + 1, action % NUM_FACES + 1


def _left_table() -> np.ndarray:
    table = np.zeros((NUM_FACES + 1, NUM_FACES + 1, NUM_FACES), dtype=np.int8)
    for a in range(1, NUM_FACES + 1):
        for b in range(1, NUM_FACES + 1):
            if a == b:
                table[a, b, a - 1] = MAX_DICE_MOVES
            else:
                table[a, b, a - 1] = table[a, b, b - 1] = 1
    table.setflags(write=False)
    return table


_LEFT = _left_table()


def dice_left(dice: np.ndarray) -> np.ndarray:
    """Single-die moves a fresh roll gives, per face: int8 ``[B, 6]`` (a double gives 4 of its face)."""
    dice = np.asarray(dice, dtype=np.int64).reshape(-1, 2)
    return _LEFT[dice[:, 0], dice[:, 1]]


def turn_need(found: Afterstates, dice: np.ndarray) -> np.ndarray:
    """Single-die moves each position's whole turn plays: int64 ``[B]``.

    A play that bears off the last checker counts as using every die, as in the
    rules core; 0 means the turn has no legal move.
    """
    dice = np.asarray(dice).reshape(-1, 2)
    full = np.where(dice[:, 0] == dice[:, 1], MAX_DICE_MOVES, 2)
    row = np.repeat(np.arange(dice.shape[0]), found.counts())
    over = found.states[:, OFF_MOVER] == NUM_CHECKERS
    used = np.where(over, full[row], found.num_moves.astype(np.int64))
    need = np.zeros(dice.shape[0], dtype=np.int64)
    np.maximum.at(need, row, used)
    return need


_PLACE = (32 ** (11 - np.arange(NUM_POINTS // 2))).astype(np.int64)  # 5 bits a point, index 0 first


def _board_keys(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 keys per state that identify it and sort like the core's result order.

    The board fixes both borne-off counts (each side has 15 checkers), so 24
    points at 5 bits each (count + 15), index 0 most significant, are enough:
    comparing ``(k0, k1)`` is comparing state rows lexicographically, the order
    in which ``legal_afterstates`` sorts its results. Each key is below 2**60.
    """
    vals = states[:, :NUM_POINTS].astype(np.int64) + NUM_CHECKERS
    half = NUM_POINTS // 2
    return vals[:, :half] @ _PLACE, vals[:, half:] @ _PLACE


class TurnTargets:
    """The afterstates F of a batch of turns, searchable: is this position one of row r's?"""

    def __init__(self, found: Afterstates):
        self.found = found
        self.k0, self.k1 = _board_keys(found.states)

    def contains(self, rows: np.ndarray, states: np.ndarray) -> np.ndarray:
        """For each query, whether ``states[i]`` is among the afterstates of row ``rows[i]``."""
        return self.index(rows, states) >= 0

    def index(self, rows: np.ndarray, states: np.ndarray) -> np.ndarray:
        """For each query, the index of ``states[i]`` among row ``rows[i]``'s afterstates (0 ..
        count - 1, as a player chooses it), or -1 where it is not one of them."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return np.zeros(0, dtype=np.int64)
        q0, q1 = _board_keys(states)
        offsets = self.found.offsets
        lo = offsets[rows].copy()
        end = offsets[rows + 1]
        hi = end.copy()
        last = max(len(self.k0) - 1, 0)
        # Vectorised binary search inside each row's sorted segment.
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = np.minimum((lo + hi) // 2, last)
            a0 = self.k0[mid]
            a1 = self.k1[mid]
            less = (a0 < q0) | ((a0 == q0) & (a1 < q1))
            lo = np.where(active & less, mid + 1, lo)
            hi = np.where(active & ~less, mid, hi)
        at = np.minimum(lo, last)
        hit = (lo < end) & (self.k0[at] == q0) & (self.k1[at] == q1)
        return np.where(hit, lo - offsets[rows], -1)


class CheckerOptions(NamedTuple):
    """The allowed checker moves of a batch of partial turns."""

    mask: np.ndarray
    """int8 ``[B, NUM_CHECKER_ACTIONS]``: 1 where the action is allowed."""
    results: np.ndarray
    """int8 ``[B, NUM_CHECKER_ACTIONS, 26]``: the position each allowed action leads to."""


def checker_options(
    states: np.ndarray,
    dice: np.ndarray,
    left: np.ndarray,
    heads: np.ndarray,
    first: np.ndarray,
    played: np.ndarray,
    need: np.ndarray,
    targets: TurnTargets,
    target_rows: np.ndarray,
    rules: Rules = DEFAULT_RULES,
    *,
    validate: bool = True,
) -> CheckerOptions:
    """Which single checker moves begin a legal maximal play, for each partial turn.

    ``target_rows[i]`` is the row of ``targets`` holding row i's afterstates F.
    A turn with ``need == 0`` (no legal move) allows only ``PASS_ACTION``.
    ``validate=False``: the env's own partial turns, not checked again. Large
    batches are split over the CPUs.
    """
    rules = as_rules(rules)
    states = np.asarray(states, dtype=np.int8)
    n = states.shape[0]
    dice = np.asarray(dice, dtype=np.int64).reshape(n, 2)
    left = np.asarray(left, dtype=np.int8).reshape(n, NUM_FACES)
    heads = np.asarray(heads, dtype=np.int64)
    played = np.asarray(played, dtype=np.int64)
    need = np.asarray(need, dtype=np.int64)
    target_rows = np.asarray(target_rows, dtype=np.int64)
    # The head exception belongs to first-turn doubles listed in the rules;
    # the limit is fixed at the turn's start and passed to the core.
    double = dice[:, 0] == dice[:, 1]
    head_limit = np.where(np.asarray(first, dtype=bool) & double & rules.head_mask[dice[:, 0]], 2, 1)

    mask = np.zeros((n, NUM_CHECKER_ACTIONS), dtype=np.int8)
    results = np.zeros((n, NUM_CHECKER_ACTIONS, STATE_SIZE), dtype=np.int8)
    blocked = need == 0
    mask[blocked, PASS_ACTION] = 1
    results[blocked, PASS_ACTION] = states[blocked]

    # Every single move of each remaining distinct die.
    qr, qf = np.nonzero((left > 0) & ~blocked[:, None])
    if qr.size == 0:
        return CheckerOptions(mask, results)
    qd = qf.astype(np.int64) + 1
    single = legal_continuations(
        states[qr], np.stack([qd, qd], axis=1), np.ones(qr.size, dtype=np.int64), heads[qr], head_limit[qr], rules,
        validate=validate, threads=None,
    )
    query = np.repeat(np.arange(qr.size), single.counts())
    moved = single.num_moves == 1
    query = query[moved]
    cand = single.states[moved]
    source = single.moves[moved, 0, 0].astype(np.int64)
    row = qr[query]
    die = qd[query]
    action = (source - 1) * NUM_FACES + (die - 1)
    c_played = played[row] + 1
    c_heads = heads[row] + (source == HEAD)
    c_left = left[row].copy()
    c_left[np.arange(row.size), die - 1] -= 1
    c_remain = c_left.sum(axis=1, dtype=np.int64)
    c_over = cand[:, OFF_MOVER] == NUM_CHECKERS
    c_need = need[row]

    ok = np.zeros(row.size, dtype=bool)
    # A move that completes the play: allowed iff its result is an afterstate
    # of the turn (this is where the larger-die rule of a one-die turn bites).
    done = c_over | (c_played >= c_need) | (c_remain == 0)
    d = np.flatnonzero(done)
    if d.size:
        ok[d] = (c_over[d] | (c_played[d] == c_need[d])) & targets.contains(target_rows[row[d]], cand[d])
    # Otherwise: can the dice left finish, with exactly `need` dice in all, in F?
    r = np.flatnonzero(~done)
    if r.size:
        rest = np.argmax(c_left[r] > 0, axis=1).astype(np.int64) + 1  # a double's face, or the other die
        cont = legal_continuations(  # positions the core just made: no need to check them again
            cand[r], np.stack([rest, rest], axis=1), c_remain[r], c_heads[r], head_limit[row[r]], rules,
            validate=False, threads=None,
        )
        k = np.repeat(np.arange(r.size), cont.counts())
        end_over = cont.states[:, OFF_MOVER] == NUM_CHECKERS
        good = end_over | (c_played[r][k] + cont.num_moves == c_need[r][k])
        g = np.flatnonzero(good)
        good[g] = targets.contains(target_rows[row[r][k[g]]], cont.states[g])
        ok[r] = np.bincount(k[good], minlength=r.size) > 0

    sel = np.flatnonzero(ok)
    mask[row[sel], action[sel]] = 1
    results[row[sel], action[sel]] = cand[sel]
    return CheckerOptions(mask, results)


def play_checker_moves(rows: np.ndarray, actions: np.ndarray, results: np.ndarray, states: np.ndarray,
                       left: np.ndarray, heads: np.ndarray, played: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Play one checker action in each partial turn ``rows`` of the batch's arrays (updated in place).

    ``results``: the positions the actions lead to (``CheckerOptions.results`` at them). The
    die moved is used up, a checker leaving the head is counted. Returns, per row, whether
    its turn is complete: a pass, every die the turn needs played, or the last checker off.
    """
    states[rows] = results
    moving = actions != PASS_ACTION
    moved, acts = rows[moving], actions[moving]
    left[moved, acts % NUM_FACES] -= 1
    heads[moved] += acts // NUM_FACES + 1 == HEAD
    played[moved] += 1
    return ~moving | (played[rows] >= need[rows]) | (states[rows, OFF_MOVER] == NUM_CHECKERS)

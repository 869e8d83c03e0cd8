"""The batched rules core of Long Nardy: positions, move generation, results.

State layout (one row of an ``int8`` array of shape ``[B, STATE_SIZE]``), always
from the point of view of the side to move ("the mover")::

    index 0..23   personal points 1..24 of the mover: +n = n mover checkers,
                  -n = n opponent checkers, 0 = empty (a point never holds both)
    index 23      the mover's head (personal point 24)
    index 0..5    the mover's home (personal points 1..6)
    index 24      checkers the mover has borne off (0..15)
    index 25      checkers the opponent has borne off (0..15)

The opponent's personal point ``y`` is the mover's personal point ``y + 12``
(``y <= 12``) or ``y - 12``; turning a position over for the opponent is
therefore a 12-point rotation plus a sign swap (``flip``), not a mirror.

Move generation returns afterstates: every distinct position the mover may end
the turn in, still from the mover's view (not flipped), each with one move
sequence that reaches it. Results of one position are sorted by their state row
compared lexicographically from index 0 upward; this is the order the
environments' turn-level actions index into.

Everything here is a pure function of numpy arrays: dice are passed in, there
is no hidden RNG and no I/O (where numba keeps the compiled code and how many
CPUs there are is ``_runtime``'s business). The inner loops are compiled with
numba.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numba as nb
import numpy as np
import numpy.typing as npt

from ._runtime import cgroup_cpu_quota, from_numba_cache, numba_cache, numba_cache_placed, without_numba_cache
from .rules import DEFAULT_RULES, Rules, RulesLike, as_rules

__all__ = [
    "NUM_POINTS",
    "NUM_CHECKERS",
    "STATE_SIZE",
    "HEAD",
    "HEAD_INDEX",
    "HOME_SIZE",
    "OFF_MOVER",
    "OFF_OPPONENT",
    "MAX_DICE_MOVES",
    "MAX_RESULTS",
    "Afterstates",
    "initial_states",
    "flip",
    "legal_afterstates",
    "legal_continuations",
    "turn_head_limit",
    "available_cpus",
    "cgroup_cpu_quota",
    "outcome",
    "pip_counts",
    "validate_states",
    "StateError",
]

NUM_POINTS = 24
"""Points on the board."""
NUM_CHECKERS = 15
"""Checkers per side."""
STATE_SIZE = 26
"""Numbers in one state row (24 points and two borne-off counts)."""
HEAD = 24
"""The head as a personal point number."""
HEAD_INDEX = HEAD - 1
"""The head as an index into a state row."""
HOME_SIZE = 6
"""Personal points 1..HOME_SIZE are home."""
OFF_MOVER = 24
"""Index of the mover's borne-off count."""
OFF_OPPONENT = 25
"""Index of the opponent's borne-off count."""
MAX_DICE_MOVES = 4
"""Single-die moves in a turn (a double)."""
HALF = NUM_POINTS // 2
"""The offset between the two players' personal numberings."""

MAX_RESULTS = 3060
"""Proven upper bound on the number of distinct afterstates of one roll.

A double's afterstate is fixed by the multiset of checker journeys (start point,
number of steps) whose steps add up to four; with the mover's 15 checkers on 15
distinct points that is C(15 + 3, 4) = 3060 multisets, and stacking checkers or
playing fewer dice only lowers the count. A non-double gives at most
15 + 15 * 15 = 240. ``docs/rules.md`` records the largest count found by search.
"""

# Depth bound for the search's scratch space: the states a double can reach
# after k dice number at most C(15 + k - 1, k), i.e. 15, 120, 680 and 3060.
_MAX_NODES = 1 + 15 + 120 + 680 + 3060
_TABLE_BITS = 14  # 16384 slots, load below one half even at the bound
_TABLE_SIZE = 1 << _TABLE_BITS
_RESULT_TAG = 255  # marks result entries in the shared hash table


class StateError(ValueError):
    """A state array that is not a legal position, or dice that are not a roll (integers 1..6)."""


_AFTERSTATES_FIELDS = {
    "states": "int8 ``[M, STATE_SIZE]``: afterstates from the mover's view (not flipped).",
    "moves": "int8 ``[M, MAX_DICE_MOVES, 2]``: (from, to) personal points per single-die move, ``to = 0`` "
             "for bearing off; rows past ``num_moves`` are zero.",
    "num_moves": "int8 ``[M]``: single-die moves in each result's sequence (0 for a pass).",
    "offsets": "int64 ``[B + 1]``: where each position's results start and end.",
}


class Afterstates(NamedTuple):
    """Every distinct afterstate of a batch of positions, as flat arrays.

    Results of position ``i`` are rows ``offsets[i]:offsets[i + 1]``; each field's docstring
    (``help()`` lists them) gives its dtype, shape and layout.
    """

    states: np.ndarray
    moves: np.ndarray
    num_moves: np.ndarray
    offsets: np.ndarray

    def counts(self) -> np.ndarray:
        """Number of results of each position."""
        return np.diff(self.offsets)

    def __repr__(self) -> str:
        """A summary (the arrays printed in full would fill a screen): positions, results, counts."""
        counts = np.diff(self.offsets).tolist()  # np.diff and np.shape: a repr that works on lists too
        shown = ", ".join(map(str, counts[:8])) + (", ..." if len(counts) > 8 else "")
        results = np.shape(self.states)[0]
        return (f"Afterstates({len(counts)} position{'s' if len(counts) != 1 else ''}, "
                f"{results} result{'s' if results != 1 else ''}; per position [{shown}])")


for _name, _doc in _AFTERSTATES_FIELDS.items():  # help() shows a field's own docstring, not "Alias for field"
    getattr(Afterstates, _name).__doc__ = _doc


def initial_states(n: int = 1) -> np.ndarray:
    """The starting position, ``n`` times (the same for either colour to move)."""
    if not is_whole(n):
        raise ValueError(f"n must be a whole number, 0 or more (how many positions), got {n!r}")
    try:
        states = np.zeros((n, STATE_SIZE), dtype=np.int8)
    except (ValueError, MemoryError) as exc:  # numpy's words do not name n; the kind of error stays
        kind = MemoryError if isinstance(exc, MemoryError) else ValueError
        raise kind(f"initial_states({n}): {n:,} positions of {STATE_SIZE} bytes do not fit in memory ({exc})") from None
    states[:, HEAD_INDEX] = NUM_CHECKERS
    states[:, HEAD_INDEX - HALF] = -NUM_CHECKERS
    return states


def _rectangular(value: Any, name: str) -> np.ndarray:
    """``np.asarray(value)``, or StateError naming ``name`` for nested lists of unequal lengths."""
    try:
        return np.asarray(value)
    except ValueError as exc:
        if "sequence" not in str(exc):  # numpy's "setting an array element with a sequence ... inhomogeneous"
            raise  # an array-like's own error
        raise StateError(f"{name} must be a rectangular array of numbers (rows of equal length), got rows "
                         "of different lengths or a row mixed with numbers") from None


def _columns(states: npt.ArrayLike) -> np.ndarray:
    """``states`` as an array of mover's-view rows, or StateError: the cheap checks of the helpers
    below (shape and dtype; validate_states checks the counts)."""
    states = _rectangular(states, "states")
    if states.shape[-1:] != (STATE_SIZE,):
        raise StateError(f"states must have {STATE_SIZE} columns, got shape {list(states.shape)}")
    if states.dtype == np.bool_ or not np.issubdtype(states.dtype, np.signedinteger):
        raise StateError(f"states must be signed integers (int8: the opponent's checkers are negative), "
                         f"got dtype {states.dtype}")
    return states


def flip(states: npt.ArrayLike) -> np.ndarray:
    """Turn positions over: the same positions from the opponent's view.

    Like ``outcome`` and ``pip_counts``, it checks the shape and dtype only, not the checker
    counts (they run on every state the core makes): ``validate_states`` checks a hand-built row."""
    states = _columns(states)
    out = np.empty_like(states)
    out[..., :HALF] = -states[..., HALF:NUM_POINTS]
    out[..., HALF:NUM_POINTS] = -states[..., :HALF]
    out[..., OFF_MOVER] = states[..., OFF_OPPONENT]
    out[..., OFF_OPPONENT] = states[..., OFF_MOVER]
    return out


def outcome(states: npt.ArrayLike) -> np.ndarray:
    """Game result per position, in points for the side whose view the row is.

    0 while the game goes on; +1 / -1 for a single game (oin: the loser has
    borne off at least one checker); +2 / -2 for mars (the loser has none).
    A row with both sides' 15 off (no game reaches it) is a StateError; other counts are not
    checked (``validate_states`` does that for a hand-built row).
    """
    states = _columns(states)
    mine = states[..., OFF_MOVER]  # in the given dtype: a cast to int8 would make 271 a 15
    theirs = states[..., OFF_OPPONENT]
    won = mine == NUM_CHECKERS
    lost = theirs == NUM_CHECKERS
    if (won & lost).any():  # FORMATS.md's notation reads it; the rules give it no result
        first = tuple(int(i) for i in np.argwhere(won & lost)[0])
        where = f"state {', '.join(map(str, first))}: " if first else ""
        raise StateError(f"{where}both sides have borne off all {NUM_CHECKERS}, which no game reaches (it "
                         "ends when the first does): it has no result")
    result = np.zeros(states.shape[:-1], dtype=np.int8)
    result = np.where(won, np.where(theirs == 0, 2, 1), result)
    result = np.where(lost, np.where(mine == 0, -2, -1), result)
    return result.astype(np.int8)


def pip_counts(states: npt.ArrayLike) -> np.ndarray:
    """Pips each side still has to travel: int32 ``[..., 2]`` (mover, opponent); the counts are not
    checked (``validate_states``)."""
    states = _columns(states)
    board = states[..., :NUM_POINTS].astype(np.int32)
    personal = np.arange(1, NUM_POINTS + 1, dtype=np.int32)
    theirs_personal = np.roll(personal, -HALF)  # opponent's number of each of my points
    mine = np.where(board > 0, board, 0) @ personal
    theirs = np.where(board < 0, -board, 0) @ theirs_personal
    return np.stack([mine, theirs], axis=-1)


def validate_states(states: npt.ArrayLike) -> np.ndarray:
    """Return ``states`` as int8 ``[B, STATE_SIZE]`` or raise StateError saying what is wrong.

    An array that is already int8, C-ordered and two-dimensional comes back as itself, not a
    copy: copy it before changing it if the caller's array must stay as it was."""
    arr = _rectangular(states, "states")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != STATE_SIZE:
        raise StateError(f"states must have shape [B, {STATE_SIZE}], got {list(np.shape(states))}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise StateError(f"states must be integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.unsignedinteger) and arr.size and (arr[:, :NUM_POINTS] > NUM_CHECKERS).any():
        raise StateError(f"states must be signed integers (int8: the opponent's checkers are negative), "
                         f"got dtype {arr.dtype}")
    # Ranges are checked in the given dtype, before any cast could wrap a large value into range.
    wide = (arr[:, :NUM_POINTS] > NUM_CHECKERS) | (arr[:, :NUM_POINTS] < -NUM_CHECKERS)
    if wide.any():
        bad, point = (int(v) for v in np.argwhere(wide)[0])
        raise StateError(f"state {bad}: point {point + 1} holds {arr[bad, point]}; a point holds "
                         f"-{NUM_CHECKERS}..{NUM_CHECKERS} (negative: the opponent's checkers)")
    off_in = arr[:, NUM_POINTS:]
    if (off_in < 0).any() or (off_in > NUM_CHECKERS).any():
        bad = int(np.argwhere((off_in < 0) | (off_in > NUM_CHECKERS))[0, 0])
        raise StateError(f"state {bad}: borne-off counts must be 0..{NUM_CHECKERS}, got {off_in[bad].tolist()}")
    board = arr[:, :NUM_POINTS].astype(np.int32)
    off = off_in.astype(np.int32)
    mine = np.where(board > 0, board, 0).sum(axis=1) + off[:, 0]
    theirs = np.where(board < 0, -board, 0).sum(axis=1) + off[:, 1]
    for name, total in (("mover", mine), ("opponent", theirs)):
        wrong = np.flatnonzero(total != NUM_CHECKERS)
        if wrong.size:
            i = int(wrong[0])
            raise StateError(
                f"state {i}: the {name} has {int(total[i])} checkers on board plus off, "
                f"not {NUM_CHECKERS}"
            )
    # One memory layout for the compiled code: a strided or Fortran-order array would compile
    # another version of it (seconds) instead of running the cached one.
    return np.ascontiguousarray(arr, dtype=np.int8)


def _check_not_over(states: np.ndarray) -> None:
    """Raise StateError for a finished game: bearing off the last checker ends it at once."""
    over = outcome(states) != 0
    if over.any():
        i = int(np.flatnonzero(over)[0])
        who = "mover" if states[i, OFF_MOVER] == NUM_CHECKERS else "opponent"
        raise StateError(f"state {i}: the game is over (the {who} has borne off all "
                         f"{NUM_CHECKERS}), so it has no moves")


_CACHE = numba_cache()  # where numba may keep the compiled core (nardy_env/_runtime.py)


# ---------------------------------------------------------------------------
# Compiled move generation.
#
# A state in the search is the working board plus three uint64 keys that pack
# it losslessly, 5 bits per point (value + 15) and 4 bits per borne-off count,
# index 0 in the highest bits. The keys identify states in the hash table and
# their lexicographic order is the lexicographic order of the state rows. A
# single-die move updates them in O(1).


@nb.njit(cache=_CACHE, inline="always")
def _shift(i):
    return 5 * (11 - i) if i < HALF else 5 * (23 - i)


@nb.njit(cache=_CACHE)
def _pack(board):
    k0 = np.uint64(0)
    k1 = np.uint64(0)
    for i in range(HALF):
        k0 = (k0 << np.uint64(5)) | np.uint64(board[i] + 15)
        k1 = (k1 << np.uint64(5)) | np.uint64(board[i + HALF] + 15)
    k2 = np.uint64(board[OFF_MOVER]) << np.uint64(4) | np.uint64(board[OFF_OPPONENT])
    return k0, k1, k2


@nb.njit(cache=_CACHE)
def _unpack(k0, k1, k2, out):
    for i in range(HALF):
        out[i] = np.int8(np.int64((k0 >> np.uint64(_shift(i))) & np.uint64(31)) - 15)
        out[i + HALF] = np.int8(np.int64((k1 >> np.uint64(_shift(i + HALF))) & np.uint64(31)) - 15)
    out[OFF_MOVER] = np.int8(np.int64(k2 >> np.uint64(4)))
    out[OFF_OPPONENT] = np.int8(np.int64(k2 & np.uint64(15)))


@nb.njit(cache=_CACHE, inline="always")
def _hash(k0, k1, k2, tag):
    h = k0 * np.uint64(0x9E3779B97F4A7C15)
    h ^= k1 + np.uint64(0x632BE59BD9B4E019) + (h << np.uint64(6)) + (h >> np.uint64(2))
    h ^= (k2 | (np.uint64(tag) << np.uint64(16))) * np.uint64(0xD6E8FEB86659FD93)
    h ^= h >> np.uint64(29)
    return h


if getattr(nb.config, "DISABLE_JIT", False):  # NUMBA_DISABLE_JIT=1, to step through the core in a debugger
    _WORD = (1 << 64) - 1

    def _hash(k0, k1, k2, tag):  # type: ignore[no-redef,misc]
        """The same hash in Python integers: numpy's uint64 scalars warn where compiled code wraps."""
        h = int(k0) * 0x9E3779B97F4A7C15 & _WORD
        h ^= int(k1) + 0x632BE59BD9B4E019 + (h << 6 & _WORD) + (h >> 2) & _WORD
        h ^= (int(k2) | int(tag) << 16) * 0xD6E8FEB86659FD93 & _WORD
        h ^= h >> 29
        return np.uint64(h)


@nb.njit(cache=_CACHE)
def _table_find_or_insert(table, stamp, k0, k1, k2, tag, val):
    """Index of the entry for (keys, tag); inserts it with ``val`` if absent.

    A slot is one row of ``table``: k0, k1, k2 and a word holding the stamp
    (bits 24 up), the tag (bits 16-23) and the value (bits 0-15), so a probe
    reads one cache line. Slots whose stamp is not ``stamp`` are empty.
    Returns (slot, inserted).
    """
    mask = np.uint64(_TABLE_SIZE - 1)
    slot = np.int64(_hash(k0, k1, k2, tag) & mask)
    ident = (np.uint64(stamp) << np.uint64(8)) | np.uint64(tag)
    while True:
        meta = table[slot, 3]
        if (meta >> np.uint64(24)) != np.uint64(stamp):
            table[slot, 0] = k0
            table[slot, 1] = k1
            table[slot, 2] = k2
            table[slot, 3] = (ident << np.uint64(16)) | np.uint64(val)
            return slot, True
        if (meta >> np.uint64(16)) == ident and table[slot, 0] == k0 and table[slot, 1] == k1 \
                and table[slot, 2] == k2:
            return slot, False
        slot = (slot + 1) & (_TABLE_SIZE - 1)


@nb.njit(cache=_CACHE, inline="always")
def _block_illegal(board, j, threshold):
    """True if the mover's run of held points through index ``j`` is a forbidden block.

    Runs are measured along the opponent's route (coordinate r = opponent's
    personal point - 1), which is contiguous except at the opponent's own
    head/home seam. ``threshold``: the block is legal only if its front end r
    is greater than it (an opponent checker strictly ahead).
    """
    r = (j + HALF) % NUM_POINTS
    lo = r
    while lo > 0 and board[(lo - 1 + HALF) % NUM_POINTS] > 0:
        lo -= 1
    hi = r
    while hi < NUM_POINTS - 1 and board[(hi + 1 + HALF) % NUM_POINTS] > 0:
        hi += 1
    return hi - lo + 1 >= 6 and lo <= threshold


@nb.njit(cache=_CACHE)
def _block_threshold(board, block_home):
    """The r at or below which a six-block's front end makes it illegal (see _block_illegal)."""
    if board[OFF_OPPONENT] > 0:
        return -1
    if block_home:
        for r in range(HOME_SIZE):
            if board[(r + HALF) % NUM_POINTS] < 0:
                return -1
        return NUM_POINTS  # no opponent checker home: every six-block is illegal
    for r in range(NUM_POINTS):
        if board[(r + HALF) % NUM_POINTS] < 0:
            return r  # the opponent's most advanced checker
    return -1


@nb.njit(cache=_CACHE)
def _holds_illegal_block(board, threshold):
    """True if any run of six or more of the mover's points is a forbidden block."""
    run = 0
    for r in range(NUM_POINTS):
        if board[(r + HALF) % NUM_POINTS] > 0:
            run += 1
            if run >= 6 and r - run + 1 <= threshold:
                return True
        else:
            run = 0
    return False


@nb.njit(cache=_CACHE, inline="always")
def _next_move(board, start, d, heads, head_limit, outside, threshold, whole_board):
    """Highest source index <= ``start`` from which die ``d`` is a legal single move, or -1.

    ``whole_board``: the turn began holding a forbidden block (a position that
    cannot arise in play); then every move is tested against the whole board,
    so only moves that leave no forbidden block standing are legal.
    """
    i = start
    while i >= 0:
        if board[i] > 0:
            j = i - d
            ok = False
            if i == HEAD_INDEX and heads >= head_limit:
                pass  # head rule: no more checkers may leave the head this turn
            elif j >= 0:
                if board[j] > 0:
                    ok = True
                elif board[j] == 0:
                    # Block rule, tested after every single die: only a run
                    # through the newly held point can have become a block.
                    board[i] -= 1
                    board[j] += 1
                    ok = not _block_illegal(board, j, threshold)
                    board[i] += 1
                    board[j] -= 1
            elif outside == 0:  # bearing off needs every checker home
                if j == -1:
                    ok = True  # exact die
                else:
                    ok = True  # no checker on a higher point: the highest may bear off
                    for h in range(i + 1, HOME_SIZE):
                        if board[h] > 0:
                            ok = False
                            break
            if ok and whole_board:
                board[i] -= 1
                if j >= 0:
                    board[j] += 1
                ok = not _holds_illegal_block(board, threshold)
                board[i] += 1
                if j >= 0:
                    board[j] -= 1
            if ok:
                return i
        i -= 1
    return -1


@nb.njit(cache=_CACHE, inline="always")
def _move(board, i, j, sign, k0, k1, k2, outside, heads):
    """Make (sign=1) or take back (sign=-1) the move i -> j (j < 0: bear off)."""
    k_i = np.uint64(1) << np.uint64(_shift(i))
    board[i] -= sign
    if sign > 0:
        if i < HALF:
            k0 -= k_i
        else:
            k1 -= k_i
    else:
        if i < HALF:
            k0 += k_i
        else:
            k1 += k_i
    if j >= 0:
        board[j] += sign
        k_j = np.uint64(1) << np.uint64(_shift(j))
        if sign > 0:
            if j < HALF:
                k0 += k_j
            else:
                k1 += k_j
        else:
            if j < HALF:
                k0 -= k_j
            else:
                k1 -= k_j
        if i >= HOME_SIZE and j < HOME_SIZE:
            outside -= sign
    else:
        board[OFF_MOVER] += sign
        if sign > 0:
            k2 += np.uint64(16)
        else:
            k2 -= np.uint64(16)
    if i == HEAD_INDEX:
        heads += sign
    return k0, k1, k2, outside, heads


@nb.njit(cache=_CACHE)
def _search(
    board, a, b, ndice, heads0, head_limit, block_home,
    table, stamp,
    rk0, rk1, rk2, rdepth, rdie, rmoves, rnmoves,
):
    """Depth-first search over all single-die move sequences of one roll.

    Plays ``ndice`` dice: 4 (or fewer, later in a turn) of a double ``a == b``;
    2 for a non-double in either order; 1 for die ``a`` alone. ``heads0``
    checkers have already left the head this turn, and at most ``head_limit``
    may leave it in the whole turn. Visits each (dice order, depth,
    state) once, records the end of every maximal sequence in the result arrays,
    and returns how many were recorded. ``board`` is restored on return.
    """
    double = a == b
    nseq = 2 if (not double and ndice == 2) else 1
    length = ndice
    threshold = _block_threshold(board, block_home)
    whole_board = _holds_illegal_block(board, threshold)
    outside0 = np.int64(0)
    for i in range(HOME_SIZE, NUM_POINTS):
        if board[i] > 0:
            outside0 += board[i]
    k0_root, k1_root, k2_root = _pack(board)

    seq = np.empty(4, dtype=np.int64)
    it = np.empty(5, dtype=np.int64)
    moved = np.empty(5, dtype=np.bool_)
    path_from = np.empty(4, dtype=np.int64)
    path_to = np.empty(4, dtype=np.int64)
    nres = 0

    for s in range(nseq):
        if double or ndice == 1:
            seq[0] = a; seq[1] = a; seq[2] = a; seq[3] = a
        elif s == 0:
            seq[0] = max(a, b); seq[1] = min(a, b)
        else:
            seq[0] = min(a, b); seq[1] = max(a, b)
        k0 = k0_root; k1 = k1_root; k2 = k2_root
        heads = heads0
        outside = outside0
        depth = 0
        it[0] = NUM_POINTS - 1
        moved[0] = False
        while True:
            found = -1
            leaf = False
            if depth == length or board[OFF_MOVER] == NUM_CHECKERS:
                leaf = True
            else:
                found = _next_move(board, it[depth], seq[depth], heads, head_limit,
                                   outside, threshold, whole_board)
                if found < 0 and not moved[depth]:
                    leaf = True
            if leaf:
                # The end of a maximal sequence. A game-ending sequence counts
                # as using every die (leftover dice are void); a state reached
                # by sequences of different lengths keeps the longest.
                used = length if board[OFF_MOVER] == NUM_CHECKERS else depth
                slot, new = _table_find_or_insert(
                    table, stamp, k0, k1, k2, _RESULT_TAG, nres
                )
                if new:
                    r = nres
                    nres += 1
                    rk0[r] = k0
                    rk1[r] = k1
                    rk2[r] = k2
                    rdepth[r] = -1
                else:
                    r = np.int64(table[slot, 3] & np.uint64(0xFFFF))
                if used > rdepth[r]:
                    rdepth[r] = used
                    rdie[r] = seq[0] if depth == 1 else 0
                    rnmoves[r] = depth
                    for m in range(MAX_DICE_MOVES):
                        if m < depth:
                            rmoves[r, m, 0] = path_from[m] + 1
                            rmoves[r, m, 1] = path_to[m] + 1 if path_to[m] >= 0 else 0
                        else:
                            rmoves[r, m, 0] = 0
                            rmoves[r, m, 1] = 0
            if found >= 0:
                i = found
                j = i - seq[depth]
                it[depth] = i - 1
                moved[depth] = True
                k0, k1, k2, outside, heads = _move(board, i, j, 1, k0, k1, k2, outside, heads)
                path_from[depth] = i
                path_to[depth] = j
                if depth + 1 == length or board[OFF_MOVER] == NUM_CHECKERS:
                    new = True  # a leaf: recorded next, no need to remember the visit
                else:
                    _, new = _table_find_or_insert(
                        table, stamp, k0, k1, k2, (depth + 1) * 2 + s, 0
                    )
                if new:
                    depth += 1
                    it[depth] = NUM_POINTS - 1
                    moved[depth] = False
                else:  # already explored from this state: take the move back, try the next
                    k0, k1, k2, outside, heads = _move(board, i, j, -1, k0, k1, k2, outside, heads)
                continue
            # Nothing more to try at this depth: go back one move.
            if depth == 0:
                break
            depth -= 1
            k0, k1, k2, outside, heads = _move(
                board, path_from[depth], path_to[depth], -1, k0, k1, k2, outside, heads
            )
    return nres


@nb.njit(cache=_CACHE)
def _select_and_sort(nres, double, ndice, a, b, rk0, rk1, rk2, rdepth, rdie, order):
    """Apply the maximum-dice and larger-die rules; write the kept results, sorted, to ``order``."""
    best = 0
    for r in range(nres):
        if rdepth[r] > best:
            best = rdepth[r]
    larger = max(a, b)
    need_die = 0
    if not double and ndice == 2 and best == 1:
        need_die = min(a, b)
        for r in range(nres):
            if rdepth[r] == 1 and rdie[r] == larger:
                need_die = larger
                break
    n = 0
    for r in range(nres):
        if rdepth[r] == best and (need_die == 0 or rdie[r] == need_die):
            order[n] = r
            n += 1
    # Shell sort by (k0, k1, k2); keys are unique so stability does not matter.
    gap = 1
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for x in range(gap, n):
            v = order[x]
            y = x
            while y >= gap:
                u = order[y - gap]
                if rk0[u] < rk0[v] or (rk0[u] == rk0[v] and (
                        rk1[u] < rk1[v] or (rk1[u] == rk1[v] and rk2[u] <= rk2[v]))):
                    break
                order[y] = u
                y -= gap
            order[y] = v
        gap //= 3
    return n


@nb.njit(cache=_CACHE, nogil=True)
def _generate(states, dice, ndice, heads_used, head_limit, block_home, capacity):
    """Afterstates of every position; grows the output when ``capacity`` is too small."""
    nb_pos = states.shape[0]
    out_states = np.empty((capacity, STATE_SIZE), dtype=np.int8)
    out_moves = np.zeros((capacity, 4, 2), dtype=np.int8)
    out_nmoves = np.empty(capacity, dtype=np.int8)
    offsets = np.empty(nb_pos + 1, dtype=np.int64)

    table = np.empty((_TABLE_SIZE, 4), dtype=np.uint64)
    table[:, 3] = np.uint64(0xFFFFFFFFFFFFFFFF)  # stamp 2**40 - 1, no position's: all slots empty
    rk0 = np.empty(_MAX_NODES, dtype=np.uint64)
    rk1 = np.empty(_MAX_NODES, dtype=np.uint64)
    rk2 = np.empty(_MAX_NODES, dtype=np.uint64)
    rdepth = np.empty(_MAX_NODES, dtype=np.int64)
    rdie = np.empty(_MAX_NODES, dtype=np.int64)
    rmoves = np.empty((_MAX_NODES, 4, 2), dtype=np.int8)
    rnmoves = np.empty(_MAX_NODES, dtype=np.int8)
    order = np.empty(_MAX_NODES, dtype=np.int64)
    board = np.empty(STATE_SIZE, dtype=np.int8)

    m = 0
    for p in range(nb_pos):
        offsets[p] = m
        for x in range(STATE_SIZE):
            board[x] = states[p, x]
        a = dice[p, 0]
        b = dice[p, 1]
        nres = _search(board, a, b, ndice[p], heads_used[p], head_limit[p], block_home,
                       table, p,
                       rk0, rk1, rk2, rdepth, rdie, rmoves, rnmoves)
        n = _select_and_sort(nres, a == b, ndice[p], a, b, rk0, rk1, rk2, rdepth, rdie, order)
        if m + n > capacity:
            new_cap = max(2 * capacity, m + n + 1024)
            grown_s = np.empty((new_cap, STATE_SIZE), dtype=np.int8)
            grown_m = np.zeros((new_cap, 4, 2), dtype=np.int8)
            grown_n = np.empty(new_cap, dtype=np.int8)
            grown_s[:m] = out_states[:m]
            grown_m[:m] = out_moves[:m]
            grown_n[:m] = out_nmoves[:m]
            out_states, out_moves, out_nmoves, capacity = grown_s, grown_m, grown_n, new_cap
        for x in range(n):
            r = order[x]
            _unpack(rk0[r], rk1[r], rk2[r], out_states[m])
            for y in range(4):
                out_moves[m, y, 0] = rmoves[r, y, 0]
                out_moves[m, y, 1] = rmoves[r, y, 1]
            out_nmoves[m] = rnmoves[r]
            m += 1
    offsets[nb_pos] = m
    return out_states[:m], out_moves[:m], out_nmoves[:m], offsets


@nb.njit(cache=_CACHE, nogil=True)
def _first_unholdable(states):
    """The first row the compiled core cannot hold (a point outside -15..15, a borne-off count
    outside 0..15, more than 15 of the mover's checkers), or -1: one pass, no temporaries."""
    for i in range(states.shape[0]):
        mover = np.int64(0)  # int8 + int8 would wrap past 127 with numba's JIT off (numpy's rules)
        for j in range(NUM_POINTS):
            v = states[i, j]
            if v < -NUM_CHECKERS or v > NUM_CHECKERS:
                return i
            if v > 0:
                mover += v
        off, other = states[i, OFF_MOVER], states[i, OFF_OPPONENT]
        if off < 0 or off > NUM_CHECKERS or other < 0 or other > NUM_CHECKERS or mover + off > NUM_CHECKERS:
            return i
    return -1


numba_cache_placed()  # every compiled function above has its cache place


def _per_position(name: str, value: Any, batch: int) -> np.ndarray:
    """An integer per position (or one for all), as int64 ``[batch]``."""
    arr = _rectangular(value, name)
    if arr.size == 0 and arr.dtype == np.float64:  # an empty list: no values, no dtype of its own
        arr = arr.astype(np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise StateError(f"{name} must be integers, got {arr.dtype} {np.ravel(arr)[:3].tolist()}")
    try:
        return np.broadcast_to(arr.astype(np.int64), (batch,)).copy()
    except ValueError:
        raise StateError(f"{name} must be one integer or one per position ({batch}), got shape "
                         f"{list(arr.shape)}") from None


def _holds_bool(value: Any) -> bool:
    """Whether a list or tuple (nested or not) holds a bool: ``np.asarray([True, 2])`` reads it as 1."""
    if isinstance(value, bool | np.bool_):
        return True
    return isinstance(value, list | tuple) and any(_holds_bool(v) for v in value)


def _check_dice(dice: npt.ArrayLike, batch: int) -> np.ndarray:
    arr = _rectangular(dice, "dice")
    if _holds_bool(dice):
        raise StateError(f"dice must be integers 1..6, not True or False: got {dice!r}"[:200])
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.shape != (batch, 2):
        raise StateError(f"dice must have shape [{batch}, 2] to match the states, got {list(np.shape(dice))}")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise StateError(f"dice must be integers 1..6, got {arr.dtype} values {arr[:1].tolist()}")
    if (arr < 1).any() or (arr > 6).any():
        raise StateError(f"dice must be integers 1..6, got {arr[((arr < 1) | (arr > 6)).any(axis=1)][:1].tolist()}")
    return np.ascontiguousarray(arr, dtype=np.int64)  # as validate_states: one layout, no new compile


_MIN_CHUNK = 256  # below this many positions a thread costs more than it saves
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def _forget_pool() -> None:
    # A forked child inherits the pool object but not its threads: work sent to it would wait forever.
    global _POOL, _POOL_SIZE
    _POOL, _POOL_SIZE = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def split_over_threads(batch: int, threads: int, part: Callable[[int, int], Afterstates]) -> Afterstates:
    """``part(lo, hi) -> Afterstates`` of rows ``lo:hi``, run on ``threads`` slices of ``batch``
    rows by a process-wide thread pool (numba releases the GIL), joined in row order."""
    global _POOL, _POOL_SIZE
    if threads <= 1:
        return part(0, batch)
    if _POOL is None or _POOL_SIZE < threads:
        _POOL, _POOL_SIZE = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="nardy-movegen"), threads
    bounds = np.linspace(0, batch, threads + 1).astype(np.int64)
    parts = list(_POOL.map(lambda k: part(int(bounds[k]), int(bounds[k + 1])), range(threads)))
    offsets = [parts[0].offsets]
    for p in parts[1:]:
        offsets.append(p.offsets[1:] + offsets[-1][-1])
    return Afterstates(
        np.concatenate([p.states for p in parts]),
        np.concatenate([p.moves for p in parts]),
        np.concatenate([p.num_moves for p in parts]),
        np.concatenate(offsets),
    )


def is_whole(value: Any, at_least: int = 0) -> bool:
    """Whether ``value`` is a whole number (a Python or numpy integer, not a bool) of at least ``at_least``."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and bool(value >= at_least)


def available_cpus() -> int:
    """CPUs this process may use: those it may run on, and no more than its cgroup's CPU quota
    (a container started with ``--cpus=2`` sees every CPU of the host, but may use two)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return cpus if quota is None else max(1, min(cpus, quota))


def legal_afterstates(
    states: npt.ArrayLike,
    dice: npt.ArrayLike,
    rules: RulesLike | None = DEFAULT_RULES,
    *,
    validate: bool = True,
    threads: int | None = None,
) -> Afterstates:
    """Every distinct afterstate of each position with its dice, never truncated.

    ``states``: int8 ``[B, STATE_SIZE]`` from the mover's view; ``dice``:
    ``[B, 2]`` integers 1..6. The results of each position are sorted by their
    state rows (lexicographic from index 0) and come with one move sequence each.
    A turn with no legal move has exactly one result: the unchanged position,
    with ``num_moves`` 0.

    ``validate=False`` skips the checks of the states' contents (for callers that
    pass only states this module produced); shapes, integer dice 1..6 and the bounds
    the compiled code needs (points -15..15, borne-off counts 0..15, at most 15 of
    the mover's checkers) are still checked: the compiled code would read or write
    outside its arrays. ``threads``: how many threads share a large batch
    (default: the CPUs this process may use). A finished game (a side has
    borne off all 15) is rejected with StateError: it has no moves.
    """
    rules = as_rules(rules)
    if validate:
        states = validate_states(states)
        _check_not_over(states)
        dice = _check_dice(dice, states.shape[0])
    else:
        states, dice = _unchecked_int8(states), _unchecked_dice(dice)
        _check_unchecked(states, dice)
    ndice = np.where(dice[:, 0] == dice[:, 1], MAX_DICE_MOVES, 2).astype(np.int64)
    heads_used = np.zeros(states.shape[0], dtype=np.int64)
    return _run(states, dice, ndice, heads_used, _turn_head_limit(states, dice, rules), rules, threads)


def turn_head_limit(states: npt.ArrayLike, dice: npt.ArrayLike, rules: RulesLike | None = DEFAULT_RULES) -> np.ndarray:
    """Checkers that may leave the head in a turn that starts now: 1, or 2 by the first-turn exception.

    The exception applies when all 15 checkers stand on the head (the player's
    first turn) and the roll is a double whose face is in ``rules.head_exception``.
    """
    rules = as_rules(rules)
    states = validate_states(states)
    return _turn_head_limit(states, _check_dice(dice, states.shape[0]), rules)


def _turn_head_limit(states: np.ndarray, dice: np.ndarray, rules: Rules) -> np.ndarray:
    first_turn = states[:, HEAD_INDEX] == NUM_CHECKERS
    exception = (dice[:, 0] == dice[:, 1]) & rules.head_mask[dice[:, 0]]
    return np.where(first_turn & exception, 2, 1).astype(np.int64)


def legal_continuations(
    states: npt.ArrayLike,
    dice: npt.ArrayLike,
    dice_left: npt.ArrayLike,
    heads_used: npt.ArrayLike,
    head_limit: npt.ArrayLike,
    rules: RulesLike | None = DEFAULT_RULES,
    *,
    validate: bool = True,
    threads: int | None = 1,
) -> Afterstates:
    """Every distinct way to finish a turn already under way, with the same rules.

    ``dice``: the dice still to play: a double's face twice, both dice of a
    non-double, or the one die left of a non-double twice; ``dice_left``:
    single-die moves still to play (1..4 for a double, 2 for both dice of a
    non-double, 1 for its last die); ``heads_used``: checkers that have
    already left the head this turn; ``head_limit``: how many may leave it in
    the whole turn, computed at the turn's start by ``turn_head_limit`` (a
    double does not look like a double any more once one die of a non-double
    is left, so the limit is passed in). Results are filtered by the
    maximum-dice rule counted from here on (and the larger-die rule while both
    dice of a non-double remain); each result's ``num_moves`` says how many
    dice it plays, so a caller can require the number its whole turn needs.

    ``validate=False`` skips the input checks (for callers that pass only
    states and counters this module's own play produced, like the checker-mode
    env), and then every argument must be an array with one entry (row) per
    position (shapes, integer dice 1..6, integer counters, ``dice_left``'s range and the
    states' bounds as for ``legal_afterstates`` are still checked; ``heads_used`` and
    ``head_limit`` are taken as given);
    ``threads`` as for ``legal_afterstates`` (default 1).
    """
    rules = as_rules(rules)
    if not validate:
        states, dice = _unchecked_int8(states), _unchecked_dice(dice)
        left, used, limit = (_unchecked_dice(a, name) for a, name in
                             ((dice_left, "dice_left"), (heads_used, "heads_used"), (head_limit, "head_limit")))
        _check_unchecked(states, dice, left, used, limit)
        return _run(states, dice, left, used, limit, rules, threads)
    states = validate_states(states)
    _check_not_over(states)
    batch = states.shape[0]
    dice = _check_dice(dice, batch)
    dice_left = _per_position("dice_left", dice_left, batch)
    doubles = dice[:, 0] == dice[:, 1]
    if ((dice_left < 1) | (dice_left > MAX_DICE_MOVES) | (~doubles & (dice_left != 2))).any():
        raise StateError("dice_left must be 1..4 when both dice are equal and 2 for two different dice")
    heads_used = _per_position("heads_used", heads_used, batch)
    head_limit = _per_position("head_limit", head_limit, batch)
    if ((head_limit < 1) | (head_limit > 2)).any():
        raise StateError("head_limit must be 1 or 2")
    if ((heads_used < 0) | (heads_used > head_limit)).any():
        raise StateError("heads_used must be 0..head_limit (checkers that have left the head this turn)")
    left_on_head = states[:, HEAD_INDEX]
    if (heads_used > NUM_CHECKERS - left_on_head).any():
        raise StateError("heads_used is more than the checkers that are off the head")
    # A limit of 2 is the first-turn exception: a double of an excepted face, from a full head.
    two = head_limit == 2
    allowed = (dice[:, 0] == dice[:, 1]) & rules.head_mask[dice[:, 0]] & (heads_used + left_on_head == NUM_CHECKERS)
    if (two & ~allowed).any():
        i = int(np.flatnonzero(two & ~allowed)[0])
        raise StateError(f"position {i}: head_limit 2 is the first-turn exception (a double of "
                         f"{list(rules.head_exception)} with all {NUM_CHECKERS} checkers on the head when the "
                         f"turn began), which dice {dice[i].tolist()} with {int(heads_used[i])} checker(s) "
                         f"off the head this turn and {int(left_on_head[i])} on it cannot be; "
                         "take it from turn_head_limit at the turn's start")
    return _run(states, dice, dice_left, heads_used, head_limit, rules, threads)


def _unchecked_int8(states: npt.ArrayLike) -> np.ndarray:
    """``states`` as C-ordered int8 for ``validate=False``: integers only, and none that the cast to
    int8 would wrap into range (271 is not 15)."""
    arr = np.asarray(states)
    if arr.dtype != np.int8:
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise StateError(f"states must be integers, got dtype {arr.dtype}")
        if arr.size and (int(arr.min()) < -128 or int(arr.max()) > 127):
            raise StateError(f"states hold {int(arr.min())}..{int(arr.max())}; a point holds "
                             f"-{NUM_CHECKERS}..{NUM_CHECKERS} and a borne-off count 0..{NUM_CHECKERS}")
    return np.ascontiguousarray(arr, dtype=np.int8)


def _unchecked_dice(dice: npt.ArrayLike, name: str = "dice") -> np.ndarray:
    """``dice`` (or one of legal_continuations' counters, ``name``) as C-ordered int64 for
    ``validate=False``: integers, as the checked call has them (a float 3.7 was played as 3, a
    string "2" as 2)."""
    arr = np.asarray(dice)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise StateError(f"{name} must be integers{' 1..6' if name == 'dice' else ''}, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _call_compiled(function: Callable, *args: Any) -> Any:
    """``function(*args)``, compiled again without numba's cache if the cache cannot be read."""
    try:
        return function(*args)
    except Exception as exc:
        if not from_numba_cache(exc):
            raise
        where = getattr(getattr(function, "_cache", None), "_cache_path", "numba's cache folder")
        without_numba_cache(exc, list(globals().values()), where)
        return function(*args)


def _unholdable(states: np.ndarray) -> str | None:
    """What makes the first row of ``states`` the compiled core cannot hold so (as validate_states
    says it), or None."""
    i = int(_call_compiled(_first_unholdable, states))
    if i < 0:
        return None
    try:
        validate_states(states[i:i + 1])
    except StateError as err:  # it refuses every row the compiled core cannot hold, and more
        what = str(err).removeprefix("state 0: ")
    else:
        what = f"{states[i].tolist()} is out of bounds"
    return f"state {i}: {what} (validate=False skips the other checks, not the bounds the compiled code needs)"


def _check_unchecked(states: np.ndarray, dice: np.ndarray, *counters: np.ndarray) -> None:
    """What the compiled code needs even with ``validate=False``: each argument with a row per
    position, dice 1..6, ``dice_left`` 1..4 (2 at most for different dice), points holding
    -15..15, borne-off counts 0..15 and at most 15 of the mover's checkers: the compiled code
    does not check bounds, and a short array, a die of 0 or 9, a third die of a non-double, a
    point of 20 (its packed key holds -15..16) or a 16th checker to move (its scratch space holds
    the plays of 15) would read or write outside the arrays (a crash, or silent garbage). O(B)."""
    if states.ndim != 2 or states.shape[1] != STATE_SIZE:
        raise StateError(f"states must have shape [B, {STATE_SIZE}], got {list(states.shape)}")
    batch = states.shape[0]
    unholdable = _unholdable(states) if batch else None
    if unholdable:
        raise StateError(unholdable)
    if dice.shape != (batch, 2):
        raise StateError(f"dice must have shape [{batch}, 2] to match the states, got {list(dice.shape)}")
    if batch and (int(dice.min()) < 1 or int(dice.max()) > 6):
        raise StateError(f"dice must be integers 1..6, got {dice[((dice < 1) | (dice > 6)).any(axis=1)][:1].tolist()}")
    for name, arr in zip(("dice_left", "heads_used", "head_limit"), counters, strict=False):
        if arr.shape != (batch,):
            raise StateError(f"{name} must have one entry per position ({batch}), got shape {list(arr.shape)}")
    if counters and batch:
        left = counters[0]
        if int(left.min()) < 1 or int(left.max()) > MAX_DICE_MOVES:
            raise StateError(f"dice_left must be 1..{MAX_DICE_MOVES}, got {int(left.min())}..{int(left.max())}")
        if ((left > 2) & (dice[:, 0] != dice[:, 1])).any():  # the search would read dice it was never given
            raise StateError("dice_left must be at most 2 for two different dice")


def _run(states, dice, ndice, heads_used, head_limit, rules, threads) -> Afterstates:
    batch = states.shape[0]
    if threads is None:
        threads = available_cpus()
    elif not is_whole(threads, 1):
        raise ValueError(f"threads must be None (the CPUs this process may use) or an integer of at least 1, "
                         f"got {threads!r}")
    threads = max(1, min(int(threads), batch // _MIN_CHUNK))
    # One array type for the compiled code: C order and writeable (numba types a read-only or
    # strided array apart, and would compile another version of the core for it, for seconds).
    states, dice, ndice, heads_used, head_limit = (
        np.require(a, t, ["C", "W"]) for a, t in ((states, np.int8), (dice, np.int64), (ndice, np.int64),
                                                 (heads_used, np.int64), (head_limit, np.int64)))

    def part(lo: int, hi: int) -> Afterstates:
        args = (states[lo:hi], dice[lo:hi], ndice[lo:hi], heads_used[lo:hi], head_limit[lo:hi], rules.block_home,
                max(64, 16 * (hi - lo)))
        return Afterstates(*_call_compiled(_generate, *args))

    return split_over_threads(batch, threads, part)

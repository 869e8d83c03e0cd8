"""Game-level helpers over the rules core: the opening roll, dice, resignation.

These take a numpy ``Generator`` explicitly; the rules core itself never rolls.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .core import (
    HALF,
    NUM_CHECKERS,
    NUM_POINTS,
    OFF_MOVER,
    OFF_OPPONENT,
    StateError,
    _check_dice,
    _check_not_over,
    is_whole,
    legal_afterstates,
    pip_counts,
    validate_states,
)
from .notation import Color
from .rules import DEFAULT_RULES, Rules, RulesLike, as_rules

__all__ = ["opening_roll", "roll_dice", "resignation_points", "escape_turns", "ROLLS", "ROLL_WEIGHTS"]

ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], dtype=np.int64)
"""The 21 distinct rolls."""
ROLL_WEIGHTS = np.where(ROLLS[:, 0] == ROLLS[:, 1], 1 / 36, 2 / 36)
"""Probability of each of ROLLS."""


def roll_dice(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` rolls of two dice, int64 ``[n, 2]``."""
    _check_rng(rng, n)
    return rng.integers(1, 7, size=(n, 2), dtype=np.int64)


def _check_rng(rng: np.random.Generator, n: int) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    if not is_whole(n):
        raise ValueError(f"n must be a whole number, 0 or more, got {n!r}")


def opening_roll(
    rng: np.random.Generator, n: int, rules: RulesLike | None = DEFAULT_RULES
) -> tuple[np.ndarray, np.ndarray]:
    """Decide who moves first in ``n`` games and with which dice.

    Each player rolls one die (white's first, black's second); equal numbers
    are rolled again. The higher number moves first. Under ``opening="play"``
    the first move plays the two numbers just rolled (never a double); under
    ``"reroll"`` the winner rolls two dice afresh.

    Returns ``(first, dice)``: the colour to move first (``Color`` values, int8
    ``[n]``) and its dice (int64 ``[n, 2]``).
    """
    rules = as_rules(rules)
    _check_rng(rng, n)
    rolls = roll_dice(rng, n)
    tied = rolls[:, 0] == rolls[:, 1]
    while tied.any():
        rolls[tied] = roll_dice(rng, int(tied.sum()))
        tied = rolls[:, 0] == rolls[:, 1]
    first = np.where(rolls[:, 0] > rolls[:, 1], Color.WHITE, Color.BLACK).astype(np.int8)
    dice = rolls if rules.opening == "play" else roll_dice(rng, n)
    return first, dice


LOOKAHEAD_TURNS = 3
"""Turns ``resignation_points`` looks ahead, at most, for an escape from mars certain over several."""

_CHUNK = 256
"""Positions expanded over the 21 rolls in one call of the core while looking ahead."""


def resignation_points(state: npt.ArrayLike, dice: npt.ArrayLike | None = None,
                       rules: RulesLike | None = DEFAULT_RULES) -> int:
    """Points (before the cube) a player concedes by resigning at its own turn.

    ``state`` is the resigning player's view. RULES.md, article 50.7: a player
    whose escape from mars is certain whatever is rolled, or is already secured
    by the dice just rolled (``dice``), may resign conceding a single game,
    1 point. So may a player who has already borne a checker off (no mars is
    possible). Any other resignation concedes the mars it cannot rule out,
    2 points.

    "Certain whatever is rolled" means: the player bears a checker off before
    the opponent can have borne off its last, whatever the dice of both, the
    player choosing its plays for it. It is judged over the turn being played
    (with ``dice``: that roll; without: every one of the 21) and, once the two
    sides can no longer meet (the player's checkers all on its points 1-12, the
    opponent's all past them; under the ``home`` block rule, one of the
    opponent's in its home or off too), over the player's turns to come, as many as the opponent
    needs at the fewest (at least a quarter of its checkers, and of its pips
    over 24, per turn) and ``LOOKAHEAD_TURNS`` at most. Where the sides can
    still meet only the turn being played counts: the opponent's plays could
    block the way, and the escape is not granted unless this roll secures it.
    """
    rules = as_rules(rules)
    if np.ndim(state) != 1:
        raise StateError(f"resignation_points takes one state row (shape [26]), got shape {list(np.shape(state))}")
    row = validate_states(state)[0]  # checked before the shortcut below, which reads one cell
    _check_not_over(row[None])
    if row[OFF_MOVER] > 0:
        return 1
    rolls = ROLLS if dice is None else _check_dice(dice, 1)
    turns = escape_turns(row, rules) or 1
    return 1 if _sure_to_bear_off(row[None], turns, rules, rolls)[0] else 2


def escape_turns(state: npt.ArrayLike, rules: RulesLike | None = DEFAULT_RULES) -> int | None:
    """The player's turns, this one first, over which ``resignation_points`` judges an escape from
    mars: None while the sides can still meet (the roll being played alone counts), else the
    fewest turns the opponent could need to bear off its last checker, ``LOOKAHEAD_TURNS`` at most.
    ``state`` is the player's view, as for ``resignation_points`` (which needs no turns at all
    for a player with a checker off: no mars is possible)."""
    rules = as_rules(rules)
    if np.ndim(state) != 1:
        raise StateError(f"escape_turns takes one state row (shape [26]), got shape {list(np.shape(state))}")
    row = validate_states(state)[0]
    _check_not_over(row[None])
    if not _out_of_contact(row, rules):
        return None
    return min(_opponent_turns_at_least(row), LOOKAHEAD_TURNS)


def _out_of_contact(row: np.ndarray, rules: Rules) -> bool:
    """Whether the mover's plays from now on are those it would have with the opponent's checkers
    where they stand: its own all on its points 1-12, the opponent's all on the mover's 13-24
    (past them, never to come back), so no landing point and no block is ever in question (under
    ``home``, an opponent checker must be in its home or off already, which keeps the mover's
    blocks legal for good)."""
    board = row[:NUM_POINTS]
    if (board[HALF:] > 0).any() or (board[:HALF] < 0).any():
        return False
    return not rules.block_home or bool((board[HALF:HALF + 6] < 0).any()) or row[OFF_OPPONENT] > 0


def _opponent_turns_at_least(row: np.ndarray) -> int:
    """The fewest turns in which the opponent could bear off its last checker: four checkers and
    24 pips a turn at most."""
    left = NUM_CHECKERS - int(row[OFF_OPPONENT])
    pips = int(pip_counts(row[None])[0, 1])
    return max(-(-left // 4), -(-pips // 24))


def _cannot_within(rows: np.ndarray, turns: int, rolls: np.ndarray = ROLLS) -> np.ndarray:
    """Rows whose mover cannot be sure to bear a checker off within ``turns`` turns, the first with
    each of ``rolls``: the smallest of them, then a roll of 1-2 every turn (3 pips), fall short of
    every pip outside home plus the lowest checker's distance to off, which a first checker off
    takes."""
    first = int((rolls.sum(axis=1) * np.where(rolls[:, 0] == rolls[:, 1], 2, 1)).min())
    board = rows[:, :NUM_POINTS].astype(np.int64)
    mine = np.where(board > 0, board, 0)
    points = np.arange(1, NUM_POINTS + 1)
    outside = (mine[:, 6:] * (points[6:] - 6)).sum(axis=1)
    lowest = np.where(mine[:, :6] > 0, points[:6], 6).min(axis=1)
    return outside + lowest > first + 3 * (turns - 1)


def _sure_to_bear_off(rows: np.ndarray, turns: int, rules: Rules, rolls: np.ndarray = ROLLS) -> np.ndarray:
    """Per row (mover's view, nothing borne off), whether the mover bears a checker off within
    ``turns`` of its turns whatever the dice, the first turn's with each of ``rolls``, the
    opponent's checkers standing still (``_out_of_contact``, or ``turns`` 1)."""
    sure = np.zeros(len(rows), dtype=bool)
    ahead = np.flatnonzero(~_cannot_within(rows, turns, rolls)) if turns > 1 else np.arange(len(rows))
    for start in range(0, len(ahead), _CHUNK):
        chunk = rows[ahead[start:start + _CHUNK]]
        n, r = len(chunk), len(rolls)
        found = legal_afterstates(np.repeat(chunk, r, axis=0), np.tile(rolls, (n, 1)), rules)
        starts, counts = found.offsets[:-1], np.diff(found.offsets)  # a pass is one afterstate too
        met = np.add.reduceat((found.states[:, OFF_MOVER] > 0).astype(np.int64), starts) > 0
        if turns > 1 and not met.all():
            unmet = np.flatnonzero(~met)  # (position, roll) pairs with no play bearing off now
            sizes = counts[unmet]
            rows_of = np.repeat(starts[unmet], sizes) + np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            after = np.ascontiguousarray(found.states[rows_of])
            keys, first, inverse = np.unique(after.view(f"V{after.shape[1]}").ravel(), return_index=True,
                                             return_inverse=True)
            later = _sure_to_bear_off(after[first], turns - 1, rules)[inverse.ravel()]
            met[unmet] = np.add.reduceat(later.astype(np.int64), np.cumsum(sizes) - sizes) > 0
        sure[ahead[start:start + _CHUNK]] = met.reshape(n, r).all(axis=1)
    return sure

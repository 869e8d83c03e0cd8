"""Game-level helpers over the rules core: the opening roll, dice, resignation.

These take a numpy ``Generator`` explicitly; the rules core itself never rolls.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .core import (
    OFF_MOVER,
    StateError,
    _check_dice,
    _check_not_over,
    is_whole,
    legal_afterstates,
    validate_states,
)
from .notation import Color
from .rules import DEFAULT_RULES, RulesLike, as_rules

__all__ = ["opening_roll", "roll_dice", "resignation_points", "ROLLS", "ROLL_WEIGHTS"]

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


def resignation_points(state: npt.ArrayLike, dice: npt.ArrayLike | None = None,
                       rules: RulesLike | None = DEFAULT_RULES) -> int:
    """Points (before the cube) a player concedes by resigning at its own turn.

    ``state`` is the resigning player's view. RULES.md, article 50.7: a player
    whose escape from mars is certain whatever is rolled (``dice`` None: every
    one of the 21 rolls has a legal play that bears a checker off), or is
    already secured by the dice just rolled (``dice``: some legal play of that
    roll bears one off), may resign conceding a single game, 1 point. So may a
    player who has already borne a checker off (no mars is possible). Any
    other resignation concedes the mars it cannot rule out, 2 points.

    "Certain whatever is rolled" is judged over the one roll to come, not
    over the turns after it: a player sure to bear off in two turns, with the
    opponent far from finishing, still concedes 2 points by resigning now (a
    conservative reading: it never grants a single game that is not secured).
    """
    rules = as_rules(rules)
    if np.ndim(state) != 1:
        raise StateError(f"resignation_points takes one state row (shape [26]), got shape {list(np.shape(state))}")
    row = validate_states(state)[0]  # checked before the shortcut below, which reads one cell
    _check_not_over(row[None])
    if row[OFF_MOVER] > 0:
        return 1
    rolls = ROLLS if dice is None else _check_dice(dice, 1)
    found = legal_afterstates(np.repeat(row[None], len(rolls), axis=0), rolls, rules)
    bears_off = found.states[:, OFF_MOVER] > 0
    # Escape secured for a roll when some play of it bears off; needed for every roll asked about.
    secured = np.add.reduceat(bears_off.astype(np.int64), found.offsets[:-1]) > 0
    return 1 if secured.all() else 2

"""Game-level helpers over the rules core: the opening roll and dice.

These take a numpy ``Generator`` explicitly; the rules core itself never rolls.
"""

from __future__ import annotations

import numpy as np

from .notation import Color
from .rules import DEFAULT_RULES, Rules

__all__ = ["opening_roll", "roll_dice"]


def roll_dice(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` rolls of two dice, int64 ``[n, 2]``."""
    return rng.integers(1, 7, size=(n, 2), dtype=np.int64)


def opening_roll(
    rng: np.random.Generator, n: int, rules: Rules = DEFAULT_RULES
) -> tuple[np.ndarray, np.ndarray]:
    """Decide who moves first in ``n`` games and with which dice.

    Each player rolls one die (white's first, black's second); equal numbers
    are rolled again. The higher number moves first. Under ``opening="play"``
    the first move plays the two numbers just rolled (never a double); under
    ``"reroll"`` the winner rolls two dice afresh.

    Returns ``(first, dice)``: the colour to move first (``Color`` values, int8
    ``[n]``) and its dice (int64 ``[n, 2]``).
    """
    rolls = roll_dice(rng, n)
    tied = rolls[:, 0] == rolls[:, 1]
    while tied.any():
        rolls[tied] = roll_dice(rng, int(tied.sum()))
        tied = rolls[:, 0] == rolls[:, 1]
    first = np.where(rolls[:, 0] > rolls[:, 1], Color.WHITE, Color.BLACK).astype(np.int8)
    dice = rolls if rules.opening == "play" else roll_dice(rng, n)
    return first, dice

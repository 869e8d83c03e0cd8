"""Text pictures of a position (the ``ansi`` render mode and the CLI)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .core import OFF_MOVER, OFF_OPPONENT, STATE_SIZE, StateError, _holds_bool, pip_counts, validate_states
from .notation import Color, ColorLike, as_color, format_npn, parse_npn

__all__ = ["board_text", "board_words"]


def picture_input(what: str, state: npt.ArrayLike, dice: Sequence[int] | None) -> tuple[np.ndarray, tuple[int, int] | None]:
    """The one state row and the roll a picture ``what`` shows, checked (StateError saying what is wrong)."""
    arr = np.asarray(state)
    if arr.ndim != 1:
        raise StateError(f"{what} draws one state row (shape [{STATE_SIZE}]), got shape {list(arr.shape)}: "
                         "pass states[i] for one of a batch")
    row = validate_states(arr)[0]
    if dice is None:
        return row, None
    roll = np.asarray(dice)
    if (roll.shape != (2,) or not np.issubdtype(roll.dtype, np.integer) or ((roll < 1) | (roll > 6)).any()
            or _holds_bool(dice)):  # (True, 1) reads as integers
        raise StateError(f"{what}: dice must be two whole numbers 1..6, got {dice!r}")
    return row, (int(roll[0]), int(roll[1]))


def _cell(v: int) -> str:
    if v == 0:
        return "  ."
    return f"{'W' if v > 0 else 'B'}{abs(v):>2d}"


def board_text(state: npt.ArrayLike, side: ColorLike, dice: Sequence[int] | None = None,
               caption: str | None = None) -> str:
    """The board in common numbering, borne-off counts, pip counts, whose turn and the dice.

    White moves 24 -> 1 (home 1-6), black 12 -> 1 -> 24 -> 13 (home 13-18).
    ``caption`` replaces the last line ("White to move, dice 6-5"), e.g. with a result.
    """
    state, dice = picture_input("board_text", state, dice)
    npn = format_npn(state, side, validate=False)
    common = [int(x) for x in npn.split(":")[0].split(",")]
    side = as_color(side)
    offs = (int(state[OFF_MOVER]), int(state[OFF_OPPONENT]))
    pips = pip_counts(state[None])[0]
    white_off, black_off = offs if side == Color.WHITE else offs[::-1]
    white_pips, black_pips = (pips if side == Color.WHITE else pips[::-1]).tolist()
    top = range(13, 25)
    bottom = range(12, 0, -1)

    def row(points: range, values: bool) -> str:
        cells = [_cell(common[p - 1]) if values else f"{p:>3d}" for p in points]
        return " " + " ".join(cells[:6]) + "  | " + " ".join(cells[6:])

    rule = " " + "-" * 23 + "--+" + "-" * 24
    middle = " " * 26 + "|"  # keeps each half's checkers next to its own point numbers
    turn = f" {'White' if side == Color.WHITE else 'Black'} to move" + (
        f", dice {dice[0]}-{dice[1]}" if dice is not None else "")
    lines = [
        row(top, False), rule, row(top, True), middle, row(bottom, True), rule, row(bottom, False),
        f" off: white {white_off:>2d}, black {black_off:>2d}    pips: white {white_pips}, black {black_pips}",
        turn if caption is None else f" {caption}",
    ]
    return "\n".join(lines)


def board_words(state: npt.ArrayLike, side: ColorLike, dice: Sequence[int] | None = None) -> str:
    """The position as a sentence per side, for a screen reader: where each side's checkers
    stand (common point numbers, low to high), how many are off, and the pip counts."""
    state, dice = picture_input("board_words", state, dice)
    npn = format_npn(state, side, validate=False)
    common = [int(x) for x in npn.split(":")[0].split(",")]
    side = as_color(side)
    offs = (int(state[OFF_MOVER]), int(state[OFF_OPPONENT]))
    pips = pip_counts(state[None])[0].tolist()
    if side != Color.WHITE:
        offs, pips = offs[::-1], pips[::-1]
    parts = []
    for name, sign, off, pip in (("White", 1, offs[0], pips[0]), ("Black", -1, offs[1], pips[1])):
        where = ", ".join(f"{sign * v} on {p}" for p, v in enumerate(common, 1) if sign * v > 0)
        parts.append(f"{name}: {where or 'no checkers on the board'}; {off} off; {pip} pips.")
    turn = f"{'White' if side == Color.WHITE else 'Black'} to move" + (
        f", dice {dice[0]}-{dice[1]}." if dice is not None else ".")
    return " ".join([*parts, turn])


def npn_board_text(npn: str, dice: Sequence[int] | None = None) -> str:
    """``board_text`` of an NPN string."""
    state, side = parse_npn(npn)
    return board_text(state, side, dice)

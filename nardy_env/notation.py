"""NPN position strings ("nardy position notation", FORMATS.md) and common numbering.

    <c1>,<c2>,...,<c24>:<white off>,<black off>:<side to move>

``c1..c24`` are the common points 1..24: positive for white checkers, negative
for black. The rules core stores positions from the mover's view; this module
converts between the two.
"""

from __future__ import annotations

import enum
import re
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .core import (
    HALF,
    NUM_CHECKERS,
    NUM_POINTS,
    OFF_MOVER,
    OFF_OPPONENT,
    STATE_SIZE,
    StateError,
    validate_states,
)

__all__ = [
    "npn_sort_keys",
    "results_rank",
    "Color",
    "NPNError",
    "START_NPN",
    "parse_npn",
    "format_npn",
    "to_common_point",
    "as_color",
    "ColorLike",
]

START_NPN = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:w"
"""The starting position, white to move."""


class Color(enum.IntEnum):
    """The two sides. White's personal numbering is the common one."""

    WHITE = 0
    BLACK = 1

    @property
    def letter(self) -> str:
        """``"w"`` or ``"b"`` as in NPN."""
        return "wb"[self]

    @property
    def other(self) -> Color:
        """The opponent's colour."""
        return Color(1 - self)

    @classmethod
    def from_letter(cls, letter: str) -> Color:
        """``"w"`` -> WHITE, ``"b"`` -> BLACK."""
        if letter == "w":
            return cls.WHITE
        if letter == "b":
            return cls.BLACK
        raise NPNError("side to move", f"must be 'w' or 'b', got {letter!r}")


class NPNError(ValueError):
    """A malformed NPN string; ``field`` names the part that is wrong."""

    field: str
    _message: str
    _where: str

    def __init__(self, field: str | NPNError, message: str | None = None, where: str = ""):
        if isinstance(field, NPNError):  # NPNError(error): how Gymnasium's AsyncVectorEnv raises a worker's again
            error = field
            field, message, where = error.field, error._message, error._where
        if message is None:
            raise TypeError("NPNError(field, message): name the part of the NPN that is wrong, and what is wrong")
        super().__init__(f"{where}bad NPN {field}: {message}")
        self.field = field
        self._message = message
        self._where = where  # what the string was given as (a reset option), said first

    def __reduce__(self):  # pickled whole, as an error raised in a worker process is sent back
        return type(self), (self.field, self._message, self._where), self.__dict__


# _INDEX[color][c - 1]: index into a mover's-view state row of common point c.
_INDEX = np.stack(
    [np.arange(NUM_POINTS), (np.arange(NUM_POINTS) + HALF) % NUM_POINTS]
).astype(np.int64)


ColorLike = Color | int | np.integer | str
"""What the functions taking a side accept: a Color, 0 / 1, or "w" / "b" / "white" / "black"."""


@overload
def to_common_point(personal: int | np.integer, color: ColorLike) -> int: ...
@overload
def to_common_point(personal: npt.ArrayLike, color: ColorLike) -> np.ndarray: ...
def to_common_point(personal: npt.ArrayLike, color: ColorLike) -> int | np.ndarray:
    """Common number of a personal point of ``color`` (0, bearing off, stays 0)."""
    color = as_color(color)
    if (isinstance(personal, int | np.integer) and not isinstance(personal, bool | np.timedelta64)
            and 0 <= personal <= NUM_POINTS):
        point = int(personal)  # one point: the common case, without numpy's array machinery
        return (point + HALF - 1) % NUM_POINTS + 1 if color == Color.BLACK and point > 0 else point
    p = np.asarray(personal)
    if p.size == 0 and p.dtype == np.float64:  # an empty list
        p = p.astype(np.int64)
    if p.dtype.kind not in "iu" or (p < 0).any() or (p > NUM_POINTS).any():  # not bool, not timedelta64
        raise ValueError(f"personal points are whole numbers 0..{NUM_POINTS} (0: borne off), got {personal!r}")
    common = np.where((color == Color.BLACK) & (p > 0), (p + HALF - 1) % NUM_POINTS + 1, p)
    return int(common) if common.ndim == 0 else common


def as_color(value: Any) -> Color:
    """A Color from a Color, 0/1, or "w"/"b"/"white"/"black"; anything else is named."""
    if isinstance(value, Color):
        return value
    if isinstance(value, str) and value.lower() in ("w", "b", "white", "black"):
        return Color.from_letter(value.lower()[0])
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value in (0, 1):
        return Color(int(value))
    raise ValueError(f"a colour is Color.WHITE or Color.BLACK (0 or 1, 'w' or 'b'), got {value!r}")


_INTEGER = re.compile(r"-?[0-9]+")


def _parse_int(text: str, field: str) -> int:
    # Only what every language reads as an integer: an optional minus and ASCII digits.
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        raise NPNError(field, f"{text!r} is not an integer")
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("-").lstrip("0") or "0"
    if len(digits) > 2:  # no count has more than two digits; never convert a huge number
        shown = text if len(text) <= 24 else text[:20] + "..."
        bounds = f"-{NUM_CHECKERS}..{NUM_CHECKERS}" if field.startswith("point") else f"0..{NUM_CHECKERS}"
        raise NPNError(field, f"{shown} is out of range {bounds}")
    return int(sign + digits)


def parse_npn(text: str) -> tuple[np.ndarray, Color]:
    """Parse an NPN string into a mover's-view state row (int8 [26]) and the side to move."""
    if not isinstance(text, str):
        raise NPNError("string", f"expected a string, got {type(text).__name__}")
    parts = text.strip().split(":")
    if len(parts) != 3:
        raise NPNError("fields", f"expected 3 ':'-separated fields (points, off, side), got {len(parts)}")
    points_text, off_text, side_text = parts
    side = Color.from_letter(side_text.strip())
    cells = points_text.split(",")
    if len(cells) != NUM_POINTS:
        raise NPNError("points", f"expected {NUM_POINTS} comma-separated counts, got {len(cells)}")
    common = np.array([_parse_int(c, f"point {n}") for n, c in enumerate(cells, 1)], dtype=np.int64)
    for n, v in enumerate(common, 1):
        if abs(v) > NUM_CHECKERS:
            raise NPNError(f"point {n}", f"count {v} is out of range -{NUM_CHECKERS}..{NUM_CHECKERS}")
    offs = off_text.split(",")
    if len(offs) != 2:
        raise NPNError("off", f"expected 2 comma-separated counts (white, black), got {len(offs)}")
    white_off = _parse_int(offs[0], "white off")
    black_off = _parse_int(offs[1], "black off")
    for name, v in (("white off", white_off), ("black off", black_off)):
        if not 0 <= v <= NUM_CHECKERS:
            raise NPNError(name, f"{v} is out of range 0..{NUM_CHECKERS}")
    white_total = int(common[common > 0].sum()) + white_off
    black_total = int(-common[common < 0].sum()) + black_off
    if white_total != NUM_CHECKERS:
        raise NPNError("white checkers", f"white has {white_total - white_off} on the points plus {white_off} off, "
                                         f"{white_total} in all, not {NUM_CHECKERS}")
    if black_total != NUM_CHECKERS:
        raise NPNError("black checkers", f"black has {black_total - black_off} on the points plus {black_off} off, "
                                         f"{black_total} in all, not {NUM_CHECKERS}")
    state = np.zeros(STATE_SIZE, dtype=np.int8)
    sign = 1 if side == Color.WHITE else -1
    state[_INDEX[side]] = sign * common
    state[OFF_MOVER] = white_off if side == Color.WHITE else black_off
    state[OFF_OPPONENT] = black_off if side == Color.WHITE else white_off
    return state, side


def format_npn(state: npt.ArrayLike, side: ColorLike, *, validate: bool = True) -> str:
    """NPN of a mover's-view state row whose mover is ``side``.

    ``validate=False`` skips the checks of the row (for states the rules core made)."""
    arr = np.asarray(state)
    if arr.ndim != 1 or (not validate and arr.size < STATE_SIZE):  # unchecked too (it raised IndexError)
        raise ValueError(f"format_npn takes one state row (shape [{STATE_SIZE}]), got shape {list(arr.shape)}")
    if validate:
        arr = validate_states(arr[None])[0]
    state = arr
    side = as_color(side)
    sign = 1 if side == Color.WHITE else -1
    common = (sign * state[_INDEX[side]].astype(np.int64)).tolist()
    mover_off = int(state[OFF_MOVER])
    opp_off = int(state[OFF_OPPONENT])
    white_off, black_off = (mover_off, opp_off) if side == Color.WHITE else (opp_off, mover_off)
    return f"{','.join(map(str, common))}:{white_off},{black_off}:{side.letter}"


def _token_ranks(separator: str) -> np.ndarray:
    """Rank of ``str(t) + separator`` among t = -15..15 as strings (index t + 15)."""
    tokens = [f"{t}{separator}" for t in range(-NUM_CHECKERS, NUM_CHECKERS + 1)]
    rank = np.empty(len(tokens), dtype=np.int64)
    rank[sorted(range(len(tokens)), key=tokens.__getitem__)] = np.arange(len(tokens))
    return rank


# Comparing two NPN strings comes down to the first field that differs, and within
# it to the text of the number followed by its separator ("1," < "10"; "10" < "1:").
_BEFORE_COMMA = _token_ranks(",")
_BEFORE_COLON = _token_ranks(":")
_FIELD_RANKS = np.stack([_BEFORE_COMMA] * (NUM_POINTS - 1) + [_BEFORE_COLON, _BEFORE_COMMA, _BEFORE_COLON])


def _movers(movers: npt.ArrayLike, n: int, per: str) -> np.ndarray:
    """``movers`` (one Color, or one per row) as int64 ``[n]``, or ValueError naming what is wrong."""
    given = np.asarray(movers)
    if given.dtype == np.bool_ or not np.issubdtype(given.dtype, np.integer) or given.ndim > 1 \
            or (given.ndim == 1 and given.size != n) or ((given != 0) & (given != 1)).any():
        raise ValueError(f"movers must be one Color (0 white, 1 black) or one per {per} ({n}), "
                         f"got {given.dtype} values {given.ravel()[:4].tolist()} of shape {list(given.shape)}")
    return np.broadcast_to(given.astype(np.int64), (n,))


def npn_sort_keys(states: np.ndarray, movers: np.ndarray) -> np.ndarray:
    """int64 ``[M, 26]`` keys that order afterstates as their NPN strings sort.

    ``states``: mover's-view rows ``[M, 26]``; ``movers``: the Color of each row's mover
    (or one Color for all).
    Rows compared lexicographically by these keys sort exactly as the strings
    ``format_npn(flip(state), mover.other)`` do, which is the order of the
    ``results`` list of FORMATS.md (all results of a turn share the side letter).
    """
    states = np.asarray(states)
    if states.ndim != 2 or states.shape[1] != STATE_SIZE:
        raise StateError(f"states must have shape [M, {STATE_SIZE}], got {list(states.shape)}")
    movers = _movers(movers, states.shape[0], "row")
    sign = np.where(movers == Color.WHITE, 1, -1)[:, None]
    common = sign * np.take_along_axis(states[:, :NUM_POINTS].astype(np.int64), _INDEX[movers], axis=1)
    white = (movers == Color.WHITE)[:, None]
    offs = states[:, [OFF_MOVER, OFF_OPPONENT]].astype(np.int64)
    offs = np.where(white, offs, offs[:, ::-1])
    fields = np.concatenate([common, offs], axis=1) + NUM_CHECKERS
    return _FIELD_RANKS[np.arange(fields.shape[1])[None, :], fields]


def results_rank(states: np.ndarray, movers: npt.ArrayLike, offsets: npt.ArrayLike) -> np.ndarray:
    """Index of each afterstate in its position's ``results`` list as FORMATS.md sorts it.

    ``states``: flat afterstates as the rules core returns them (``Afterstates.states``);
    ``movers``: the Color of each position's side to move (or one Color for all);
    ``offsets``: where each position's afterstates begin (``Afterstates.offsets``). Players use it to break exact ties as FORMATS.md
    says: the earliest result in the sorted list.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    counts = np.diff(offsets)
    rows_mover = np.repeat(_movers(movers, counts.size, "position"), counts)
    keys = npn_sort_keys(states, rows_mover)
    segment = np.repeat(np.arange(counts.size), counts)
    order = np.lexsort((*keys.T[::-1], segment))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - np.repeat(offsets[:-1], counts)
    return rank

"""Pictures of a position (the ``rgb_array`` render mode), drawn with Pillow.

Imported only when a picture is asked for, so the rest of ``nardy_env`` does
not need Pillow. The board is laid out as in ``render.board_text``: common
points 13..24 along the top from left to right, 12..1 along the bottom, white's
home (1..6) bottom right, black's (13..18) top left.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .core import NUM_CHECKERS, OFF_MOVER, OFF_OPPONENT, StateError, pip_counts
from .notation import Color, ColorLike, as_color, format_npn
from .render import picture_input

__all__ = ["board_image", "WIDTH", "HEIGHT"]

WIDTH = 960
"""Picture width in pixels."""
HEIGHT = 600
"""Picture height in pixels."""

_MARGIN = 24
_LABEL = 26  # room for the point numbers above and below the board
_BAR = 28
_PANEL = 190
_BOARD_W = WIDTH - 2 * _MARGIN - _PANEL
_BOARD_H = HEIGHT - 2 * (_MARGIN + _LABEL)
_POINT_W = (_BOARD_W - _BAR) / 12
_VISIBLE = 5  # checkers drawn per point before the stack shows a count

_FELT = (34, 102, 64)
_FRAME = (92, 58, 30)
_POINT_A = (214, 186, 140)
_POINT_B = (150, 60, 48)
_WHITE = (246, 242, 230)
_BLACK = (38, 38, 42)
_TEXT = (30, 30, 30)
_PANEL_BG = (236, 232, 222)


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one fixed-size bitmap font
        return ImageFont.load_default()


def _point_x(column: int) -> float:
    """Left edge of board column 0..11 (a bar between columns 5 and 6)."""
    x = _MARGIN + column * _POINT_W
    return x + (_BAR if column >= 6 else 0)


def _place(point: int) -> tuple[float, bool]:
    """(left edge, on the top row) of common point 1..24."""
    if point >= 13:
        return _point_x(point - 13), True
    return _point_x(12 - point), False


USED_DIE = (200, 200, 200)
"""The face colour of a die already played (checker mode)."""


def _draw_die(draw, x: float, y: float, size: float, face: int, used: bool) -> None:
    fill = USED_DIE if used else (255, 255, 255)
    draw.rounded_rectangle([x, y, x + size, y + size], radius=size * 0.15, fill=fill, outline=_TEXT, width=2)
    spots = {
        1: [(0.5, 0.5)],
        2: [(0.25, 0.25), (0.75, 0.75)],
        3: [(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
        4: [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)],
        5: [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)],
        6: [(0.25, 0.22), (0.75, 0.22), (0.25, 0.5), (0.75, 0.5), (0.25, 0.78), (0.75, 0.78)],
    }[face]
    r = size * 0.09
    colour = (120, 120, 120) if used else _TEXT
    for fx, fy in spots:
        cx, cy = x + fx * size, y + fy * size
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)


def board_image(
    state: np.ndarray,
    side: ColorLike,
    dice: Sequence[int] | None = None,
    *,
    dice_left: np.ndarray | None = None,
    winner: ColorLike | None = None,
    points: int = 0,
) -> np.ndarray:
    """uint8 ``[HEIGHT, WIDTH, 3]`` picture of a mover's-view ``state`` whose mover is ``side``.

    ``dice``: the roll to show; ``dice_left``: single-die moves still to play
    per face 1..6 (checker mode; the used dice are drawn greyed);
    ``winner``/``points``: show a finished game's result instead of the turn.
    """
    from PIL import Image, ImageDraw

    side = as_color(side)
    if winner is not None:
        winner = as_color(winner)  # "w", as side takes it; True is no colour
        if isinstance(points, bool) or points not in (1, 2):
            raise ValueError(f"board_image: points must be 1 (oin) or 2 (mars) with a winner, got {points!r}")
    state, dice = picture_input("board_image", state, dice)
    common = [int(v) for v in format_npn(state, side, validate=False).split(":")[0].split(",")]
    offs = (int(state[OFF_MOVER]), int(state[OFF_OPPONENT]))
    pips = pip_counts(state[None])[0].tolist()
    if side == Color.BLACK:
        offs, pips = offs[::-1], pips[::-1]
    white_off, black_off = offs
    white_pips, black_pips = pips

    img = Image.new("RGB", (WIDTH, HEIGHT), _FRAME)
    draw = ImageDraw.Draw(img)
    small, medium, large = _font(14), _font(18), _font(24)

    top = _MARGIN + _LABEL
    bottom = top + _BOARD_H
    left, right = _MARGIN, _MARGIN + _BOARD_W
    draw.rectangle([left, top, right, bottom], fill=_FELT)
    bar_x = _point_x(6) - _BAR
    draw.rectangle([bar_x, top, bar_x + _BAR, bottom], fill=_FRAME)
    tri_h = _BOARD_H * 0.42
    radius = min(_POINT_W * 0.46, (tri_h + 20) / (2 * _VISIBLE))

    for point in range(1, 25):
        x, on_top = _place(point)
        colour = _POINT_A if point % 2 else _POINT_B
        if on_top:
            draw.polygon([(x, top), (x + _POINT_W, top), (x + _POINT_W / 2, top + tri_h)], fill=colour)
            label_y = _MARGIN + 4
        else:
            draw.polygon([(x, bottom), (x + _POINT_W, bottom), (x + _POINT_W / 2, bottom - tri_h)], fill=colour)
            label_y = bottom + 5
        draw.text((x + _POINT_W / 2, label_y), str(point), fill=(245, 235, 215), font=small, anchor="mt")

        count = common[point - 1]
        if count == 0:
            continue
        fill, ink = (_WHITE, _BLACK) if count > 0 else (_BLACK, _WHITE)
        n = abs(count)
        cx = x + _POINT_W / 2
        for k in range(min(n, _VISIBLE)):
            cy = top + radius + 2 + 2 * radius * k if on_top else bottom - radius - 2 - 2 * radius * k
            draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=fill, outline=(110, 110, 110), width=2)
        if n > _VISIBLE:
            draw.text((cx, cy), str(n), fill=ink, font=medium, anchor="mm")

    # The side panel: borne-off trays, pips, whose turn, dice.
    px = right + 16
    draw.rectangle([px, top, WIDTH - _MARGIN, bottom], fill=_PANEL_BG)
    inner = px + 12
    width = WIDTH - _MARGIN - 12 - inner

    def tray(y: float, label: str, off: int, fill, pip: int) -> None:
        draw.text((inner, y), f"{label}: {off} off", fill=_TEXT, font=medium)
        slot = width / NUM_CHECKERS
        # The tray is the board's dark green, so ivory and black checkers both stand out on it.
        draw.rectangle([inner - 2, y + 24, inner + width, y + 46], fill=_FELT)
        for k in range(NUM_CHECKERS):
            box = [inner + k * slot, y + 26, inner + (k + 1) * slot - 2, y + 44]
            if k < off:  # a borne-off checker
                draw.rectangle(box, fill=fill, outline=(110, 110, 110), width=1)
            else:  # an empty slot: a faint outline on the felt
                draw.rectangle(box, outline=(60, 110, 80))
        draw.text((inner, y + 50), f"pips {pip}", fill=_TEXT, font=small)

    tray(top + 12, "Black", black_off, _BLACK, black_pips)
    tray(bottom - 84, "White", white_off, _WHITE, white_pips)

    mid = (top + bottom) / 2
    if winner is not None:
        kind = "mars" if points == 2 else "oin"
        # The result, on a banner in the winner's colour.
        ink, paper = ((_TEXT, _WHITE) if Color(winner) == Color.WHITE else (_WHITE, _BLACK))
        draw.rounded_rectangle([inner - 4, mid - 50, WIDTH - _MARGIN - 8, mid + 26], radius=8, fill=paper,
                               outline=(110, 110, 110), width=2)
        draw.text((inner + 4, mid - 44), f"{Color(winner).name.title()} wins", fill=ink, font=large)
        draw.text((inner + 4, mid - 6), f"{points} point{'s' if points != 1 else ''} ({kind})", fill=ink, font=medium)
    else:
        draw.text((inner, mid - 70), f"{side.name.title()} to move", fill=_TEXT, font=large)
        if dice is not None:
            faces = [int(d) for d in dice]
            if faces[0] == faces[1]:
                faces = faces * 2
            used = [False] * len(faces)
            if dice_left is not None:
                per_face = np.asarray(dice_left)
                if per_face.shape != (6,) or not np.issubdtype(per_face.dtype, np.integer) or (per_face < 0).any():
                    raise StateError(f"board_image: dice_left holds the single-die moves still to play per face "
                                     f"1..6, six whole numbers 0 or more, got {dice_left!r}")
                remaining = [int(c) for c in per_face]
                for i, f in enumerate(faces):
                    if remaining[f - 1] > 0:
                        remaining[f - 1] -= 1
                    else:
                        used[i] = True
            size = 44 if len(faces) == 2 else 34
            for i, (f, u) in enumerate(zip(faces, used, strict=True)):
                _draw_die(draw, inner + i * (size + 8), mid - 24, size, f, u)
    return np.asarray(img, dtype=np.uint8).copy()

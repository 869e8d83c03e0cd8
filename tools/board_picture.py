"""Draw docs/board.png, the README's picture of render_mode="rgb_array":

    python tools/board_picture.py            # writes docs/board.png
    python tools/board_picture.py OUT.png    # writes it elsewhere

A bearing-off position, white to move with 2 and 6 (nothing played yet, so both dice are drawn
white); the alt texts in README.md and docs/environments.md describe it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym

import nardy_env  # noqa: F401  (registers LongNardy-v0)

POSITION = "7,4,2,0,0,0,0,0,0,0,0,0,-8,-3,0,0,0,0,0,0,0,0,0,0:2,4:w"
DICE = [2, 6]


def main(argv: list[str] | None = None) -> int:
    from PIL import Image

    parser = argparse.ArgumentParser(description="Draw the README's board picture (render_mode='rgb_array').")
    parser.add_argument("out", nargs="?", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "board.png",
                        help="the PNG to write (default: docs/board.png)")
    out = parser.parse_args(argv).out
    if out.suffix.lower() != ".png":
        parser.error(f"the picture is a PNG: give a path ending in .png, got {out}")
    env = gym.make("LongNardy-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"position": POSITION, "dice": DICE})
    try:
        Image.fromarray(env.render()).save(out, optimize=True)
    except OSError as exc:  # a missing folder, a read-only place
        parser.exit(1, f"{parser.prog}: cannot write {out}: {exc.strerror or exc}\n")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

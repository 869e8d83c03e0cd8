"""A seeded game between two bots, regenerated and compared with the stored text."""

from __future__ import annotations

from pathlib import Path

from train.playthrough import playthrough

STORED = Path(__file__).resolve().parents[1] / "data" / "playthrough_heuristic_race.txt"


def test_playthrough_matches_the_stored_game():
    text = playthrough("heuristic", "race", seed=7)
    stored = STORED.read_text()
    if text != stored:
        first = next(k for k, (a, b) in enumerate(zip(text.splitlines(), stored.splitlines(), strict=False))
                     if a != b)
        raise AssertionError(f"the game differs from {STORED.name} at line {first + 1}:\n"
                             f"  now:    {text.splitlines()[first]}\n  stored: {stored.splitlines()[first]}\n"
                             "If the change is intended, regenerate it (see train/playthrough.py).")
    assert "result:" in text.splitlines()[-1]

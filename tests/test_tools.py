"""The measurement scripts under tools/ that the docs quote."""

from __future__ import annotations

from tools.afterstates_per_decision import afterstates_per_decision


def test_a_skilled_player_keeps_more_plays_open_than_a_random_one():
    """docs/training.md's reason why self-play slows as a run learns: more afterstates to score."""
    random_per, random_length = afterstates_per_decision("random", games=20)
    heuristic_per, _ = afterstates_per_decision("heuristic", games=20)
    assert 5 < random_per < 20 and 60 < random_length < 140
    assert heuristic_per > 1.5 * random_per

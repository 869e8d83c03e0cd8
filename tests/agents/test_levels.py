"""Difficulty levels: a network player that samples its plays by equity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.levels import LEVELS, Sampling, level
from agents.search import SearchPlayer
from nardy_env import Color, initial_states, legal_afterstates, parse_npn
from nardy_env.players import choose_indices, load_player
from tests.agents.test_search import LinearEvaluator
from tests.helpers import npn

ROOT = Path(__file__).resolve().parents[2]
SPREAD = npn({24: 4, 20: 2, 17: 2, 13: 2, 8: 2, 6: 3}, {12: 9, 9: 2, 4: 2, 2: 2})  # many plays of 6-3


def _repeated(position: str, dice, times: int):
    state, _ = parse_npn(position)
    states = np.repeat(state[None], times, axis=0)
    return states, legal_afterstates(states, np.repeat(np.array([dice]), times, axis=0))


def test_sampling_draws_each_play_with_the_softmax_of_its_equity():
    player = SearchPlayer(LinearEvaluator(3))
    states, found = _repeated(SPREAD, [6, 3], 20_000)
    count = int(found.counts()[0])
    values = player.evaluate(legal_afterstates(states[:1], np.array([[6, 3]])))
    assert count >= 8 and np.ptp(values) > 0.05
    temperature = float(np.ptp(values) / 3)  # spread enough that every play is drawn
    want = np.exp((values - values.max()) / temperature)
    want /= want.sum()
    picks = Sampling(player, temperature).choose(states, found, np.random.default_rng(5))
    seen = np.bincount(picks, minlength=count) / len(picks)
    sd = np.sqrt(want * (1 - want) / len(picks))
    assert np.all(np.abs(seen - want) < 5 * sd + 1e-4), (seen, want)


def test_temperature_zero_is_the_player_itself_and_a_temperature_makes_it_stray():
    player = SearchPlayer(LinearEvaluator(1))
    rng = np.random.default_rng(0)
    states = initial_states(64)
    found = legal_afterstates(states, rng.integers(1, 7, size=(64, 2)))
    colors = np.full(64, int(Color.WHITE))
    best = choose_indices(player, states, found, np.random.default_rng(1), colors)
    assert np.array_equal(choose_indices(Sampling(player, 0), states, found, np.random.default_rng(2), colors), best)
    states, found = _repeated(SPREAD, [6, 3], 400)
    best = player.choose(states, found, np.random.default_rng(0))
    loose = Sampling(player, 1.0).choose(states, found, np.random.default_rng(0))
    assert (loose != best).mean() > 0.3  # at 1 point of temperature most draws are not the best play


def test_sampling_replays_with_the_same_generator_and_differs_with_another():
    player = SearchPlayer(LinearEvaluator(2))
    states, found = _repeated(SPREAD, [6, 3], 200)
    sampler = Sampling(player, 0.2)
    a = sampler.choose(states, found, np.random.default_rng(9))
    assert np.array_equal(a, sampler.choose(states, found, np.random.default_rng(9)))
    assert not np.array_equal(a, sampler.choose(states, found, np.random.default_rng(10)))


@pytest.mark.parametrize("temperature", [-0.1, float("nan"), float("inf"), True, "0.1", None])
def test_a_bad_temperature_is_refused_by_name(temperature):
    with pytest.raises(ValueError, match=f"temperature must be a finite number, 0 or more .*got {temperature!r}"):
        Sampling(SearchPlayer(LinearEvaluator()), temperature)


def test_sampling_needs_a_player_that_values_plays_in_points():
    with pytest.raises(TypeError, match="Sampling needs a network player.*not heuristic: a bot's scores are no equities"):
        Sampling("heuristic", 0.1)
    with pytest.raises(ValueError, match="no level named 'brutal'; the levels are easy, medium, hard, expert"):
        level("brutal")


def test_the_levels_of_the_example_file_are_players_by_name_and_play_a_match():
    from train.evaluate import evaluate

    easy = load_player(f"{ROOT / 'examples' / 'levels.py'}:easy")
    assert isinstance(easy, Sampling) and easy.temperature == LEVELS["easy"] and easy.name == "easy"
    assert level("expert").temperature == 0
    result = evaluate(easy, "random", games=4, seed=3, workers=1)
    assert result.summary()["games"] == 4

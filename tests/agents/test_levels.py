"""Difficulty levels: a network player that samples its plays by equity."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from agents.levels import LEVELS, Sampling, level
from agents.search import SearchPlayer, searched
from nardy_env import Color, Rules, RulesMismatchWarning, initial_states, legal_afterstates, parse_npn
from nardy_env.players import PlayerNotFound, choose_indices, load_player
from tests.agents.test_search import LinearEvaluator
from tests.helpers import npn

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
    seen = np.bincount(picks, minlength=count)
    expected = want * len(picks)
    # Pearson's chi-square over all plays against its 0.1% point at 24 degrees of freedom (51.18):
    # a temperature 10% off scores about 90 here (each play's own 5-sd bound let that pass).
    assert count == 25 and ((seen - expected) ** 2 / expected).sum() < 51.18, (seen, expected)


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


def test_the_levels_are_player_names_and_play_a_match(tmp_path, monkeypatch):
    from agents.registry import SHIPPED_PLAYER, player_file
    from train.evaluate import evaluate

    easy = load_player("easy")
    assert isinstance(easy, Sampling) and easy.temperature == LEVELS["easy"] and easy.name == "easy"
    assert level("expert").temperature == 0 and load_player("hard").temperature == LEVELS["hard"]
    assert player_file("medium") == player_file("default") and player_file("medium").parent == SHIPPED_PLAYER
    with pytest.raises(ValueError, match=r"easy is a level of the shipped player, drawn by its 0-ply equities; "
                                         r"drop '@1'"):
        load_player("easy@1")
    result = evaluate("easy", "random", games=4, seed=3, workers=1)
    assert result.summary()["games"] == 4
    monkeypatch.chdir(tmp_path)
    (tmp_path / "easy").mkdir()  # a folder of that name here comes first, as for default
    with pytest.raises(PlayerNotFound, match="the folder easy holds neither checkpoint.pt .*; a folder named easy in "
                                             "the current directory is taken before the shipped player's level easy"):
        load_player("easy")


def test_a_searching_player_draws_only_among_the_plays_its_move_filter_searched():
    player = SearchPlayer(LinearEvaluator(3), ply=1, filter_k=3)
    states, found = _repeated(SPREAD, [6, 3], 300)
    picks = Sampling(player, 5.0).choose(states, found, np.random.default_rng(1))  # hot: all it may draw
    kept = np.flatnonzero(searched(player.evaluate(legal_afterstates(states[:1], np.array([[6, 3]])))))
    assert set(picks.tolist()) == set(kept.tolist()) and len(kept) == 3


def test_a_tiny_temperature_is_the_best_play_not_an_overflow():
    player = SearchPlayer(LinearEvaluator(3))
    states, found = _repeated(SPREAD, [6, 3], 4)
    best = player.choose(states, found, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning would be an error here
        tiny = Sampling(player, 5e-324).choose(states, found, np.random.default_rng(0))
    assert np.array_equal(tiny, best) and best[0] != 0


def test_a_level_is_checked_against_the_games_rules_as_its_network_is():
    home = Rules(block_rule="home")
    with pytest.warns(RulesMismatchWarning, match=r"was trained under rules with block_rule \"ahead\", but plays a "
                                                  r"game with block_rule \"home\""):
        load_player(level("easy"), home)
    with pytest.warns(RulesMismatchWarning, match="its look-ahead does not follow the game's rules"):
        load_player(Sampling("default@1", 0.1), home)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_player(level("easy"), Rules())  # its own rules: nothing to say
    with pytest.warns(RulesMismatchWarning, match="never learnt"):
        hard = level("hard", rules=home)  # loaded under the game's rules: warned of here, once
    assert hard.rules == home
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_player(hard, home)


def test_the_game_layer_names_the_levels_agents_defines():
    from nardy_env.players import _LEVEL_NAMES

    assert _LEVEL_NAMES == tuple(LEVELS)


def test_a_level_of_a_level_samples_the_same_network():
    inner = SearchPlayer(LinearEvaluator(1))
    assert Sampling(Sampling(inner, 0.5), 0.1).player is inner


def test_a_levels_network_failing_is_its_failure_named_not_a_bug_of_nardys(tmp_path):
    from nardy_env.players import PlayerFailed
    from train.evaluate import evaluate

    (tmp_path / "brokenev.py").write_text("class Broken:\n    def outcomes(self, raw):\n"
                                          "        raise RuntimeError('weights went missing')\n")
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        from brokenev import Broken  # type: ignore[import-not-found]

        with pytest.raises(PlayerFailed, match=r"raised RuntimeError: weights went missing .*brokenev.py"):
            evaluate(Sampling(SearchPlayer(Broken()), 0.1, name="weak"), "random", games=2, seed=1, workers=1)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("brokenev", None)


def test_hint_ranks_a_levels_plays_by_the_values_it_draws_them_by():
    from train.hint import can_rank, rank_plays

    easy = level("easy")
    assert can_rank(easy)
    assert rank_plays(easy, SPREAD, [6, 3]) == rank_plays(easy.player, SPREAD, [6, 3])


def test_a_ladder_of_levels_holds_different_players_and_their_records_say_which():
    from train.evaluate import _warn_same_players, provenance

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "easy and hard are the same player" would be false
        _warn_same_players(["easy", "medium", "hard", "default"], ["easy", "medium", "hard", "default"])
    with pytest.warns(UserWarning, match="default and expert are the same player"):
        _warn_same_players(["default", "expert"], ["default", "expert"])  # expert is default itself
    record = provenance("easy", "hard")
    assert record["player_a_sha256"] == record["player_b_sha256"]  # one network...
    assert (record["player_a_temperature"], record["player_b_temperature"]) == (0.5, 0.05)  # ...two players
    assert provenance(Sampling(SearchPlayer(LinearEvaluator()), 0.3), "race")["player_a_temperature"] == 0.3
    assert provenance("default", "race")["player_a_temperature"] == 0.0


def test_a_level_without_the_shipped_player_says_so_by_its_own_name(tmp_path, monkeypatch):
    import agents.registry

    monkeypatch.setattr(agents.registry, "SHIPPED_PLAYER", tmp_path / "absent")
    with pytest.raises(ValueError, match=r"easy is a level of the shipped player, .*absent, which this "
                                         r"installation lacks .*agents.levels.level\('easy', PATH\)"):
        load_player("easy")


def test_levels_on_the_command_line_are_refused_where_they_cannot_serve_with_the_reason(tmp_path):
    from tests.train.test_cli import run

    out = run("hint", "--player", "easy", "--ply", "1", "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:w",
              "6", "5")
    assert out.returncode == 2 and ("--ply 1: easy is a level of the shipped player, drawn by its 0-ply equities, "
                                    "and does not search") in out.stderr
    out = run("bench", "--search", "hard")
    assert out.returncode == 2 and "a level of the shipped player costs what the shipped player's 0-ply does" in out.stderr
    from train.export import ExportError, export_policy

    with pytest.raises(ExportError, match="medium is a level of the shipped player, not a network of its own: "
                                          "export default"):
        export_policy("medium", tmp_path / "out")
    with pytest.raises(PlayerNotFound, match=r"names are lower case: race\?\)"):
        load_player("Race@1")  # not race@1, which is refused: bots do not search
    with pytest.raises(PlayerNotFound, match=r"names are lower case: default@1\?\)"):
        load_player("Default@1")

"""Paired-dice evaluation: shared dice, statistics, ladders."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from agents.bots import HeuristicBot, RaceBot
from nardy_env.players import PlayerNotFound
from train.evaluate import evaluate, ladder, ladder_provenance, play_pairs, summarize


def test_paired_games_share_their_dice():
    # Two copies of one deterministic bot: with the same dice and the sides
    # swapped, the second game of a pair replays the first with roles swapped.
    out = play_pairs(RaceBot(), RaceBot(), range(30), seed=4)
    pts = out["points_a"].reshape(-1, 2)
    assert (pts[:, 0] == -pts[:, 1]).all()
    assert (out["plies"].reshape(-1, 2)[:, 0] == out["plies"].reshape(-1, 2)[:, 1]).all()


def test_results_of_deterministic_players_do_not_depend_on_chunking():
    a = evaluate(RaceBot(), HeuristicBot(), 40, seed=3, chunk_pairs=7)
    b = evaluate(RaceBot(), HeuristicBot(), 40, seed=3, chunk_pairs=20)
    assert np.array_equal(a.points_a, b.points_a)


def test_summary_statistics_on_a_known_case():
    # Pairs: (+1, +1), (+2, -1), (-1, -1), (+1, +2) -> pair means 1, 0.5, -1, 1.5.
    points = np.array([1, 1, 2, -1, -1, -1, 1, 2])
    s = summarize("A", "B", points, np.full(8, 80), seed=0)
    # Intervals: normal over pairs padded with one pseudo-pair at each end of the range.
    means = np.array([1, 0.5, -1, 1.5, -2, 2])
    half = 1.96 * means.std(ddof=1) / np.sqrt(6)
    assert s["points_per_game"] == pytest.approx(0.5)
    assert s["ci95"] == pytest.approx([means.mean() - half, means.mean() + half], abs=1e-4)
    wins = np.array([1, 0.5, 0, 1, 0, 1])
    wh = 1.96 * wins.std(ddof=1) / np.sqrt(6)
    assert s["win_rate"] == pytest.approx(0.625)
    assert s["win_rate_ci95"] == pytest.approx([wins.mean() - wh, wins.mean() + wh], abs=1e-4)
    assert s["mars_rate_a"] == pytest.approx(2 / 8) and s["mars_rate_b"] == pytest.approx(0)
    assert s["games"] == 8 and s["pairs"] == 4
    # Exact counts beside the rounded rates.
    assert (s["wins_a"], s["wins_b"], s["mars_wins_a"], s["mars_wins_b"]) == (5, 3, 2, 0)


def test_a_match_result_prints_as_its_summary_line():
    result = evaluate(RaceBot(), "random", 20, seed=4)
    s = result.summary()
    text = repr(result)
    assert text.startswith(f"MatchResult('race' vs 'random', 20 games, seed 4: {s['points_per_game']:+.3f} points/game [")
    assert f"win rate {s['win_rate']:.1%}" in text and "array" not in text
    from train.evaluate import MatchResult

    assert repr(MatchResult("a", "b", [1], [3], 0)) == "MatchResult('a' vs 'b', 1 game)"  # made by hand


def test_a_match_records_what_reproduces_it(tmp_path, monkeypatch):
    """Versions that decide the games, and which network file each player was."""
    from importlib.metadata import version

    from agents.files import file_sha256
    from agents.registry import SHIPPED_PLAYER

    s = evaluate("default", "heuristic", 4, seed=1).summary()
    assert s["nardy_version"] == version("nardy") and s["numpy_version"] == np.__version__
    assert s["player_a_sha256"] == file_sha256(SHIPPED_PLAYER / "policy.onnx")  # the export is what plays
    assert s["player_b_sha256"] is None  # a bot
    assert (s["player_a_bot_version"], s["player_b_bot_version"]) == (None, 2)  # heuristic made stronger
    checkpoint = tmp_path / "copy.pt"
    checkpoint.write_bytes((SHIPPED_PLAYER / "checkpoint.pt").read_bytes())
    s = evaluate("race", f"{checkpoint}@1", 2, seed=1).summary()
    assert s["player_b_sha256"] == file_sha256(checkpoint) and s["player_a_sha256"] is None
    assert (s["player_a_ply"], s["player_b_ply"]) == (0, 1)  # the same file at 1-ply is another player
    assert (s["player_a_bot_version"], s["player_b_bot_version"]) == (1, None)  # race by name; a network
    objects = evaluate(RaceBot(), HeuristicBot(), 2).summary()
    assert objects["player_a_sha256"] is None  # objects: no file
    assert (objects["player_a_bot_version"], objects["player_b_bot_version"]) == (1, 2)

    class Mine(HeuristicBot):  # your own bot plays as it likes: not heuristic's version
        pass

    mine = evaluate("random@0", Mine(), 2).summary()
    assert (mine["player_a_bot_version"], mine["player_b_bot_version"]) == (1, None)
    assert evaluate(Path("heuristic"), "race", 2).summary()["player_a_bot_version"] == 2  # a path names it too
    # A folder named like a bot in the working directory: the bot plays, and is recorded.
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "checkpoint.pt").write_bytes((SHIPPED_PLAYER / "checkpoint.pt").read_bytes())
    monkeypatch.chdir(tmp_path)
    here = evaluate("random", "race", 2).summary()
    assert (here["player_a_sha256"], here["player_a_bot_version"], here["player_b_bot_version"]) == (None, 1, 1)
    (tmp_path / "mine.py").write_text("def first(states, found, rng):\n    return [0] * len(states)\n")
    s = evaluate(f"{tmp_path / 'mine.py'}:first", "race", 2).summary()
    assert s["player_a_sha256"] == file_sha256(tmp_path / "mine.py")  # your own player: its source


def test_intervals_stay_possible_and_never_collapse():
    # Every pair won by mars: the naive interval would be [2, 2] (or infinite for one pair).
    for pairs in (1, 2, 10):
        s = summarize("A", "B", np.full(2 * pairs, 2), np.full(2 * pairs, 60), seed=0)
        assert s["points_per_game"] == 2 and s["win_rate"] == 1
        assert -2 <= s["ci95"][0] < 2 and s["ci95"][1] == 2
        assert 0 <= s["win_rate_ci95"][0] < 1 and s["win_rate_ci95"][1] == 1
        assert all(np.isfinite(s["ci95"] + s["win_rate_ci95"]))
    wide = summarize("A", "B", np.full(4, 2), np.full(4, 60), seed=0)
    narrow = summarize("A", "B", np.full(200, 2), np.full(200, 60), seed=0)
    assert narrow["ci95"][0] > wide["ci95"][0]  # more pairs, more certainty


def test_evaluate_rejects_odd_game_counts():
    with pytest.raises(ValueError, match="even"):
        evaluate("race", "random", 3)


def test_race_beats_random_clearly():
    s = evaluate("race", "random", 200, seed=1, workers=1).summary()
    assert s["win_rate_ci95"][0] > 0.6 and s["ci95"][0] > 0


def test_ladder_ratings_order_the_bots():
    out = ladder(["random", "race", "heuristic"], 100, seed=2, workers=1)
    assert len(out["matches"]) == 3
    ratings = {r["player"]: r["rating"] for r in out["ratings"]}
    assert ratings["random"] == 0.0
    assert ratings["heuristic"] > ratings["race"] > ratings["random"]


def test_elo_ratings_on_known_cases():
    import math

    from train.evaluate import ELO_PER_LOGIT, elo_ratings

    # Two players: the maximum is the log-odds of the padded record, exactly.
    elo, half = elo_ratings(2, [(0, 1, 30, 100)])
    assert elo[0] == 0 and elo[1] == pytest.approx(ELO_PER_LOGIT * math.log(71 / 31), rel=1e-9)
    assert half[1] == pytest.approx(1.96 * ELO_PER_LOGIT * math.sqrt(1 / (102 * (71 / 102) * (31 / 102))), rel=1e-6)
    # A clean sweep is large but finite; a transitive round robin keeps its order.
    elo, _ = elo_ratings(2, [(0, 1, 0, 2000)])
    assert 1000 < elo[1] < 2000
    elo, _ = elo_ratings(3, [(0, 1, 400, 1000), (0, 2, 200, 1000), (1, 2, 350, 1000)])
    assert 0 < elo[1] < elo[2]


def test_elo_intervals_widen_when_the_model_misfits_and_never_narrow():
    from train.evaluate import elo_ratings

    consistent = [(0, 1, 400, 1000), (0, 2, 200, 1000), (1, 2, 273, 1000)]  # about transitive
    _, half, fit = elo_ratings(3, consistent, with_fit=True)
    assert fit["df"] == 1 and fit["chi2"] < 1 and fit["ci_scale"] == 1.0
    cyclic = [(0, 1, 800, 1000), (1, 2, 800, 1000), (0, 2, 200, 1000)]  # rock-paper-scissors
    _, wide, fit = elo_ratings(3, cyclic, with_fit=True)
    assert fit["chi2"] > 100 and fit["ci_scale"] > 10
    _, plain = elo_ratings(3, cyclic)
    assert wide[1] == pytest.approx(plain[1]) and wide[1] > 10 * half[1]  # scaled in both forms


def test_sweeps_between_groups_do_not_read_as_misfit():
    import math

    from train.evaluate import ELO_PER_LOGIT, elo_ratings

    g = 2000
    # A chain of sweeps, 0 > 1 > 2: the padded gaps cannot add up, but that is the padding's doing.
    elo, half, fit = elo_ratings(3, [(0, 1, g, g), (1, 2, g, g), (0, 2, g, g)], with_fit=True)
    assert fit["df"] == 0 and fit["ci_scale"] == 1.0  # once chi2 499 on 1 df: intervals x22
    assert elo[1] + half[1] < -900  # "at most ~ -960 Elo", no longer "at most +4183"
    # Two even players who both sweep two others: their own match keeps its honest interval.
    _, half, fit = elo_ratings(4, [(0, 1, 1000, g), (0, 2, g, g), (0, 3, g, g), (1, 2, g, g), (1, 3, g, g),
                                   (2, 3, 1000, g)], with_fit=True)
    honest = 1.96 * ELO_PER_LOGIT * math.sqrt(1 / ((g + 2) * 0.25))  # about 15 Elo: once +-230
    assert fit["ci_scale"] == 1.0 and half[1] == pytest.approx(honest, rel=0.05)
    # A misfit within a group still widens: a cycle of sweeps is one group.
    _, _, fit = elo_ratings(3, [(0, 1, g, g), (1, 2, g, g), (0, 2, 0, g)], with_fit=True)
    assert fit["df"] == 1 and fit["ci_scale"] > 10


def test_sweep_groups_find_ratings_that_only_pseudo_wins_hold():
    from train.evaluate import _sweep_groups

    assert _sweep_groups(3, [(0, 1, 3, 10), (0, 2, 4, 10), (1, 2, 5, 10)]) == [0, 0, 0]
    assert _sweep_groups(3, [(0, 1, 0, 10), (0, 2, 0, 10), (1, 2, 5, 10)]) == [1, 0, 0]  # 0 never won
    assert _sweep_groups(3, [(0, 1, 0, 10), (0, 2, 0, 10), (1, 2, 10, 10)]) == [2, 0, 1]  # a strict order
    # A cycle of wins joins a group even without direct wins both ways.
    assert _sweep_groups(3, [(0, 1, 10, 10), (1, 2, 10, 10), (0, 2, 0, 10)]) == [0, 0, 0]


def test_ladder_reports_its_fit_and_widens_the_linear_intervals(monkeypatch):
    import train.evaluate as ev

    # Stand-in matches: three players whose points per game no single scale explains.
    table = {("a", "b"): 1.0, ("a", "c"): 1.0, ("b", "c"): 1.0}

    class _Result:
        def __init__(self, a, b):
            self.ppg = table[(a, b)]
            self.points_a = np.array([1] * 280 + [-1] * 120)  # 70% won

        def summary(self):
            return {"player_a": "a", "player_b": "b", "games": 400, "points_per_game": self.ppg,
                    "ci95": [self.ppg - 0.1, self.ppg + 0.1], "win_rate": 0.7, "win_rate_ci95": [0.65, 0.75]}

    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result(a, b))
    monkeypatch.setattr(ev, "load_player", lambda *a, **k: None)
    out = ev.ladder(["a", "b", "c"], 400)
    rating = out["fit"]["rating"]
    assert rating["df"] == 1 and rating["chi2"] > 50 and rating["ci_scale"] > 5  # se about 0.065 a match
    b = next(r for r in out["ratings"] if r["player"] == "b")
    assert b["ci95"][1] - b["ci95"][0] > 1  # the misfit is in the interval (sampling alone: about 0.16)
    assert out["fit"]["sweep_groups"] == 1 and all(r["group"] == 0 for r in out["ratings"])


def test_a_ladder_that_fits_exactly_keeps_its_sampling_intervals(monkeypatch):
    import train.evaluate as ev

    # a - b = b - c = 0.5 and a - c = 1.0: one linear scale explains them (chi2 0), so the
    # intervals stay those of sampling alone, not narrowed to nothing.
    table = {("a", "b"): 0.5, ("a", "c"): 1.0, ("b", "c"): 0.5}
    points = np.array([1, -1] * 150 + [1, 1] * 50)  # 200 pairs, points per game 0.25 (the interval's width)

    class _Result:
        def __init__(self, a, b):
            self.ppg = table[(a, b)]
            self.points_a = points

        def summary(self):
            return {"player_a": "a", "player_b": "b", "games": points.size, "points_per_game": self.ppg,
                    "ci95": [self.ppg - 0.1, self.ppg + 0.1], "win_rate": 0.625, "win_rate_ci95": [0.6, 0.65]}

    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result(a, b))
    monkeypatch.setattr(ev, "load_player", lambda *a, **k: None)
    out = ev.ladder(["a", "b", "c"], points.size)
    assert out["fit"]["rating"]["chi2"] == pytest.approx(0, abs=1e-6) and out["fit"]["rating"]["ci_scale"] == 1.0
    se = ev.padded_se(points.reshape(-1, 2).mean(axis=1), -2, 2)
    # Three equal-weight matches, one fixed rating: b's variance is se**2 * 2/3.
    b = next(r for r in out["ratings"] if r["player"] == "b")
    assert b["rating"] == pytest.approx(-0.5)
    assert (b["ci95"][1] - b["ci95"][0]) / 2 == pytest.approx(1.96 * se * math.sqrt(2 / 3), abs=1e-4)


def test_a_two_player_ladder_rating_is_never_narrower_than_its_match(monkeypatch):
    """The fit's weights come from the match's unclipped interval: clipping at -2 once made a
    lopsided match's rating interval narrower than the match's own (+1.437 against +0.974)."""
    import train.evaluate as ev

    points = np.array([-2] * 19 + [-1])  # ten pairs: A won nothing, one game by a single point

    class _Result:
        points_a = points

        def summary(self):
            return ev.summarize("random", "default", points, np.full(points.size, 80), 0)

    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result())
    monkeypatch.setattr(ev, "load_player", lambda *a, **k: None)
    out = ev.ladder(["random", "default"], points.size)
    match, rating = out["matches"][0], out["ratings"][1]
    assert match["ci95"][0] == -2.0  # clipped at the end of the range
    assert rating["rating"] == -match["points_per_game"] == 1.95
    half = (rating["ci95"][1] - rating["ci95"][0]) / 2
    se = ev.padded_se(points.reshape(-1, 2).mean(axis=1), -2, 2)
    assert half == pytest.approx(1.96 * se, abs=1e-4)
    assert match["points_se"] == round(se, 6)  # the weight, in the JSON: a refit from it gives the rating
    assert half >= (match["ci95"][1] - match["ci95"][0]) / 2


def test_ladder_counts_wins_exactly_so_one_lost_game_is_no_sweep(monkeypatch):
    import train.evaluate as ev

    class _Result:
        def __init__(self, points):
            self.points_a = np.array(points)

        def summary(self):
            n = len(self.points_a)
            return {"player_a": "a", "player_b": "b", "games": n, "points_per_game": 1.99,
                    "ci95": [1.98, 2.0], "win_rate": round(float((self.points_a > 0).mean()), 4),
                    "win_rate_ci95": [0.99, 1.0]}

    # 40,000 games, one lost: the rounded win rate reads 1.0, the count does not
    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result([-1] + [2] * 39_999))
    monkeypatch.setattr(ev, "load_player", lambda *a, **k: None)
    out = ev.ladder(["b", "a"], 40_000)
    assert out["fit"]["sweep_groups"] == 1


def test_a_randomising_player_plays_the_same_whatever_the_workers():
    """Its choices are drawn per chunk of pairs, keyed by the seed and the chunk: never by workers."""
    one = evaluate("random", "race", 240, seed=5, workers=1).summary()
    two = evaluate("random", "race", 240, seed=5, workers=2).summary()
    assert one == two  # 120 pairs: two chunks of 100 and 20, each with its own stream
    small = [evaluate("random", "race", 40, seed=5, workers=w, chunk_pairs=5).summary() for w in (1, 2)]
    assert small[0] == small[1] and small[0]["chunk_pairs"] == 5


def test_a_ladder_plays_its_matches_with_the_chunk_pairs_asked_for():
    """chunk_pairs decides a randomising player's draws: a ladder passes it on to every match."""
    out = ladder(["random", "race"], 40, seed=3, chunk_pairs=5)
    match = out["matches"][0]
    assert match["chunk_pairs"] == 5
    assert match == evaluate("random", "race", 40, seed=3, chunk_pairs=5).summary()
    # What reproduces the table and chart names it, where it is not the default.
    assert ladder_provenance(out).startswith("seed 3, --chunk-pairs 5, nardy ")
    assert ladder_provenance(ladder(["random", "race"], 4, seed=3)).startswith("seed 3, nardy ")


def test_an_even_player_is_rated_zero_not_minus_zero():
    """Two copies of race against heuristic: the second copy's fit came out -0.0 (JSON "-0.0", the
    table "-0.000" beside the anchor's "+0.000")."""
    class One(RaceBot):
        name = "one"

    class Two(RaceBot):
        name = "two"

    out = ladder([One(), Two(), "heuristic"], 20, workers=1)
    two = out["ratings"][1]
    assert two["player"] == "two" and two["rating"] == 0.0 and two["elo"] == 0.0
    assert math.copysign(1, two["rating"]) == 1 and math.copysign(1, two["elo"]) == 1


def test_chunks_draw_from_different_streams():
    from nardy_env.players import RandomPlayer

    class Recorder(RandomPlayer):
        def __init__(self):
            self.first = None

        def choose(self, states, found, rng, colors=None):
            if self.first is None:
                self.first = rng.random()  # the stream's first number
            return super().choose(states, found, rng)

    firsts = []
    for chunk in ([0, 1, 2], [3, 4, 5], [0, 1, 2]):
        player = Recorder()
        play_pairs(player, RaceBot(), chunk, seed=1)
        firsts.append(player.first)
    assert firsts[0] != firsts[1] and firsts[0] == firsts[2]


def test_a_plain_function_is_a_player():
    def first(states, found, rng):
        return np.zeros(len(states), dtype=np.int64)

    result = evaluate(first, "race", 20, seed=2).summary()
    assert result["player_a"] == "first" and result["games"] == 20


def test_summary_splits_results_by_colour():
    # Game 2k is pair k with A white: A wins 2 as white and loses 1 as black in both pairs.
    s = summarize("a", "b", np.array([2, -1, 2, -1]), np.array([80, 90, 100, 110]), seed=0)
    assert s["points_per_game_a_white"] == 2.0 and s["points_per_game_a_black"] == -1.0
    assert s["win_rate_a_white"] == 1.0 and s["win_rate_a_black"] == 0.0
    assert s["points_per_game"] == 0.5 and s["mars_rate_a"] == 0.5 and s["mars_rate_b"] == 0.0
    assert s["mean_plies"] == 95.0 and s["sd_plies"] == round(float(np.std([80, 90, 100, 110])), 2)


def test_a_ladder_names_the_player_given_twice():
    with pytest.raises(ValueError, match="each player may appear only once in a ladder; race is given 2 times"):
        ladder(["random", "race", "heuristic", "race"], games=2)


def test_ladder_of_player_objects_names_them_and_is_json():
    import json

    def first(states, found, rng):
        return np.zeros(len(states), dtype=np.int64)

    out = ladder([first, RaceBot(), "random"], 4, seed=1)
    assert [r["player"] for r in out["ratings"]] == ["first", "race", "random"]
    def other_first(states, found, rng):
        return np.zeros(len(states), dtype=np.int64)

    other_first.__name__ = "first"
    out = ladder([first, other_first, "random"], 4, seed=1)  # two players of one name: told apart
    assert [r["player"] for r in out["ratings"]] == ["first", "first #2", "random"]
    # The match rows name the players as the ratings do (a self-match's own labels would say
    # "first" for the second player against random).
    assert [(m["player_a"], m["player_b"]) for m in out["matches"]] == [
        ("first", "first #2"), ("first", "random"), ("first #2", "random")]
    json.dumps(out)


def test_warnings_of_worker_processes_are_shown_once(tmp_path):
    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import Rules

    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((4,)), Rules(block_rule="home"))
    with pytest.warns(UserWarning, match="trained under rules") as caught:
        evaluate(str(path), "race", 4, seed=0, workers=2, chunk_pairs=1)  # two chunks, two workers
    assert sum("trained under rules" in str(w.message) for w in caught) == 1


def test_a_sweep_is_printed_as_the_end_of_its_interval_not_the_pseudo_win_value(monkeypatch, capsys):
    import train.evaluate as ev
    from train.cli import _print_ladder

    class _Result:
        def __init__(self, points):
            self.points_a = np.array(points)

        def summary(self):
            n = len(self.points_a)
            return {"player_a": "a", "player_b": "b", "games": n, "points_per_game": -1.99,
                    "ci95": [-2.0, -1.98], "win_rate": 0.0, "win_rate_ci95": [0.0, 0.01],
                    "mars_rate_a": 0.0, "mars_rate_b": 0.99}

    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result([-2] * 2000))  # b sweeps a
    monkeypatch.setattr(ev, "load_player", lambda *a, **k: None)
    out = ev.ladder(["a", "b"], 2000)
    b = out["ratings"][1]
    assert b["group"] == 0 and out["ratings"][0]["group"] == 1
    lower = b["elo_ci95"][0]
    assert lower < b["elo"] - 100  # the pseudo-win value is far above what the games support
    _print_ladder(out)
    printed = capsys.readouterr().out
    assert f"| >={lower:+.0f} | [{lower:+.0f}, +inf] |" in printed
    assert f"{b['elo']:+.0f} |" not in printed


def test_bad_match_arguments_are_named_before_any_game_is_played(monkeypatch):
    import train.evaluate as ev

    # A dict of variant keys is taken wherever rules are.
    assert evaluate("random", "race", 2, rules={"block_rule": "home"}).summary()["rules"]["block_rule"] == "home"
    played = []
    monkeypatch.setattr(ev, "play_pairs", lambda *a, **k: played.append(a))
    for games, seed, match in ((4.0, 0, "games must be an even number"), (4, None, "seed must be a whole number"),
                               (4, -1, "seed must be a whole number"), (True, 0, "games must be"),
                               # numpy reads a larger seed as two numbers: 2**32 + 3 would replay seed 3's pair 1.
                               (4, 2**32 + 3, r"seed must be a whole number from 0 to 2\*\*32 - 1"),
                               # Refused before anything is built for it (it once filled the memory).
                               (10**12, 0, r"games must be at most 10,000,000 in one match, got 1,000,000,000,000")):
        with pytest.raises(ValueError, match=match):
            evaluate("random", "race", games, seed=seed)
    with pytest.raises(PlayerNotFound, match="no player named 'rase'"):
        ev.ladder(["random", "race", "heuristic", "rase"], 2)
    with pytest.raises(TypeError, match="a list of players, got the string"):
        ev.ladder("random", 2)
    assert played == []


def test_rules_as_a_dict_are_taken_by_the_match_and_hint_functions_too():
    from nardy_env import START_NPN
    from nardy_env.game import opening_roll
    from train.hint import rank_plays

    out = play_pairs(RaceBot(), HeuristicBot(), [0], seed=1, rules={"block_rule": "home"})
    assert out["points_a"].shape == (2,)
    assert opening_roll(np.random.default_rng(0), 3, {"opening": "reroll"})[1].shape == (3, 2)
    black_first = START_NPN[:-1] + "b"
    ranked = rank_plays(HeuristicBot(), black_first, [6, 6], {"head_exception": []})
    assert [r["moves"] for r in ranked] == [[[12, 6]]]  # no first-turn exception: one checker leaves the head
    assert [r["moves"] for r in rank_plays(HeuristicBot(), black_first, [6, 6])] == [[[12, 6], [12, 6]]]


def _replay(record: dict) -> tuple[str, int]:
    """Play a game record through the rules: every play must be legal; returns (winner, points)."""
    from nardy_env import START_NPN, parse_npn
    from nardy_env.notation import Color, format_npn
    from train.moves import format_move_sequence, legal_plays

    state, _ = parse_npn(START_NPN)
    npn = format_npn(state, Color.WHITE if record["first"] == "white" else Color.BLACK)
    assert record["plays"][0][0] == record["opening"]
    for dice, moves in record["plays"]:
        plays = {format_move_sequence(p["moves"]): p["result"] for p in legal_plays(npn, dice, record["rules"])}
        assert moves in plays, f"{moves} is not a legal play of {dice} in {npn}"
        npn = plays[moves]
    final, to_move = parse_npn(npn)
    # The side to move now is the loser (its view: 24 its checkers off, 25 the winner's, all 15).
    assert final[25] == 15 and final[24] < 15, npn
    return ("white" if to_move == Color.BLACK else "black"), (2 if final[24] == 0 else 1)


def test_game_records_replay_through_the_rules_and_show_the_pairing():
    result = evaluate("race", "heuristic", 8, seed=3, records=True)
    records = result.records
    assert [r["game"] for r in records] == list(range(8)) and len(records) == result.points_a.size
    for r in records:
        assert _replay(r) == (r["winner"], r["points"])
        a_white = r["game"] % 2 == 0
        assert (r["white"], r["black"]) == (("race", "heuristic") if a_white else ("heuristic", "race"))
        assert r["points_a"] == (r["points"] if (r["winner"] == "white") == a_white else -r["points"])
        assert len(r["plays"]) == result.plies[r["game"]]
    for first, second in zip(records[::2], records[1::2], strict=True):  # a pair: one dice sequence, sides swapped
        assert first["pair"] == second["pair"] and first["opening"] == second["opening"]
        n = min(len(first["plays"]), len(second["plays"]))
        assert [d for d, _ in first["plays"][:n]] == [d for d, _ in second["plays"][:n]]
    assert evaluate("race", "heuristic", 8, seed=3).records is None  # only when asked for


def test_a_record_carries_the_seed_and_rules_it_replays_under():
    from nardy_env import Rules

    variant = {"opening": "reroll", "head_exception": [], "block_rule": "home"}
    records = evaluate("heuristic", "race", 16, seed=9, rules=variant, records=True).records
    assert all(r["seed"] == 9 and r["rules"] == Rules.from_dict(variant).to_dict() for r in records)
    assert {k: records[0]["rules"][k] for k in variant} == variant
    for r in records:  # replayed under the default rules some would not be legal
        assert _replay(r) == (r["winner"], r["points"])


def test_game_records_do_not_depend_on_the_workers():
    one = evaluate("random", "race", 400, seed=2, workers=1, records=True).records
    two = evaluate("random", "race", 400, seed=2, workers=2, records=True).records
    assert one == two and len(one) == 400


def test_match_functions_take_what_the_docs_say_and_refuse_the_rest():
    from agents.search import SearchPlayer
    from agents.td import TorchEvaluator
    from nardy_env import initial_states, legal_afterstates

    # play_pairs plays names and plain functions too, as evaluate does.
    named = play_pairs("race", "heuristic", range(3), seed=2)
    assert np.array_equal(named["points_a"], play_pairs(RaceBot(), HeuristicBot(), range(3), seed=2)["points_a"])
    with pytest.raises(ValueError, match="seed must be a whole number"):
        play_pairs("race", "race", range(2), seed=-1)
    for bad in ([-1], [0.7, 1.9], [True, False], ["a"]):
        with pytest.raises(ValueError, match="pair_ids must be a sequence of pair numbers"):
            play_pairs("race", "race", bad, seed=0)
    with pytest.raises(TypeError, match="RaceBot is a class: pass an instance"):
        play_pairs(RaceBot, "race", range(1), seed=0)
    with pytest.raises(PlayerNotFound, match="there is no file or folder /no/such/run"):
        evaluate("/no/such/run@1", "race", 2)
    for workers in (0, -3, 1.5):
        with pytest.raises(ValueError, match="workers must be None"):
            evaluate("race", "random", 2, workers=workers)
    with pytest.raises(ValueError, match="ply must be a whole number"):
        SearchPlayer(TorchEvaluator.__new__(TorchEvaluator), ply=1.5)
    with pytest.raises(ValueError, match="threads must be None"):
        legal_afterstates(initial_states(1), [[6, 5]], threads=0)
    # rules: any mapping of variant keys, as the annotations say.
    from types import MappingProxyType

    frozen = evaluate("race", "heuristic", 2, rules=MappingProxyType({"block_rule": "home"})).summary()
    assert frozen["rules"]["block_rule"] == "home"
    from nardy_env import Rules

    assert Rules.from_dict(MappingProxyType({"block_rule": "home"})).block_rule == "home"


def test_numpy_integers_give_a_summary_that_is_json():
    import json

    summary = evaluate("race", "random", np.int64(4), seed=np.int64(3), workers=1).summary()
    assert json.loads(json.dumps(summary))["seed"] == 3


def test_workers_asked_for_player_objects_are_named_as_unused():
    from agents.bots import RaceBot

    with pytest.warns(UserWarning, match="workers=2 is not used: a player object plays in this process"):
        evaluate(RaceBot(), "random", 4, workers=2)


def test_a_script_without_the_main_guard_is_told_why_its_workers_failed(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "match.py"  # no `if __name__ == "__main__":`, as a first script often has
    script.write_text("from train.evaluate import evaluate\n"
                      "print(evaluate('race', 'random', 8, workers=2, chunk_pairs=1).summary())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("train.evaluate.WorkerDied: a worker process of the match died or could not start"), last
    assert "if __name__ == \"__main__\":" in last and "workers=1" in last


def test_the_core_is_compiled_before_the_worker_processes_start(monkeypatch):
    import train.evaluate

    events = []
    real = train.evaluate.legal_afterstates

    def core(*args, **kwargs):
        events.append("core")
        return real(*args, **kwargs)

    class NoPool:
        def __init__(self, *args, **kwargs):
            events.append("pool")
            raise RuntimeError("stop here")

    monkeypatch.setattr(train.evaluate, "legal_afterstates", core)
    monkeypatch.setattr(train.evaluate, "ProcessPoolExecutor", NoPool)
    with pytest.raises(RuntimeError, match="stop here"):
        evaluate("race", "random", 8, workers=2, chunk_pairs=1)
    assert events == ["core", "pool"]  # workers then load the cache instead of compiling at once


def test_a_match_names_its_rules_with_the_keys_an_exported_policy_names():
    """Every file naming rules (policy.json, eval records, config.json) names every key alike."""
    import json

    from agents.registry import SHIPPED_PLAYER

    shipped = json.loads((SHIPPED_PLAYER / "policy.json").read_text())["rules"]
    assert evaluate("race", "random", 2).summary()["rules"] == shipped


def test_a_player_against_itself_is_named_apart():
    result = evaluate("race", "race", 2, records=True)
    summary = result.summary()
    assert (summary["player_a"], summary["player_b"]) == ("race", "race #2")
    assert {result.records[0]["white"], result.records[0]["black"]} == {"race", "race #2"}


def test_a_nameless_player_object_goes_by_its_class():
    class FirstPlay:
        def choose(self, states, found, rng, colors=None):
            return np.zeros(len(states), dtype=np.int64)

    summary = evaluate(FirstPlay(), FirstPlay(), 2).summary()
    assert (summary["player_a"], summary["player_b"]) == ("FirstPlay", "FirstPlay #2")
    assert {r["player"] for r in ladder([FirstPlay(), "random"], 2)["ratings"]} == {"FirstPlay", "random"}


def test_a_failing_player_is_named_with_where_in_the_match_it_failed():
    """The exception says the side, pair, game and ply of the bad choice; the player's own
    exception stays its cause."""
    from nardy_env.players import PlayerFailed

    def late(states, found, rng):  # plays, then answers out of range at the fourth ply
        picks = np.zeros(len(states), dtype=np.int64)
        if late.calls == 6:  # A and B each move once per ply: A's fourth move
            picks[2] = 999
        late.calls += 1
        return picks

    late.calls = 0
    with pytest.raises(PlayerFailed, match=r"player 'late' chose afterstate 999 of position 2, which has \d+ "
                                           r".*\[playing as A; at ply \d of pair \d's game with A (white|black), "
                                           r"seed 5\]$") as caught:
        evaluate(late, "race", games=8, seed=5, workers=1)
    assert caught.value.position == 2

    def boom(states, found, rng):
        raise ZeroDivisionError("no")

    with pytest.raises(PlayerFailed, match=r"player 'boom' raised ZeroDivisionError: no \(file \".*test_evaluate.py\", "
                                           r"line \d+, in boom\) \[playing as B; .* and 1 other game, seed 0\]") as caught:
        evaluate("race", boom, games=4, workers=1)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_more_workers_than_cpus_is_said_before_the_match_starts(monkeypatch):
    import train.evaluate as ev

    class Stop(Exception):
        pass

    def no_pool(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(ev, "available_cpus", lambda: 2)
    monkeypatch.setattr(ev, "ProcessPoolExecutor", no_pool)
    with pytest.warns(UserWarning, match="workers=3 is more than the 2 CPUs here: the match plays the same"), \
            pytest.raises(Stop):
        evaluate("race", "random", games=600, workers=3, chunk_pairs=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as many as the CPUs, or more than the chunks need: nothing said
        for workers, games in ((2, 600), (3, 400)):
            with pytest.raises(Stop):
                evaluate("race", "random", games=games, workers=workers, chunk_pairs=100)


def test_an_interruption_or_a_bug_of_nardys_own_player_is_not_blamed_on_the_player(monkeypatch):
    """Ctrl-C inside compiled code surfaces as an error caused by the KeyboardInterrupt: it stays
    that (the CLI turns it into 'interrupted'); a nardy bot's failure keeps its traceback."""
    def interrupted(states, found, rng):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise SystemError("<built-in function _generate> returned a result with an exception set") from stop

    with pytest.raises(SystemError, match="returned a result with an exception set"):
        evaluate(interrupted, "race", games=2, workers=1)

    def broken(self, states, found, rng, colors=None):
        raise IndexError("a bug of nardy's")

    monkeypatch.setattr(RaceBot, "choose", broken)
    with pytest.raises(IndexError, match="a bug of nardy's"):
        evaluate("race", "random", games=2, workers=1)


def test_a_player_calling_sys_exit_fails_its_match_and_does_not_end_the_program(tmp_path):
    """sys.exit(0) in a submitted bot's choose once ended `nardy eval` with status 0 and no output
    (and sys.exit(5) with 5): a leaderboard took that for a result."""
    from nardy_env.players import PlayerFailed
    from tests.train.test_cli import run

    (tmp_path / "exits.py").write_text("import sys\n\n\nclass Zero:\n    def choose(self, states, found, rng):\n"
                                       "        sys.exit(0)\n")
    with pytest.raises(PlayerFailed, match=r"player 'bye' called sys.exit\(5\) \(file \".*test_evaluate.py\", "
                                           r"line \d+, in bye\); a player answers choose\(\) or raises an error"):
        def bye(states, found, rng):
            raise SystemExit(5)

        evaluate(bye, "race", games=2, workers=1)
    for workers in ("1", "2"):
        out = run("eval", f"{tmp_path / 'exits.py'}:Zero", "race", "--games", "4", "--json", "--workers", workers)
        assert out.returncode == 2 and out.stdout == "", out
        assert "called sys.exit(0)" in out.stderr and "line 6, in choose" in out.stderr, out.stderr


def test_a_signal_handlers_exit_or_a_handled_ctrl_c_is_not_blamed_on_the_player():
    """Ray's SIGTERM handler calls sys.exit(15) in whatever frame runs, often a player's; a player
    may turn Ctrl-C into sys.exit(1): both are the program stopping, not the player failing."""
    import signal
    import sys

    def terminated(states, found, rng):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, inside the player
        return found.offsets[:-1]

    def tidy(states, found, rng):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            sys.exit(1)

    previous = signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(15))
    try:
        for player, code in ((terminated, 15), (tidy, 1)):
            with pytest.raises(SystemExit) as caught:
                evaluate(player, "race", games=2, workers=1)
            assert caught.value.code == code and type(caught.value) is SystemExit
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_line_named_is_the_players_even_when_it_is_installed(monkeypatch, tmp_path):
    """A plugin's player lives among the installed packages: its line is named, not nardy's."""
    import importlib
    import sys
    import sysconfig

    (tmp_path / "installed_player.py").write_text(
        "import numpy as np\n\n\nclass Broken:\n    def choose(self, states, found, rng):\n"
        "        return np.asarray([1, 2])[{}['nothing']]\n")
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(tmp_path) if name in ("purelib", "platlib")
                        else real(name, *a, **k))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("installed_player")
    try:
        with pytest.raises(Exception, match=r"player 'Broken' raised KeyError: 'nothing' \(file \".*installed_player.py\", "
                                            r"line 6, in choose\)"):
            evaluate(module.Broken(), "race", games=2, workers=1)
    finally:
        sys.modules.pop("installed_player", None)


def test_the_line_named_is_the_players_own_whatever_it_called(tmp_path):
    """Not a line of Python's library (a frozen module), nor of nardy's when the player called it,
    and a network player's failure (its evaluator's) is the player's, not a bug of nardy's."""
    import importlib
    import sys

    from agents.search import SearchPlayer
    from nardy_env.players import PlayerFailed

    (tmp_path / "calls_out.py").write_text(
        "import os\nfrom nardy_env.players import load_player\n\n\n"
        "def environ(states, found, rng):\n    return os.environ['NARDY_NO_SUCH_VARIABLE']\n\n\n"
        "def typo(states, found, rng):\n    return load_player('heurstic').choose(states, found, rng)\n\n\n"
        "class Broken:\n    def outcomes(self, raw):\n        raise RuntimeError('my evaluator')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("calls_out")
        for player, line, name in ((module.environ, 6, "environ"), (module.typo, 10, "typo"),
                                   (SearchPlayer(module.Broken()), 15, "outcomes")):
            with pytest.raises(PlayerFailed, match=rf"\(file \".*calls_out.py\", line {line}, in {name}\)"):
                evaluate(player, "race", games=2, workers=1)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("calls_out", None)


def test_a_bug_in_nardys_search_keeps_its_traceback_but_a_helper_of_your_player_file_is_named(tmp_path, monkeypatch):
    """A network player fails as the player only where what it runs failed (your evaluator, a
    damaged file); a failure inside nardy's search is nardy's. A FILE.py:NAME player's folder is
    its own: the line of the helper module beside it is the one named."""
    import sysconfig

    from agents.search import SearchPlayer
    from nardy_env.players import PlayerFailed

    class Fine:
        def outcomes(self, raw):
            return np.full((len(raw), 4), 0.25, dtype=np.float32)

    broken = SearchPlayer(Fine())
    broken.batch = 0  # a bug of nardy's in the making: range() with step 0 in _static
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero") as caught:
        evaluate(broken, "race", games=2, workers=1)
    assert not isinstance(caught.value, PlayerFailed)
    (tmp_path / "helper.py").write_text("import numpy as np\n\n\ndef pick(states):\n"
                                        "    return np.linalg.inv(np.zeros((2, 2)))\n")
    (tmp_path / "player.py").write_text("from helper import pick\n\n\nclass P:\n    def choose(self, states, found, rng):\n"
                                        "        return pick(states)\n")
    # As outside a venv: the player's folder among the installed packages, inside Python's library
    # folder; its line is still named, not numpy's.
    real_paths, real_path = sysconfig.get_paths, sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {**real_paths(*a, **k), "stdlib": str(tmp_path.parent)})
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(tmp_path) if name == "purelib"
                        else real_path(name, *a, **k))
    with pytest.raises(PlayerFailed, match=r"raised LinAlgError: Singular matrix \(file \".*helper.py\", line 5, in pick\)"):
        evaluate(f"{tmp_path / 'player.py'}:P", "race", games=2, workers=1)


def test_hint_searches_once_for_the_equities_and_the_outcomes_beside_them():
    from agents.search import SearchPlayer
    from nardy_env import legal_afterstates, parse_npn
    from tests.agents.test_search import RACE, LinearEvaluator
    from train.hint import rank_plays

    class Counted(LinearEvaluator):
        calls = 0

        def outcomes(self, raw):
            Counted.calls += 1
            return super().outcomes(raw)

    ranked = rank_plays(SearchPlayer(Counted()), RACE, [2, 1])
    assert Counted.calls == 1 and len(ranked) > 2  # at 0-ply the equities come from the outcomes: one call
    assert all(r["ply"] == 0 for r in ranked)
    assert ranked[0]["equity"] >= ranked[1]["equity"]
    # Searched outcomes ride along with the search: hint evaluates what play's search does, plus one
    # 0-ply pass over the plays (their 0-ply equity), not a second search.
    state, _ = parse_npn(RACE)
    found = legal_afterstates(state[None], np.array([[2, 1]]))
    player = SearchPlayer(Counted(), ply=2, filter_k=2)
    player.evaluate(found)
    searching = player.evaluations
    player.evaluations = 0
    ranked = rank_plays(player, RACE, [2, 1])
    assert player.evaluations == searching + found.states.shape[0]
    for r in ranked:
        if r["ply"] == 2:
            assert abs(np.dot(r["outcomes"], [1, 2, -1, -2]) - r["equity"]) < 1e-5


def test_a_ladder_reports_each_match_as_it_ends_and_warns_of_one_player_entered_twice(monkeypatch):
    import warnings

    import train.evaluate as ev

    points = np.array([1, -1] * 5)

    class _Result:
        points_a = points

        def summary(self):
            return ev.summarize("x", "y", points, np.full(points.size, 80), 0)

    monkeypatch.setattr(ev, "evaluate", lambda a, b, *args, **kw: _Result())
    seen: list = []
    with pytest.warns(UserWarning, match="are the same player") as caught:
        ev.ladder(["race", "default", "race@0", "default@0", "default@1"], points.size, on_match=seen.append)
    said = [w for w in caught if "are the same player" in str(w.message)]  # not others loading may say
    assert len(seen) == 10 and [(m["player_a"], m["player_b"]) for m in seen[:2]] == [("race", "default"),
                                                                                      ("race", "race@0")]
    assert sorted(str(w.message).split(" are ")[0] for w in said) == ["default and default@0", "race and race@0"]
    assert "(one bot)" in str(said[1].message) or "(one bot)" in str(said[0].message)
    assert any("one network file, searched 0 plies" in str(w.message) for w in said)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # another depth is another player; so are names nothing knows
        ev.ladder(["default", "default@1", "random"], points.size)


def test_matches_played_from_threads_leave_the_warning_machinery_as_it_was():
    # warnings.catch_warnings swaps process-wide state: two threads entering it at once used to
    # leave every later warning of the process swallowed.
    import threading
    import warnings

    before = (warnings.showwarning, warnings._showwarnmsg_impl, list(warnings.filters))  # type: ignore[attr-defined]

    def run():
        for _ in range(6):
            evaluate("default", "race", 2, seed=3, workers=1)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = (warnings.showwarning, warnings._showwarnmsg_impl, list(warnings.filters))  # type: ignore[attr-defined]
    assert after == before


def test_a_child_forked_while_another_thread_catches_warnings_can_catch_them_too():
    import os
    import signal
    import threading
    import time

    from nardy_env import _runtime

    holding, release = threading.Event(), threading.Event()

    def hold():
        with _runtime.caught_warnings():
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait(30)
    pid = os.fork()
    if pid == 0:  # the child: the lock its parent's other thread held must not hold it here
        signal.alarm(10)  # else killed by SIGALRM
        with _runtime.caught_warnings():
            os._exit(0)
    release.set()
    thread.join()
    deadline = time.monotonic() + 30
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status[0] == pid and os.waitstatus_to_exitcode(status[1]) == 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) < 2,
                    reason="torch starts with one thread on one CPU anyway")
def test_a_match_worker_imports_torch_only_for_a_player_that_needs_it_and_runs_it_on_one_thread(tmp_path):
    """Each worker process imported torch (some 180 MB) whatever it played; bots and exported
    policies play without it. Wherever torch comes in, a worker runs it on one thread: loaded with
    a checkpoint, imported by a player as it plays, or imported before (a script's __main__)."""
    import subprocess
    import sys

    from agents.network import TDNetwork
    from agents.td import save_checkpoint

    save_checkpoint(tmp_path / "net.pt", TDNetwork((8,)))
    net = str(tmp_path / "net.pt")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    scripts = {
        "bots": "import sys\n_worker('heuristic', 'race', [0], 0, {})\nprint('torch' in sys.modules)\n",
        "a checkpoint": f"_worker({net!r}, 'race', [0], 0, {{}})\nimport torch\nprint(torch.get_num_threads())\n",
        "imported later": "_worker('heuristic', 'race', [0], 0, {})\nimport torch\nprint(torch.get_num_threads())\n",
        "imported before": f"import torch\n_worker({net!r}, 'race', [0], 0, {{}})\nprint(torch.get_num_threads())\n",
    }
    for case, script in scripts.items():
        out = subprocess.run([sys.executable, "-c", "from train.evaluate import _worker\n" + script],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, (case, out.stderr)
        assert out.stdout.split() == (["False"] if case == "bots" else ["1"]), case


def test_the_python_api_refuses_what_it_would_misread(tmp_path):
    """Found by an argument fuzzer: each of these ran for ever, divided by zero, took nonsense as
    meant, or raised another library's error that named no parameter."""
    import json

    shipped = Path(__file__).resolve().parents[2] / "checkpoints" / "default"

    from agents.levels import Sampling
    from train.bench import bench_core, bench_env, bench_search, play_random_games
    from train.evaluate import elo_ratings
    from train.export import ExportError, export_policy
    from train.plots import compare_curves, ladder_chart, training_curve

    for call, message in (
        (lambda: bench_env(float("inf"), num_envs=2), "games must be a whole number, 1 or more"),  # never returned
        (lambda: bench_core(0), "games must be a whole number, 1 or more"),  # ZeroDivisionError
        (lambda: bench_core(4, seed=True), "seed must be a whole number from 0 to 2"),
        (lambda: bench_search("race@2"), "name it without @N"),  # the @2 was dropped
        (lambda: bench_search("default", plies=2), "plies must be search depths, whole numbers from 0 to 5"),
        (lambda: bench_search("default", plies=(0,), positions=0), "positions must be a whole number"),
        (lambda: play_random_games(4, np.random.default_rng(), batch=0), "batch must be a whole number"),
        (lambda: evaluate("random", "race", 2, records="no"), "records must be True or False"),  # kept them
        (lambda: ladder(["random", "race"], 2, progress="no"), "progress must be True or False"),
        (lambda: elo_ratings(2, []), "players \\[1\\] meet no chain of matches"),  # LinAlgError
        (lambda: elo_ratings(2, [(0, 1, 5, 3)]), "two different players 0..1 and 0..games won"),
        (lambda: elo_ratings(2, [(0, 1, float("nan"), 2)]), "0..games won"),  # NaN ratings
        (lambda: ladder_chart({"ratings": []}, tmp_path / "l.png"), "two players or more"),  # max() of nothing
        (lambda: compare_curves("runs/x/eval.jsonl", "race", tmp_path / "c.png"), "runs must map each run"),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    for kwargs, message in (({"force": "no"}, "force must be True or False"),  # "no" replaced an export
                            ({"seed": -1}, "seed must be a whole number from 0 to 2"),
                            ({"seed": None}, "seed must be a whole number")):
        with pytest.raises(ExportError, match=message):
            export_policy(shipped, tmp_path / "out", **kwargs)
    with pytest.raises(ExportError, match="out_dir must name a folder, got ''"):  # exported into the cwd
        export_policy(shipped, "")
    assert not (tmp_path / "out").exists()
    log = tmp_path / "eval.jsonl"
    log.write_text('{"games_trained": 5}\n')  # no opponent: max() of nothing
    with pytest.raises(ValueError, match="no record holds a win rate"):
        training_curve(log, tmp_path / "t.png")
    log.write_text(json.dumps({"games_trained": 5, "race": {"win_rate": 0.5}}) + "\n")
    with pytest.raises(ValueError, match="is a folder: name the picture's file"):  # named an internal temp file
        training_curve(log, tmp_path)
    # numpy numbers are numbers, and results stay JSON.
    json.dumps(evaluate("random", "race", 2, chunk_pairs=np.int16(1)).summary())
    json.dumps(ladder(["random", "race"], np.int64(2)))
    # A shipped player named by a Path is a network, not a bot.
    if (shipped / "checkpoint.pt").is_file():
        assert Sampling(shipped, temperature=np.float32(0.1)).temperature == pytest.approx(0.1)

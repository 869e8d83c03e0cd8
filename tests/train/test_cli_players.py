"""eval, ladder, hint and play through the command line."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from nardy_env import START_NPN
from tests.helpers import nardy
from tests.train.test_cli import SECOND, run


def test_eval_json_last_line_has_the_match_statistics():
    out = run("eval", "race", "random", "--games", "40", "--json", "--workers", "1")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("games", "win_rate", "points_per_game", "ci95", "mars_rate_a", "mars_rate_b", "rules",
                "chunk_pairs", "points_per_game_a_white", "points_per_game_a_black", "sd_plies"):
        assert key in rec
    assert rec["rules"]["block_rule"] == "ahead"
    # The two colours' games make up the whole: their mean is the overall points per game.
    both = (rec["points_per_game_a_white"] + rec["points_per_game_a_black"]) / 2
    assert abs(both - rec["points_per_game"]) < 1e-3
    assert rec["games"] == 40 and len(rec["ci95"]) == 2 and rec["ci95"][0] <= rec["points_per_game"] <= rec["ci95"][1]


def test_eval_table_for_people(capsys):
    out = nardy(capsys, "eval", "heuristic", "race", "--games", "20", "--workers", "1")
    assert out.returncode == 0, out.stderr
    assert "points per game" in out.stdout and "95% CI" in out.stdout and "wins by mars" in out.stdout
    assert "heuristic as white" in out.stdout and "plies (sd" in out.stdout


def test_eval_with_an_unknown_player_says_so(capsys):
    out = nardy(capsys, "eval", "nobody", "race", "--games", "20")
    assert out.returncode == 2 and "no player named 'nobody'" in out.stderr
    out = nardy(capsys, "eval", "random@1", "race", "--games", "20")
    assert out.returncode == 2 and "random does not search" in out.stderr
    out = nardy(capsys, "eval", "race", "random", "--games", "21")
    assert out.returncode == 2 and "even" in out.stderr



def test_bad_numbers_are_refused_before_anything_runs(capsys):
    for args, words in ((("eval", "race", "random", "--seed", "-1"), "--seed: must be from 0 to 2**32 - 1"),
                        (("ladder", "race", "random", "--seed", "-1"), "--seed: must be from 0 to 2**32 - 1"),
                        (("eval", "race", "random", "--seed", str(2**32)), "--seed: must be from 0 to 2**32 - 1"),
                        (("play", "--seed", "-3"), "--seed: must be from 0 to 2**32 - 1"),
                        (("play", "--seed", str(2**32)), "--seed: must be from 0 to 2**32 - 1"),
                        (("bench", "--seed", str(2**32)), "--seed: must be from 0 to 2**32 - 1"),  # one range
                        (("play", "--games", "0"), "--games: must be 1 or more"),
                        (("hint", START_NPN, "6", "5", "--ply", "-1"), "--ply: must be from 0 to 5"),
                        (("hint", START_NPN, "6", "5", "--top", "0"), "--top: must be 1 or more"),
                        (("hint", START_NPN, "6", "5", "--player", "race", "--ply", "1"), "race is a bot"),
                        (("play", "--against", "random", "--ply", "1"), "random is a bot"),
                        (("bench", "--games", "0"), "--games: must be 1 or more"),
                        (("bench", "--threads", "0"), "--threads: must be 1 or more"),
                        (("bench", "--env", "--num-envs", "0"), "--num-envs: must be 1 or more"),
                        (("bench", "--env", "--threads", "1"), "rules core benchmark only"),
                        (("ladder", "race", "random", "--png", "chart.txt"), "ending in .png"),
                        (("ladder", "race", "random", "--png", "/no/such/dir/chart.png"), "does not exist")):
        out = nardy(capsys, *args, stdin="")
        assert out.returncode != 0, args
        assert words in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_eval_json_is_strict_json_even_for_one_pair(capsys):
    out = nardy(capsys, "eval", "heuristic", "heuristic", "--games", "2", "--json", "--workers", "1")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert -2 <= rec["ci95"][0] <= rec["ci95"][1] <= 2 and 0 <= rec["win_rate_ci95"][0] <= 1


def test_ladder_prints_a_markdown_table_and_ratings(tmp_path):
    png = tmp_path / "ladder.png"
    out = run("ladder", "random", "race", "heuristic", "--games", "20", "--workers", "1", "--png", str(png))
    assert out.returncode == 0, out.stderr
    assert "| A | B | games |" in out.stdout and "| player | linear rating" in out.stdout and "fit of the ratings" in out.stdout
    assert out.stdout.count("| random |") >= 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What reproduces the table heads it (the chart's footer says it too: test_plots' test).
    assert out.stdout.startswith("3 players, 20 games a match (paired dice), seed 0, nardy ")


def test_a_ladder_whose_reader_went_away_still_draws_its_chart(tmp_path):
    """`nardy ladder ... --png F | head -1`: every match was played, so the chart asked for is drawn
    even though the table finds no reader (status 141, quietly, as for a pipe closed early)."""
    import subprocess

    from tests.train.test_cli import NARDY

    def ladder(png: str) -> tuple[int, bytes]:
        proc = subprocess.Popen([str(NARDY), "ladder", "random", "race", "--games", "4", "--workers", "1",
                                 "--quiet", "--png", png], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the first line
        err = proc.stderr.read()
        return proc.wait(timeout=120), err

    png = tmp_path / "ladder.png"
    assert ladder(str(png)) == (141, b"")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.path.exists("/dev/stdout"):  # the chart sent to that same gone reader: quiet too
        assert ladder("/dev/stdout") == (141, b"")


def test_a_chart_that_fails_to_draw_does_not_cost_the_table(monkeypatch, capsys, tmp_path):
    """The table is a ladder's result (the matches may have taken hours): it is printed before the
    chart is drawn, whatever the drawing raises."""
    import train.cli as cli
    import train.plots as plots

    def broken(*args, **kwargs):
        raise ValueError("a drawing bug")
    monkeypatch.setattr(plots, "ladder_chart", broken)
    with pytest.raises(ValueError, match="a drawing bug"):
        cli.main(["ladder", "random", "race", "--games", "4", "--workers", "1", "--quiet",
                  "--png", str(tmp_path / "l.png")])
    assert "| player | linear rating" in capsys.readouterr().out


def test_an_interrupted_ladder_says_the_matches_that_had_finished(monkeypatch, capsys):
    import train.evaluate as ev
    from train.cli import main

    played = []
    real = ev.evaluate

    def second_interrupted(a, b, *args, **kwargs):
        played.append((a, b))
        if len(played) == 2:  # as Ctrl-C inside numba's compiled code surfaces
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise SystemError("CPUDispatcher(<function _generate>) returned a result with an exception "
                                  "set") from exc
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(ev, "evaluate", second_interrupted)
    assert main(["ladder", "random", "race", "heuristic", "--games", "4", "--workers", "1", "--seed", "3"]) == 130
    err = capsys.readouterr().err
    assert "nardy ladder: 1 of 3 matches had finished (seed 3):" in err and err.rstrip().endswith("interrupted")
    row = next(line for line in err.splitlines() if line.startswith("| random | race | 4 |"))
    assert row.startswith("| random | race | 4 | " + f"{real('random', 'race', 4, seed=3, workers=1).summary()['points_per_game']:+.3f}")


def test_hint_jsonl_ranks_every_result(capsys):
    line = json.dumps({"position": SECOND, "dice": [3, 1]})
    out = nardy(capsys, "hint", "--jsonl", "--player", "heuristic", stdin=line + "\nnot json\n")
    assert out.returncode != 0  # the bad line
    rec, err = [json.loads(x) for x in out.stdout.splitlines()]
    assert "error" in err
    assert sorted(r["result"] for r in rec["ranked"]) == rec["results"]
    assert rec["player"] == "heuristic"  # whose scores these are (a bot's are not points)
    equities = [r["equity"] for r in rec["ranked"]]
    assert equities == sorted(equities, reverse=True)


def test_hint_outcomes_are_searched_to_the_ply_of_the_equity_and_add_up_to_it(capsys):
    # The race of docs/agents.md: the plays that leave nothing off lose a mars to any double from
    # 2-2 up (5/36), which the network alone puts far lower; searched to 2-ply, outcomes are the exact chance.
    race = "0,0,0,4,5,5,0,1,0,0,0,0,-1,-1,-1,0,0,0,0,0,0,0,0,0:0,12:w"
    line = json.dumps({"position": race, "dice": [6, 2]})
    out = nardy(capsys, "hint", "--jsonl", "--ply", "2", stdin=line + "\n")
    assert out.returncode == 0, out.stderr
    ranked = json.loads(out.stdout)["ranked"]
    assert [r["ply"] for r in ranked] == [2] * 4
    for r in ranked:
        assert abs(np.dot(r["outcomes"], [1, 2, -1, -2]) - r["equity"]) < 1e-5, r
    assert [round(r["outcomes"][3], 3) for r in ranked[1:]] == [0.139] * 3


def test_hint_values_a_game_winning_play_at_its_exact_points_for_the_mover():
    from nardy_env.players import load_player
    from tests.helpers import npn
    from train.hint import rank_plays

    # White bears off its last two with 6-1 (mars: black has none off), or leaves one on 1.
    ranked = rank_plays(load_player("default", None), npn({6: 1, 1: 1}, {12: 15}, off=(13, 0)), [6, 1])
    assert [r["moves"] for r in ranked] == [[[6, 0], [1, 0]], [[6, 5], [5, 0]]]
    assert ranked[0]["equity"] == 2.0 and ranked[0]["outcomes"] == [0.0, 1.0, 0.0, 0.0]
    assert 1.0 < ranked[1]["equity"] <= 2.0  # the mover's points: white is about to win


def test_hint_ranks_a_network_players_exact_ties_in_the_order_of_the_sorted_results():
    from agents.search import SearchPlayer
    from tests.helpers import npn
    from train.hint import rank_plays

    class Indifferent:  # every live position is worth the same
        def outcomes(self, raw):
            return np.tile(np.float32([0.4, 0.1, 0.4, 0.1]), (len(raw), 1))

    # Black to move: the core's order of its results is not that of their sorted NPN strings.
    ranked = rank_plays(SearchPlayer(Indifferent()), npn({24: 13, 20: 2}, {12: 10, 8: 3, 4: 2}, side="b"), [4, 2])
    assert len(ranked) > 1 and len({r["equity"] for r in ranked}) == 1
    assert [r["result"] for r in ranked] == sorted(r["result"] for r in ranked)  # FORMATS.md's tie order


def test_hint_never_reports_a_negative_zero_equity():
    """A 1-ply average of the opponent's negated zeros is -0.0, which JSON and the table print as -0."""
    import math

    from agents.search import SearchPlayer
    from tests.helpers import npn
    from train.hint import rank_plays

    class Indifferent:
        def outcomes(self, raw):
            return np.tile(np.float32([0.4, 0.1, 0.4, 0.1]), (len(raw), 1))

    ranked = rank_plays(SearchPlayer(Indifferent(), ply=1), npn({24: 13, 20: 2}, {12: 10, 8: 3, 4: 2}), [4, 2])
    assert ranked and all(r["equity"] == 0 and math.copysign(1, r["equity"]) == 1 for r in ranked)
    assert {r["ply"] for r in ranked} == {1}


def test_hint_jsonl_top_cuts_the_ranking_only_when_given(capsys):
    line = json.dumps({"position": "-1,0,0,0,0,0,0,0,0,1,0,-14,0,0,0,0,0,0,1,0,0,0,0,13:0,0:b", "dice": [6, 2]})
    every = json.loads(nardy(capsys, "hint", "--jsonl", "--player", "heuristic", stdin=line + "\n").stdout)
    assert len(every["ranked"]) == len(every["results"]) == 3
    top = json.loads(nardy(capsys, "hint", "--jsonl", "--player", "heuristic", "--top", "2", stdin=line + "\n").stdout)
    assert top["ranked"] == every["ranked"][:2]  # --top, when given, cuts the list for programs too


def test_hint_for_people_shows_a_ranked_table(capsys):
    out = nardy(capsys, "hint", START_NPN, "6", "5", "--player", "race")
    assert out.returncode == 0, out.stderr
    assert "race's ranking of 1 legal play:" in out.stdout and "24/18 18/13" in out.stdout


def test_hint_table_columns_obey_the_equity_formula_its_header_states(capsys):
    """The table's win and lose include mars (unlike --jsonl's outcomes[0] and [2]), and its header
    says how the columns make the equity: each row must obey what the header states."""
    spread = "0,0,0,0,0,2,0,2,0,0,0,-15,2,0,0,0,0,2,0,0,3,0,0,4:0,0:w"
    out = run("hint", spread, "6", "3", "--top", "6")  # the console script, with the shipped player
    assert out.returncode == 0, out.stderr
    assert "equity = win + win-mars - lose - lose-mars" in out.stdout
    rows = [line.split() for line in out.stdout.splitlines() if re.match(r"\s+\d+\s+[+-]\d", line)]
    assert len(rows) == 6
    line = json.dumps({"position": spread, "dice": [6, 3]})
    ranked = json.loads(nardy(capsys, "hint", "--jsonl", "--top", "6", stdin=line + "\n").stdout)["ranked"]
    for row, entry in zip(rows, ranked, strict=True):
        equity, win, win_mars, lose, lose_mars = map(float, row[1:6])
        assert abs(win + win_mars - lose - lose_mars - equity) < 2.5e-3, row
        assert abs(win + lose - 1) < 2e-3, row  # every game is won or lost: mars is part of each
        o = entry["outcomes"]
        assert abs(win - (o[0] + o[1])) < 1e-3 and abs(lose - (o[2] + o[3])) < 1e-3, (row, o)


def test_hint_for_people_says_which_rows_the_move_filter_left_unsearched(capsys):
    spread = "0,0,0,0,0,2,0,2,0,0,0,-15,2,0,0,0,0,2,0,0,3,0,0,4:0,0:w"  # 24 plays of 6-3
    out = nardy(capsys, "hint", spread, "6", "3", "--ply", "1", "--top", "8")
    assert out.returncode == 0, out.stderr
    assert "(the best 5 by 0-ply were searched; the rows at ply 0 below them were not" in out.stdout
    out = nardy(capsys, "hint", spread, "6", "3", "--ply", "0", "--top", "8")  # nothing searched: nothing to say
    assert out.returncode == 0 and "were searched" not in out.stdout


def test_play_a_scripted_game_with_bad_input_undo_and_resign():
    script = "\n".join(["help", "nonsense", "99", "list", "1", "maybe", "undo", "1", "y"]
                       + ["1", "y"] * 3 + ["1", "resign", "n", "quit", "no", "resign", "y"]) + "\n"
    out = run("play", "--against", "race", "--color", "white", "--seed", "5", "--games", "1", stdin=script)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "You play white against race" in text
    assert "is not a move" in text and "choose 1.." in text
    assert "Undone; the turn starts again." in text
    assert "Answer y (or Enter) to play it, undo to choose again, another play, or resign / quit." in " ".join(text.split())  # "maybe", wrapped to 80 columns
    # resign and quit ask first; "n" and "no" go back to the game.
    assert text.count("To resign now is to lose 2 points (mars:") == 2 and text.count("resign and lose 2 points? [y/N]") == 2
    assert "To quit abandons the game in progress: it is not scored.\nquit? [y/N]" in text
    # Resigning early in the game: nothing off and nothing this roll, so it concedes the mars.
    assert "You resign and lose 2 points." in text and "Score: you 0, race 2" in text
    assert "Opening roll: white " in text and "White moves 24 -> 1" in text


def test_play_says_a_fresh_sessions_seed_and_that_seed_plays_the_session_again():
    script = "\n".join(["1", "y"] * 6 + ["quit", "y"]) + "\n"
    fresh = run("play", "--against", "random", "--color", "white", "--games", "1", stdin=script)
    assert fresh.returncode == 0, fresh.stderr
    seed = re.match(r"\(Seed (\d+): nardy play --seed \1 with the same options,\s+and\s+your\s+same\s+plays,\s+"
                    r"gives\s+this\s+session's\s+games\s+again\.\)\n", fresh.stdout)  # said first (wrapped)
    assert seed, fresh.stdout[:200]
    again = run("play", "--against", "random", "--color", "white", "--games", "1", "--seed", seed[1], stdin=script)
    assert again.returncode == 0 and "(Seed" not in again.stdout  # a seed given is not said back
    shown = fresh.stdout[seed.end():]
    assert again.stdout == shown and shown.count("dice") >= 6


def test_play_stops_cleanly_at_end_of_input():
    out = run("play", "--against", "random", "--seed", "1", stdin="")
    assert out.returncode == 0 and "Bye." in out.stdout


def test_bots_play_what_hint_ranks_first():
    # Bots tie often; they break ties in the core's order whatever the colours, and hint ranks so.
    import numpy as np

    from agents.bots import HeuristicBot, RaceBot
    from nardy_env import Color, flip, format_npn, legal_afterstates
    from tests.nardy_env.test_against_reference import random_game_positions
    from train.hint import rank_plays

    cases = random_game_positions(2, seed=11)[:150]
    states = np.stack([c[0] for c in cases])
    colors = np.array([int(c[1]) for c in cases])
    found = legal_afterstates(states, np.array([c[2] for c in cases]))
    for bot in (RaceBot(), HeuristicBot()):
        picks = bot.choose(states, found, np.random.default_rng(0), colors=colors)
        for i, (state, side, dice) in enumerate(cases):
            chosen = found.states[found.offsets[i] + picks[i]]
            top = rank_plays(bot, format_npn(state, side), list(dice))[0]["result"]
            assert top == format_npn(flip(chosen), Color(side).other), (bot.name, i)


def test_hint_refuses_a_player_that_does_not_score_plays(capsys):
    from nardy_env.players import RandomPlayer
    from train.hint import can_rank, rank_plays

    out = nardy(capsys, "hint", START_NPN, "3", "1", "--player", "random")
    assert out.returncode == 2 and "random chooses plays without scoring them" in out.stderr
    assert "or give your player an equities(found) method" in out.stderr
    assert not can_rank(RandomPlayer())
    with pytest.raises(TypeError, match="no ranking"):
        rank_plays(RandomPlayer(), START_NPN, [3, 1])


def test_a_position_starting_with_a_minus_sign_is_a_position_not_an_option(capsys):
    """Black on point 1 makes the NPN start with '-', which argparse would take for an option."""
    npn = "-1,0,0,0,0,0,0,0,0,1,0,-14,0,0,0,0,0,0,1,0,0,0,0,13:0,0:b"
    out = nardy(capsys, "moves", npn, "6", "2")
    assert out.returncode == 0, out.stderr
    assert "3 legal plays" in out.stdout
    out = nardy(capsys, "hint", npn, "6", "2", "--player", "heuristic", "--top", "1")
    assert out.returncode == 0 and "heuristic's ranking of 3 legal plays" in out.stdout


# 8/2 8/7 with 6-1 makes white's c2..c7 a six-block with black's c20 checker ahead of it but
# none in black's home: legal under the default rules, not under block_rule "home".
BLOCK = "0,2,2,2,2,2,0,5,0,0,0,-14,0,0,0,0,0,0,0,-1,0,0,0,0:0,0:w"


@pytest.fixture(scope="module")
def home_player(tmp_path_factory):
    """A (small, untrained) network player trained under block_rule "home"."""
    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import Rules

    torch.manual_seed(0)
    return str(save_checkpoint(tmp_path_factory.mktemp("home") / "checkpoint.pt", TDNetwork((4,)),
                               Rules(block_rule="home")))


def test_a_player_plays_under_its_own_rules_unless_told_otherwise(home_player, capsys):
    line = json.dumps({"position": BLOCK, "dice": [6, 1]}) + "\n"
    own = nardy(capsys, "hint", "--jsonl", "--player", home_player, stdin=line)
    assert own.returncode == 0, own.stderr
    assert len(json.loads(own.stdout)["results"]) == 4  # 8/7 is not among them
    assert 'playing under the rules' in own.stderr and '"block_rule": "home"' in own.stderr
    told = nardy(capsys, "hint", "--jsonl", "--player", home_player, "--rules", "{}", stdin=line)
    assert len(json.loads(told.stdout)["results"]) == 6
    assert "never learnt" in told.stderr and told.stderr.count("never learnt") == 1
    out = nardy(capsys, "eval", home_player, "random", "--games", "2", "--json")
    assert out.returncode == 0, out.stderr
    table = nardy(capsys, "eval", home_player, "random", "--games", "2").stdout
    assert re.search(r'\n  rules +\{.*"block_rule": "home"', table)
    assert "rules" not in nardy(capsys, "eval", "race", "random", "--games", "2").stdout
    assert json.loads(out.stdout.splitlines()[-1])["rules"]["block_rule"] == "home"
    # Bots carry no rules: the default rules stand, and nothing is said about them.
    bots = nardy(capsys, "eval", "race", "random", "--games", "2", "--json")
    assert json.loads(bots.stdout.splitlines()[-1])["rules"]["block_rule"] == "ahead"
    assert "playing under" not in bots.stderr


def test_players_trained_under_different_rules_need_rules_chosen(home_player, capsys):
    out = nardy(capsys, "eval", home_player, "default", "--games", "2")
    assert out.returncode == 2
    assert "trained under different rules" in out.stderr and "--rules" in out.stderr
    chosen = nardy(capsys, "eval", home_player, "default", "--games", "2", "--json", "--rules", '{"block_rule": "home"}')
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(chosen.stdout.splitlines()[-1])["rules"]["block_rule"] == "home"


def test_your_own_player_file_on_the_command_line(tmp_path, capsys):
    (tmp_path / "my_agent.py").write_text(
        "import numpy as np\n\n\ndef first(states, found, rng):\n    return np.zeros(len(states), dtype=np.int64)\n")
    out = nardy(capsys, "eval", f"{tmp_path / 'my_agent.py'}:first", "race", "--games", "4", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["player_a"] == f"{tmp_path / 'my_agent.py'}:first"
    out = nardy(capsys, "eval", f"{tmp_path / 'my_agent.py'}:missing", "race", "--games", "4")
    assert out.returncode == 2 and "has no 'missing'" in out.stderr and "Traceback" not in out.stderr


def test_a_player_that_fails_in_play_is_named_in_one_line_not_a_traceback(tmp_path, capsys):
    """Its code raising, or an answer out of range, also from a worker process: exit 2 and one
    line naming the player, the line of its code that raised and where in the match."""
    (tmp_path / "broken.py").write_text(
        "class Raises:\n    def choose(self, states, found, rng):\n        return {}['missing']\n\n\n"
        "class TooFar:\n    def choose(self, states, found, rng):\n        return found.counts()\n")
    out = nardy(capsys, "eval", f"{tmp_path / 'broken.py'}:Raises", "race", "--games", "4")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert (f"nardy eval: player '{tmp_path / 'broken.py'}:Raises' raised KeyError: 'missing' "
            f"(file \"{tmp_path / 'broken.py'}\", line 3, in choose) [playing as A; at ply 1 of pair 0's game"
            in out.stderr), out.stderr
    out = run("eval", "race", f"{tmp_path / 'broken.py'}:TooFar", "--games", "400", "--workers", "2")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert re.search(r"^nardy eval: player '.*TooFar' chose afterstate 1 of position 0, which has 1 .*"
                     r"\[playing as B; at ply 1 of pair (0|100)'s game with A black, seed 0\]$", out.stderr, re.M), \
        out.stderr  # whichever worker's chunk failed first


def test_an_opponent_that_fails_in_play_ends_the_game_with_one_line(tmp_path, capsys):
    (tmp_path / "broken.py").write_text("class Raises:\n    def choose(self, states, found, rng):\n"
                                        "        return {}['missing']\n")
    out = nardy(capsys, "play", "--against", f"{tmp_path / 'broken.py'}:Raises", "--seed", "3", stdin="1\ny\n")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert (f"nardy play: player '{tmp_path / 'broken.py'}:Raises' raised KeyError: 'missing' "
            f"(file \"{tmp_path / 'broken.py'}\", line 3, in choose)") in out.stderr, out.stderr


def test_hint_names_a_player_that_has_no_name(tmp_path, capsys):
    """A scoring player of your own without a name attribute (slots): named by its spec."""
    (tmp_path / "slotted.py").write_text(
        "import numpy as np\n\n\nclass Scorer:\n    __slots__ = ()\n\n"
        "    def choose(self, states, found, rng):\n        return np.zeros(len(states), dtype=np.int64)\n\n"
        "    def equities(self, found):\n        return found.states[:, 24].astype(float)\n")
    spec = f"{tmp_path / 'slotted.py'}:Scorer"
    out = nardy(capsys, "hint", "--player", spec, START_NPN, "6", "5")
    assert out.returncode == 0, out.stderr
    assert f"{spec}'s ranking of" in out.stdout


def _nardy(args, stdin=b"", env=None, close_stdin=False):
    import os
    import subprocess

    from tests.train.test_cli import NARDY

    cmd = [str(NARDY)] if NARDY.exists() else [__import__("sys").executable, "-m", "train.cli"]
    return subprocess.run([*cmd, *args], input=None if close_stdin else stdin, capture_output=True, timeout=120,
                          stdin=subprocess.DEVNULL if close_stdin else None,
                          preexec_fn=(lambda: os.close(0)) if close_stdin else None,
                          env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})


def test_play_asks_again_after_bytes_the_terminal_encoding_cannot_read():
    # A cp1251 "д" (0xe4) typed into a UTF-8 session, then a real answer.
    out = _nardy(["play", "--against", "random", "--seed", "1"], stdin=b"\xe4\nquit\ny\n",
                 env={"PYTHONIOENCODING": "utf-8"})
    text = out.stdout.decode()
    assert out.returncode == 0 and b"Traceback" not in out.stderr, out.stderr
    assert "That was not utf-8 text" in text and "Bye." in text


def test_a_closed_standard_input_is_the_end_of_input():
    out = _nardy(["play", "--against", "random", "--seed", "1"], close_stdin=True)
    assert out.returncode == 0 and b"Traceback" not in out.stderr and b"Bye." in out.stdout, out.stderr
    out = _nardy(["moves", "--jsonl"], close_stdin=True)
    assert out.returncode == 0 and out.stdout == b"" and out.stderr == b"", out.stderr


def test_a_name_the_output_encoding_cannot_show_is_escaped_not_a_traceback(tmp_path):
    folder = tmp_path / "игрок"
    folder.mkdir()
    (folder / "bot.py").write_text("def first(states, found, rng):\n    return found.counts() * 0\n")
    out = _nardy(["eval", f"{folder / 'bot.py'}:first", "race", "--games", "2", "--workers", "1"],
                 env={"PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0 and b"Traceback" not in out.stderr, out.stderr
    assert b"\\u0438\\u0433\\u0440\\u043e\\u043a" in out.stdout and b"race" in out.stdout  # the result is printed


def test_a_player_that_cannot_be_found_shows_the_plugin_warnings_that_may_say_why(tmp_path, monkeypatch):
    # eval and ladder check their players quietly before loading them again to play: when one
    # cannot be found, what a broken plugin said is shown before the error, once.
    info = tmp_path / "site" / "brokenplug-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[nardy.players]\nzzbroken = brokenplug_missing:resolve\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path / "site"),
                                                                 os.environ.get("PYTHONPATH")) if p))
    said = ("warning: nardy.players entry point 'zzbroken' (brokenplug_missing:resolve) failed to load "
            "and is skipped: ModuleNotFoundError: No module named 'brokenplug_missing'")
    for args in (("eval", "crashy", "race", "--games", "2"), ("ladder", "race", "crashy", "--games", "2")):
        out = run(*args)
        assert out.returncode == 2 and "no player named 'crashy'" in out.stderr, out.stderr
        assert out.stderr.count(said) == 1 and f"nardy {args[0]}: {said}" in out.stderr, out.stderr
        assert out.stderr.index(said) < out.stderr.index("no player named")
        assert f"nardy {args[0]}: no player named 'crashy'" in out.stderr  # the command's name, as its own errors
    out = run("eval", "race", "random", "--games", "2", "--json")  # found: said once, by the match
    assert out.returncode == 0 and out.stderr.count(said) == 1, out.stderr


def test_a_player_file_with_the_wrong_signature_is_one_line_at_load(tmp_path, capsys):
    (tmp_path / "mine.py").write_text("import numpy as np\n\n\ndef two(states, found):\n"
                                      "    return np.zeros(len(states), dtype=np.int64)\n")
    out = nardy(capsys, "eval", f"{tmp_path / 'mine.py'}:two", "race", "--games", "2")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "two(states, found) cannot be called as a player" in out.stderr


def test_hint_names_a_player_whose_equities_are_wrong_in_one_line(tmp_path, capsys):
    (tmp_path / "eq.py").write_text(
        "import numpy as np\n\n\nclass Short:\n    def choose(self, states, found, rng):\n"
        "        return np.zeros(len(states), dtype=np.int64)\n\n    def equities(self, found):\n"
        "        return np.zeros(len(found.states) - 1)\n\n\nclass Raises(Short):\n"
        "    def equities(self, found):\n        raise RuntimeError('no idea')\n\n\nclass NotANumber(Short):\n"
        "    def equities(self, found):\n        return np.full(len(found.states), np.nan)\n")
    for name, said in (("Short", r"returned equities of shape \(0,\) for 1 play: .* shape \(1,\)"),
                       ("Raises", r"raised RuntimeError: no idea \(file .*eq.py\", line 14, in equities\)"),
                       ("NotANumber", r"returned equity nan for play 0: equities must be finite numbers")):
        out = nardy(capsys, "hint", "--player", f"{tmp_path / 'eq.py'}:{name}", START_NPN, "6", "5")
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert re.search(f"nardy hint: player '.*eq.py:{name}' {said}", out.stderr), out.stderr
    out = nardy(capsys, "hint", "--player", f"{tmp_path / 'eq.py'}:Short", "--ply", "1", START_NPN, "6", "5")
    assert out.returncode == 2 and "--ply 1: " in out.stderr and "is your own player and does not search" in out.stderr


def test_a_negative_search_depth_is_one_line_for_every_command(capsys):
    said = "the search depth after '@' is a whole number from 0 to 5"
    for args in (("play", "--against", "default@-1"), ("hint", "--player", "random@-1", START_NPN, "6", "5"),
                 ("eval", "default@-1", "race", "--games", "2"), ("bench", "--search", "default@-1")):
        out = nardy(capsys, *args, stdin="")
        assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)


def test_ply_for_a_network_whose_folder_name_has_a_colon_and_bench_for_a_player_that_cannot_search(tmp_path, capsys):
    import shutil

    from agents.registry import SHIPPED_PLAYER

    run_dir = tmp_path / "exp:v2"  # looks like module:NAME, but is a run folder
    run_dir.mkdir()
    for name in ("checkpoint.pt", "config.json"):
        shutil.copy(SHIPPED_PLAYER / name, run_dir / name)
    out = nardy(capsys, "hint", "--player", str(run_dir), "--ply", "1", START_NPN, "6", "5")
    assert out.returncode == 0 and "24/18 18/13" in out.stdout, out.stderr
    (tmp_path / "mine.py").write_text("import numpy as np\n\n\nclass First:\n"
                                      "    def choose(self, states, found, rng):\n"
                                      "        return np.zeros(len(states), dtype=np.int64)\n")
    out = nardy(capsys, "bench", "--search", f"{tmp_path / 'mine.py'}:First", "--positions", "2", "--max-ply", "1")
    assert out.returncode == 2 and "that player does not search" in out.stderr and "Traceback" not in out.stderr


def test_what_loading_a_player_says_is_shown_once_however_the_match_is_played(tmp_path):
    (tmp_path / "dep.py").write_text("import warnings\n\nwarnings.warn('old api', DeprecationWarning)\n"
                                     "warnings.warn('mind this', UserWarning)\n\n\ndef play(states, found, rng):\n"
                                     "    return [0] * len(states)\n")
    for workers in ("1", "2"):
        out = run("eval", f"{tmp_path / 'dep.py'}:play", "random", "--games", "4", "--workers", workers,
                  "--chunk-pairs", "1", "--json")
        assert out.returncode == 0, out.stderr
        assert out.stderr.count("UserWarning: mind this") + out.stderr.count("warning: mind this") == 1, out.stderr
        assert "old api" not in out.stderr, (workers, out.stderr)


def test_what_a_player_says_while_it_plays_is_not_taken_for_what_loading_said(tmp_path):
    (tmp_path / "talks.py").write_text(
        "import warnings\n\n\nclass P:\n    def __init__(self):\n        warnings.warn('slow player')\n\n"
        "    def choose(self, states, found, rng):\n        warnings.warn('slow player')\n"
        "        return [0] * len(states)\n")
    out = run("eval", f"{tmp_path / 'talks.py'}:P", "random", "--games", "2", "--workers", "1", "--json")
    assert out.returncode == 0, out.stderr
    # Once when loaded (said once however often the match loads it), and from choose() as Python shows it.
    assert out.stderr.count("UserWarning: slow player") == 2, out.stderr


def test_a_failed_load_shows_gathered_warnings_under_the_filters_in_force(tmp_path):
    (tmp_path / "dep.py").write_text("import warnings\n\nwarnings.warn('old api', DeprecationWarning)\n"
                                     "warnings.warn('mind this', UserWarning)\n\n\ndef play(states, found, rng):\n"
                                     "    return [0] * len(states)\n")
    out = run("eval", f"{tmp_path / 'dep.py'}:play", "crashy", "--games", "2")
    assert out.returncode == 2 and "no player named 'crashy'" in out.stderr
    assert "mind this" in out.stderr and "old api" not in out.stderr  # DeprecationWarning: hidden by default


def test_bench_search_of_your_own_search_player_object_is_one_line(tmp_path, capsys):
    (tmp_path / "mine.py").write_text(
        "import numpy as np\nfrom agents.search import SearchPlayer\n\n\nclass Flat:\n"
        "    def outcomes(self, raw):\n        return np.full((len(raw), 4), 0.25)\n\n\n"
        "player = SearchPlayer(Flat())\n")
    out = nardy(capsys, "bench", "--search", f"{tmp_path / 'mine.py'}:player", "--positions", "2", "--max-ply", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "your own players do not search" in out.stderr


def test_error_lines_and_warnings_escape_control_characters(capsys):
    """What the command prints may quote a file's strings: they must not drive the terminal."""
    import warnings

    from train.cli import _complain, _plain_warnings

    _complain("nardy eval: bad\x1b[2Jname\x07")
    err = capsys.readouterr().err
    assert err == "nardy eval: bad\\x1b[2Jname\\x07\n"
    from nardy_env._runtime import NumbaCacheWarning
    from train.cli import _ROOT

    shown = _plain_warnings(warnings.showwarning)
    shown(UserWarning("trained as \x1b]0;x\x07"), UserWarning, f"{_ROOT}/agents/search.py", 1)
    assert capsys.readouterr().err == "nardy: warning: trained as \\x1b]0;x\\x07\n"
    shown(NumbaCacheWarning("numba cannot write its cache"), NumbaCacheWarning, f"{_ROOT}/nardy_env/__init__.py", 10)
    assert capsys.readouterr().err == "nardy: warning: numba cannot write its cache\n"  # one line, as nardy's own
    # Others keep their file and line: numpy's overflow in nardy's code, a user's player in a folder
    # that happens to be called agents/.
    passed = []
    shown = _plain_warnings(lambda message, category, filename, lineno, *rest: passed.append((category, lineno)))
    shown(RuntimeWarning("overflow encountered"), RuntimeWarning, f"{_ROOT}/agents/search.py", 7)
    shown(UserWarning("mine"), UserWarning, "/home/me/agents/bot.py", 3)
    assert passed == [(RuntimeWarning, 7), (UserWarning, 3)] and capsys.readouterr().err == ""
    _complain("nardy eval: Привет café a\u00a0b \u0646\u0627\u0645\u200c\u06a9\u0627\u0631\u0628\u0631")  # text, kept
    assert capsys.readouterr().err == "nardy eval: Привет café a\u00a0b \u0646\u0627\u0645\u200c\u06a9\u0627\u0631\u0628\u0631\n"


def test_reports_escape_what_a_player_name_could_do_to_a_terminal_or_a_table(capsys):
    from train.cli import _print_ladder, _print_match
    from train.evaluate import ladder

    out = ladder(["race", "random"], 2, workers=1)
    for match in out["matches"]:
        match["player_a"] = "\x1b[31mred|x"
        match["player_b"] = "a\nb"
    out["ratings"][0]["player"] = "\x1b[31mred|x"
    _print_match(out["matches"][0])
    _print_ladder(out)
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "a\nb" not in printed
    assert "\\x1b[31mred|x vs a\\nb: 2 games" in printed  # the match report: one line, escaped
    assert "| \\x1b[31mred\\|x | a\\nb | 2 |" in printed  # a table row keeps its cells
    # A backslash before punctuation is doubled, or markdown would take back\| for an escaped bar.
    from train.cli import _cell

    assert _cell("back\\|slash.py:F") == "back\\\\\\|slash.py:F" and _cell("c:\\dir\\x.py:F") == "c:\\dir\\x.py:F"

"""The measurement scripts under tools/ that the docs quote."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tools.afterstates_per_decision import afterstates_per_decision


def test_a_skilled_player_keeps_more_plays_open_than_a_random_one():
    """docs/training.md's reason why self-play slows as a run learns: more afterstates to score."""
    random_per, random_length = afterstates_per_decision("random", games=20)
    heuristic_per, _ = afterstates_per_decision("heuristic", games=20)
    assert 5 < random_per < 20 and 60 < random_length < 140
    assert heuristic_per > 1.5 * random_per


def test_the_board_picture_tool_draws_the_readmes_picture_and_has_help(tmp_path, capsys):
    import pytest
    from PIL import Image

    from tools.board_picture import main

    with pytest.raises(SystemExit) as done:  # --help is help, not a file named --help
        main(["--help"])
    assert done.value.code == 0 and "the PNG to write" in capsys.readouterr().out
    assert main([str(tmp_path / "board.png")]) == 0
    # The env's picture of the README's position (pixel for pixel only on this Pillow and FreeType:
    # docs/board.png itself may have been drawn by another).
    import gymnasium as gym

    from tools.board_picture import DICE, POSITION

    env = gym.make("LongNardy-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"position": POSITION, "dice": DICE})
    assert np.array_equal(np.asarray(Image.open(tmp_path / "board.png").convert("RGB")), env.render())
    root = Path(__file__).resolve().parents[1]
    assert Image.open(root / "docs" / "board.png").size == Image.open(tmp_path / "board.png").size
    with pytest.raises(SystemExit):
        main([str(tmp_path / "board.txt")])
    assert "give a path ending in .png" in capsys.readouterr().err


def test_the_serving_latency_tool_asks_real_positions_and_times_every_request():
    """docs/policy.md's per-request figures come from tools/serving_latency.py."""
    from nardy_env import outcome
    from nardy_env.notation import Color
    from tools.serving_latency import requests, time_calls, time_jsonl

    reqs = requests(150, seed=3)
    assert len(reqs) == 150 and reqs[0][2] is Color.WHITE and reqs[1][2] is Color.BLACK
    assert all(outcome(state[None])[0] == 0 and 1 <= dice.min() <= dice.max() <= 6 for state, dice, _ in reqs)
    from nardy_env import initial_states

    assert sum(np.array_equal(state, initial_states(1)[0]) for state, _, _ in reqs) >= 2  # a second game began
    seconds, wall = time_calls("heuristic", reqs[:30], threads=2)
    assert len(seconds) == 30 and all(0 < s < wall for s in seconds)
    assert len(time_jsonl("heuristic", reqs[:8])) == 3  # the first five load the player


def test_the_tools_refuse_bad_arguments_in_one_line_before_writing_anything(tmp_path, capsys):
    """A bad count, seed, player or folder is a usage error naming it, never a traceback or a
    half-written output folder."""
    import pytest

    from tools import (
        afterstates_per_decision,
        board_picture,
        max_results_search,
        serving_latency,
        ship_player,
    )

    def refused(main, argv: list[str], code: int = 2) -> str:
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == code
        return capsys.readouterr().err

    assert "--games: must be 1 or more, got 0" in refused(afterstates_per_decision.main, ["random", "--games", "0"])
    assert "--seed: must be from 0 to 2**32 - 1" in refused(afterstates_per_decision.main, ["random", "--seed", "-1"])
    assert "no player named 'nosuch'" in refused(afterstates_per_decision.main, ["random", "nosuch"])
    with pytest.raises(ValueError, match="games must be 1 or more"):
        afterstates_per_decision.afterstates_per_decision("random", games=0)
    assert "no player named 'nosuch'" in refused(serving_latency.main, ["--player", "nosuch"])
    assert "--plies: must be 0 or more" in refused(serving_latency.main, ["--plies", "-1"])
    assert "random does not search" in refused(serving_latency.main, ["--player", "random", "--plies", "0", "1"])
    assert "--threads: must be 1 or more" in refused(serving_latency.main, ["--threads", "0"])
    assert "--seconds: must be a positive number" in refused(max_results_search.main, ["--seconds", "-1"])
    err = refused(board_picture.main, [str(tmp_path / "no" / "such" / "board.png")], code=1)
    assert "cannot write" in err and "No such file or directory" in err

    run, out = tmp_path / "run", tmp_path / "shipped"
    run.mkdir()
    (run / "config.json").write_text("{}")
    assert "lacks checkpoint.pt, eval.jsonl" in refused(ship_player.main, [str(run), str(out)])
    (run / "checkpoint.pt").write_text("not a checkpoint")
    (run / "eval.jsonl").write_text("")
    assert "is not a checkpoint" in refused(ship_player.main, [str(run), str(out)])
    assert "is the run itself" in refused(ship_player.main, [str(run), str(run / ".." / "run")])
    said = refused(ship_player.main, [str(run), str(out), "--games", "2001"])
    assert "--games: must be an even number" in said and said.count("got 2001") == 1  # said once
    from train.evaluate import MAX_GAMES

    assert MAX_GAMES == 10_000_000  # the most one match plays, as eval's and MATCH_GAMES's messages say
    assert "--ply-games: must be an even number" in refused(ship_player.main, [str(run), str(out), "--ply-games", "1"])
    assert not out.exists()
    assert ship_player._commit() != ""  # a commit, or what says there is none


def test_the_scaling_tool_reads_the_line_nardy_train_ends_with():
    """tools/scaling.py (docs/training.md, Throughput) parses the CLI's own closing line, for one
    actor and for many, and says which row is how many times the first."""
    import pytest

    from tools.scaling import parse_trained, table
    from train.cli import trained_line

    stats = {"actors": 1, "session_games_per_s": 412.4, "session_updates_per_s": 77.2, "games_per_s": 350.0,
             "updates_per_s": 64.0, "learner_busy": 0.14}
    one = parse_trained(trained_line(12032, stats, 0))
    assert one == {"games": 12032, "actors": 1, "games_per_s": 412, "updates_per_s": 77,
                   "window_games_per_s": 350, "window_updates_per_s": 64, "learner_busy": 0.14}
    many = parse_trained(trained_line(60160, {**stats, "actors": 15, "games_per_s": 2800.0}, 2))
    assert many["actors"] == 15 and many["window_games_per_s"] == 2800
    rows = [{**one, "wall_s": 40.0}, {**many, "wall_s": 50.0}]
    assert "| 15 | 60,160 | 412 | 77 | 2800 | 64 | 14% | 8.00 | 50 |" in table(rows).splitlines()
    with pytest.raises(ValueError, match="no 'trained"):
        parse_trained("interrupted after 300 games; checkpoint saved.")

"""The measurement scripts under tools/ that the docs quote."""

from __future__ import annotations

import json
import os
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
    assert "--plies: must be from 0 to 5" in refused(serving_latency.main, ["--plies", "-1"])
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
    """tools/scaling.py (docs/training.md, On 16 CPUs) parses the CLI's own closing line, for one
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
    assert "| 15 | 60,160 | 412 | 77 | 2,800 | 64 | 14% | 8.00 | 50 |" in table(rows).splitlines()
    with pytest.raises(ValueError, match="no 'trained"):
        parse_trained("interrupted after 300 games; checkpoint saved.")


def test_the_scaling_tool_stops_a_run_with_a_signal_the_system_can_send(monkeypatch):
    """Ctrl-C's SIGINT on POSIX (the run saves and shuts its Ray down); Windows' Popen refuses
    SIGINT (ValueError), so there the run is ended with SIGTERM (TerminateProcess)."""
    import signal

    from tools import scaling

    class Child:
        def __init__(self):
            self.sent = []

        def poll(self):
            return None if not self.sent else 0

        def send_signal(self, sig):
            if os.name == "nt" and sig not in (signal.SIGTERM,):
                raise ValueError(f"Unsupported signal: {sig}")  # as subprocess.Popen does there
            self.sent.append(sig)

        def wait(self, timeout=None):
            self.waited = timeout
            return 0

    for ctrl_c in (False, True):
        child = Child()
        scaling._stop(child, ctrl_c=ctrl_c)
        assert child.sent == [signal.SIGINT]
    monkeypatch.setattr(scaling.os, "name", "nt")
    child = Child()
    scaling._stop(child)
    assert child.sent == [signal.SIGTERM]
    # There a Ctrl-C typed in the console reaches the run as well: it is let stop itself.
    child = Child()
    scaling._stop(child, grace=5.0, ctrl_c=True)
    assert child.sent == [] and child.waited == 5.0


def test_the_scaling_tool_keeps_the_rows_done_when_a_run_fails(tmp_path, monkeypatch, capsys):
    """Each run's closing line makes a row and a JSON record; a run that fails ends the tool with
    exit 1, the table of the runs before it, the run's last lines and where its output is."""
    import subprocess
    import tempfile

    import pytest

    from tools import scaling
    from train.cli import trained_line

    asked = []

    class FakeRun:
        """nardy train as the tool sees it: its output, then its exit status (or no end in time)."""

        def __init__(self, command, stdout, cwd, **kwargs):
            self.actors = int(command[command.index("--set") + 1].split("=")[1])
            asked.append((self.actors, command[command.index("--out") + 1], cwd))
            self.signals = []
            if self.actors == 4:
                stdout.write("nardy train: cannot start a local Ray: no room\n")
            elif self.actors != 8:
                stdout.write(trained_line(12032, {"actors": self.actors, "session_games_per_s": 100.0 * self.actors,
                                                  "session_updates_per_s": 20.0 * self.actors,
                                                  "games_per_s": 900.0 * self.actors, "updates_per_s": 18.0 * self.actors,
                                                  "learner_busy": 0.1 * self.actors}, 0) + "\n")

        def wait(self, timeout=None):
            if self.actors == 8 and not self.signals:
                raise subprocess.TimeoutExpired("nardy train", timeout)
            return {4: 2, 8: 130}.get(self.actors, 0)

        def poll(self):
            return None if self.actors == 8 and not self.signals else 0

        def send_signal(self, signum):
            self.signals.append(signum)

    monkeypatch.setattr(scaling.subprocess, "Popen", FakeRun)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.chdir(tmp_path)  # relative paths are the caller's, though each run starts in the checkout
    assert scaling.main(["--actors", "1", "2", "4", "--out", "runs", "--json", "rows.jsonl"]) == 1
    captured = capsys.readouterr()
    assert [a for a, _, _ in asked] == [1, 2, 4] and all(Path(out).is_absolute() for _, out, _ in asked)
    assert asked[0][1] == str(tmp_path / "runs" / "actors1") and asked[0][2] == scaling.ROOT
    assert "| 2 | 12,032 | 200 | 40 | 1,800 | 36 | 20% | 2.00 |" in captured.out
    records = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["actors"] for r in records] == [1, 2] and records[1]["window_games_per_s"] == 1800
    assert captured.err.startswith("scaling: the run with 4 actors ended with exit status 2; the table above holds "
                                   f"the runs before it; its output: {tmp_path / 'runs' / 'actors4.log'}; its last "
                                   "lines:\n  nardy train: cannot start a local Ray: no room")
    # A run over its time limit, in the default temporary folder: stopped as Ctrl-C stops nardy
    # train (it saves and shuts its Ray down), said, with no table when it is the first; the
    # temporary folder is gone.
    before = set(Path(tempfile.gettempdir()).glob("nardy-scaling-*"))
    assert scaling.main(["--actors", "8", "--timeout", "5"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("scaling: the run with 8 actors took more than 5 s")
    assert set(Path(tempfile.gettempdir()).glob("nardy-scaling-*")) == before
    # Refused before any run: a count twice or not a count, a folder already used, no such config.
    for argv, said in [(["--actors", "2", "2"], "--actors 2 2: each count once"),
                       (["--actors", "0"], "argument --actors: must be 1 or more"),
                       (["--timeout", "-1"], "argument --timeout: must be a positive number of seconds"),
                       (["--out", "runs", "--actors", "2"], "already holds the run for 2 actors"),
                       (["--config", "nope.yaml"], "--config nope.yaml: no such file"),
                       (["--json", "runs"], "--json runs is a folder; give a file name"),
                       (["--json", "rows.jsonl/x.jsonl"], f"--json rows.jsonl/x.jsonl: {tmp_path / 'rows.jsonl'} is a "
                                                          "file, not a folder"),
                       (["--out", "rows.jsonl/runs"], "--out rows.jsonl/runs: cannot make it")]:
        asked.clear()
        with pytest.raises(SystemExit) as done:
            scaling.main(argv)
        assert done.value.code == 2 and said in capsys.readouterr().err and not asked, argv


def test_the_scaling_tool_stops_a_run_as_ctrl_c_would_and_kills_one_that_does_not_stop(tmp_path):
    """A run is stopped with SIGINT (nardy train then saves its checkpoint and shuts its Ray down)
    and killed only when it has not ended within the grace time."""
    import subprocess
    import sys

    from tools.scaling import _stop

    stops = ("import signal, sys, time\n"
             "def stop(*_):\n    print('saved', flush=True)\n    sys.exit(130)\n"
             "signal.signal(signal.SIGINT, stop)\nprint('ready', flush=True)\ntime.sleep(60)\n")
    deaf = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    for script, grace, code, said in [(stops, 30.0, 130, "saved"), (deaf, 1.0, -9, "")]:
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready"  # its handler is in place
        _stop(child, grace=grace)
        assert child.returncode == code and child.stdout.read().strip() == said

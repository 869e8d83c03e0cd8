"""Progress: a bar on a terminal, plain lines in a log."""

from __future__ import annotations

import io

from tests.train.test_cli import run
from train.progress import LineProgress, progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_log_gets_lines():
    from tqdm import tqdm

    bar = progress_bar(10, "eval", stream=_Terminal())
    assert isinstance(bar, tqdm)
    bar.close()
    assert isinstance(progress_bar(10, "eval", stream=io.StringIO()), LineProgress)


def test_a_notebook_gets_a_bar_though_its_output_is_no_terminal():
    from tqdm import tqdm

    notebook_stream = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})()
    assert not notebook_stream.isatty()  # as Jupyter's stderr says; once: a line every 30 s
    bar = progress_bar(10, "eval", stream=notebook_stream)
    assert isinstance(bar, tqdm)
    bar.update(10)
    bar.close()
    assert "10/10" in notebook_stream.getvalue()


def test_lines_come_at_most_every_so_often_and_once_at_the_end():
    log = io.StringIO()
    bar = LineProgress(400, "random vs race", stream=log, every=3600)
    for _ in range(4):
        bar.update(100)
    assert log.getvalue() == ""  # within the interval: nothing yet
    bar.set_postfix({"heuristic": "62%"})
    bar.close()
    line = log.getvalue()
    assert line.startswith("random vs race: 400/400 games (100%), ") and line.endswith(", heuristic 62%\n")
    assert "\r" not in line and line.count("\n") == 1
    bar.close()  # nothing new: no second line
    assert log.getvalue() == line
    every = io.StringIO()
    bar = LineProgress(40_000, "train quick", stream=every, every=0, initial=10_000)
    bar.set_postfix({"games/s": "310"})  # the trainer's own rate: not a second one
    bar.update(2_000)
    assert every.getvalue() == "train quick: 12000/40000 games (30%), games/s 310\n"


def test_a_resumed_bar_rates_only_what_it_has_seen(monkeypatch):
    import train.progress as progress

    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    log = io.StringIO()
    bar = LineProgress(100, "x", initial=50, stream=log, every=0)
    clock[0] += 10
    bar.update(10)  # 10 games in 10 s, not the 60 counted since 0
    assert log.getvalue() == "x: 60/100 games (60%), 1 games/s\n"


def test_eval_into_a_log_has_no_carriage_returns():
    out = run("eval", "random", "race", "--games", "400", "--workers", "1")
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\r" not in out.stdout
    assert "random vs race: 400/400 games (100%)" in out.stderr  # the closing line


def test_json_matches_show_progress_on_a_terminal_only(monkeypatch):
    """--json is for scripts: no lines in their logs, but a person at a terminal sees the bar."""
    import argparse
    import sys

    from train.cli import _match_progress

    closed = io.StringIO()
    closed.close()
    for stderr, json_out, shown in ((_Terminal(), True, True), (io.StringIO(), True, False),
                                    (io.StringIO(), False, True), (closed, True, False), (None, True, False)):
        monkeypatch.setattr(sys, "stderr", stderr)
        assert _match_progress(argparse.Namespace(json=json_out, quiet=False)) is shown
        assert _match_progress(argparse.Namespace(json=json_out, quiet=True)) is False


def test_quiet_and_tqdm_disable_leave_a_logs_stderr_empty(monkeypatch):
    """A CI log that counts stderr lines as warnings: eval and ladder say nothing there when asked."""
    for args in (("eval", "random", "race", "--games", "40", "--quiet"),
                 ("ladder", "random", "race", "--games", "20", "--quiet")):
        out = run(*args, "--workers", "1")
        assert out.returncode == 0 and out.stderr == "", (args, out.stderr)
        assert "random" in out.stdout  # the result itself is printed
    monkeypatch.setenv("TQDM_DISABLE", "1")  # tqdm's own variable: the lines in a log go too
    out = run("eval", "random", "race", "--games", "40", "--workers", "1")
    assert out.returncode == 0 and out.stderr == "" and "random" in out.stdout, out.stderr
    log = io.StringIO()
    bar = progress_bar(10, "x", stream=log)
    bar.update(10)
    bar.write("a message still shows")
    bar.close()
    assert log.getvalue() == "a message still shows\n"


def test_the_closing_line_shows_a_postfix_set_after_the_last_line():
    """The trainer's last log comes after the last count: a line printed at that count must not be
    the last word when a newer rate follows it."""
    log = io.StringIO()
    bar = LineProgress(100, "train x", stream=log, every=0)
    bar.set_postfix({"games/s": "80"})
    bar.update(100)  # a line at the final count, with the old rate
    bar.set_postfix({"games/s": "95"})
    bar.close()
    assert log.getvalue().splitlines()[-1] == "train x: 100/100 games (100%), games/s 95"
    bar.set_postfix({"games/s": "99"})  # after closing: nothing more, as tqdm
    bar.close()
    assert log.getvalue().count("\n") == 2

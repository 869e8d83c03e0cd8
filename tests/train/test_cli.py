"""The ``nardy`` command through subprocess, as users and other programs call it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nardy_env import START_NPN
from tests.helpers import nardy, npn

SECOND = "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b"
NARDY = Path(sys.executable).parent / "nardy"


def run(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    return subprocess.run([*cmd, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_console_script_is_installed():
    assert NARDY.exists(), "the nardy console script is not installed next to the interpreter"


def test_help_lists_subcommands_with_one_line_each():
    out = run("--help")
    assert out.returncode == 0
    assert "moves" in out.stdout and "bench" in out.stdout
    assert "list the legal plays" in out.stdout


def test_building_the_parser_loads_no_heavy_library():
    """nardy --help, --version and a usage error answer at once (0.1 s, not 0.6 s): the parser
    loads neither the rules core (numba, gymnasium) nor torch, onnx or Ray."""
    code = ("import sys; from train.cli import build_parser; p = build_parser(); "
            "p.parse_args(['export', 'run', '--out', 'x']); p.parse_args(['eval', 'a', 'b']); "
            "print(sorted(m for m in ('numba', 'gymnasium', 'nardy_env', 'torch', 'onnx', 'onnxruntime', 'ray') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_moves_jsonl_worked_checks_and_format():
    cases = [(START_NPN, [6, 5], 1), (START_NPN, [3, 1], 1), (SECOND, [6, 6], 1), (SECOND, [4, 4], 1),
             (SECOND, [3, 3], 2), (SECOND, [5, 5], 1), (SECOND, [2, 2], 1), (SECOND, [1, 1], 1)]
    stdin = "".join(json.dumps({"position": p, "dice": d}) + "\n" for p, d, _ in cases)
    out = run("moves", "--jsonl", stdin=stdin)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == len(cases)
    for (pos, dice, n), rec in zip(cases, lines, strict=True):
        assert rec["position"] == pos and rec["dice"] == dice
        assert len(rec["results"]) == n
        assert rec["results"] == sorted(rec["results"])
        assert [p["result"] for p in rec["plays"]] == rec["results"]
        assert all(r.endswith(":w" if pos.endswith("b") else ":b") for r in rec["results"])
    assert lines[0]["plays"][0]["moves"] == [[24, 18], [18, 13]]


def test_moves_jsonl_pass_gives_the_same_checkers_other_side():
    pos = npn({1: 14, 20: 1}, {11: 13, 14: 1, 17: 1})
    out = run("moves", "--jsonl", stdin=json.dumps({"position": pos, "dice": [6, 3]}) + "\n")
    rec = json.loads(out.stdout)
    assert rec["results"] == [pos[:-1] + "b"] and rec["plays"][0]["moves"] == []


def test_moves_jsonl_bad_lines_get_errors_and_the_command_goes_on(capsys):
    good = json.dumps({"position": START_NPN, "dice": [6, 5]})
    bad = [
        "not json",
        json.dumps([1, 2]),
        json.dumps({"position": START_NPN}),
        json.dumps({"position": START_NPN, "dice": [7, 1]}),
        json.dumps({"position": START_NPN, "dice": [6]}),
        json.dumps({"position": START_NPN.replace("-15", "-14"), "dice": [6, 5]}),
        json.dumps({"position": 5, "dice": [6, 5]}),
        "",  # answered too, so a caller waiting line by line never hangs
        "[" * 100_000,  # nested past Python's recursion limit
        json.dumps({"position": START_NPN.replace(",15:0,0:w", ",0:15,0:b"), "dice": [6, 5]}),
        # Not silently answered under the default rules:
        json.dumps({"position": START_NPN, "dice": [6, 6], "rules": {"head_exception": []}}),
        json.dumps({"position": START_NPN, "dice": [True, "5"]}),
    ]
    out = nardy(capsys, "moves", "--jsonl", stdin="\n".join([good, *bad, good]) + "\n")
    assert out.returncode != 0
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == len(bad) + 2
    assert "results" in lines[0] and "results" in lines[-1]
    for rec in lines[1:-1]:
        assert set(rec) == {"error"} and rec["error"]
    assert "black" in lines[6]["error"]
    assert "dice" in lines[4]["error"]
    assert "empty line" in lines[8]["error"]
    assert "over" in lines[10]["error"] and "white" in lines[10]["error"]
    assert "'rules' cannot be set per line" in lines[11]["error"] and "(--rules)" in lines[11]["error"]
    assert lines[12]["error"].endswith('got [true, "5"]')  # the caller's JSON, not Python's [True, '5']
    near = nardy(capsys, "moves", "--jsonl", stdin=json.dumps({"position": START_NPN, "dice": [6, 5], "Rule": {}}) + "\n")
    assert near.returncode == 1 and "'Rule' cannot be set per line" in json.loads(near.stdout)["error"]
    # Other keys (a request id) are ignored.
    tagged = nardy(capsys, "moves", "--jsonl", stdin=json.dumps({"position": START_NPN, "dice": [6, 5], "id": 7}) + "\n")
    assert tagged.returncode == 0 and json.loads(tagged.stdout)["results"]


def test_moves_jsonl_bytes_that_are_not_utf8_get_an_error_line_whatever_the_locale():
    good = json.dumps({"position": START_NPN, "dice": [6, 5]}).encode()
    huge = json.dumps({"position": START_NPN.replace(",15:", ",99999999999999999999:"), "dice": [6, 5]}).encode()
    data = b"\xef\xbb\xbf" + good + b"\n\xff\xfe\n" + huge + b"\n" + good  # a BOM first; no final newline
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    out = subprocess.run([*cmd, "moves", "--jsonl"], input=data, capture_output=True, timeout=120,
                         env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert out.returncode == 1, out.stderr
    lines = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert len(lines) == 4
    assert "results" in lines[0] and "results" in lines[3]
    assert "UTF-8" in lines[1]["error"]
    assert "point 24" in lines[2]["error"] and "out of range" in lines[2]["error"]


def test_moves_jsonl_flushes_each_line():
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    proc = subprocess.Popen([*cmd, "moves", "--jsonl"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(json.dumps({"position": START_NPN, "dice": [6, 5]}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()  # answered before stdin closes
        assert json.loads(line)["results"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_moves_for_people_draws_the_board_and_numbers_the_plays():
    out = run("moves", SECOND, "3", "3")
    assert out.returncode == 0, out.stderr
    assert "Black to move, dice 3-3" in out.stdout
    assert " 1. 12/9 12/9 9/6 6/3" in out.stdout and " 2. " in out.stdout
    assert "pips: white 349, black 360" in out.stdout


def test_moves_for_people_reports_bad_input(capsys):
    out = nardy(capsys, "moves", "0,0:0,0:w", "6", "5")
    assert out.returncode == 2 and "bad NPN" in out.stderr
    out = nardy(capsys, "moves", START_NPN, "6")
    assert out.returncode == 2 and "two dice" in out.stderr
    out = nardy(capsys, "moves", START_NPN, "x", "5")
    assert out.returncode == 2 and "argument dice: the dice are two numbers 1..6, e.g. 6 5 (or 65, 6-5), got 'x'" \
        in out.stderr


@pytest.mark.parametrize("command", [["moves"], ["hint", "--player", "race"]])
def test_the_dice_may_be_written_as_one_word_as_gnubg_and_the_play_prompt_do(capsys, command):
    want = nardy(capsys, *command, SECOND, "6", "5")
    assert want.returncode == 0 and "dice 6-5" in want.stdout, want.stderr
    for dice in (["65"], ["6-5"], ["6,5"], [" 6 - 5 "]):
        assert nardy(capsys, *command, SECOND, *dice).stdout == want.stdout, dice
    for dice, said in ((["6", "55"], "give a position and two dice"), (["656"], "give a position and two dice"),
                       (["6-7"], "dice must be integers 1..6, got [6, 7]"),
                       (["75"], "dice must be integers 1..6, got [7, 5]"),  # not the one die 75
                       (["60"], "dice must be integers 1..6, got [6, 0]"),
                       (["1_2"], "the dice are two numbers 1..6, e.g. 6 5 (or 65, 6-5), got '1_2'"),  # int() takes it
                       (["٦٥"], "the dice are two numbers 1..6")):  # Arabic-Indic digits, which int() reads as 65
        out = nardy(capsys, *command, SECOND, *dice)
        assert out.returncode == 2 and out.stdout == "" and said in out.stderr, (dice, out.stderr)


def test_legal_plays_takes_dice_as_nardy_envs_functions_do_and_never_a_bool():
    import numpy as np

    from train.moves import legal_plays, parse_dice

    assert parse_dice(np.array([6, 5])) == parse_dice([6, 5]) == (6, 5)
    as_list = legal_plays(START_NPN, [6, 5])
    assert legal_plays(START_NPN, np.array([6, 5])) == as_list == legal_plays(START_NPN, (np.int8(6), 5))
    for dice in ([True, 2], np.array([6, 5, 4]), np.array([[6, 5]]), [6.0, 5]):
        with pytest.raises(ValueError, match="dice must be"):
            legal_plays(START_NPN, dice)



def test_a_position_with_both_sides_borne_off_gets_its_own_message():
    from nardy_env import StateError, outcome, parse_npn
    from train.moves import parse_live_npn

    both = "0," * 23 + "0:15,15:w"  # FORMATS.md's readers take it; no game reaches it
    with pytest.raises(ValueError, match="^both sides have borne off all 15 checkers: no game reaches that"):
        parse_live_npn(both)
    with pytest.raises(StateError, match="^both sides have borne off all 15, which no game reaches"):
        outcome(parse_npn(both)[0])  # one row: no "state :" before it


def test_moves_rules_option_changes_the_result(capsys):
    pos = npn({24: 9, 13: 1, 9: 1, 8: 1, 7: 1, 6: 1, 5: 1}, {12: 14, 20: 1})
    line = json.dumps({"position": pos, "dice": [3, 5]}) + "\n"
    default = json.loads(nardy(capsys, "moves", "--jsonl", stdin=line).stdout)
    home = json.loads(nardy(capsys, "moves", "--jsonl", "--rules", '{"block_rule": "home"}', stdin=line).stdout)
    assert len(home["results"]) < len(default["results"])
    assert json.loads(nardy(capsys, "moves", "--jsonl", "--rules", "{block_rule: home}", stdin=line).stdout) == home
    bad = nardy(capsys, "moves", "--jsonl", "--rules", '{"blockrule": "home"}', stdin=line)
    assert bad.returncode == 2 and "unknown rules key" in bad.stderr and bad.stdout == ""  # no line answered


def test_bench_json_reports_throughput():
    out = run("bench", "--games", "200", "--json")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["games"] == 200
    for key in ("seconds", "games_per_s", "positions_per_s"):
        assert rec[key] > 0
    assert 40 < rec["plies_per_game"] < 300
    assert rec["seed"] == 0 and rec["rules"]["block_rule"] == "ahead"  # what the run played


def test_bench_functions_take_their_settings_by_name():
    """bench_env(100, 0) would have run zero envs: everything after the count is named."""
    from train.bench import bench_core, bench_env, bench_search

    for call in (lambda: bench_core(10, 0), lambda: bench_env(100, 0), lambda: bench_search("random", (0,))):
        with pytest.raises(TypeError, match="positional argument"):
            call()


@pytest.mark.parametrize("args, named", [(["bench", "--games", "0"], "--games"), (["nonsense"], "'nonsense'")])
def test_bad_command_lines_exit_non_zero(args, named):
    out = run(*args)  # a usage error (2) naming what is wrong, not a crash (1, with a traceback)
    assert out.returncode == 2 and named in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_bench_env_reports_vector_env_throughput():
    out = run("bench", "--env", "--games", "300", "--num-envs", "64", "--json", "--seed", "4",
              "--rules", '{"block_rule": "home"}')
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["games"] >= 300 and rec["games_per_s"] > 0 and rec["steps_per_s"] > 0
    assert rec["seed"] == 4 and rec["rules"]["block_rule"] == "home"


def test_bench_search_reports_cost_per_level(tmp_path, capsys):
    from agents.network import TDNetwork
    from agents.td import save_checkpoint

    save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((8,)))
    out = nardy(capsys, "bench", "--search", str(tmp_path), "--max-ply", "1", "--positions", "3", "--json")
    assert out.returncode == 0, out.stderr
    levels = json.loads(out.stdout)["levels"]
    assert [lv["ply"] for lv in levels] == [0, 1]
    assert levels[1]["positions_per_decision"] > 20 * levels[0]["positions_per_decision"]
    # The slowest decision bounds the mean from above (a frame budget needs the slow ones).
    assert all(0 < lv["ms_per_decision"] <= lv["ms_max"] <= lv["ms_per_decision"] * lv["decisions"] + 0.01
               for lv in levels)


def test_plot_draws_the_training_curve(tmp_path, capsys):
    records = [{"games_trained": g, "random": {"win_rate": w, "win_rate_ci95": [w - 0.05, w + 0.05]},
                "heuristic": {"win_rate": w / 2, "win_rate_ci95": [w / 2 - 0.05, w / 2 + 0.05]}}
               for g, w in ((1000, 0.6), (2000, 0.8), (3000, 0.9))]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = run("plot", str(tmp_path))  # the command itself, once; its refusals below in this process
    assert out.returncode == 0, out.stderr
    png = tmp_path / "training_curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000

    def plot(*args: str) -> tuple[int, str]:
        out = nardy(capsys, "plot", *args)
        return out.returncode, out.stderr

    status, err = plot(str(tmp_path / "missing"))  # a folder that is not there is said to be missing
    assert status == 2 and "missing: there is no such file or folder (give a run directory" in err
    (tmp_path / "empty").mkdir()
    status, err = plot(str(tmp_path / "empty"))
    assert status == 2 and f"no eval.jsonl at {tmp_path / 'empty' / 'eval.jsonl'}" in err
    (tmp_path / "odd" / "eval.jsonl").mkdir(parents=True)  # there, but no file: not called missing
    status, err = plot(str(tmp_path / "odd"))
    assert status == 2 and f"{tmp_path / 'odd' / 'eval.jsonl'} is a folder, not a file" in err
    (tmp_path / "afile").write_text("x")
    status, err = plot(str(tmp_path), "--out", str(tmp_path / "afile" / "curve.png"))
    assert status == 2 and "is a file, not a folder" in err
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records)[:-20])  # cut short
    png.unlink()
    status, err = plot(str(tmp_path))  # as while a run writes it, or after a kill: drawn without that line
    assert status == 0 and png.is_file(), err
    assert err.count("eval.jsonl: the last line is cut short") == 1 and "drawn without it" in err
    lines = [json.dumps(r) for r in records]
    lines[1] = lines[1][:-20]  # a damaged line inside the log is an error, not skipped
    (tmp_path / "eval.jsonl").write_text("\n".join(lines) + "\n")
    status, err = plot(str(tmp_path))
    assert status == 2 and "line 2 is not JSON" in err
    (tmp_path / "eval.jsonl").write_text("")  # a run that has not evaluated yet
    status, err = plot(str(tmp_path))
    assert status == 2 and "holds no evaluation yet" in err and "not a run's" not in err
    # Records of the wrong shape: one line saying so, no traceback (main would raise it here).
    for record in ({"games_trained": 1}, {"games_trained": 1, "random": {"win_rate": 0.5, "win_rate_ci95": [0.4]}},
                   {"games_trained": float("inf"), "random": {"win_rate": 0.5}}):  # json writes Infinity
        (tmp_path / "eval.jsonl").write_text(json.dumps(record) + "\n")
        status, err = plot(str(tmp_path))
        assert status == 2 and "is not a run's evaluation log" in err, err
        assert "Traceback" not in err
    # ... named by line and by what it should hold, not by Python's words for what failed on it.
    good = json.dumps(records[0])
    for line, says in (("[1, 2]", "line 2 is no evaluation record: a JSON list, not an object"),
                       ('{"games_trained": "x", "random": 5}', "line 2 is no evaluation record: games_trained is 'x', "
                                                               "not a count of games"),
                       ('{"games_trained": 5, "random": {"win_rate": NaN}}', "line 2 is no evaluation record: random's "
                                                                             "win_rate nan (95% CI None) is not a fraction"),
                       ("[" * 100_000 + "]" * 100_000, "line 2 is nested too deeply to read")):
        (tmp_path / "eval.jsonl").write_text(good + "\n" + line + "\n")
        status, err = plot(str(tmp_path))
        assert status == 2 and f"is not a run's evaluation log: {says}" in err, err
    from train.plots import record_fault

    assert record_fault({"games_trained": 1, "r": {"win_rate": 1.0, "win_rate_ci95": [0.9, 1.0]}}) == ""  # a perfect score
    assert record_fault({"games_trained": -1}).startswith("games_trained is -1")
    for result in ({"win_rate": 0.5, "win_rate_ci95": [0.4]}, {"win_rate": 0.5, "win_rate_ci95": [float("nan"), 0.6]},
                   {"win_rate": True}, {"win_rate": 1.01}, {"win_rate": 0.5, "win_rate_ci95": [0.4, 0.5, 0.6]}):
        assert "is not a fraction from 0 to 1" in record_fault({"games_trained": 1, "r": result}), result
    # Records without rules are read under config.json's beside them: one nested too deeply says nothing.
    # An interval of one pair reached infinity on 2026-11-29: such a record is drawn, cut at 0 and 1.
    one_pair = {"games_trained": 2, "random": {"win_rate": 0.5, "win_rate_ci95": [float("-inf"), float("inf")]}}
    (tmp_path / "eval.jsonl").write_text(good + "\n" + json.dumps(one_pair) + "\n")
    assert plot(str(tmp_path))[0] == 0
    (tmp_path / "eval.jsonl").write_text(good + "\n")
    (tmp_path / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    status, err = plot(str(tmp_path))
    assert status == 0, err


def test_plot_compares_runs_against_one_opponent(tmp_path, capsys):
    from PIL import Image

    from train.cli import main
    from train.plots import _COLORS, _OTHER

    def log(folder, opponents, rate):
        folder.mkdir()
        (folder / "eval.jsonl").write_text("".join(json.dumps(
            {"games_trained": g, **{o: {"win_rate": rate, "win_rate_ci95": [rate - 0.1, rate + 0.1]} for o in opponents}})
            + "\n" for g in (500, 1000)))

    log(tmp_path / "small", ["random", "heuristic"], 0.3)
    log(tmp_path / "big", ["random", "heuristic"], 0.6)
    log(tmp_path / "other", ["race"], 0.5)
    out = tmp_path / "cmp.png"
    assert main(["plot", str(tmp_path / "small"), str(tmp_path / "big"), "--out", str(out)]) == 0
    colors = {c for _, c in Image.open(out).convert("RGB").getcolors(1 << 20)}
    assert _COLORS["race"] in colors and _COLORS["heuristic"] in colors and _OTHER[0] not in colors  # two lines
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "small"), str(tmp_path / "big")]) == 2
    assert "a comparison (several runs, or --against) is a picture of its own: name it with --out" in capsys.readouterr().err
    small, big, other = (str(tmp_path / n) for n in ("small", "big", "other"))
    assert main(["plot", small, other, "--out", str(out), "--against", "random"]) == 2
    assert f"{other} never met random ({other} met race)" in capsys.readouterr().err
    assert main(["plot", small, other, "--out", str(out)]) == 2
    assert "share no opponent" in capsys.readouterr().err
    # An opponent named as the logs name it, give or take a trailing slash, ./ or Unicode normal form.
    import unicodedata

    bot = "runs/мой бот"  # as a run's eval_opponents would name another run
    log(tmp_path / "ru1", [bot], 0.4)
    log(tmp_path / "ru2", [bot], 0.5)
    ru1, ru2 = str(tmp_path / "ru1"), str(tmp_path / "ru2")
    for given in (bot + "/", "./" + bot, unicodedata.normalize("NFD", bot)):
        assert main(["plot", ru1, ru2, "--out", str(out), "--against", given]) == 0, capsys.readouterr().err
    assert main(["plot", ru1, ru2, "--out", str(out), "--against", "runs/мой"]) == 2
    assert "never met runs/мой" in capsys.readouterr().err
    for twice in ([small, small], [small, small + "/eval.jsonl"], [small, small + "/"]):  # one log, named twice
        assert main(["plot", *twice, "--out", str(out)]) == 2
        assert "is named twice" in capsys.readouterr().err
    # A run whose log is empty or damaged is named, whichever of the runs it is.
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "eval.jsonl").write_text("")
    assert main(["plot", small, str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert f"{tmp_path / 'empty' / 'eval.jsonl'} holds no evaluation yet" in capsys.readouterr().err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "eval.jsonl").write_text('{"games_trained": 1}\n{oops\n{"games_trained": 2}\n')
    assert main(["plot", small, str(tmp_path / "broken"), "--out", str(out)]) == 2
    assert f"{tmp_path / 'broken' / 'eval.jsonl'} is not a run's evaluation log: line 2" in capsys.readouterr().err
    # One run against one opponent is a comparison too: a picture of its own, never RUN/training_curve.png.
    assert main(["plot", big, "--against", "random"]) == 2
    assert "name it with --out FILE.png" in capsys.readouterr().err and not (tmp_path / "big" / "training_curve.png").exists()
    one = tmp_path / "one.png"
    assert main(["plot", big, "--against", "random", "--out", str(one)]) == 0
    assert _COLORS["heuristic"] not in {c for _, c in Image.open(one).convert("RGB").getcolors(1 << 20)}
    many = [str(tmp_path / f"r{k}") for k in range(13)]
    for run in many:
        log(Path(run), ["random"], 0.5)
    assert main(["plot", *many, "--out", str(out)]) == 2
    assert "13 runs are more than one picture tells apart (12 at most)" in capsys.readouterr().err


def test_plot_tells_a_bot_made_stronger_apart(tmp_path):
    """A bot's version (player_bot_version) tells its curves apart as a network's file does; a log
    from before versions were recorded met version 1 (the shipped player's eval.jsonl, say)."""
    from train.plots import compare_curves, training_curve

    def log(name, versions):
        (tmp_path / name).write_text("".join(json.dumps(
            {"games_trained": 500 * (n + 1), "heuristic": {
                "win_rate": 0.5, "win_rate_ci95": [0.4, 0.6], "player_sha256": None,
                **({} if version is None else {"player_bot_version": version})}}) + "\n"
            for n, version in enumerate(versions)))
        return tmp_path / name

    one, two, old = log("one.jsonl", [1, 1]), log("two.jsonl", [2]), log("old.jsonl", [None])
    with pytest.warns(UserWarning, match=r"the runs met different players named heuristic \(their versions differ\)"):
        compare_curves({"one": one, "two": two}, "heuristic", tmp_path / "c.png")
    with pytest.warns(UserWarning, match=r"heuristic is not the same player all along \(its version changed 1 time"):
        training_curve(log("both.jsonl", [1, 2]), tmp_path / "c.png")
    import warnings

    with warnings.catch_warnings():  # a log from before versions were recorded met version 1
        warnings.simplefilter("error")
        compare_curves({"one": one, "old": old}, "heuristic", tmp_path / "c.png")
    with pytest.warns(UserWarning, match=r"different players named heuristic \(their versions differ\)"):
        compare_curves({"two": two, "old": old}, "heuristic", tmp_path / "c.png")


def test_plot_warns_when_the_curves_do_not_compare(tmp_path, monkeypatch):
    """Runs evaluated under other rules, or against another player of the same name, are drawn with a
    warning; so is one run whose opponent's file changed along the way."""
    from train.plots import compare_curves, training_curve

    def log(name, rules, shas):
        (tmp_path / name).write_text("".join(json.dumps(
            {"games_trained": 500 * (n + 1), "rules": rules,
             "champ": {"win_rate": 0.5, "win_rate_ci95": [0.4, 0.6], "player_sha256": sha}}) + "\n"
            for n, sha in enumerate(shas)))
        return tmp_path / name

    std = log("std.jsonl", {}, ["a" * 64, "a" * 64])
    same = log("same.jsonl", {"head_exception": [6, 4, 3]}, ["a" * 64])  # the defaults, spelled out
    club = log("club.jsonl", {"block_rule": "home"}, ["a" * 64])
    other = log("other.jsonl", {}, ["b" * 64])
    changed = log("changed.jsonl", {}, ["a" * 64, "b" * 64])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_curves({"std": std, "same": same}, "champ", tmp_path / "ok.png")
        training_curve(std, tmp_path / "ok.png")
    with pytest.warns(UserWarning, match=r"evaluated under different rules \(std: .*; club: .*\"block_rule\": "
                                         r"\"home\".*not of the same game"):
        compare_curves({"std": std, "club": club}, "champ", tmp_path / "c.png")
    with pytest.warns(UserWarning, match="the runs met different players named champ"):
        compare_curves({"std": std, "other": other}, "champ", tmp_path / "c.png")
    with pytest.warns(UserWarning, match=r"changed.jsonl: champ is not the same player all along \(its file "
                                         r"changed 1 time during the run\)"):
        training_curve(changed, tmp_path / "c.png")
    for runs in ({"changed": changed}, {"changed": changed, "std": std}):  # said once, by the run it is about
        with pytest.warns(UserWarning) as said:
            compare_curves(runs, "champ", tmp_path / "c.png")
        assert [str(w.message).split(":")[0] for w in said] == ["changed"]
    # A log from before records carried rules is read under its run's config.json.
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "eval.jsonl").write_text("".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "rules"}) + "\n"
        for line in std.read_text().splitlines()))
    (tmp_path / "old" / "config.json").write_text(json.dumps({"rules": {"block_rule": "home"}}))
    with pytest.warns(UserWarning, match="evaluated under different rules"):
        compare_curves({"std": std, "old": tmp_path / "old" / "eval.jsonl"}, "champ", tmp_path / "c.png")
    # A run's own picture names a club variant in its title.
    import train.plots

    titles = []
    real = train.plots._curves
    monkeypatch.setattr(train.plots, "_curves", lambda lines, title, *rest: titles.append(title) or real(lines, title, *rest))
    training_curve(club, tmp_path / "t.png")
    training_curve(std, tmp_path / "t.png")
    training_curve(tmp_path / "old" / "eval.jsonl", tmp_path / "t.png")
    assert titles == ["Win rate against each opponent (paired dice, 0-ply; block_rule home)",
                      "Win rate against each opponent (paired dice, 0-ply)",
                      "Win rate against each opponent (paired dice, 0-ply; block_rule home)"]
    third = log("third.jsonl", {}, ["c" * 64])  # another player again, beside a run whose opponent changed
    with pytest.warns(UserWarning) as said:
        compare_curves({"changed": changed, "third": third}, "champ", tmp_path / "c.png")
    assert [str(w.message).split(":")[0] for w in said] == ["changed", "the runs met different players named champ (their files differ)"]
    monkeypatch.setattr(train.plots, "_curves", lambda lines, title, *rest: titles.append(title) or real(lines, title, *rest))
    compare_curves({"club": club}, "champ", tmp_path / "c.png")
    assert titles[-1] == "Win rate against champ (paired dice, 0-ply; block_rule home)"
    odd = log("odd.jsonl", {}, [["a"], 7])  # hand-edited values are no files, not a crash
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_curves({"odd": odd, "std": std}, "champ", tmp_path / "ok.png")


def test_plot_keeps_opponents_dropped_on_resume_and_labels_small_runs(tmp_path):
    from PIL import Image

    from train.plots import _COLORS, _games_label, _nice_step, training_curve

    def rec(games, *opponents):
        return {"games_trained": games, **{o: {"win_rate": 0.7, "win_rate_ci95": [0.6, 0.8]} for o in opponents}}

    # eval_opponents changed from [race] to [heuristic] halfway: both curves stay in the picture
    lines = [rec(256, "race"), rec(512, "race"), rec(768, "heuristic"), rec(1024, "heuristic")]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    png = training_curve(tmp_path / "eval.jsonl", tmp_path / "curve.png")
    colors = {c for _, c in Image.open(png).convert("RGB").getcolors(1 << 20)}
    assert _COLORS["race"] in colors and _COLORS["heuristic"] in colors
    step = _nice_step(1024 / 5)
    assert [_games_label(k * step, step) for k in range(int(1024 // step) + 1)] == ["0", "500", "1,000"]
    step = _nice_step(400_000 / 5)
    assert [_games_label(k * step, step) for k in range(3)] == ["0", "100k", "200k"]  # 0 as at any scale
    assert _games_label(2500, 500) == "2,500" and _games_label(2500, 2500) == "2.5k"


def test_moves_jsonl_agrees_with_the_reference_on_random_game_positions():
    # Issue 2's "done when": the command itself, not only the core, agrees with the plain reference.
    from nardy_env import format_npn
    from tests.nardy_env.test_against_reference import _apply, random_game_positions
    from tests.reference import reference_results

    cases = random_game_positions(3, seed=7)
    assert len(cases) >= 200
    lines = [json.dumps({"position": format_npn(s, c), "dice": list(d)}) for s, c, d in cases]
    out = run("moves", "--jsonl", stdin="\n".join(lines) + "\n")
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == len(cases)
    for (state, side, (d1, d2)), rec in zip(cases, answers, strict=True):
        position = format_npn(state, side)
        assert rec["position"] == position and rec["dice"] == [d1, d2]
        assert rec["results"] == sorted(reference_results(position, d1, d2)), position
        assert [p["result"] for p in rec["plays"]] == rec["results"]
        for play in rec["plays"]:
            assert _apply(position, play["moves"]) == play["result"]


@pytest.mark.parametrize(("args", "stdin", "message"), [
    (("moves", "--jsonl", START_NPN, "6", "5"), "", "--jsonl reads positions and dice from standard input"),
    (("hint", "--jsonl", START_NPN), "", "--jsonl reads positions and dice from standard input"),
    (("hint", "--player", "heuristic", "--policy", "checkpoints/default", START_NPN, "6", "5"), None,
     "give one player"),
    (("hint", "--player", "checkpoints/default@1", "--ply", "0", START_NPN, "6", "5"), None, "give the depth once"),
    (("bench", "--num-envs", "4"), None, "--num-envs applies with --env only"),
    (("bench", "--max-ply", "1"), None, "--max-ply applies with --search PLAYER only"),
    (("bench", "--env", "--search", "heuristic"), None, "choose one of --env and --search"),
    (("bench", "--search", "heuristic"), None, "a bot does not search"),
    (("bench", "--search", "checkpoints/default", "--games", "10"), None, "--games does not apply to --search"),
])
def test_conflicting_options_are_errors_not_silently_resolved(args, stdin, message, capsys):
    out = nardy(capsys, *args, stdin=stdin)
    assert out.returncode == 2, out.stdout
    assert message in out.stderr


def test_version_and_set_errors_that_name_their_source(capsys):
    from importlib.metadata import version

    import nardy_env

    out = nardy(capsys, "--version")
    assert nardy_env.__version__ == version("nardy")
    assert out.returncode == 0 and out.stdout.strip() == f"nardy {nardy_env.__version__}"
    out = nardy(capsys, "train", "--config", "configs/smoke.yaml", "--set", "actors=abc")
    assert out.returncode == 2 and "with --set actors" in out.stderr and "must be an integer" in out.stderr


def test_short_matches_use_one_worker_by_default():
    from train.evaluate import GAMES_PER_WORKER, default_workers

    assert default_workers(40) == 1 and default_workers(GAMES_PER_WORKER - 2) == 1
    assert default_workers(400) == 1  # two workers were a quarter slower than one process here
    assert 1 <= default_workers(100_000) <= (os.cpu_count() or 1)


def test_shipped_policy_ranks_winning_now_first_for_black_too(capsys):
    """A saturated unfinished result sorts before the win for black; the graph keeps it below."""
    line = json.dumps({"position": "0,0,0,0,0,0,0,0,0,0,0,0,-1,0,0,0,-1,0,0,0,0,0,0,15:0,13:b", "dice": [5, 1]})
    out = nardy(capsys, "hint", "--jsonl", "--policy", "checkpoints/default", stdin=line + "\n")
    assert out.returncode == 0, out.stderr
    ranked = json.loads(out.stdout)["ranked"]
    assert ranked[0]["result"].endswith(":0,15:w") and ranked[0]["equity"] == 2.0
    assert all(r["equity"] < 2.0 for r in ranked[1:])
    assert sorted(r["result"] for r in ranked)[0] != ranked[0]["result"]  # the tie-break alone would skip it


def test_the_cli_plain_warning_format_does_not_outlive_the_command(capsys):
    import warnings

    from train.cli import main

    before = warnings.showwarning
    assert main(["moves", START_NPN, "6", "5"]) == 0
    assert warnings.showwarning is before


def test_without_the_shipped_player_hint_says_the_heuristic_bot_plays_instead(capsys, monkeypatch, tmp_path):
    import train.hint
    from train.cli import main

    monkeypatch.setattr(train.hint, "SHIPPED_PLAYER", tmp_path / "nowhere")  # an installed package
    assert main(["hint", START_NPN, "6", "5"]) == 0
    out = capsys.readouterr()
    assert "no shipped player in this installation" in out.err and "heuristic bot plays instead" in out.err
    assert "heuristic's ranking" in out.out
    assert main(["hint", START_NPN, "6", "5", "--player", "race"]) == 0
    assert "no shipped player" not in capsys.readouterr().err  # only when none was named


def test_export_takes_default_for_the_shipped_player_like_every_command(monkeypatch, tmp_path):
    import train.export
    from agents.registry import SHIPPED_PLAYER
    from train.export import ExportError, _checkpoint_path

    monkeypatch.chdir(tmp_path)
    assert _checkpoint_path("default") == SHIPPED_PLAYER / "checkpoint.pt"
    (tmp_path / "default").mkdir()  # a folder of that name here comes first, as elsewhere
    with pytest.raises(ExportError, match="default is a folder without checkpoint.pt"):
        _checkpoint_path("default")
    (tmp_path / "default").rmdir()
    monkeypatch.setattr(train.export, "SHIPPED_PLAYER", tmp_path / "nowhere")  # an installed package
    with pytest.raises(ExportError, match="'default' names the shipped player, .*this installation lacks"):
        _checkpoint_path("default")


def _children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:  # it ended between the listing and the read
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_sigterm_stops_a_match_and_its_worker_processes(how):
    """A job scheduler's SIGTERM goes to nardy alone: its spawned workers must not play on, orphaned.
    Nor after a SIGKILL (or SIGHUP, the OOM killer), which leaves nardy no time to stop them: they
    see their parent gone and end themselves."""
    import signal
    import time

    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    proc = subprocess.Popen([*cmd, "eval", "random", "race", "--games", "200000", "--workers", "2", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: set[int] = set()
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(workers) < 2:  # two workers plus the resource tracker
            workers = {c for c in _children(proc.pid) if "spawn_main" in _cmdline(c)}
            time.sleep(0.2)
        assert len(workers) == 2, "the match did not start its two workers"
        proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=30)  # the workers hold its pipes too: they must end for this
        if how == "SIGTERM":
            assert proc.returncode == 143 and "nardy eval: terminated" in err, err
        else:
            assert proc.returncode == -signal.SIGKILL
        deadline = time.time() + 10
        while time.time() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
            time.sleep(0.2)
        left = [w for w in workers if "spawn_main" in _cmdline(w)]  # gone, or a zombie (empty cmdline)
        assert not left, f"worker processes {left} outlived the {how}"
    finally:  # pass or fail, nothing of the match keeps running
        if proc.poll() is None:
            proc.kill()
        for w in workers:
            if "spawn_main" in _cmdline(w):
                with contextlib.suppress(OSError):
                    os.kill(w, signal.SIGKILL)


def test_eval_chunk_pairs_reproduces_a_python_result(capsys):
    """A result made with another chunk_pairs (it decides a randomising player's draws) is reproducible."""
    from train.evaluate import evaluate

    out = run("eval", "random", "race", "--games", "40", "--seed", "3", "--chunk-pairs", "5", "--json")  # another process
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == json.loads(json.dumps(
        evaluate("random", "race", 40, seed=3, chunk_pairs=5).summary()))
    default = json.loads(nardy(capsys, "eval", "random", "race", "--games", "40", "--seed", "3", "--json").stdout)
    assert default["chunk_pairs"] == 100


def test_eval_writes_game_records(tmp_path, capsys):
    out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--seed", "3", "--records", str(tmp_path / "games.jsonl"))
    assert out.returncode == 0, out.stderr
    assert f"game records: {tmp_path / 'games.jsonl'} (4 games, one JSON line each)" in out.stdout
    records = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert [r["game"] for r in records] == [0, 1, 2, 3] and records[0]["white"] == "race"
    out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--records", str(tmp_path / "nowhere" / "g.jsonl"))
    assert out.returncode == 2 and "folder" in out.stderr and "does not exist" in out.stderr
    out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--records", str(tmp_path))
    assert out.returncode == 2 and "is a folder; give a file name" in out.stderr
    # A trailing slash names a folder: once a file "new" was written for "new/", and "g.jsonl/" replaced g.jsonl.
    for name in ("new/", "games.jsonl/"):
        out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--records", str(tmp_path / name) + "/")
        assert out.returncode == 2 and "names a folder; give a file name" in out.stderr, out.stderr
    assert not (tmp_path / "new").exists() and len((tmp_path / "games.jsonl").read_text().splitlines()) == 4
    (tmp_path / "afile").write_text("x")
    out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--records", str(tmp_path / "afile" / "g.jsonl"))
    assert out.returncode == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in out.stderr


def test_eval_records_go_to_standard_output_through_dev_stdout(tmp_path):
    link = tmp_path / "stdout"  # a link to /dev/stdout, so the test never touches /dev/stdout itself
    link.symlink_to("/dev/stdout")
    out = run("eval", "race", "heuristic", "--games", "2", "--seed", "3", "--json", "--records", str(link))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [json.loads(line)["game"] for line in lines[:2]] == [0, 1] and json.loads(lines[-1])["games"] == 2
    assert link.is_symlink()  # not replaced by a file


def test_curves_differ_by_marker_not_only_by_colour_and_long_names_show_their_cut():
    from PIL import Image, ImageDraw

    from train.plots import _MARKERS, _marker, _short

    shapes = []
    for shape in _MARKERS:
        img = Image.new("1", (20, 20), 0)
        _marker(ImageDraw.Draw(img), 10, 10, shape, 1)
        shapes.append(img.tobytes())
    assert len(set(shapes)) == len(_MARKERS) == 4  # one shape per curve, in one colour each
    assert _short("heuristic") == "heuristic"
    cut = _short("/home/someone/experiments/runs/quick-12")
    assert cut.startswith("...") and cut.endswith("runs/quick-12") and len(cut) == 24


def test_curves_put_their_interval_bars_side_by_side_and_ring_closing_evaluations(tmp_path):
    """Two opponents' bars at the same count both show (neither hides the other), and a closing
    evaluation's point is ringed, with a legend entry saying so."""
    import numpy as np
    from PIL import Image

    from train.plots import _COLORS, training_curve

    rec = {"random": {"win_rate": 0.5, "win_rate_ci95": [0.2, 0.8]},
           "race": {"win_rate": 0.5, "win_rate_ci95": [0.2, 0.8]}}
    log = tmp_path / "eval.jsonl"
    log.write_text("".join(json.dumps({"games_trained": g, "final": g == 2000, **rec}) + "\n" for g in (1000, 2000)))
    pixels = np.asarray(Image.open(training_curve(log, tmp_path / "c.png")).convert("RGB"))
    height = pixels.shape[0]
    bar_row = pixels[round(50 + (height - 50 - 70) * (1 - 0.3)), 81:729]  # the 30% line inside the frame: bars only
    colours = {tuple(p) for p in bar_row}
    assert tuple(_COLORS["random"]) in colours and tuple(_COLORS["race"]) in colours
    assert (pixels[60:440, 90:720].sum(axis=2) == 0).sum() > 10  # black rings inside the frame
    log.write_text("".join(json.dumps({"games_trained": g, "final": False, **rec}) + "\n" for g in (1000, 2000)))
    pixels = np.asarray(Image.open(training_curve(log, tmp_path / "c.png")).convert("RGB"))
    assert (pixels[60:440, 90:720].sum(axis=2) == 0).sum() == 0  # no closing evaluation: no ring


def test_eval_records_through_dev_stdout_into_a_file_come_before_the_summary(tmp_path):
    link = tmp_path / "stdout"
    link.symlink_to("/dev/stdout")
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    with open(tmp_path / "out.jsonl", "wb") as out:  # `nardy eval ... --records /dev/stdout > out.jsonl`
        done = subprocess.run([*cmd, "eval", "race", "heuristic", "--games", "4", "--seed", "3", "--json",
                               "--records", str(link)], stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["game"] for line in lines[:4]] == [0, 1, 2, 3]
    assert json.loads(lines[-1])["games"] == 4 and len(lines) == 5


def test_a_records_link_into_a_missing_folder_is_refused_before_the_match(tmp_path, capsys):
    link = tmp_path / "records.jsonl"
    link.symlink_to(tmp_path / "gone" / "records.jsonl")
    out = nardy(capsys, "eval", "race", "heuristic", "--games", "4", "--records", str(link))
    assert out.returncode == 2 and "does not exist" in out.stderr and "gone" in out.stderr


def test_plot_beside_a_run_log_replaces_a_link_there_not_its_target(tmp_path):
    (tmp_path / "eval.jsonl").write_text(json.dumps({"games_trained": 256, "random": {"win_rate": 0.9}}) + "\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / "training_curve.png").symlink_to(victim)
    out = run("plot", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert victim.read_text() == "mine" and not (tmp_path / "training_curve.png").is_symlink()


def test_jsonl_answers_an_overlong_line_with_an_error_and_goes_on():
    good = json.dumps({"position": START_NPN, "dice": [6, 5]})
    huge_key = json.dumps({"position": START_NPN, "dice": [6, 5], "k" * 500_000: 1})  # no slow near-miss search
    stdin = "\n".join([good, "x" * 2_000_000, huge_key, good]) + "\n"
    out = run("moves", "--jsonl", stdin=stdin, timeout=60)
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == 4 and out.returncode == 1
    assert "results" in answers[0] and "results" in answers[3] and "results" in answers[2]
    assert answers[1]["error"].startswith("line longer than 1,048,576 bytes")


def test_jsonl_answers_a_line_whatever_failed_on_it(monkeypatch, capsys):

    import train.cli

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"a": 1}\n{"b": 2}\n')))
    calls = []

    def answer(line):
        calls.append(line)
        if len(calls) == 1:
            raise RuntimeError("the served graph failed")  # onnxruntime's own errors, say
        return {"ok": True}

    assert train.cli._jsonl(answer) == 1
    first, second = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert first == {"error": "could not answer this line: RuntimeError: the served graph failed"}
    assert second == {"ok": True}


def test_only_near_misses_of_stream_options_are_refused_not_a_callers_own_keys(capsys):
    import train.moves

    for key in ("Rule", "rules", "RULES", "--ply", "Ply", "plies", "top", "players", "Policy", "policies", "filter",
                "Filters", "--filter"):
        line = json.dumps({"position": START_NPN, "dice": [6, 5], key: 1})
        with pytest.raises(ValueError, match=f"'{key}' cannot be set per line"):
            train.moves.moves_record(line, ranked=True)  # nardy hint's: every one is its option
        ranking = key.lower().strip("-")[:2] != "ru"  # (a line with rules too is told both: below)
        # nardy moves has --rules only: the ranking's keys send the caller to nardy hint, not to a
        # --ply that nardy moves would refuse.
        with pytest.raises(ValueError, match=("nardy moves lists the legal plays without ranking them; to rank "
                                              "them, send the line to nardy hint --jsonl with --")
                           if ranking else f"'{key}' cannot be set per line"):
            train.moves.moves_record(line)
    both = json.dumps({"position": START_NPN, "dice": [6, 5], "ply": 1, "rules": {}})
    with pytest.raises(ValueError, match=r"send the line to nardy hint --jsonl with --ply on its command line; and "
                                         r"'rules' cannot be set per line either \(--rules"):
        train.moves.moves_record(both)  # not sent to hint only to be refused there for its rules
    # moves' own answer fed to hint carries "plays"; ids and tags are the caller's.
    for key in ("plays", "reply", "apply", "topic", "topies", "stop", "ruleset", "policy_id", "id", "k" * 100_000):
        line = json.dumps({"position": START_NPN, "dice": [6, 5], key: 1})
        assert train.moves.moves_record(line)["results"]
    piped = nardy(capsys, "moves", "--jsonl", stdin=json.dumps({"position": START_NPN, "dice": [6, 5]}) + "\n")
    out = nardy(capsys, "hint", "--jsonl", "--player", "heuristic", stdin=piped.stdout)
    assert out.returncode == 0 and json.loads(out.stdout)["ranked"], out.stdout


def test_main_returns_every_exit_status_to_a_python_caller(capsys):
    """argparse and the usage errors end with SystemExit; main() turns it into the status it returns."""
    from train.cli import main

    assert main(["--version"]) == 0
    assert main(["eval", "random"]) == 2  # argparse: B is missing
    assert main(["eval", "random", "nosuchplayer", "--games", "2"]) == 2  # a usage error of nardy's own
    assert main(["moves", "not an npn", "6", "5"]) == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: B" in err and "nosuchplayer" in err


@pytest.mark.parametrize("argv", [
    ["export", "checkpoints/default", "--out", ""],  # an unset variable: would write into the current folder
    ["export", "", "--out", "x"],
    ["play", "--against", ""],  # would play the default player instead
    ["hint", "--player", ""],
    ["hint", "--policy", " "],
    ["eval", "", "heuristic"],
    ["eval", "random", "race", "--records", ""],  # would write no records, silently
    ["ladder", "random", "", "--png", "x.png"],
    ["ladder", "random", "race", "--png", ""],
    ["train", "--config", ""],
    ["train", "--config", "configs/smoke.yaml", "--out", ""],
    ["train", "--resume", ""],
    ["train", "--config", "configs/smoke.yaml", "--address", ""],
    ["plot", ""],
    ["plot", "runs/x", "--out", ""],
])
def test_empty_names_and_paths_are_refused_by_the_parser(argv, capsys):
    from train.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert "must not be empty or blank" in capsys.readouterr().err


@pytest.mark.parametrize("games, message", [("3", "an even number >= 2 (games are played in pairs), got 3; 4 would do"),
                                            ("0", "an even number >= 2 (games are played in pairs), got 0\n"),
                                            ("1000000000000", "at most 10,000,000 in one match"),
                                            # odd and too many: the limit, not "10000002 would do" (then refused)
                                            ("10000001", "at most 10,000,000 in one match, got 10,000,001;")])
@pytest.mark.parametrize("command", ["eval", "ladder"])
def test_eval_refuses_bad_game_counts_before_playing(games, message, command, capsys):
    from train.cli import main

    # A player that would take long to load (and warn) is never loaded: the count is refused first.
    assert main([command, "random", "missing-player-folder/", "--games", games]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nardy {command}: --games must be") and message in err and "Traceback" not in err
    assert "missing-player-folder" not in err


@pytest.mark.parametrize("argv, option", [
    (["eval", "random", "race", "--games", "2", "--records", "-"], "--records"),
    (["ladder", "random", "race", "--games", "2", "--png", "-"], "--png"),
    (["plot", str(Path(__file__).parents[2] / "checkpoints" / "default"), "--out", "-"], "--out"),
])
def test_a_dash_for_an_output_file_is_refused_not_written_as_a_file_named_dash(argv, option, capsys, tmp_path,
                                                                               monkeypatch):
    from train.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{option} -: " in err and ("give a file name" in err or "give a name ending in .png" in err)
    assert not (tmp_path / "-").exists()


def test_an_interruption_inside_compiled_code_exits_as_an_interruption(monkeypatch, capsys):
    """numba turns a Ctrl-C (or SIGTERM) during a compiled call into a SystemError caused by it."""
    import train.cli as cli

    def compiled(raised: BaseException):
        def command(args):
            try:
                raise raised
            except BaseException as exc:
                raise SystemError("CPUDispatcher(<function _generate>) returned a result with an exception "
                                  "set") from exc
        return command

    for raised, code, said in ((KeyboardInterrupt(), 130, "nardy bench: interrupted"),
                               (cli.Terminated(), 143, "nardy bench: terminated")):
        monkeypatch.setattr(cli, "_cmd_bench", compiled(raised))
        assert cli.main(["bench"]) == code
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
    monkeypatch.setattr(cli, "_cmd_bench", compiled(ValueError("a real fault")))
    with pytest.raises(SystemError):  # anything else stays an error
        cli.main(["bench"])


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "soon"])
def test_max_seconds_must_be_a_positive_finite_number(seconds, capsys):
    """0, a negative number or nan once started Ray and wrote a run of 0 games."""
    from train.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["train", "--config", "configs/smoke.yaml", "--max-seconds", seconds])
    assert stop.value.code == 2 and "argument --max-seconds:" in capsys.readouterr().err
    assert build_parser().parse_args(["train", "--resume", "r", "--max-seconds", "1.5"]).max_seconds == 1.5


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_output_on_a_full_disk_is_one_line_and_status_1():
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    for args, stdin in ((["moves", START_NPN, "6", "5"], None),
                        (["moves", "--jsonl"], json.dumps({"position": START_NPN, "dice": [6, 5]}) + "\n"),
                        (["eval", "random", "race", "--games", "4", "--json"], None),
                        (["play", "--against", "random"], "quit\ny\n")):
        with open("/dev/full", "w") as full:
            out = subprocess.run([*cmd, *args], input=stdin, stdout=full, stderr=subprocess.PIPE, text=True,
                                 timeout=120)
        assert out.returncode == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr and out.stderr.strip().endswith(
            f"nardy {args[0]}: a write failed: No space left on device"), (args, out.stderr)


def test_an_error_that_is_not_a_failed_write_keeps_its_traceback(monkeypatch, capsys):
    import errno

    from train import cli

    def refused(args):  # as multiprocessing's SemLock on a locked-down /dev/shm: no file name
        raise PermissionError(errno.EACCES, "Permission denied")

    import argparse

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands.choices["bench"].set_defaults(func=refused)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    with pytest.raises(PermissionError):
        cli.main(["bench", "--games", "1"])


def test_usage_errors_are_caught_before_any_work_and_alike_across_commands(tmp_path, capsys):
    # No option prefixes: `--game` is not `--games` (a later option would break such a script).
    out = nardy(capsys, "eval", "--game", "10", "random", "race")
    assert out.returncode == 2 and "unrecognized arguments: --game" in out.stderr
    # ...said by the command's own parser, with its usage and the option most likely meant.
    assert "nardy eval: error:" in out.stderr and "usage: nardy eval" in out.stderr
    assert "(did you mean --games?)" in out.stderr
    out = nardy(capsys, "moves", START_NPN, "6", "5", "--ply", "1")  # an option of other commands only
    assert out.returncode == 2 and "usage: nardy moves" in out.stderr
    assert "(--ply is an option of nardy hint, nardy play, not of nardy moves)" in out.stderr
    out = nardy(capsys, "--json", "eval", "random", "race")  # the command's own option, before its name
    assert out.returncode == 2 and "--json comes before the command's name: options go after it" in out.stderr
    out = nardy(capsys, "eval", "random", "race", "--", "--games", "4")  # after the name, but made positional by --
    assert out.returncode == 2 and "(after '--' every argument is a positional one)" in out.stderr
    assert "options go after" not in out.stderr
    out = nardy(capsys, "--games", "4", "eval", "random", "race")  # not "invalid choice: '4'"
    assert out.returncode == 2 and ("--games comes before the command's name: options go after it, nardy eval ... "
                                    "--games") in out.stderr and "usage: nardy eval" in out.stderr
    assert nardy(capsys, "--version").returncode == 0 and nardy(capsys, "-h").returncode == 0  # nardy's own options stay where they are
    out = nardy(capsys, "eval", "random", "race", "--version")
    assert out.returncode == 2 and "(the version is nardy --version's)" in out.stderr
    # An empty --rules (an unset shell variable) is named, not read as the defaults.
    out = nardy(capsys, "moves", START_NPN, "6", "5", "--rules", "")
    assert out.returncode == 2 and "--rules is empty" in out.stderr
    # Bad JSON is shown as received: here the shell ate the quotes the user typed.
    out = nardy(capsys, "moves", START_NPN, "6", "5", "--rules", "{block_rule:home}")
    assert out.returncode == 2 and ("--rules is not valid JSON: Expecting property name enclosed in double quotes at "
                                    "column 2 of '{block_rule:home}' (quote the whole object") in out.stderr
    # nardy export: '-' is no folder; bad numbers are usage errors (2), found before any loading.
    out = nardy(capsys, "export", "default", "--out", "-")
    assert out.returncode == 2 and "--out -: give a folder" in out.stderr and not Path("-").exists()
    for option, value in (("--tolerance", "-1"), ("--tolerance", "nan"), ("--positions", "0"), ("--opset", "0")):
        out = nardy(capsys, "export", "default", "--out", str(tmp_path / "x"), option, value)
        assert out.returncode == 2 and f"argument {option}" in out.stderr, (option, out.stderr)
    assert not (tmp_path / "x").exists()
    # Pictures are PNG files, named so; '-' gets the same message everywhere.
    out = nardy(capsys, "plot", str(Path(__file__).resolve().parents[2] / "checkpoints/default"), "--out",
              str(tmp_path / "curve.jpg"))
    assert out.returncode == 2 and "give a name ending in .png" in out.stderr
    out = nardy(capsys, "ladder", "random", "race", "--games", "2", "--png", "-")
    assert out.returncode == 2 and "--png -: give a file name" in out.stderr
    # ... and the /dev/stdout that message suggests is taken, whatever its name says.
    cmd = [str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"]
    picture = subprocess.run([*cmd, "plot", str(Path(__file__).resolve().parents[2] / "checkpoints/default"),
                              "--out", "/dev/stdout"], capture_output=True, timeout=120)
    assert picture.returncode == 0 and picture.stdout.startswith(b"\x89PNG"), picture.stderr


def test_rules_without_their_inner_quotes_are_taken_as_windows_shells_pass_them(capsys):
    """Windows PowerShell 5.1 passes '{"block_rule": "home"}' on as {block_rule: home}, and cmd.exe
    users would have to escape every inner quote: the object without them is taken too."""
    from nardy_env import Rules
    from train import cli

    assert cli._asked_rules("{block_rule: home}") == Rules(block_rule="home")
    assert cli._asked_rules(" {head_exception: [3, 4], opening: reroll} ") == Rules(head_exception=(3, 4),
                                                                                  opening="reroll")
    assert cli._asked_rules('{"head_exception": []}') == Rules(head_exception=())
    for text, said in (("{block_rule:home}", "--rules is not valid JSON"),  # one key without a value
                       ("block_rule: home", "--rules is not valid JSON"),  # no object
                       ("{block_rule: [home}", "--rules is not valid JSON"),
                       ("{opening: no}", "--rules: opening must be one of"),  # YAML's no is false
                       ("{colour: home}", "--rules: unknown rules key(s) ['colour']")):
        with pytest.raises(SystemExit) as exit_:
            cli._asked_rules(text)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and said in err, (text, err)
        if "JSON" in said:
            assert 'or leave out the inner quotes: "{block_rule: home}", a space after each colon)' in err
    # No YAML anchors or aliases (273 bytes of them made a list of billions), no tags, no deep
    # nesting, nothing long: each is one line and status 2, at once.
    bomb = "{head_exception: [&a [x,x,x,x,x,x,x,x,x], " + ", ".join(
        f"&{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefg", "bcdefgh", strict=True)) + "]}"
    deep = 497  # 999 characters, under the cap; PyYAML recurses once per level
    for text, said in ((bomb, "--rules is not valid JSON"),
                       ("{block_rule: !!python/name:os.system home}", "--rules is not valid JSON"),
                       ("{head_exception: !!set {3: null}}", "--rules is not valid JSON"),
                       ("{a: " + "[" * deep + "]" * deep + "}", "--rules is not valid JSON"),
                       ('{"a": ' + "[" * 490 + "]" * 490 + "}", "--rules: unknown rules key(s) ['a']"),
                       ("{" + " " * 1000 + "}", "--rules is 1,002 characters long; rule variants take at most 1,000")):
        with pytest.raises(SystemExit) as exit_:
            cli._asked_rules(text)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and said in err and len(err) < 3000, (text[:40], err[:300])


def test_bench_search_json_names_its_seed_and_rules():
    out = run("bench", "--search", "default", "--max-ply", "0", "--positions", "3", "--seed", "5", "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout.splitlines()[-1])
    assert record["seed"] == 5 and record["rules"]["block_rule"] == "ahead" and record["levels"][0]["ply"] == 0


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell closes stdout")
def test_jsonl_with_standard_output_closed_ends_quietly():
    line = json.dumps({"position": START_NPN, "dice": [6, 5]})
    cmd = " ".join([str(NARDY)] if NARDY.exists() else [sys.executable, "-m", "train.cli"])
    out = subprocess.run(["bash", "-c", f"{cmd} moves --jsonl >&-"], input=line + "\n", capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


def test_chart_labels_tell_players_apart_and_a_sweep_does_not_stretch_the_axis(tmp_path, monkeypatch):
    import PIL.ImageDraw

    from train.plots import _labels, _signed, ladder_chart

    same_end = ["runs/baseline/checkpoint-000400000.pt", "runs/bigger_net/checkpoint-000400000.pt", "random"]
    labels = _labels(same_end)
    assert len(set(labels)) == 3 and labels[2] == "random" and all(len(x) <= 24 for x in labels)
    assert "baseline" in labels[0] and "bigger_net" in labels[1]
    assert len(set(_labels(["a" * 40 + "z", "b" * 40 + "z", "c" * 40 + "z"], 12))) == 3
    assert _labels(["race", "race"]) == ["1: race", "2: race"]
    assert len(set(_labels(["x" * 30, "x" * 30]))) == 2 and _labels(["x" * 30, "x" * 30])[1].startswith("2: ")
    assert len(set(_labels(["race", "race", "1: race"]))) == 3
    assert _signed(-0.4) == "+0" and _signed(-3.6) == "-4"

    def rating(player, elo, lo, hi, group):
        return {"player": player, "elo": elo, "elo_ci95": [lo, hi], "group": group}

    # heuristic swept everyone: its interval's far end is a pseudo-win value of thousands.
    swept = {"games_per_pair": 20, "ratings": [rating("race", 0, 0, 0, 1), rating("random", -40, -150, 60, 1),
                                              rating("heuristic", 700, 300, 3000, 0)]}
    drawn = []
    original = PIL.ImageDraw.ImageDraw.text

    def recording(self, xy, text, *args, **kwargs):
        drawn.append(text)
        return original(self, xy, text, *args, **kwargs)

    monkeypatch.setattr(PIL.ImageDraw.ImageDraw, "text", recording)
    ladder_chart(swept, tmp_path / "ladder.png")
    ticks = [int(text) for text in drawn if text.lstrip("+-").isdigit()]  # the axis (and value) labels
    assert max(ticks) <= 600 and min(ticks) >= -200, ticks  # a little past +300, not +3000
    assert ">=+300" in drawn
    assert not any(text.startswith("seed") for text in drawn)  # a result that does not say its seed
    # The footer says what reproduces the chart: seed, the rules that differ from the sports code, version.
    drawn.clear()
    from nardy_env import Rules

    home = Rules(block_rule="home").to_dict()
    ladder_chart({**swept, "seed": 5, "matches": [{"rules": home, "nardy_version": "9.9"}]}, tmp_path / "l2.png")
    assert 'seed 5, rules {"block_rule": "home"}, nardy 9.9' in drawn
    assert Rules().changes() == {} and Rules(head_exception=()).changes() == {"head_exception": []}



def test_pictures_of_names_beyond_ascii_use_a_font_that_has_their_letters(monkeypatch):
    import warnings

    import train.plots as plots

    _, _, font, _ = plots._canvas(10, 10, 15, 13, ["race", "heuristic"])
    assert not isinstance(getattr(font, "path", None), str)  # Pillow's own, from its package (no file name)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        _, _, font, small = plots._canvas(10, 10, 15, 13, ["мой бот"])
    if said:  # a system without any of them: said, not drawn as boxes silently
        assert "no font with 'бймот' found" in str(said[0].message)
    else:  # Pillow's default draws Cyrillic as boxes
        assert os.path.basename(font.path) in plots._WIDE_FONTS and font.size == 15 and small.size == 13
    # The font must have the letters: DejaVu has Cyrillic but no Chinese, which is said (and the
    # Cyrillic still drawn with it rather than with Pillow's font, which has neither).
    from PIL import ImageFont

    try:
        ImageFont.truetype("DejaVuSans.ttf", 15)
    except OSError:
        dejavu = False
    else:
        dejavu = True
        monkeypatch.setattr(plots, "_WIDE_FONTS", ("DejaVuSans.ttf",))
        with pytest.warns(UserWarning, match="no font with '家玩' found"):
            _, _, font, _ = plots._canvas(10, 10, 15, 13, ["мой бот", "玩家"])
        assert os.path.basename(font.path) == "DejaVuSans.ttf"
    # Labels are shortened to the pixels they have, keeping their end.
    long = "runs/эксперимент_длинное_имя"
    fitted = plots._fit(long, font, 120)
    assert font.getlength(fitted) <= 120 and fitted.startswith("...") and long.endswith(fitted[3:])
    assert plots._fit("race", font, 120) == "race"
    assert dejavu or said  # on a system without DejaVu the first half said so
    monkeypatch.setattr(plots, "_WIDE_FONTS", ("no-such-font-here.ttf",))
    with pytest.warns(UserWarning, match=r"no font with 'бймот' found \(looked for no-such-font-here.ttf\).*"
                                         r".*install one that has them, e.g. DejaVu Sans"):
        plots._canvas(10, 10, 15, 13, ["мой бот"])


def test_hostile_surroundings_give_one_line_and_the_documented_status(tmp_path, capsys):
    # Standard error closed (2>&-): the messages go nowhere, never into the output.
    cmd = str(NARDY) if NARDY.exists() else f"{sys.executable} -m train.cli"
    out = subprocess.run(["bash", "-c", f"{cmd} eval heuristic nobody --games 2 2>&-"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out.stdout
    # A path longer than the system takes is bad input (2) in one line, whatever names it.
    long = str(tmp_path / ("x" * 300))
    for args in (("eval", "random", "race", "--games", "2", "--records", long + ".jsonl"),
                 ("ladder", "random", "race", "--games", "2", "--png", long + ".png"),
                 ("export", "default", "--out", long),
                 ("hint", "--policy", long, START_NPN, "6", "5"),
                 ("eval", long + ".pt", "random", "--games", "2")):
        out = run(*args)  # a fresh process: its one line is all it says
        assert out.returncode == 2, (args, out.stderr)
        assert "Traceback" not in out.stderr and "file name too long (" in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    # A name the system takes, but not with the temporary file's additions: refused before the games.
    from agents.files import TEMP_NAME_EXTRA

    longest = os.pathconf(tmp_path, "PC_NAME_MAX") - TEMP_NAME_EXTRA
    out = nardy(capsys, "eval", "random", "race", "--games", "2", "--records", str(tmp_path / ("r" * (longest + 1))))
    assert out.returncode == 2 and f"the file name is too long (at most {longest} bytes here)" in out.stderr, out.stderr


def test_output_files_are_checked_where_os_has_no_pathconf_and_by_a_file_made_there(monkeypatch, capsys, tmp_path):
    """Windows has no os.pathconf (the name length check assumes 255 bytes there), and its
    os.access says yes to folders whose access rules refuse the user: a file made and removed
    in the folder says, before the games."""
    import errno

    from train import cli, evaluate

    monkeypatch.delattr(os, "pathconf")
    assert cli.main(["plot", "checkpoints/default", "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    real_open = os.open

    def refused(path, *args, **kwargs):
        if os.path.basename(path).startswith(".nardy-eval-probe-"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    monkeypatch.setattr(evaluate, "evaluate", lambda *a, **k: pytest.fail("played before the check"))
    records = tmp_path / "games.jsonl"
    assert cli.main(["eval", "random", "race", "--games", "2", "--records", str(records)]) == 2
    assert capsys.readouterr().err.strip() == (f"nardy eval: --records {records}: no file can be made in folder "
                                               f"{tmp_path} (Permission denied)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.png"]


def test_an_unreadable_player_or_a_dead_worker_is_one_line_and_status_2(monkeypatch, capsys):
    import errno

    from train import cli, evaluate

    def unreadable(spec, rules=None):
        raise PermissionError(errno.EACCES, "Permission denied", "/runs/x/checkpoint.pt")

    monkeypatch.setattr(evaluate, "load_saying_once", unreadable)
    assert cli.main(["eval", "random", "race", "--games", "2"]) == 2  # returned, as every status main() gives
    assert capsys.readouterr().err.strip() == "nardy eval: cannot read /runs/x/checkpoint.pt: Permission denied"
    monkeypatch.undo()

    def killed(*args, **kwargs):  # a worker killed for memory, as evaluate() reports it
        raise evaluate.WorkerDied("a worker process of the match died or could not start (...)")

    monkeypatch.setattr(evaluate, "evaluate", killed)
    assert cli.main(["eval", "random", "race", "--games", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nardy eval: a worker process of the match stopped abruptly (killed, perhaps for want of memory, or "
        "crashed in a player's native code); try fewer --workers, or --workers 1 to see a player's error")


def test_records_that_cannot_be_written_do_not_lose_the_result(monkeypatch, capsys, tmp_path):
    import errno

    import agents.files
    from train import cli

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(agents.files, "write_atomic", full)
    assert cli.main(["eval", "random", "race", "--games", "2", "--json", "--records", str(tmp_path / "r.jsonl")]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["games"] == 2  # the match's result, printed though the records failed
    assert err.strip().endswith("could not write " + str(tmp_path / "r.jsonl") + ": No space left on device")
    assert cli.main(["eval", "random", "race", "--games", "2", "--records", str(tmp_path / "r.jsonl")]) == 1
    out, err = capsys.readouterr()
    assert "points per game" in out and "game records:" not in out and "could not write" in err


def test_a_stopped_play_session_ends_with_one_message_and_no_blank_line(monkeypatch, capsys):
    """The session ends its line with the score; the command's own word follows at once (a progress
    bar's command starts a fresh line first)."""
    import train.cli as cli
    import train.play as play

    def session(*args, **kwargs):
        print("\nInterrupted. Score: you 0, random 0.")
        raise KeyboardInterrupt
    monkeypatch.setattr(play, "play_session", session)
    assert cli.main(["play", "--against", "random"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "nardy play: interrupted\n" and captured.out.endswith("random 0.\n")
    monkeypatch.setattr(cli, "_cmd_bench", lambda args: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert cli.main(["bench"]) == 130 and capsys.readouterr().err == "\nnardy bench: interrupted\n"


def test_odd_arguments_are_refused_in_one_line_naming_them(capsys, tmp_path):
    """Found by throwing odd arguments at every command: each of these gave a traceback (exit 1),
    ran for ever, ran something else than asked, or blamed another argument."""
    from agents.search import MAX_PLY

    position = START_NPN
    for args, said in (
        (["bench", "--env", "--num-envs", str(10**12), "--games", "2"],
         "nardy bench: --num-envs 1,000,000,000,000: too many sub-environments for this machine's memory"),
        (["bench", "--search", "default", "--max-ply", str(10**12)],
         f"argument --max-ply: must be from 0 to {MAX_PLY} (each ply beyond 2 costs about 100 times more"),
        (["hint", position, "6", "5", "--ply", str(MAX_PLY + 1)], f"argument --ply: must be from 0 to {MAX_PLY}"),
        (["eval", f"default@{10**12}", "random", "--games", "2"], f"ply must be a whole number from 0 to {MAX_PLY}"),
        (["bench", "--search", ""], "argument --search: must not be empty or blank"),  # ran the core benchmark
        (["hint", "--plyr", "heuristic", position, "6", "5"], "unrecognized arguments: --plyr (did you mean --ply?)"),
        (["moves", "--rul", "{}", position, "6", "5"], "unrecognized arguments: --rul (did you mean --rules?)"),
        (["bench", "--games", "2", "--rules", '{"block_rule": "home", "block_rule": "ahead"}'],
         "--rules gives block_rule twice; give each variant key once"),
        (["bench", "--games", "2", "--rules", "{block_rule: home, block_rule: ahead}"],
         "--rules gives block_rule twice"),
    ):
        out = nardy(capsys, *args)
        assert out.returncode == 2 and said in out.stderr.strip().splitlines()[-1], (args, out.stderr[-600:])
        assert "Traceback" not in out.stderr, out.stderr
    # Help comes first, and a value with a space in it is a value, as argparse takes them.
    out = nardy(capsys, "hint", "-h", "--plyr")
    assert out.returncode == 0 and "usage: nardy hint" in out.stdout, out.stderr
    out = nardy(capsys, "hint", "--player", "--x y", position, "6", "5")
    assert out.returncode == 2 and "no player named '--x y'" in out.stderr, out.stderr
    # After '--' a token like an option is a positional one, as before; --option=value is the option.
    out = nardy(capsys, "hint", "--top", "1", "--", position, "6", "5")
    assert out.returncode == 0 and "24/18 18/13" in out.stdout, out.stderr
    out = nardy(capsys, "eval", "--games", "2", "--", "--odd", "random")
    assert out.returncode == 2 and "no player named '--odd'" in out.stderr, out.stderr
    out = nardy(capsys, "moves", "--rules={}", position, "6", "5")
    assert out.returncode == 0 and "24/18 18/13" in out.stdout, out.stderr
    # A new run's folder that nothing can be made in is refused before Ray starts, not after.
    target = "/proc/nardy-run" if os.path.isdir("/proc") else None
    if target:
        out = nardy(capsys, "train", "--config", "smoke", "--out", target)
        assert out.returncode == 2 and f"cannot make {target}: " in out.stderr, out.stderr
        assert "run directory:" not in out.stdout

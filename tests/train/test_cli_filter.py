"""--filter K: the move filter of a search beyond 0-ply, set on the command line (hint, play, bench)."""

from __future__ import annotations

import json

import pytest

from nardy_env import START_NPN
from tests.helpers import nardy

# A mid-game 4-2 for white with many plays, so filters of 1, 3 and 5 search different numbers of them.
MID = "0,0,0,0,0,2,0,0,3,0,-2,-9,1,0,-2,0,0,0,-2,0,0,2,0,7:0,0:w"


def _ranked(capsys, *options: str) -> list[dict]:
    line = json.dumps({"position": MID, "dice": [4, 2]})
    out = nardy(capsys, "hint", "--jsonl", "--player", "default", "--ply", "1", *options, stdin=line + "\n")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["ranked"]


def test_hint_searches_the_best_k_plays_by_zero_ply_and_no_more(capsys):
    default, one, three = _ranked(capsys), _ranked(capsys, "--filter", "1"), _ranked(capsys, "--filter", "3")
    assert len(default) == len(one) == len(three) > 5
    assert [r["ply"] for r in default].count(1) == 5  # the filter's default
    assert [r["ply"] for r in one] == [1] + [0] * (len(one) - 1)
    assert [r["ply"] for r in three] == [1] * 3 + [0] * (len(three) - 3)
    # The plays searched are the best by 0-ply: those left out keep their 0-ply values, so the
    # 0-ply-valued tail of the filter of 1 holds the other two searched by the filter of 3.
    searched_three = {json.dumps(r["moves"]) for r in three[:3]}
    assert json.dumps(one[0]["moves"]) in searched_three
    assert {json.dumps(r["moves"]) for r in one[1:3]} == searched_three - {json.dumps(one[0]["moves"])}


@pytest.mark.parametrize("args, words", [
    (("hint", START_NPN, "6", "5", "--filter", "3"), "--filter 3: default plays at 0-ply, where nothing is filtered; "
                                                      "give --ply 1 or more"),
    (("hint", START_NPN, "6", "5", "--player", "default@0", "--filter", "3"), "give --ply 1 or more"),
    (("hint", START_NPN, "6", "5", "--ply", "1", "--filter", "0"), "--filter: must be 1 or more"),
    (("play", "--against", "heuristic", "--filter", "2"), "--filter 2: heuristic is a bot, with no move filter"),
    (("play", "--against", "easy", "--filter", "2"), "easy is a level of the shipped player, with no move filter"),
    (("bench", "--filter", "2"), "--filter applies with --search PLAYER only"),
    (("bench", "--search", "default", "--max-ply", "0", "--filter", "2"), "--max-ply 0 measures 0-ply alone"),
    (("moves", START_NPN, "6", "5", "--filter", "2"), "(--filter is an option of nardy bench, nardy hint, nardy play"),
])
def test_a_filter_where_nothing_searches_is_refused(args, words, capsys):
    out = nardy(capsys, *args, stdin="")
    assert out.returncode == 2 and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_your_own_searching_player_takes_a_filter(tmp_path, capsys):
    """What is filtered goes by the player loaded, not by its name: your own FILE.py:NAME may be a
    SearchPlayer that searches (it cannot be named with @N)."""
    (tmp_path / "mine.py").write_text("from nardy_env.players import load_player\n"
                                      "DEEP = load_player('default@1')\nFLAT = load_player('default')\n")
    line = json.dumps({"position": MID, "dice": [4, 2]}) + "\n"
    out = nardy(capsys, "hint", "--jsonl", "--player", f"{tmp_path / 'mine.py'}:DEEP", "--filter", "2", stdin=line)
    assert out.returncode == 0, out.stderr
    assert [r["ply"] for r in json.loads(out.stdout)["ranked"]][:3] == [1, 1, 0]
    out = nardy(capsys, "hint", "--jsonl", "--player", f"{tmp_path / 'mine.py'}:FLAT", "--filter", "2", stdin=line)
    assert out.returncode == 2 and "plays at 0-ply, where nothing is filtered" in out.stderr, out.stderr


def test_bench_search_reports_the_filter_it_measured(capsys):
    out = nardy(capsys, "bench", "--search", "default", "--max-ply", "1", "--positions", "4", "--filter", "1", "--json")
    assert out.returncode == 0, out.stderr
    narrow = json.loads(out.stdout.splitlines()[-1])
    out = nardy(capsys, "bench", "--search", "default", "--max-ply", "1", "--positions", "4", "--json")
    assert out.returncode == 0, out.stderr
    wide = json.loads(out.stdout.splitlines()[-1])
    assert narrow["filter_k"] == 1 and wide["filter_k"] == 5  # the player's own, unless told
    assert narrow["levels"][1]["filter_k"] == 1 and "filter_k" not in narrow["levels"][0]
    assert narrow["levels"][0] == {**wide["levels"][0], "ms_per_decision": narrow["levels"][0]["ms_per_decision"],
                                   "ms_max": narrow["levels"][0]["ms_max"]}  # 0-ply: no filter
    assert narrow["levels"][1]["positions_per_decision"] < wide["levels"][1]["positions_per_decision"]


def test_a_search_players_filter_is_checked_when_changed():
    from agents.search import SearchPlayer

    class Flat:
        def outcomes(self, raw):
            import numpy as np
            return np.tile(np.float32([0.4, 0.1, 0.4, 0.1]), (len(raw), 1))

    player = SearchPlayer(Flat(), ply=1)
    player.filter_k = 3
    assert player.filter_k == 3 and "filter_k=3" in repr(player)
    for bad in (0, 2.5, "3", True):
        with pytest.raises(ValueError, match="filter_k must be a whole number, 1 or more"):
            player.filter_k = bad
    assert player.filter_k == 3  # a refused value changes nothing

"""Player names: the shipped player by the name ``default``, from any directory."""

from __future__ import annotations

import pytest

import agents.registry
from agents.registry import SHIPPED_PLAYER
from nardy_env.players import PlayerNotFound, load_player

needs_shipped = pytest.mark.skipif(not (SHIPPED_PLAYER / "policy.onnx").is_file(),
                                   reason="needs checkpoints/default (a clone of the repository)")


@needs_shipped
def test_default_names_the_shipped_player_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_player("default").name == "default"  # named as asked for, not by a long path
    one_ply = load_player("default@1")
    assert one_ply.name == "default@1" and one_ply.ply == 1
    assert load_player(str(SHIPPED_PLAYER)).name == str(SHIPPED_PLAYER)


@needs_shipped
def test_a_default_folder_in_the_current_directory_comes_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "default").mkdir()  # an empty folder: a path the user named, and no player
    with pytest.raises(PlayerNotFound):
        load_player("default")


def test_default_without_the_shipped_player_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(agents.registry, "SHIPPED_PLAYER", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="names the shipped player.*lacks"):
        load_player("default")


def test_a_negative_search_depth_is_named_as_such():
    with pytest.raises(ValueError, match="search depth after '@' is a whole number, 0 or more"):
        load_player("heuristic@-1")


def test_zero_ply_may_be_spelled_out_for_every_bot():
    from nardy_env.players import RandomPlayer

    assert isinstance(load_player("random@0"), RandomPlayer)
    assert type(load_player("race@0")) is type(load_player("race"))
    for bot in ("random", "race", "heuristic"):
        with pytest.raises(ValueError, match=f"{bot} .*does not search; drop '@2'"):
            load_player(f"{bot}@2")


def test_search_needs_at_least_one_candidate_past_the_filter():
    from agents.search import SearchPlayer

    with pytest.raises(ValueError, match="filter_k must be 1 or more"):
        SearchPlayer(evaluator=None, ply=1, filter_k=0)  # type: ignore[arg-type]


def test_three_ply_and_deeper_warn_about_their_cost():
    from agents.search import SearchPlayer

    with pytest.warns(UserWarning, match="3-ply search multiplies the cost"):
        SearchPlayer(evaluator=None, ply=3)  # type: ignore[arg-type]
    with pytest.warns(UserWarning, match="hours"):
        SearchPlayer(evaluator=None, ply=4)  # type: ignore[arg-type]

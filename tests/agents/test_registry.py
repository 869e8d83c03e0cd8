"""Player names: the shipped player by the name ``default``, from any directory."""

from __future__ import annotations

import os
import re

import pytest

import agents.registry
from agents.registry import SHIPPED_PLAYER
from nardy_env import RulesMismatchWarning
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
    with pytest.raises(PlayerNotFound, match="the folder default holds neither checkpoint.pt .* nor policy.onnx "
                                             ".*taken before the shipped player: run from another folder"):
        load_player("default")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "checkpoint.pt").mkdir()  # there, but no file: not called missing
    (tmp_path / "odd" / "policy.json").symlink_to("policy.json")
    with pytest.raises(PlayerNotFound, match=r"in the folder odd, checkpoint.pt is a folder, not a file; policy.json is "
                                             r"a link that leads nowhere"):
        load_player("odd")
    from nardy_env._runtime import not_a_file

    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "to_real").symlink_to("real.txt")
    os.mkfifo(tmp_path / "pipe")
    assert [not_a_file(tmp_path / n) for n in ("real.txt", "to_real", "nothing", "pipe")] == [
        "", "", "", "is not a regular file"]
    (tmp_path / "run").mkdir()  # a run that has not written its first checkpoint
    with pytest.raises(PlayerNotFound, match=r"the folder run holds neither checkpoint.pt \(a run directory\)"
                                             r" nor policy.onnx and policy.json \(an exported policy folder\)$"):
        load_player("run")


def test_default_without_the_shipped_player_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(agents.registry, "SHIPPED_PLAYER", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="names the shipped player.*lacks"):
        load_player("default")


def test_a_negative_search_depth_is_named_as_such():
    with pytest.raises(ValueError, match="search depth after '@' is a whole number from 0 to 5"):
        load_player("heuristic@-1")


@pytest.mark.parametrize("spec", ["heuristic@\u00b2", "heuristic@\u0663", "heuristic@\uff11"])
def test_a_search_depth_is_ascii_digits_everywhere_a_name_is_read(spec, tmp_path):
    """Superscripts pass str.isdigit, other scripts' digits pass int(): neither is a depth, so the
    name is unknown (said as such, with what comes after '@'), never a bare int() error or a search."""
    from agents.registry import split_ply
    from nardy_env.players import names_code, search_depth
    from train.export import ExportError, export_policy

    assert search_depth(spec) == (spec, None) and split_ply(spec) == (spec, 0)
    assert search_depth("heuristic@12") == ("heuristic", "12") and split_ply("a@b@3") == ("a@b", 3)
    with pytest.raises(PlayerNotFound, match=r"after '@' comes a search depth, a whole number"):
        load_player(spec)
    assert names_code("mine.py:P@1") and not names_code(spec.replace("heuristic", "mine.py:P"))
    with pytest.raises(ExportError, match="no checkpoint at heuristic@"):
        export_policy(spec, tmp_path / "out")


def test_zero_ply_may_be_spelled_out_for_every_bot():
    from nardy_env.players import RandomPlayer

    assert isinstance(load_player("random@0"), RandomPlayer)
    assert type(load_player("race@0")) is type(load_player("race"))
    for bot in ("random", "race", "heuristic"):
        with pytest.raises(ValueError, match=f"{bot} .*does not search; drop '@2'"):
            load_player(f"{bot}@2")


def test_search_needs_at_least_one_candidate_past_the_filter():
    from agents.search import SearchPlayer

    with pytest.raises(ValueError, match="filter_k must be a whole number, 1 or more"):
        SearchPlayer(evaluator=None, ply=1, filter_k=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="filter_k must be a whole number"):
        SearchPlayer(evaluator=None, ply=1, filter_k="3")  # type: ignore[arg-type]


def test_three_ply_and_deeper_warn_about_their_cost():
    from agents.search import SearchPlayer

    class Even:
        def outcomes(self, raw):
            return [[0.25] * 4] * len(raw)

    with pytest.warns(UserWarning, match="3-ply search multiplies the cost"):
        SearchPlayer(evaluator=Even(), ply=3)
    with pytest.warns(UserWarning, match="about an hour a move"):
        SearchPlayer(evaluator=Even(), ply=4)


def test_none_loads_a_network_player_under_the_rules_it_was_trained_under(tmp_path):
    import warnings

    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import Rules

    torch.manual_seed(0)
    home = Rules(block_rule="home")
    path = str(save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((4,)), home))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_player(path, None).rules == home
        assert not hasattr(load_player("heuristic", None), "rules")
    with pytest.warns(UserWarning, match="never learnt"):
        assert load_player(path).rules == Rules()  # the default: the default rules


def test_a_player_object_searching_under_other_rules_than_the_game_warns(tmp_path):
    import warnings

    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import Rules

    torch.manual_seed(0)
    home = Rules(block_rule="home")
    path = str(save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((4,)), home))
    searcher, static = load_player(path + "@1", None), load_player(path, None)
    with pytest.warns(RulesMismatchWarning, match="its look-ahead does not follow the game's rules"):
        assert load_player(searcher, Rules()) is searcher
    # Only the keys that differ, each with its two values: not two whole rule sets to compare by eye.
    with pytest.warns(RulesMismatchWarning, match=r"was trained under rules with block_rule \"home\", but plays a "
                                         r"game with block_rule \"ahead\", which it never learnt$"):
        assert load_player(static, Rules()) is static  # 0-ply: trained under other rules all the same
    with pytest.warns(RulesMismatchWarning, match="never learnt"):
        under_default = load_player(path, Rules())  # warned of here, once
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_player(searcher, home) is searcher  # the same rules
        assert load_player(static, home) is static
        assert load_player(under_default, Rules()) is under_default  # not warned of twice
        # A network player built by hand records no training rules: nothing to warn of.
        from agents.search import SearchPlayer
        from agents.td import TorchEvaluator

        by_hand = SearchPlayer(TorchEvaluator(TDNetwork((4,))))
        assert by_hand.trained_under is None and load_player(by_hand, home) is by_hand


def test_paths_classes_and_policy_files_are_named_as_users_give_them(tmp_path):
    from pathlib import Path

    from agents.bots import HeuristicBot

    assert load_player(Path(SHIPPED_PLAYER)).name == str(SHIPPED_PLAYER)
    assert load_player(str(SHIPPED_PLAYER / "policy.onnx")).name == str(SHIPPED_PLAYER)
    with pytest.raises(TypeError, match=r"HeuristicBot is a class: pass an instance, HeuristicBot\(\)"):
        load_player(HeuristicBot)


def test_the_rules_of_a_match_are_those_its_network_players_learnt(tmp_path):
    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint
    from nardy_env import DEFAULT_RULES, Rules
    from nardy_env.players import trained_rules

    torch.manual_seed(0)
    home = Rules(block_rule="home")
    path = str(save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((4,)), home))
    mine, bot = load_player(path, None), load_player("heuristic", None)
    assert trained_rules({"mine": mine, "bot": bot}) == home
    assert trained_rules({"bot": bot, "random": load_player("random")}) == DEFAULT_RULES
    with pytest.raises(ValueError, match="trained under different rules"):
        trained_rules({"mine": mine, "shipped": load_player("default", None)})


def test_a_network_or_evaluator_is_refused_with_the_wrapper_to_use():
    import torch

    from agents.network import TDNetwork
    from agents.td import TorchEvaluator

    torch.manual_seed(0)
    net = TDNetwork((8,))
    for thing in (net, TorchEvaluator(net)):  # a module is callable: it must not become a function player
        with pytest.raises(TypeError, match=r"scores positions but is not a player: wrap it, SearchPlayer\(TorchEvaluator"):
            load_player(thing)


def test_an_agents_package_of_your_own_is_not_reported_as_missing_torch(tmp_path):
    import subprocess
    import sys

    import torch

    from agents.network import TDNetwork
    from agents.td import save_checkpoint

    save_checkpoint(tmp_path / "net.pt", TDNetwork((8,)))
    project = tmp_path / "project"  # a research project with its own agents package, run from its folder
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "__init__.py").write_text("")
    (project / "agents" / "td.py").write_text("x = 1\n")
    code = f"from nardy_env.players import load_player; load_player({str(tmp_path / 'net.pt')!r})"
    out = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and torch.__version__  # torch is installed here
    assert "torch is not installed" not in out.stderr
    # Where it shows depends on how nardy is installed (its agents.td, or its resolver, is hidden).
    assert "shadowing nardy's" in out.stderr


def test_a_dependency_torch_lacks_is_not_called_shadowing(tmp_path, monkeypatch):
    import sys

    from agents.network import TDNetwork
    from agents.td import save_checkpoint

    save_checkpoint(tmp_path / "net.pt", TDNetwork((8,)))

    class MissingDependency:  # as if importing agents.td hit torch's missing sympy
        def find_spec(self, name, path=None, target=None):
            if name == "agents.td":
                raise ModuleNotFoundError("No module named 'sympy'", name="sympy")
            return None

    monkeypatch.delitem(sys.modules, "agents.td")
    monkeypatch.setattr(sys, "meta_path", [MissingDependency(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError, match="No module named 'sympy'") as caught:
        load_player(str(tmp_path / "net.pt"))
    assert "shadowing" not in str(caught.value) and "torch is not installed" not in str(caught.value)


def test_an_unknown_name_is_answered_with_the_names_that_exist(tmp_path, monkeypatch):
    from agents.bots import BOTS

    monkeypatch.chdir(tmp_path)  # outside the checkout, where the README's commands say checkpoints/default
    bots = re.escape(", ".join(["random", *BOTS]))
    with pytest.raises(PlayerNotFound, match=rf"give a bot name \({bots}\), default \(the shipped player\)"
                                             r".*\(any of these three with @N to search N plies deep\)"):
        load_player("nosuch")
    with pytest.raises(PlayerNotFound, match=r"no player named 'Random' \(names are lower case: random\?\)"):
        load_player("Random")
    with pytest.raises(PlayerNotFound, match=r"\(names are lower case: default@1\?\)"):
        load_player("DEFAULT@1")
    with pytest.raises(PlayerNotFound, match=r"'default@x' \(after '@' comes a search depth, a whole number "
                                             r"such as 1\)"):
        load_player("default@x")
    with pytest.raises(PlayerNotFound, match="no file or folder checkpoints/default .*; the shipped player is "
                                             "named default from any folder"):
        load_player("checkpoints/default")
    # A folder whose name ends in @N: the suffix is a depth, and the error says how to name the folder.
    (tmp_path / "бот@2").mkdir()
    with pytest.raises(PlayerNotFound, match=r"'@2' is read as a search depth, so it names бот, which does not "
                                             r"exist; the file or folder бот@2 is named бот@2@0"):
        load_player("бот@2")


def test_every_bot_is_named_wherever_the_bots_are_listed():
    """A bot added to BOTS (CONTRIBUTING) is known by name to every command; the texts that list
    the bots by name for people (help, errors, docs) must list it too."""
    from pathlib import Path

    from agents.bots import BOTS
    from nardy_env.players import PlayerNotFound, load_player
    from train.cli import build_parser
    from train.config import EVAL_BOTS

    names = ["random", *BOTS]
    assert list(EVAL_BOTS) == names
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(PlayerNotFound) as missing:
        load_player("no-such-bot")
    eval_help = next(a.help for a in build_parser()._subparsers._group_actions[0].choices["eval"]._actions
                     if a.dest == "a")
    texts = {
        "the unknown-player error": str(missing.value),
        "the players' --help": eval_help,
        "tools/cli_reference.py's INTRO": (root / "tools" / "cli_reference.py").read_text(encoding="utf-8"),
        "README.md": (root / "README.md").read_text(encoding="utf-8"),
        "docs/agents.md": (root / "docs" / "agents.md").read_text(encoding="utf-8"),
        "docs/environments.md": (root / "docs" / "environments.md").read_text(encoding="utf-8"),
    }
    missing_from = {where: missing_names for where, text in texts.items()  # as a word: not "race" in "trace"
                    if (missing_names := [n for n in names
                                          if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)])}
    assert not missing_from, f"the bots are not named everywhere they are listed: {missing_from}"
    listed = "(" + ", ".join(names) + ")"  # the lists for people, in full
    assert listed in str(missing.value) and listed in eval_help.replace("\n", " ")
    # The levels too: a level added to LEVELS is named wherever the names are listed for people.
    from agents.levels import LEVELS

    levels = "(" + ", ".join(LEVELS) + ")"
    lacking = [where for where, text in texts.items() if where != "README.md"
               and not all(re.search(rf"(?<![\w-])`?\"?{re.escape(n)}\"?`?(?![\w-])", text) for n in LEVELS)]
    assert not lacking, f"the levels are not named everywhere the players are listed: {lacking}"
    assert levels in str(missing.value) and levels in eval_help.replace("\n", " ")

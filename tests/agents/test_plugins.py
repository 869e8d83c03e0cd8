"""Third-party players through the nardy.players entry point: order, and a broken plugin."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import nardy_env.players as players
from nardy_env.players import load_player


class _EntryPoint:
    def __init__(self, name: str, value: str, target=None, error: Exception | None = None):
        self.name, self.value, self._target, self._error = name, value, target, error

    def load(self):
        if self._error is not None:
            raise self._error
        return self._target


def test_a_broken_plugin_is_skipped_with_a_warning_and_the_bots_still_load(monkeypatch):
    from agents.registry import resolve

    def mine(spec, rules):  # claims "heuristic" too: nardy's own resolver is asked first
        return players.RandomPlayer() if spec in ("mine", "heuristic") else None

    fake = [_EntryPoint("zzz-broken", "brokenbot:resolve", error=ModuleNotFoundError("No module named 'x'")),
            _EntryPoint("aaa-mybots", "mybots:resolve", mine),
            _EntryPoint("agents", "agents.registry:resolve", resolve)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    with pytest.warns(UserWarning, match="'zzz-broken' .brokenbot:resolve. failed to load"):
        assert load_player("heuristic").__class__.__name__ == "HeuristicBot"
    with pytest.warns(UserWarning):
        assert isinstance(load_player("mine"), players.RandomPlayer)


def test_the_real_entry_point_is_nardys_own():
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="nardy.players")}
    assert names.get("agents") == "agents.registry:resolve" == players.OUR_RESOLVER
    from agents.registry import resolve

    assert f"{resolve.__module__}:{resolve.__name__}" == players.OUR_RESOLVER  # the function it names


_AGENT = '''
import numpy as np


class FirstPlay:
    name = "first"

    def choose(self, states, found, rng, colors=None):
        return np.zeros(len(states), dtype=np.int64)


class NeedsArgs:
    def __init__(self, depth):
        self.depth = depth


def last_play(states, found, rng):
    return np.diff(found.offsets) - 1


not_a_player = 3
'''


def test_your_own_player_by_file_or_module_name(tmp_path, monkeypatch):
    """FILE.py:NAME and module:NAME name a player without packaging it: usable wherever names are."""
    from train.evaluate import evaluate

    (tmp_path / "my_agent.py").write_text(_AGENT)
    by_file = load_player(f"{tmp_path / 'my_agent.py'}:FirstPlay")
    assert type(by_file).__name__ == "FirstPlay" and by_file.name == "first"
    assert isinstance(load_player(f"{tmp_path / 'my_agent.py'}:last_play"), players.FunctionPlayer)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "my_agent", None)  # put back (absent) afterwards, whatever happens
    del sys.modules["my_agent"]
    assert type(load_player("my_agent:FirstPlay")).__name__ == "FirstPlay"
    # Named, it plays in worker processes too, exactly as the object does in this one.
    named = evaluate(f"{tmp_path / 'my_agent.py'}:last_play", "race", 400, seed=2, workers=2).summary()
    mine = evaluate(load_player(f"{tmp_path / 'my_agent.py'}:last_play"), "race", 400, seed=2).summary()
    names = ("player_a", "player_a_sha256")
    assert {k: v for k, v in named.items() if k not in names} == {k: v for k, v in mine.items() if k not in names}
    # NAME is any Python identifier, not only an ASCII one (it was read as a path that did not exist).
    (tmp_path / "мой игрок.py").write_text("from my_agent import FirstPlay as ПервыйХод\n")
    assert type(load_player(f"{tmp_path / 'мой игрок.py'}:ПервыйХод")).__name__ == "FirstPlay"
    # ... with combining marks too (Devanagari; \w has no Mn), and as Python reads it (NFKC: ﬁrst is first)
    (tmp_path / "hindi.py").write_text("from my_agent import FirstPlay as खिलाड़ी, FirstPlay as first\n")
    assert type(load_player(f"{tmp_path / 'hindi.py'}:खिलाड़ी")).__name__ == "FirstPlay"
    assert type(load_player(f"{tmp_path / 'hindi.py'}:\ufb01rst")).__name__ == "FirstPlay"
    assert not players.names_code(f"{tmp_path / 'hindi.py'}:²x") and not players.names_code("runs/exp:v2")
    for spec, message in ((f"{tmp_path / 'nothere.py'}:X", "there is no file"),
                          (f"{tmp_path / 'my_agent.py'}:Nope", "has no 'Nope'"),
                          ("no_such_module_here:X", "no module 'no_such_module_here' to import from here"),
                          (f"{tmp_path / 'my_agent.py'}:NeedsArgs", "makes with no arguments"),
                          (f"{tmp_path / 'my_agent.py'}:not_a_player", "must be a name, have a choose")):
        with pytest.raises(ValueError if "arguments" in message or "choose" in message else players.PlayerNotFound,
                           match=message):
            load_player(spec)


def test_your_own_player_file_imports_like_a_script_and_its_errors_are_named(tmp_path):
    folder = tmp_path / "agentdir"
    folder.mkdir()
    (folder / "helper_mod.py").write_text("import numpy as np\n\ndef pick(n):\n    return np.zeros(n, dtype=np.int64)\n")
    (folder / "uses_helper.py").write_text("from helper_mod import pick\n\ndef first(states, found, rng):\n"
                                          "    return pick(len(states))\n\nSELF = 'x'\n")
    assert isinstance(load_player(f"{folder / 'uses_helper.py'}:first"), players.FunctionPlayer)  # helper found
    with pytest.raises(ValueError, match="SELF is a str, not a player"):
        load_player(f"{folder / 'uses_helper.py'}:SELF")
    (folder / "broken.py").write_text("def first(:\n")
    with pytest.raises(ValueError, match=r"running .*broken.py failed: SyntaxError"):
        load_player(f"{folder / 'broken.py'}:first")
    with pytest.raises(ValueError, match="your own players do not search; drop '@1'"):
        load_player(f"{folder / 'uses_helper.py'}:first@1")
    with pytest.raises(players.PlayerNotFound, match="no player named 'some/dir/mod:Thing': give a bot name"):
        load_player("some/dir/mod:Thing")  # not taken for a missing file: the FILE.py:NAME hint is kept
    # The file without its :NAME is Python code, not a checkpoint that failed to load.
    with pytest.raises(ValueError, match=r"uses_helper.py is Python code, not a network: name the player in it, "
                                         r".*uses_helper.py:NAME"):
        load_player(str(folder / "uses_helper.py"))
    (folder / "exits.py").write_text("import sys\nsys.exit('usage: exits.py N')\n")
    with pytest.raises(ValueError, match=r"running .*exits.py ended it \(SystemExit: usage: exits.py N\)"):
        load_player(f"{folder / 'exits.py'}:first")
    (folder / "raises_mod.py").write_text("raise RuntimeError('no config here')\n")
    with pytest.raises(ValueError, match=r"importing raises_mod failed: RuntimeError: no config here"):
        import sys
        sys.path.insert(0, str(folder))
        try:
            load_player("raises_mod:first")
        finally:
            sys.path.remove(str(folder))


def test_two_player_files_get_their_own_helpers_and_nothing_beside_them_shadows_nardy(tmp_path):
    import sys

    from train.evaluate import evaluate

    bot = "from helpers import WHICH\n\ndef play(states, found, rng):\n    return [0] * len(states)\n"
    for which in (1, 2):
        (tmp_path / f"v{which}").mkdir()
        (tmp_path / f"v{which}" / "bot.py").write_text(bot)
        (tmp_path / f"v{which}" / "helpers.py").write_text(f"WHICH = {which}\n")
    one, two = (load_player(f"{tmp_path / f'v{w}' / 'bot.py'}:play") for w in (1, 2))
    assert (one._fn.__globals__["WHICH"], two._fn.__globals__["WHICH"]) == (1, 2)
    assert "helpers" not in sys.modules and str(tmp_path / "v1") not in sys.path
    # A train.py beside a player file is the user's, not nardy's train package, in worker processes too.
    (tmp_path / "v1" / "train.py").write_text("raise SystemExit('the user script ran')\n")
    result = evaluate(f"{tmp_path / 'v1' / 'bot.py'}:play", "race", 400, seed=1, workers=2)
    assert result.points_a.size == 400


def test_a_player_from_a_file_unpickles_in_a_fresh_process_that_imports_nardy(tmp_path, monkeypatch):
    """A spawned or forkserver worker (AsyncVectorEnv, SB3's SubprocVecEnv) gets players pickled:
    a FILE.py:NAME player's module name is the same in every process, and nardy finds it again."""
    import pickle
    import subprocess

    import numpy as np

    from nardy_env import initial_states, legal_afterstates

    folder = tmp_path / "мои боты"
    folder.mkdir()
    (folder / "helper_mod.py").write_text("def last(found):\n    return found.offsets[1:] - found.offsets[:-1] - 1\n")
    (folder / "mine.py").write_text(_AGENT + "\nfrom helper_mod import last\n\n\ndef last_by_helper(states, found, rng):"
                                    "\n    return last(found)\n")
    loaded = [load_player(f"{folder / 'mine.py'}:{name}") for name in ("FirstPlay", "last_by_helper")]
    child = ("import pickle, sys\nimport numpy as np\nimport nardy_env\n"
             "players, states, dice = pickle.loads(sys.stdin.buffer.read())\n"
             "found = nardy_env.legal_afterstates(states, dice)\n"
             "print([np.asarray(p.choose(states, found, np.random.default_rng(0))).tolist() for p in players])\n")
    states, dice = initial_states(3), np.array([[6, 5], [3, 3], [2, 1]])
    done = subprocess.run([sys.executable, "-c", child], input=pickle.dumps((loaded, states, dice)),
                          capture_output=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    found = legal_afterstates(states, dice)
    here = [np.asarray(p.choose(states, found, np.random.default_rng(0))).tolist() for p in loaded]
    assert done.stdout.decode().strip() == str(here) and here[0] != here[1]
    # The finder answers for those names alone, and only with a .py file that exists.
    from nardy_env import _player_files

    assert _player_files.PlayerFileFinder in sys.meta_path
    assert _player_files.module_path(_player_files.module_name(str(folder / "mine.py"))) == str(folder / "mine.py")
    (folder / "notes.txt").write_text("x = 1\n")
    monkeypatch.chdir(folder)
    for name in ("numpy_x", _player_files.PREFIX + "zz", _player_files.module_name(str(folder / "gone.py")),
                 _player_files.module_name(str(folder / "notes.txt")), _player_files.module_name("mine.py")):
        assert _player_files.PlayerFileFinder.find_spec(name) is None  # the last: relative, though there in cwd
    assert _player_files.module_path("numpy_x") is None
    # A file that fails to run leaves no module behind: loaded again, it runs again (and fails again).
    (folder / "bad.py").write_text("raise RuntimeError('not today')\n")
    for _ in range(2):
        with pytest.raises(ValueError, match=r"running .*bad.py failed: RuntimeError: not today"):
            load_player(f"{folder / 'bad.py'}:agent")
    assert _player_files.module_name(str(folder / "bad.py")) not in sys.modules


def test_a_plugin_name_with_a_colon_is_still_the_plugins(monkeypatch):
    """'gnubg:expert' looks like module:NAME; with no such module, the plugins are asked as before."""
    from agents.registry import resolve

    def mine(spec, rules):
        return players.RandomPlayer() if spec in ("nomodulehere:expert", "nomodulehere:expert@2") else None

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve), _EntryPoint("mine", "mine:resolve", mine)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    assert isinstance(load_player("nomodulehere:expert"), players.RandomPlayer)
    assert isinstance(load_player("nomodulehere:expert@2"), players.RandomPlayer)
    with pytest.raises(ValueError, match="your own players do not search"):  # not the plugin's: asked first
        load_player("nomodulehere:other@2")
    with pytest.raises(players.PlayerNotFound, match="no module 'nomodulehere2'"):
        load_player("nomodulehere2:expert")


def test_a_plugin_resolver_that_raises_is_named_and_skipped_for_that_name(monkeypatch):
    """A resolver that fails on names it does not own must not take the others down, nor fail anonymously."""
    from agents.registry import resolve

    def careless(spec, rules):
        return players.RandomPlayer() if spec == "careless" else int(spec.partition(":")[2])

    def mine(spec, rules):
        return players.RandomPlayer() if spec == "mine" else None

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve),
            _EntryPoint("aaa-careless", "badplug.res:resolve", careless), _EntryPoint("mine", "mine:resolve", mine)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    assert isinstance(load_player("careless"), players.RandomPlayer)
    assert load_player("race").__class__.__name__ == "RaceBot"  # nardy's own names never reach it
    with pytest.warns(UserWarning, match=r"'aaa-careless' \(badplug.res:resolve\) failed on 'mine' and is skipped "
                                         r"for it: ValueError: invalid literal"):
        assert isinstance(load_player("mine"), players.RandomPlayer)  # the next plugin still answers
    with pytest.warns(UserWarning, match="failed on 'nosuch'"), pytest.raises(players.PlayerNotFound):
        load_player("nosuch")


def test_a_player_answering_in_the_wrong_shape_is_told_the_shape_to_use():
    import numpy as np

    from nardy_env import initial_states, legal_afterstates
    from nardy_env.players import FunctionPlayer, choose_indices

    states = initial_states(2)
    found = legal_afterstates(states, np.array([[6, 5], [3, 1]]))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"returned choices of shape \(2, 1\) for 2 positions: choose\(\) returns "
                                         r"one index per position, an array of shape \(2,\)"):
        choose_indices(FunctionPlayer(lambda s, f, r: np.zeros((2, 1), dtype=np.int64)), states, found, rng)
    rows = found.offsets[:-1]  # rows of found.states, a likely slip
    with pytest.raises(ValueError, match="indices count from 0 within each position's own afterstates"):
        choose_indices(FunctionPlayer(lambda s, f, r: rows), states, found, rng)


def test_a_player_that_cannot_be_called_as_nardy_calls_it_is_refused_when_loaded():
    """Not at its first move, with a TypeError pointing at nardy's call (a bug of nardy's, it would seem)."""
    import numpy as np

    def two(states, found):
        return np.zeros(len(states), dtype=np.int64)

    def keyword_rng(states, found, *, rng):
        return two(states, found)

    def factory():
        return players.RandomPlayer()

    class TwoArgs:
        def choose(self, states, found):
            return two(states, found)

    for bad, shown in ((two, r"two\(states, found\)"), (keyword_rng, r"keyword_rng\(states, found, \*, rng\)"),
                       (factory, r"factory\(\)"),
                       (TwoArgs(), r"TwoArgs.choose\(states, found\)")):
        with pytest.raises(TypeError, match=shown + r" cannot be called as a player .*nardy calls it with three "
                                                    r"arguments, \(states, found, rng\)"):
            load_player(bad)
    with pytest.raises(TypeError, match=r"not a factory: name a class, which nardy makes with no arguments"):
        load_player(factory)

    def with_dice(states, found, rng, dice):  # named keywords are given: fine
        return two(states, found)

    def anything(*args, **kwargs):
        return two(*args[:2])

    import functools

    def ignores_rng(f):  # an adapter: its own signature is what nardy calls, not the one it wraps
        @functools.wraps(f)
        def adapted(states, found, rng, colors=None):
            return f(states, found)
        return adapted

    class Adapted:
        @staticmethod
        @ignores_rng
        def choose(states, found):
            return two(states, found)

    for good in (with_dice, anything, lambda states, found, rng, colors=None: two(states, found),
                 ignores_rng(two), Adapted()):
        assert load_player(good) is not None


def test_a_huge_unsigned_choice_is_shown_as_given_not_wrapped_to_a_negative_one():
    import numpy as np

    from nardy_env import initial_states, legal_afterstates
    from nardy_env.players import FunctionPlayer, choose_indices

    states = initial_states(2)
    found = legal_afterstates(states, np.array([[6, 5], [3, 1]]))
    answer = np.array([0, 2**64 - 1], dtype=np.uint64)
    with pytest.raises(ValueError, match="chose afterstate 18446744073709551615 of position 1, which has 1"):
        choose_indices(FunctionPlayer(lambda s, f, r: answer), states, found, np.random.default_rng(0))
    picks = choose_indices(FunctionPlayer(lambda s, f, r: np.zeros(2, dtype=np.uint64)), states, found,
                           np.random.default_rng(0))
    assert picks.tolist() == found.offsets[:-1].tolist()


def test_an_adapter_that_takes_colors_gets_them_and_a_plugins_bad_player_is_refused_when_loaded(monkeypatch):
    import functools

    import numpy as np

    from agents.registry import resolve
    from nardy_env import initial_states, legal_afterstates
    from nardy_env.players import choose_indices

    got = []

    def first(states, found):
        return np.zeros(len(states), dtype=np.int64)

    @functools.wraps(first)
    def adapted(states, found, rng, colors=None):  # its own signature names colors=, first's does not
        got.append(colors)
        return first(states, found)

    states = initial_states(2)
    found = legal_afterstates(states, np.array([[6, 5], [3, 1]]))
    choose_indices(load_player(adapted), states, found, np.random.default_rng(0), colors=np.array([0, 1]))
    assert got and got[0] is not None and got[0].tolist() == [0, 1]

    class TwoArgs:
        def choose(self, states, found):
            return first(states, found)

    def theirs(spec, rules):
        return TwoArgs() if spec == "two" else None

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve), _EntryPoint("vendor", "vendor:resolve", theirs)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    with pytest.raises(ValueError, match=r"'two' \(from the nardy.players entry point 'vendor', vendor:resolve\): "
                                         r"TwoArgs.choose\(states, found\) cannot be called as a player"):
        load_player("two")


def test_a_folder_whose_name_has_a_colon_is_no_code(tmp_path, monkeypatch):
    from nardy_env.players import names_code

    (tmp_path / "exp:v2").mkdir()
    monkeypatch.chdir(tmp_path)
    assert not names_code(str(tmp_path / "exp:v2")) and not names_code("exp:v2") and not names_code("exp:v2@1")
    assert names_code("mine.py:Player") and names_code("mypkg.bots:Player@2") and names_code("nowhere:Thing")
    assert not names_code("heuristic") and not names_code("runs/quick")
    # A folder named like module:NAME that holds no player is refused, never imported instead (a
    # config may name folders but not code: an unpacked archive's "this:Zen" must not import `this`).
    (tmp_path / "this:Zen").mkdir()
    import sys

    from nardy_env.players import PlayerNotFound, load_player

    sys.modules.pop("this", None)
    with pytest.raises(PlayerNotFound, match=r"this:Zen is a file or folder here that holds no player, so the "
                                             r"name is not read as module:NAME"):
        load_player("this:Zen")
    (tmp_path / "this:Zen").rmdir()
    (tmp_path / "this:Zen").symlink_to(tmp_path / "nowhere")  # a dangling link: a path all the same
    with pytest.raises(PlayerNotFound, match="holds no player"):
        load_player("this:Zen")
    assert "this" not in sys.modules


def test_a_plain_decorator_passes_on_what_the_function_it_wraps_takes(monkeypatch):
    """wrapper(*args, **kwargs) passes keywords on: the wrapped function decides which it gets."""
    import functools

    import numpy as np

    from agents.registry import resolve
    from nardy_env import initial_states, legal_afterstates
    from nardy_env.players import FunctionPlayer, _accepts, choose_indices

    def timed(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapper

    got = []

    def first_play(states, found, rng, dice=None):
        got.append(dice)
        return np.zeros(len(states), dtype=np.int64)

    player = FunctionPlayer(timed(first_play))
    assert player._takes == ["dice"]  # not colors=, which first_play does not take
    states = initial_states(2)
    dice = np.array([[6, 5], [3, 1]])
    found = legal_afterstates(states, dice)
    choose_indices(player, states, found, np.random.default_rng(0), colors=np.array([0, 1]), dice=dice)
    assert got[0].tolist() == dice.tolist()

    def first_legal(obs, masks):  # a checker-mode policy without rng
        return np.zeros(len(obs), dtype=np.int64)

    assert not _accepts(timed(first_legal), "rng") and _accepts(timed(lambda obs, masks, rng: 0), "rng")

    class Returned:
        def choose(self, states, found, rng):
            return np.zeros(len(states), dtype=np.int64)

    def gives_a_class(spec, rules):
        return Returned if spec == "cls" else None

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve),
            _EntryPoint("vendor", "vendor:resolve", gives_a_class)]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    with pytest.raises(ValueError, match="it gave the class Returned, not a player"):
        load_player("cls")


def test_a_workers_deprecation_warning_stays_one_for_the_callers_filters(tmp_path):
    import warnings

    from train import evaluate as evaluate_module

    (tmp_path / "old.py").write_text("import warnings\n\nwarnings.warn('old.py is deprecated', DeprecationWarning)\n\n\n"
                                     "def play(states, found, rng):\n    return [0] * len(states)\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_module.evaluate(f"{tmp_path / 'old.py'}:play", "random", 8, seed=1, workers=2, chunk_pairs=1)
    said = [w for w in caught if "deprecated" in str(w.message)]
    assert len(said) == 1 and said[0].category is DeprecationWarning  # not a UserWarning, which shows by default
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        evaluate_module.evaluate(f"{tmp_path / 'old.py'}:play", "random", 8, seed=2, workers=2, chunk_pairs=1)
    assert not [w for w in caught if "deprecated" in str(w.message)]


def test_each_match_says_what_loading_its_players_says_once(monkeypatch):
    import warnings

    from agents.registry import resolve
    from train.evaluate import evaluate, ladder

    fake = [_EntryPoint("agents", "agents.registry:resolve", resolve),
            _EntryPoint("zzz-broken", "brokenbot:resolve", error=ModuleNotFoundError("No module named 'x'"))]
    monkeypatch.setattr(players, "entry_points", lambda group: fake if group == "nardy.players" else [])
    for _ in range(2):  # a second call in the same process says it again: once per call, not per process
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evaluate("race", "heuristic", 4, workers=1, chunk_pairs=1)
        assert sum("'zzz-broken'" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ladder(["race", "heuristic", "random"], 2, workers=1)  # three matches, one scope
    assert sum("'zzz-broken'" in str(w.message) for w in caught) == 1


def test_keywords_reach_what_takes_them_through_adapters_partials_and_loops():
    import functools

    from nardy_env.players import _accepts

    def base(states, found, rng):
        return None

    @functools.wraps(base)
    def colour_aware(states, found, rng, **kwargs):  # takes colors= for itself, through **kwargs
        return kwargs["colors"]

    assert _accepts(colour_aware, "colors")

    def plain(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapper

    def takes_dice(states, found, rng, dice=None):
        return dice

    assert _accepts(functools.partial(plain(takes_dice)), "dice")
    assert not _accepts(functools.partial(plain(base)), "colors")

    class Called:
        @plain
        def __call__(self, states, found, rng):
            return None

    assert not _accepts(Called(), "colors")

    def a(*args, **kwargs):
        return None

    def b(*args, **kwargs):
        return None

    a.__wrapped__, b.__wrapped__ = b, a  # a loop: ends, as **kwargs
    assert _accepts(a, "colors") and not _accepts(a, "dice", through_kwargs=False)


def test_match_warnings_point_at_the_caller_and_workers_warnings_keep_their_category(tmp_path):
    import warnings

    from nardy_env.players import RandomPlayer
    from train import evaluate as evaluate_module

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_module.evaluate(RandomPlayer(), RandomPlayer(), 2, workers=2)
    unused = [w for w in caught if "is not used" in str(w.message)]
    assert len(unused) == 1 and unused[0].filename == __file__  # this line's caller, not nardy's wrapper

    (tmp_path / "fw.py").write_text("import warnings\n\nwarnings.warn('old weights format', FutureWarning)\n\n\n"
                                    "def play(states, found, rng):\n    return [0] * len(states)\n")
    for workers in (1, 2):  # the caller's category filter decides, however the match is played
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=FutureWarning)
            evaluate_module.evaluate(f"{tmp_path / 'fw.py'}:play", "random", 4, seed=workers, workers=workers,
                                     chunk_pairs=1)
        assert not [w for w in caught if "old weights" in str(w.message)], workers
    (tmp_path / "fw2.py").write_text((tmp_path / "fw.py").read_text())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_module.evaluate(f"{tmp_path / 'fw2.py'}:play", "random", 4, workers=2, chunk_pairs=1)
    said = [w for w in caught if "old weights" in str(w.message)]
    assert len(said) == 1 and said[0].category is FutureWarning and said[0].filename.endswith("fw2.py")
    with evaluate_module.saying_once() as scope:
        assert evaluate_module._SAID.get() is scope
    assert evaluate_module._SAID.get() is None


def test_workers_load_warnings_meet_module_error_and_multi_category_filters_as_loading_here_would(tmp_path):
    import os
    import subprocess
    import sys
    import warnings

    from agents.registry import SHIPPED_PLAYER
    from train import evaluate as evaluate_module

    (tmp_path / "fw.py").write_text("import warnings\n\nwarnings.warn('old weights format', FutureWarning)\n\n\n"
                                    "def play(states, found, rng):\n    return [0] * len(states)\n")
    script = tmp_path / "match.py"
    script.write_text(
        "import sys, warnings\nfrom train.evaluate import evaluate\n\nif __name__ == '__main__':\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        try:\n"
        "            evaluate(sys.argv[1], 'random', 4, workers=2, chunk_pairs=1, rules={'opening': 'reroll'})\n"
        "        except ValueError as exc:\n            print('refused:', exc)\n"
        "    print('said:', [str(w.message)[:40] for w in caught])\n")

    def match(spec, filters):
        env = {**os.environ, "PYTHONWARNINGS": filters}
        return subprocess.run([sys.executable, str(script), spec], capture_output=True, text=True, env=env,
                              timeout=300, cwd=tmp_path).stdout

    # A filter naming nardy's module: the worker's warning, said here, is that module's.
    out = match(str(SHIPPED_PLAYER), "ignore::UserWarning:agents.registry")
    assert "said: []" in out, out
    # "error" from the environment fails the load in the worker at once, as it would here.
    out = match(f"{tmp_path / 'fw.py'}:play", "error::FutureWarning")
    assert "refused:" in out and "FutureWarning: old weights format" in out, out

    (tmp_path / "multi.py").write_text(
        "import warnings\n\n\nclass Both(UserWarning, DeprecationWarning):\n    pass\n\n\n"
        "warnings.warn('a warning of two kinds', Both)\n\n\ndef play(states, found, rng):\n"
        "    return [0] * len(states)\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # it is one, here and from workers
        evaluate_module.evaluate(f"{tmp_path / 'multi.py'}:play", "random", 4, workers=2, chunk_pairs=1)
    assert not [w for w in caught if "two kinds" in str(w.message)]


def test_a_players_signature_is_read_once_per_callable_not_every_move(monkeypatch):
    """Reading a signature cost a fifth of a single env's step against random."""
    import inspect

    import numpy as np

    from nardy_env import Color, initial_states, legal_afterstates
    from nardy_env.players import choose_indices

    read = []
    signature = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda fn, **kw: read.append(fn) or signature(fn, **kw))

    class Colours:
        def __init__(self):
            self.seen = []

        def choose(self, states, found, rng, colors=None):
            self.seen.append(colors)
            return np.zeros(len(states), dtype=np.int64)

    class Plain:
        def choose(self, states, found, rng):
            return np.zeros(len(states), dtype=np.int64)

    states = initial_states(1)
    found = legal_afterstates(states, [[6, 5]])
    colours = np.array([Color.WHITE])
    first, second = Colours(), Colours()
    for player in (first, second, first, Plain(), Plain()):
        choose_indices(player, states, found, np.random.default_rng(0), colours)
    assert [fn.__qualname__ for fn in read if getattr(fn, "__name__", "") == "choose"] == [
        f"{Colours.__qualname__}.choose", f"{Plain.__qualname__}.choose"]  # once each, not once a move
    assert first.seen == [colours, colours] and second.seen == [colours]  # the answer is still each one's own


def test_what_an_adapter_wraps_is_read_again_when_it_is_swapped_and_a_method_is_read_as_bound():
    import functools

    from nardy_env.players import _accepts

    def old(states, found, rng, colors=None):
        return None

    def new(states, found, rng):
        return None

    class Holder:  # refreshed in place, as docs/environments.md suggests for a frozen opponent
        def __init__(self, inner):
            self.__wrapped__ = inner

        def __call__(self, *args, **kwargs):
            return self.__wrapped__(*args, **kwargs)

    holder = Holder(old)
    assert _accepts(holder, "colors")
    holder.__wrapped__ = new
    assert not _accepts(holder, "colors")  # once: the first answer, and a colors= new cannot take

    @functools.wraps(holder)  # a timing decorator around the holder: the swap is deeper down
    def timed(*args, **kwargs):
        return holder(*args, **kwargs)

    holder.__wrapped__ = old
    assert _accepts(timed, "colors")
    holder.__wrapped__ = new
    assert not _accepts(timed, "colors")
    for inner in (old, new, new, new):  # swaps of a function's __wrapped__: freed ids come back
        timed.__wrapped__ = inner
        assert _accepts(timed, "colors") == (inner is old)

    class Adapter:
        def choose(self, *args, **kwargs):  # bound: (*args, **kwargs), a decorator's shape
            return inner(*args, **kwargs)

    def inner(states, found, rng):
        return None

    Adapter.choose.__wrapped__ = inner
    assert _accepts(Adapter.choose, "colors")  # the plain function takes self too: an adapter's own keywords
    assert not _accepts(Adapter().choose, "colors")  # bound: looked through to inner, which takes none

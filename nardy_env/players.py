"""The one interface every player implements, and how players are found by name.

A player gets a batch of positions (mover's view) and the afterstates the
rules core listed for them, and picks one afterstate per position. Bots, the
TD network with or without search and exported policies all fit it, so
environments, self-play, evaluation and the command line never care which
player they hold.

Players are named by strings. ``random`` is built in; other packages add names
and loaders through the ``nardy.players`` entry-point group: each entry point
is a function ``resolve(spec: str, rules: Rules) -> Player | None`` that
returns a player for specs it understands (a bot name, a checkpoint path, an
exported policy folder) and None otherwise. This keeps the game layer free of
imports from the layers above it.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import re
import sys
import sysconfig
import traceback
import unicodedata
import warnings
import weakref
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from . import _player_files
from ._runtime import NardyWarning, RulesMismatchWarning, not_a_file
from .core import Afterstates
from .rules import DEFAULT_RULES, Rules, RulesLike, as_rules

__all__ = ["Player", "ChooseFunction", "PlayerSpec", "player_name", "code_file", "names_code", "search_depth", "RandomPlayer", "FunctionPlayer", "PlayerNotFound", "load_player",
           "choose_indices", "check_batch", "trained_rules", "PlayerFailed"]


@runtime_checkable
class Player(Protocol):
    """Anything with a batched ``choose`` (a ``name`` attribute, when it has one, names it in results)."""

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator, /) -> np.ndarray:
        """Pick one afterstate per position.

        ``states``: int8 ``[B, 26]`` positions from the mover's view; ``found``:
        their afterstates (``legal_afterstates``); ``colors``: when the caller
        knows them, the side to move of each position (``Color`` values), which
        players that score afterstates use to break exact ties as FORMATS.md
        says (the earliest result in the sorted ``results`` list; without
        colours, the earliest in the core's order). Returns int64 ``[B]``: for
        each position, the index of the chosen afterstate within that position's
        results (0 .. count - 1). ``colors`` is optional for players:
        ``choose_indices`` passes it only to a ``choose`` that accepts it, and
        ``dice`` (int64 ``[B, 2]``, the roll of each position) only to one with a
        ``dice`` parameter, for players that decide checker by checker
        (``nardy_env.envs.CheckerPolicy``). The protocol names only the three
        arguments every player takes, so a ``choose(states, found, rng)`` is a
        Player to a type checker too.
        """
        ...


class ChooseFunction(Protocol):
    """A plain function that plays: ``f(states, found, rng) -> indices``, as ``Player.choose``
    (it may take ``colors`` and ``dice`` too, as ``choose`` may)."""

    def __call__(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator, /) -> np.ndarray:
        ...


PlayerSpec = str | os.PathLike[str] | Player | ChooseFunction
"""What ``load_player`` (and every function that plays) takes: a name, a player object, or a
plain function ``f(states, found, rng) -> indices`` (a player's class is not one: pass an
instance)."""


def player_name(player: Any, default: str = "player") -> str:
    """How results and messages name a player object: its ``name``, else its ``__name__``."""
    return str(getattr(player, "name", None) or getattr(player, "__name__", None) or default)


class PlayerNotFound(LookupError):
    """A player name that no installed resolver understands."""


class PlayerFailed(ValueError):
    """A player that answered with something other than one legal index per position (raised by
    ``choose_indices``), or, in a match, one whose own code raised (``of``; the original
    exception is the ``__cause__`` in the process that played, and named in the message).
    ``position``: the index of the position whose choice was wrong, when one was."""

    position: int | None = None

    @classmethod
    def of(cls, player: Any, exc: BaseException) -> PlayerFailed | None:
        """The failure of ``player``, whose ``choose`` raised ``exc``, naming the player, the
        exception and the line of the player's code that raised it; None when ``exc`` is not the
        player's to answer for: an interruption (Ctrl-C inside compiled code comes out as an
        error caused by it) or a failure of one of nardy's bots (a bug of nardy's, to be shown
        with its traceback). Players that run what they were given (a network's weights or
        graph, your function or evaluator) say so with ``runs_your_code``."""
        if _interrupted(exc):
            return None
        if _is_nardys(type(player)) and not (getattr(player, "runs_your_code", False)
                                             and _not_nardys_fault(exc)):
            return None
        return cls(f"player {player_name(player, type(player).__name__)!r} raised {type(exc).__name__}: {exc} "
                   f"({_where(exc, player)})")


def check_batch(states: np.ndarray, found: Afterstates) -> None:
    """ValueError unless ``found`` lists the afterstates of as many positions as ``states`` holds
    (a player given the afterstates of other positions would answer for those)."""
    if not isinstance(found, Afterstates):
        raise TypeError(f"found must be the Afterstates that legal_afterstates(states, dice) returns, "
                        f"got {type(found).__name__}")
    rows = np.shape(states)[0] if np.ndim(states) > 1 else 1
    listed = found.offsets.shape[0] - 1
    if rows != listed:
        raise ValueError(f"found lists the afterstates of {listed} position{'s' if listed != 1 else ''}, but "
                         f"states holds {rows}: pass legal_afterstates(states, dice) of the same states")


class RandomPlayer:
    """Uniform over the legal afterstates: the weakest baseline."""

    name = "random"
    version = 1  # a bot's version: raised whenever its play changes (match results record it)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator | None,
               colors: np.ndarray | None = None) -> np.ndarray:
        """``rng``: the numpy Generator to draw from, or None for fresh entropy (as the network
        players, which draw nothing, accept it). Not a seed: one seed every turn would repeat the draws."""
        check_batch(states, found)
        if rng is None:
            rng = np.random.default_rng()
        elif not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed), made once) or None, "
                            f"got {rng!r}")
        counts = found.counts()
        return (rng.random(counts.shape[0]) * counts).astype(np.int64)


_ACCEPTS: weakref.WeakKeyDictionary[Any, dict[tuple[str, bool, bool], bool]] = weakref.WeakKeyDictionary()
"""``_accepts``'s answers for plain functions and methods, by function: reading a signature costs
more than an opponent's whole move in a single env."""


def _accepts(fn: Any, name: str, through_kwargs: bool = True) -> bool:
    """Whether ``fn`` takes the keyword ``name``: by name, or (``through_kwargs``) through ``**kwargs``.

    Read from the callable itself (as ``_check_called_as_choose`` reads it), so an adapter's own
    keywords count; a plain decorator, ``wrapper(*args, **kwargs)``, is looked through to what it
    hands everything on to (``_passed_through_to``). Remembered for a plain function or method (by
    its function: a bound method is a new object at each access); other callables, and functions
    with a ``__wrapped__`` or ``__signature__`` (which may be swapped in place), are read each time."""
    bound = inspect.ismethod(fn)
    function = fn.__func__ if bound else fn
    if (not inspect.isfunction(function) or hasattr(function, "__wrapped__")
            or hasattr(function, "__signature__")):
        return _reads_accepts(fn, name, through_kwargs)
    known = _ACCEPTS.setdefault(function, {})  # functions compare and hash by identity
    key = (name, through_kwargs, bound)  # a bound method's signature lacks self: its own answer
    if key not in known:
        known[key] = _reads_accepts(fn, name, through_kwargs)
    return known[key]


def _reads_accepts(fn: Any, name: str, through_kwargs: bool) -> bool:
    """``_accepts``, read from the signature."""
    seen: set[int] = set()
    while True:
        try:
            params = inspect.signature(fn, follow_wrapped=False).parameters
        except (TypeError, ValueError):
            return False
        if name in params:
            return True
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return False
        seen.add(id(fn))
        inner = _passed_through_to(fn, params)
        if inner is None or id(inner) in seen:  # nothing further, or a chain that loops
            return through_kwargs
        fn = inner


def _passed_through_to(fn: Any, params: Any) -> Any:
    """What a plain decorator, ``wrapper(*args, **kwargs)``, hands everything on to: its
    ``__wrapped__``, a partial's function, a callable object's decorated ``__call__``. None for
    anything else: ``(states, found, rng, **kwargs)`` is an adapter taking keywords for itself."""
    kinds = sorted(p.kind for p in params.values())
    if kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    inner = getattr(fn, "__wrapped__", None)
    if inner is None and isinstance(fn, functools.partial):
        inner = fn.func
    if inner is None and not inspect.isroutine(fn):
        inner = getattr(inspect.getattr_static(type(fn), "__call__", None), "__wrapped__", None)
    return inner if callable(inner) else None


def _check_called_as_choose(fn: Any, label: str) -> None:
    """Refuse, when it is loaded, a player function or ``choose`` method that cannot be called
    as nardy calls it, ``(states, found, rng)``: otherwise its first move fails with a TypeError
    that points at nardy's call rather than at the player."""
    try:  # the callable itself: a functools.wraps adapter may take other arguments than what it wraps
        signature = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):  # a builtin without a signature: its first call will tell
        return
    try:  # colors= and dice= are given to a player that names them
        signature.bind(None, None, None, **dict.fromkeys(n for n in ("colors", "dice") if n in signature.parameters))
    except TypeError as exc:
        factory = (" (a function is the player itself, not a factory: name a class, which nardy makes with no "
                   "arguments, or an object)" if not signature.parameters else "")
        raise TypeError(f"{label}{signature} cannot be called as a player ({exc}): nardy calls it with three "
                        f"arguments, (states, found, rng), and colors=/dice= when it names them{factory}") from None


def _check_choose_of(player: Any) -> None:
    """``_check_called_as_choose`` on a player object's ``choose``."""
    _check_called_as_choose(getattr(player, "choose"), f"{type(player).__name__}.choose")  # noqa: B009


def choose_indices(player: Player, states: np.ndarray, found: Afterstates,
                   rng: np.random.Generator, colors: np.ndarray | None = None,
                   dice: np.ndarray | None = None, *, name_failures: bool = False) -> np.ndarray:
    """Call ``player.choose`` and check its answer; returns absolute rows into ``found``.

    ``colors`` (the side to move of each position) and ``dice`` (each
    position's roll) are passed on to players whose ``choose`` accepts them:
    colours so that their ties follow FORMATS.md, dice for players that play
    checker by checker. ``name_failures``: what the player's own code raises
    comes out as ``PlayerFailed`` naming it (``PlayerFailed.of``; matches and
    ``nardy play`` ask for this); otherwise it comes out as it was raised (the
    environments' ``opponent=``).
    """
    if name_failures:
        try:
            return choose_indices(player, states, found, rng, colors, dice)
        except PlayerFailed:
            raise
        except SystemExit as exc:  # sys.exit() in a player's code would end the program with its status, unsaid
            if not _exits_in_players_code(player, exc):  # a signal handler's (Ray's SIGTERM), nardy's own
                raise
            said = "sys.exit()" if exc.code is None else f"sys.exit({exc.code!r})"
            raise PlayerFailed(f"player {player_name(player, type(player).__name__)!r} called {said} "
                               f"({_where(exc, player)}); a player answers choose() or raises an error") from exc
        except Exception as exc:
            failed = PlayerFailed.of(player, exc)
            if failed is None:  # an interruption, or a bug of nardy's own: as it is
                raise
            raise failed from exc
    check_batch(states, found)
    extra: dict[str, np.ndarray] = {}
    if colors is not None and _accepts(player.choose, "colors"):
        extra["colors"] = np.asarray(colors)
    # Dice only to a choose that names them: a wrapper's **kwargs, written for colors=, may pass
    # them on to a player that does not take them.
    if dice is not None and _accepts(player.choose, "dice", through_kwargs=False):
        extra["dice"] = np.asarray(dice)
    raw = np.asarray(player.choose(states, found, rng, **extra))
    if raw.size and (raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer)):
        raise PlayerFailed(f"player {player_name(player, type(player).__name__)!r} returned {raw.dtype} choices "
                           f"{raw.ravel()[:3].tolist()}: choose() returns integer indices, one per position")
    picks = raw.astype(np.int64)
    counts = found.counts()
    if picks.shape != counts.shape:
        raise PlayerFailed(f"player {player_name(player, type(player).__name__)!r} returned choices of shape "
                           f"{picks.shape} for {counts.shape[0]} positions: choose() returns one index per "
                           f"position, an array of shape ({counts.shape[0]},)")
    if raw.dtype.kind == "u":  # a huge unsigned answer would wrap to a small negative one
        picks[raw > np.iinfo(np.int64).max] = np.iinfo(np.int64).max
    if (picks < 0).any() or (picks >= counts).any():
        bad = int(np.flatnonzero((picks < 0) | (picks >= counts))[0])
        failed = PlayerFailed(f"player {player_name(player, type(player).__name__)!r} chose afterstate "
                              f"{int(raw[bad])} of position {bad}, which has {int(counts[bad])} (indices count "
                              "from 0 within each position's own afterstates, not rows of found.states)")
        failed.position = bad
        raise failed
    return found.offsets[:-1] + picks


_PACKAGES = ("nardy_env", "agents", "train")
_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_NARDYS = tuple(os.path.join(_ROOT, package) + os.sep for package in _PACKAGES)
"""The folders of nardy's packages (this layer names the others' folders, never imports them)."""


def _is_nardys(cls: type) -> bool:
    """Whether ``cls`` is one of nardy's own (a bot, a network player), defined in its packages."""
    return cls.__module__.split(".")[0] in _PACKAGES


def _home(player: Any) -> str | None:
    """Where the code a player runs for you lives (your class, or what one of nardy's players
    wraps: your function, policy or evaluator): its top-level package's folder, or its module's
    file (the folder of a FILE.py:NAME player, whose neighbours it imports); None for nardy's
    own code and code without a file."""
    target = player
    if _is_nardys(type(player)):
        target = next((t for t in (getattr(player, name, None) for name in ("_fn", "policy", "evaluator"))
                       if t is not None), player)
    while isinstance(target, functools.partial):
        target = target.func
    module = str(getattr(target, "__module__", None) or type(target).__module__)
    if module.split(".")[0] in _PACKAGES:
        return None
    top = sys.modules.get(module.split(".")[0])
    where = getattr(top, "__file__", None)
    if not where:
        return None
    where = os.path.realpath(where)
    folder = hasattr(top, "__path__") or module.startswith(_player_files.PREFIX)
    return os.path.dirname(where) + os.sep if folder else where


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The lines of ``exc``'s traceback inside the player (after the caller's, ``choose_indices``'
    and ``FunctionPlayer.choose``'s)."""
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
    first = next((i for i, f in enumerate(frames) if f.filename == __file__), None)
    if first is not None:
        first = next((i for i in range(first, len(frames)) if frames[i].filename != __file__), len(frames))
        frames = frames[first:]
    return frames


def _folders() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Python's own library (by the base prefix: a venv's lib holds its site-packages) and the
    installed packages' folders, as real paths ending in a separator."""
    bases = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    library = tuple(os.path.realpath(sysconfig.get_paths(vars=bases)[k]) + os.sep for k in ("stdlib", "platstdlib"))
    installed = tuple(os.path.realpath(sysconfig.get_path(k)) + os.sep for k in ("purelib", "platlib"))
    return library, installed


def _path(frame: traceback.FrameSummary) -> str:
    return frame.filename if frame.filename.startswith("<") else os.path.realpath(frame.filename)


def _theirs(frames: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The frames outside nardy's packages and Python's own library (installed packages, which
    may sit inside the library's folder outside a venv, are not library)."""
    library, installed = _folders()

    def python(frame: traceback.FrameSummary) -> bool:
        return frame.filename.startswith("<frozen ") or (
            _path(frame).startswith(library) and not _path(frame).startswith(installed))

    return [f for f in frames if not python(f) and not _path(f).startswith(_NARDYS)]


def _interrupted(exc: BaseException | None) -> bool:
    """Whether ``exc`` or an exception it was raised from (or while handling) is no error but an
    interruption: KeyboardInterrupt, SIGTERM's exception, an exit."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if not isinstance(exc, Exception):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _exits_in_players_code(player: Any, exc: SystemExit) -> bool:
    """Whether ``exc`` was raised by the player's own code (its module or package, or the function,
    policy or evaluator one of nardy's players wraps), not by an interruption it handled (Ctrl-C
    turned into sys.exit) nor a signal handler that happened to run inside it (Ray's for SIGTERM
    calls sys.exit)."""
    if _interrupted(exc.__cause__ or exc.__context__):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None and tb.tb_frame.f_code in _signal_handler_codes():
        return False
    frames = _frames(exc)
    home = _home(player)
    return bool(frames) and home is not None and (_path(frames[-1]) == home or _path(frames[-1]).startswith(home))


def _signal_handler_codes() -> set[Any]:
    """The code of the Python functions installed as signal handlers (in the main thread's view)."""
    import signal

    codes = set()
    for number in signal.valid_signals():
        try:
            handler = signal.getsignal(number)
        except (ValueError, OSError):
            continue
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def _not_nardys_fault(exc: BaseException) -> bool:
    """For one of nardy's players that runs what it was given (a network, your evaluator): whether
    its failure comes from that (a line outside nardy and Python's library: your code, the
    network's runtime; or nardy's own complaint about a file, a ValueError of ``agents``) rather
    than from nardy's own code."""
    about_a_file = type(exc).__module__.split(".")[0] == "agents" and isinstance(exc, ValueError)
    return about_a_file or bool(_theirs(_frames(exc)))


def _where(exc: BaseException, player: Any = None) -> str:
    """Where the player's code raised ``exc``, as a traceback names it: of the lines inside the
    player's ``choose`` (after ``choose_indices``' own), the innermost in the player's own
    module or package; else outside nardy, Python's own library and the installed packages;
    else outside nardy and Python's library; else the innermost line."""
    frames = _frames(exc)
    if not frames:
        return "raised by the call itself"
    _, installed = _folders()
    home = _home(player) if player is not None else None
    theirs = _theirs(frames)
    picks = ([f for f in theirs if home and (_path(f) == home or _path(f).startswith(home))],
             [f for f in theirs if not _path(f).startswith(installed)], theirs, frames)
    frame = next(p for p in picks if p)[-1]
    return f'file "{frame.filename}", line {frame.lineno}, in {frame.name}'


def trained_rules(players: dict[str, Any]) -> Rules:
    """The rules to play these players (by name) under when none are asked for: those the
    network players among them were trained under (their ``rules``; see ``load_player(name,
    None)``), or the default rules when none carries any. Raises ValueError, naming each
    one's rules, when they were trained under different rules."""
    trained = {name: p.rules for name, p in players.items() if isinstance(getattr(p, "rules", None), Rules)}
    found = list(dict.fromkeys(trained.values()))
    if len(found) > 1:
        listed = "; ".join(f"{name}: {r.to_json()}" for name, r in trained.items())
        raise ValueError(f"the players were trained under different rules ({listed}); choose the rules of the games")
    return found[0] if found else DEFAULT_RULES


OUR_RESOLVER = "agents.registry:resolve"
"""nardy's own ``nardy.players`` entry point (pyproject.toml names the same): tried first, and a
failure to load it is nardy's (a folder shadowing ``agents``), not a plugin's."""


def _resolvers():
    """The ``nardy.players`` resolvers, as (entry point name, its value, the function): nardy's
    own (``agents``) first, then the others by name.

    A plugin that fails to load is skipped with a warning naming it, so it cannot
    take the other names (the bots included) down with it.
    """
    found = sorted(entry_points(group="nardy.players"),
                   key=lambda ep: (ep.value != OUR_RESOLVER, ep.name))
    resolvers = []
    for ep in found:
        try:
            resolvers.append((ep.name, ep.value, ep.load()))
        except Exception as exc:  # a broken third-party package
            ours = ep.value == OUR_RESOLVER and shadowed(exc)
            hint = f" ({SHADOWED})" if ours else ""
            warnings.warn(f"nardy.players entry point {ep.name!r} ({ep.value}) failed to load and is "
                          f"skipped: {type(exc).__name__}: {exc}{hint}", category=NardyWarning, stacklevel=3)
    return resolvers


SHADOWED = ("is a module named 'agents' of your own shadowing nardy's? nardy's packages are agents, train "
            "and nardy_env: run from another folder or rename yours")
"""What to say when one of nardy's own modules cannot be found under ``agents``."""


def shadowed(exc: BaseException) -> bool:
    """Whether ``exc`` is an import of nardy's ``agents`` package failing (another ``agents`` found first)."""
    return isinstance(exc, ImportError) and (exc.name or "").split(".")[0] == "agents"


class FunctionPlayer:
    """A plain function ``f(states, found, rng) -> indices`` as a Player."""

    runs_your_code = True  # its failures are the function's (PlayerFailed.of)

    def __init__(self, fn: ChooseFunction) -> None:
        self._fn = fn
        self.name = getattr(fn, "__name__", "function")
        _check_called_as_choose(fn, self.name)
        self._takes = [name for name in ("colors", "dice") if _accepts(fn, name, through_kwargs=name == "colors")]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fn!r})"

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator,
               colors: np.ndarray | None = None, dice: np.ndarray | None = None) -> np.ndarray:
        """The function's picks; ``colors`` and ``dice`` go to it only if it takes them."""
        given = {"colors": colors, "dice": dice}
        return self._fn(states, found, rng, **{name: given[name] for name in self._takes})


_LEVEL_NAMES = ("easy", "medium", "hard", "expert")
"""agents.levels.LEVELS' names, for this layer's messages (it does not import agents; a test keeps
the two alike)."""


def load_player(spec: PlayerSpec, rules: RulesLike | None = DEFAULT_RULES) -> Player:
    """A player from a name (``random``, a bot name, a checkpoint, a policy folder), a player
    object (with ``choose``), or a plain function ``f(states, found, rng) -> indices``.

    ``rules``: the rules of the games it will play; a network player named here searches
    under them (with a warning if it was trained under others). None loads nardy's network
    players under the rules they were trained under (their ``rules`` attribute says which),
    and any other named player (a bot, a plugin's player) under the default rules. A player
    object that searches under other rules than ``rules`` gets a warning (its look-ahead would
    not follow the game), and so does one whose ``trained_under`` (a network loaded from a file)
    differs from ``rules`` and that was not loaded under them (which warned then).
    """
    if rules is not None:
        rules = as_rules(rules)
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        if inspect.isclass(spec):
            raise TypeError(f"{spec.__name__} is a class: pass an instance, {spec.__name__}()")
        if callable(getattr(spec, "choose", None)):
            _check_choose_of(spec)
            own = getattr(spec, "rules", None)
            if rules is not None and isinstance(own, Rules) and own != rules and getattr(spec, "lists_moves", False):
                mine, game = own.differences(rules)
                raise ValueError(f"{player_name(spec, type(spec).__name__)} lists its checker moves under rules "
                                 f"with {mine}, but the game is played with {game}: make it "
                                 "with rules= the game's")
            searches = bool(getattr(spec, "ply", 0))
            if rules is not None and isinstance(own, Rules) and own != rules and searches:
                mine, game = own.differences(rules)
                warnings.warn(f"{player_name(spec, type(spec).__name__)} searches under rules with {mine}, but "
                              f"plays a game with {game}: its look-ahead does not follow the game's rules",
                              category=RulesMismatchWarning, stacklevel=2)
            trained = getattr(spec, "trained_under", None)
            if (rules is not None and isinstance(trained, Rules) and trained != rules and not searches
                    and own != rules):  # loaded under the game's rules: warned of when it was loaded
                was, game = trained.differences(rules)
                warnings.warn(f"{player_name(spec, type(spec).__name__)} was trained under rules with {was}, but "
                              f"plays a game with {game}, which it never learnt", category=RulesMismatchWarning,
                              stacklevel=2)
            return cast(Player, spec)
        if callable(getattr(spec, "outcomes", None)) or _is_torch_module(spec):
            raise TypeError(f"{type(spec).__name__} scores positions but is not a player: wrap it, "
                            "SearchPlayer(TorchEvaluator(network)) from agents (SearchPlayer(evaluator) for "
                            "an evaluator with outcomes()), which picks the afterstate of highest equity")
        if callable(spec):
            return FunctionPlayer(spec)
        raise TypeError(f"a player must be a name, have a choose() method or be a function, "
                        f"got {type(spec).__name__}")
    name, depth = search_depth(spec)  # the name without its search depth
    searched = depth is not None
    # Your own player, FILE.py:NAME (first: the file is named outright) or module:NAME (after the plugins).
    code = _code_spec(name)
    own_file = code is not None and code[0].endswith(".py")
    own_module = code is not None and not own_file and _is_module(code[0])
    if own_file and code is not None:
        return _load_code_player(spec, code[0], code[1], rules, depth if searched else None)
    if name == "random":
        if depth is not None and int(depth):
            raise ValueError(f"random does not search; drop '@{depth}'")
        return RandomPlayer()
    for ep_name, ep_value, resolve in _resolvers():
        # nardy's own resolver takes None (the trained rules); a plugin's gets real rules.
        ours = getattr(resolve, "__module__", "") == OUR_RESOLVER.partition(":")[0]
        if ours:
            player = resolve(spec, rules)
        else:
            try:
                player = resolve(spec, rules if rules is not None else DEFAULT_RULES)
            except Exception as exc:  # a plugin's fault, on a name it may not even own: not everyone's
                warnings.warn(f"nardy.players entry point {ep_name!r} ({ep_value}) failed on {spec!r} and is "
                              f"skipped for it: {type(exc).__name__}: {exc}", category=NardyWarning, stacklevel=2)
                continue
        if player is not None:
            if not ours and inspect.isclass(player):
                raise ValueError(f"{spec!r} (from the nardy.players entry point {ep_name!r}, {ep_value}): it "
                                 f"gave the class {player.__name__}, not a player; its resolver must return an "
                                 "instance")
            if not ours and callable(getattr(player, "choose", None)):
                try:  # refused now, in one line, rather than with a TypeError at its first move
                    _check_choose_of(player)
                except TypeError as exc:
                    raise ValueError(f"{spec!r} (from the nardy.players entry point {ep_name!r}, {ep_value}): "
                                     f"{exc}") from None
            return player
    if own_module and code is not None:  # "name:thing" (and "name:thing@2") may have been a plugin's
        if os.path.lexists(name):  # a path by that name (a link too) that holds no player: never an import instead
            raise PlayerNotFound(f"no player named {spec!r}: {name} is a file or folder here that holds no "
                                 "player, so the name is not read as module:NAME (the module is not imported); "
                                 "run from another folder to name your module's player")
        return _load_code_player(spec, code[0], code[1], rules, depth if searched else None)
    if searched and os.path.lexists(spec) and not os.path.lexists(name):
        raise PlayerNotFound(f"no player named {spec!r}: '@{depth}' is read as a search depth, so it names "
                             f"{name}, which does not exist; the file or folder {spec} is named {spec}@0")
    looks_like_path = os.sep in name or "/" in name or name.endswith((".pt", ".onnx", ".json"))
    if looks_like_path and not code and not os.path.exists(name):
        shipped = ("; the shipped player is named default from any folder"
                   if os.path.basename(os.path.normpath(name)) == "default" else "")
        raise PlayerNotFound(f"no player named {spec!r}: there is no file or folder {name} (for a run "
                             "directory, checkpoint file or exported policy folder; no installed plugin "
                             f"knows the name either){shipped}")
    if not code and os.path.isdir(name):
        odd = [f"{file} {not_a_file(os.path.join(name, file))}" for file in ("checkpoint.pt", "policy.onnx", "policy.json")
               if not_a_file(os.path.join(name, file))]
        if odd:
            raise PlayerNotFound(f"no player named {spec!r}: in the folder {name}, {'; '.join(odd)}")
        here = ("; a folder named default in the current directory is taken before the shipped player: run "
                "from another folder, or name the shipped player by its path (checkpoints/default of the "
                "nardy checkout)" if name == "default" else
                f"; a folder named {name} in the current directory is taken before the shipped player's level "
                f"{name}: run from another folder to play the level"
                if name in _LEVEL_NAMES else "")
        raise PlayerNotFound(f"no player named {spec!r}: the folder {name} holds neither checkpoint.pt (a run "
                             f"directory) nor policy.onnx and policy.json (an exported policy folder){here}")
    depth_hint = " (after '@' comes a search depth, a whole number such as 1)" if not searched and spec.rpartition("@")[0] else ""
    known = ("random", "race", "heuristic", "default", *_LEVEL_NAMES)
    case_hint = next((f" (names are lower case: {spec.lower() if k == 'default' else k}?)" for k in known
                      if name.lower() == k and name != k), "")
    raise PlayerNotFound(
        f"no player named {spec!r}{depth_hint}{case_hint}: give a bot name (random, race, heuristic), default "
        "(the shipped player) or a level of it (easy, medium, hard, expert), a run directory or checkpoint "
        "file, an exported policy folder (any of "
        "these three with @N to search N plies deep), your own player as FILE.py:NAME or module:NAME, or "
        "the name an installed plugin gives"
    )


def _is_torch_module(obj: Any) -> bool:
    """Whether ``obj`` is a torch module (a network), without importing torch for it."""
    return any(f"{k.__module__}.{k.__qualname__}" == "torch.nn.modules.module.Module" for k in type(obj).__mro__)


_CODE_SPEC = re.compile(r"(.+):([^:]+)")


def _code_spec(name: str) -> tuple[str, str] | None:
    """``(source, NAME)`` of ``FILE.py:NAME`` or ``module:NAME``, NAME a Python identifier in any
    script (``ПервыйХод``, ``खिलाड़ी``: ``str.isidentifier``), else None."""
    code = _CODE_SPEC.fullmatch(name)
    return (code.group(1), code.group(2)) if code is not None and code.group(2).isidentifier() else None


def _is_module(source: str) -> bool:
    """Whether ``source`` is a dotted module name (``my_agents.strong``)."""
    return all(part.isidentifier() for part in source.split("."))
_DEPTH = re.compile(r"[0-9]+")


def search_depth(spec: str) -> tuple[str, str | None]:
    """A player name split at its search-depth suffix: ``"run@2"`` -> ``("run", "2")``, and
    ``("run", None)`` for a name without one. The depth is ASCII digits only: ``"run@²"`` and
    ``"run@٣"`` have none (``str.isdigit`` takes the first, ``int`` the second). Every reader of
    ``NAME@N`` goes through here (``agents.registry.split_ply`` too), so they cannot disagree."""
    base, at, depth = spec.rpartition("@")
    if at and _DEPTH.fullmatch(depth):
        return base, depth
    return spec, None


def names_code(spec: str) -> bool:
    """Whether ``spec`` names code to run, ``FILE.py:NAME`` or ``module:NAME`` (``@N`` allowed),
    rather than a bot, a network file or folder (``runs/exp:v2``) or a plugin's name; as
    ``load_player`` tells them apart."""
    name = search_depth(spec)[0]
    code = _code_spec(name)
    if code is None:
        return False
    return code[0].endswith(".py") or (_is_module(code[0])
                                             and not os.path.lexists(name))


def code_file(spec: str) -> Path | None:
    """The source file of a ``FILE.py:NAME`` player name (``@N`` allowed), when that file exists; else None."""
    code = _code_spec(search_depth(spec)[0])
    if code is None or not code[0].endswith(".py") or not os.path.isfile(code[0]):
        return None
    return Path(code[0])


def _load_code_player(spec: str, source: str, name: str, rules: Rules | None, depth: str | None) -> Player:
    if depth is not None:
        raise ValueError(f"{spec!r}: your own players do not search; drop '@{depth}'")
    obj = _code_player(spec, source, name)
    if isinstance(obj, str | bytes | os.PathLike):
        raise ValueError(f"{spec!r}: {name} is a {type(obj).__name__}, not a player")
    try:
        return load_player(obj, rules)
    except TypeError as exc:  # not a player at all
        raise ValueError(f"{spec!r}: {exc}") from None


def _run_file(spec: str, source: str, path: str, module_name: str) -> Any:
    """Run a player's file as a module (``_player_files.PlayerFileLoader``: as Python runs a
    script), its failures told as a ValueError that names the player."""
    import sys

    module = importlib.util.module_from_spec(_player_files.module_spec(module_name, path))
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        assert module.__spec__ is not None and module.__spec__.loader is not None
        module.__spec__.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[module_name]
        if isinstance(exc, SystemExit):  # a script's own usage message, say
            raise ValueError(f"{spec!r}: running {source} ended it (SystemExit: {exc})") from None
        if not isinstance(exc, Exception):  # Ctrl-C stays Ctrl-C
            raise
        raise ValueError(f"{spec!r}: running {source} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _code_player(spec: str, source: str, name: str) -> Any:
    """The object ``NAME`` of ``FILE.py`` or of an importable module: a player, a function
    ``f(states, found, rng)``, or a class made with no arguments."""
    import importlib
    import sys

    if source.endswith(".py"):
        path = os.path.abspath(source)
        if not os.path.isfile(path):
            raise PlayerNotFound(f"{spec!r}: there is no file {source}")
        module_name = _player_files.module_name(path)
        module = sys.modules.get(module_name)
        if module is None:
            module = _run_file(spec, source, path, module_name)
    else:
        try:
            module = importlib.import_module(source)
        except ModuleNotFoundError as exc:
            if exc.name in (source, source.split(".")[0]):
                raise PlayerNotFound(f"{spec!r}: no module {source!r} to import from here (put its folder on "
                                     f"PYTHONPATH, or name the file: path/to/{source.split('.')[-1]}.py:{name})") from None
            raise ValueError(f"{spec!r}: importing {source} failed: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise ValueError(f"{spec!r}: importing {source} failed: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, name) and hasattr(module, unicodedata.normalize("NFKC", name)):
        name = unicodedata.normalize("NFKC", name)  # as Python reads the names in its source (ﬁrst: first)
    if not hasattr(module, name):
        raise PlayerNotFound(f"{spec!r}: {source} has no {name!r}")
    obj = getattr(module, name)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise ValueError(f"{spec!r}: {name} is a class that nardy makes with no arguments, which it "
                            f"refused ({exc}); name a configured player object, or a function, instead") from None
    if not getattr(obj, "name", None) and hasattr(obj, "choose"):
        try:
            obj.name = spec
        except AttributeError:
            pass
    return obj

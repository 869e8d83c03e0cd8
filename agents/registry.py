"""Player names understood on the command line (registered as a ``nardy.players`` entry point).

- ``race``, ``heuristic``: the baseline bots (``random`` is built into nardy_env).
- a run directory or a ``.pt`` checkpoint file: the TD network.
- an exported policy folder (``policy.onnx`` + ``policy.json``): the exported network.
- ``default``: the shipped player, ``checkpoints/default`` of the nardy checkout, from any
  directory (a ``default`` path in the current directory comes first).
- ``easy``, ``medium``, ``hard``, ``expert``: difficulty levels of the shipped player
  (``agents.levels``).
- any of these followed by ``@N`` searches N plies deep (``checkpoints/default@1``, ``default@1``).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

from nardy_env import NardyWarning, Rules
from nardy_env.players import SHADOWED, Player, RandomPlayer, search_depth, shadowed

from .bots import BOTS
from .files import shipped_data
from .levels import LEVELS, level
from .search import MAX_PLY

__all__ = ["SHIPPED_PLAYER", "NAMED_BOTS", "is_bot", "player_file", "resolve", "split_ply", "is_level",
           "level_temperature"]

#: The shipped player's folder (a wheel's agents/shipped, or the checkout's checkpoints/default);
#: the name ``default`` plays it from any directory.
SHIPPED_PLAYER = shipped_data(__file__, "shipped", "checkpoints", "default")


def split_ply(spec: str) -> tuple[str, int]:
    """``"path@2"`` -> ``("path", 2)``; no suffix means 0-ply."""
    base, depth = search_depth(spec)
    if depth is not None:
        return base, int(depth)
    _, sep, ply = spec.rpartition("@")
    if sep and re.fullmatch(r"[+-][0-9]+", ply):
        raise ValueError(f"{spec!r}: the search depth after '@' is a whole number from 0 to {MAX_PLY}")
    return spec, 0


def resolve(spec: str, rules: Rules | None) -> Player | None:
    """The player named by ``spec``, or None if this package does not know it."""
    base, ply = split_ply(spec)
    if base in BOTS:
        if ply:
            raise ValueError(f"{base} is a bot and does not search; drop '@{ply}'")
        return BOTS[base]()
    path = Path(base)
    if is_level(base):
        if ply:
            raise ValueError(f"{base} is a level of the shipped player, drawn by its 0-ply equities; drop '@{ply}' "
                             f"(a level of a searching player: agents.levels.Sampling('default@{ply}', T))")
        if not _has_shipped_player():
            raise ValueError(f"{base} is a level of the shipped player, {SHIPPED_PLAYER}, which this installation "
                             "lacks (it comes with a clone of the nardy repository and with nardy's wheel); a level "
                             f"of another network: agents.levels.level({base!r}, PATH) in your own FILE.py:NAME")
        return level(base, "default", rules)
    if base == "default" and not path.exists():
        if not _has_shipped_player():
            raise ValueError(f"'default' names the shipped player, {SHIPPED_PLAYER}, which this installation "
                             "lacks (it comes with a clone of the nardy repository and with nardy's wheel: name a "
                             "clone's checkpoints/default folder instead)")
        player = _path_player(SHIPPED_PLAYER, base, ply, rules)
        if player is not None:
            player.name = spec  # type: ignore[attr-defined]  # shown as asked for: "default", not a long path
        return player
    return _path_player(path, base, ply, rules)


def _has_shipped_player() -> bool:
    return (SHIPPED_PLAYER / "policy.onnx").is_file() or (SHIPPED_PLAYER / "checkpoint.pt").is_file()


NAMED_BOTS: dict[str, type] = {"random": RandomPlayer, **BOTS}
"""nardy's bots by name, ``random`` included: a name among them plays the bot before any file
or folder of that name (as ``load_player`` resolves it)."""


def is_bot(name: str) -> bool:
    """Whether ``name`` (without ``@N``) names one of nardy's bots (``NAMED_BOTS``)."""
    return name in NAMED_BOTS


def is_level(name: str) -> bool:
    """Whether ``name`` (without ``@N``) names a difficulty level of the shipped player: one of
    ``agents.levels.LEVELS`` with no file or folder of that name here (which comes first)."""
    return name in LEVELS and not Path(name).exists()


def level_temperature(spec: str) -> float:
    """The sampling temperature a player name plays at: a level's (``agents.levels.LEVELS``), else
    0 (the best play): with the network's hash and depth, what tells ``easy`` from ``hard``."""
    base = split_ply(spec)[0]
    return float(LEVELS[base]) if is_level(base) else 0.0


def player_file(spec: str) -> Path | None:
    """The file whose network a player name plays (``policy.onnx`` of an exported folder, else the
    checkpoint), for recording which network a result belongs to; None for bots and other names."""
    base, _ = split_ply(spec)
    if is_bot(base):  # the bots, before any file of that name (as load_player)
        return None
    path = SHIPPED_PLAYER if (base == "default" and not Path(base).exists()) or is_level(base) else Path(base)
    if path.name in ("policy.onnx", "policy.json") and path.is_file():
        path = path.parent
    if path.is_dir():
        for name in ("policy.onnx", "checkpoint.pt"):  # the export is played when there is one
            if (path / name).is_file():
                return path / name
        return None
    return path if path.is_file() else None


def _path_player(path: Path, base: str, ply: int, rules: Rules | None) -> Player | None:
    """The network player in a run directory, checkpoint file or exported folder, or None."""
    if path.name in ("policy.onnx", "policy.json") and path.is_file():
        path = path.parent  # a file of an exported folder names the folder
    exported = (path / "policy.onnx").is_file() or (path / "policy.json").is_file()
    checkpoint = path / "checkpoint.pt"
    if exported:
        from .onnx_policy import onnx_player

        if checkpoint.is_file() and _export_is_stale(path, checkpoint):
            warnings.warn(f"{path}: policy.onnx was exported from another checkpoint than the checkpoint.pt "
                          f"beside it; playing the export (name {checkpoint} to play the checkpoint, or "
                          f"refresh the export with `nardy export {path} --out {path} --force`)", category=NardyWarning, stacklevel=3)
        if not checkpoint.is_file():
            return onnx_player(path, ply=ply, rules=rules)
        from .onnx_policy import PolicyError

        try:
            return onnx_player(path, ply=ply, rules=rules)
        except PolicyError as exc:  # the export is broken, the checkpoint beside it may not be
            raise PolicyError(f"{exc} (to play the checkpoint beside it, name {checkpoint})") from None
    if path.is_file() and path.suffix == ".py":  # meant as a player of one's own, FILE.py:NAME
        raise ValueError(f"{base} is Python code, not a network: name the player in it, {base}:NAME "
                         "(NAME: the function, class or player object in the file that plays)")
    if path.is_file() or checkpoint.is_file():
        try:
            from .td import td_player
        except ImportError as exc:
            if shadowed(exc):  # ours not found: another 'agents' first on the path
                raise ImportError(f"{exc} (while loading {base}: {SHADOWED})", name=exc.name) from exc
            if exc.name is not None and exc.name.split(".")[0] != "torch":
                raise  # torch is there but something it needs is not: its own message says what
            raise ValueError(f"{base} is a torch checkpoint and torch is not installed; install torch, "
                             "or name a folder written by `nardy export`, which plays with onnxruntime "
                             "alone") from None
        return td_player(path, ply=ply, rules=rules)
    return None


def _export_is_stale(folder: Path, checkpoint: Path) -> bool:
    """True when the folder's export records another checkpoint (by hash) than the one beside it."""
    from .files import file_sha256

    try:
        recorded = json.loads((folder / "policy.json").read_text(encoding="utf-8"))["training"]["checkpoint_sha256"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False  # no record to compare with: the loader reports a broken policy.json itself
    return bool(recorded) and recorded != file_sha256(checkpoint)

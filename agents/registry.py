"""Player names understood on the command line (registered as a ``nardy.players`` entry point).

- ``race``, ``heuristic``: the baseline bots (``random`` is built into nardy_env).
- a run directory or a ``.pt`` checkpoint file: the TD network.
- an exported policy folder (``policy.onnx`` + ``policy.json``): the exported network.
- any of these followed by ``@N`` searches N plies deep (``checkpoints/default@1``).
"""

from __future__ import annotations

from pathlib import Path

from nardy_env import Rules
from nardy_env.players import Player

from .bots import BOTS

__all__ = ["resolve", "split_ply"]


def split_ply(spec: str) -> tuple[str, int]:
    """``"path@2"`` -> ``("path", 2)``; no suffix means 0-ply."""
    base, sep, ply = spec.rpartition("@")
    if sep and ply.isdigit():
        return base, int(ply)
    return spec, 0


def resolve(spec: str, rules: Rules) -> Player | None:
    """The player named by ``spec``, or None if this package does not know it."""
    base, ply = split_ply(spec)
    if base in BOTS:
        if ply:
            raise ValueError(f"{base} is a bot and does not search; drop '@{ply}'")
        return BOTS[base]()
    path = Path(base)
    if (path / "policy.onnx").is_file() or (path / "policy.json").is_file():
        from .onnx_policy import onnx_player

        return onnx_player(path, ply=ply, rules=rules)
    if path.is_file() or (path / "checkpoint.pt").is_file():
        from .td import td_player

        return td_player(path, ply=ply, rules=rules)
    return None

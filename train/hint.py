"""Ranked plays of a position and roll, as a player sees them (``nardy hint``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.levels import Sampling
from agents.registry import SHIPPED_PLAYER
from agents.search import SearchPlayer, searched
from nardy_env import flip, format_npn, legal_afterstates, to_common_point
from nardy_env.notation import results_rank
from nardy_env.players import Player, PlayerFailed, player_name
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules
from train.moves import parse_dice, parse_live_npn

__all__ = ["can_rank", "default_player_spec", "no_ranking", "rank_plays"]


def no_ranking(player: Player) -> str:
    """Why ``player`` has no ranking to show (for a player that ``can_rank`` refuses)."""
    return (f"{player_name(player, type(player).__name__)} chooses plays without scoring them, so it has no ranking; "
            "give a network (a run, checkpoint or export) or a bot that scores plays (heuristic, race), or give "
            "your player an equities(found) method (docs/agents.md)")


def _ranking(player: Player) -> Player:
    """The player whose values rank the plays: a difficulty level's network (it draws its plays by
    those values), else the player itself."""
    return player.player if isinstance(player, Sampling) else player


def can_rank(player: Player) -> bool:
    """Whether ``player`` scores plays (a network, a level of one, or a bot with ``equities``), so it
    has a ranking."""
    player = _ranking(player)
    return isinstance(player, SearchPlayer) or callable(getattr(player, "equities", None))


def default_player_spec() -> str:
    """The shipped player when it is there (named ``default``), else the heuristic bot."""
    if not ((SHIPPED_PLAYER / "policy.onnx").is_file() or (SHIPPED_PLAYER / "checkpoint.pt").is_file()):
        return "heuristic"
    if not os.path.exists("default"):  # a path of that name here would come first
        return "default"
    relative = os.path.relpath(SHIPPED_PLAYER)
    return relative if not relative.startswith("..") else str(SHIPPED_PLAYER)


def _equities(player: Any, found: Any) -> np.ndarray:
    """``player.equities(found)``, checked: one finite number per row of ``found.states``. What
    your own player's method raises comes out as ``PlayerFailed`` naming it and its line."""
    name = player_name(player, type(player).__name__)
    try:
        raw = player.equities(found)
    except Exception as exc:
        failed = PlayerFailed.of(player, exc)
        if failed is None:  # one of nardy's bots: a bug of nardy's, with its traceback
            raise
        raise failed from exc
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise PlayerFailed(f"player {name!r} returned equities that are not numbers ({type(raw).__name__}): "
                           "equities(found) returns one number per row of found.states") from None
    rows = found.states.shape[0]
    if values.shape != (rows,):
        raise PlayerFailed(f"player {name!r} returned equities of shape {values.shape} for {rows} play{'' if rows == 1 else 's'}: "
                           f"equities(found) returns one number per row of found.states, shape ({rows},)")
    if not np.isfinite(values).all():
        bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise PlayerFailed(f"player {name!r} returned equity {values[bad]} for play {bad}: equities must be "
                           "finite numbers")
    return values


def rank_plays(player: Player, npn: str, dice: Sequence[int] | np.ndarray,
               rules: RulesLike | None = DEFAULT_RULES) -> list[dict[str, Any]]:
    """Every legal play, best first by ``player``'s evaluation.

    Each entry: ``result`` (NPN, other side to move), ``equity`` (cubeless
    points from the mover's view; for bots, the bot's own score), ``moves``
    (common numbers, 0 = off), and for network players ``outcomes``
    (probabilities [win, win mars, lose, lose mars] at the same depth as the
    equity: they add up to it) and ``ply`` (that depth; candidates dropped by
    the move filter show their 0-ply equity and probabilities).
    """
    rules = as_rules(rules)
    player = _ranking(player)
    d1, d2 = parse_dice(list(dice) if not isinstance(dice, list) else dice)
    state, side = parse_live_npn(npn)
    found = legal_afterstates(state[None], np.array([[d1, d2]]), rules)
    entries = []
    outcomes: np.ndarray | None = None
    ply: np.ndarray | None = None
    if isinstance(player, SearchPlayer):
        # The move filter's ties fall as in play (FORMATS.md's order).
        values, outcomes = player.evaluate_with_outcomes(
            found, results_rank(found.states, np.array([int(side)]), found.offsets))
        static = values if player.ply == 0 else player.static_equity(found.states)  # 0-ply: the same numbers
        deep = searched(values)
        equity = np.where(deep, values, static)
        ply = np.where(deep, player.ply, 0)
    elif can_rank(player):
        values = _equities(player, found)
        equity = values
    else:
        raise TypeError(no_ranking(player))
    for k in range(found.states.shape[0]):
        n = int(found.num_moves[k])
        entry: dict[str, Any] = {
            "result": format_npn(flip(found.states[k]), side.other, validate=False),
            "equity": round(float(equity[k]), 6) + 0.0,  # + 0.0: a -0.0 (a 1-ply average of zeros) prints as 0
            "moves": [[to_common_point(int(f), side), to_common_point(int(t), side)]
                      for f, t in found.moves[k, :n]],
        }
        if outcomes is not None and ply is not None:
            entry["outcomes"] = [round(float(x), 6) for x in outcomes[k]]
            entry["ply"] = int(ply[k])
        # Ties: a network player's in FORMATS.md's order (the sorted results), a bot's in the
        # core's order, as each plays them.
        entries.append((float(values[k]), entry["result"] if isinstance(player, SearchPlayer) else k, entry))
    entries.sort(key=lambda e: (-e[0], e[1]))
    return [e for _, _, e in entries]

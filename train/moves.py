"""Legal plays of one position and roll in common notation (``nardy moves``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from nardy_env import (
    NUM_CHECKERS,
    OFF_MOVER,
    OFF_OPPONENT,
    Color,
    flip,
    format_npn,
    legal_afterstates,
    outcome,
    parse_npn,
    to_common_point,
)
from nardy_env.rules import DEFAULT_RULES, RulesLike

__all__ = ["Play", "legal_plays", "parse_live_npn", "moves_record", "parse_dice", "format_move_sequence"]

Play = dict[str, Any]


def _shown(value: Any) -> str:
    """``value`` as JSON when it is JSON (what a --jsonl caller sent: ``true``, ``"6"``), else its repr."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def parse_dice(dice: Any) -> tuple[int, int]:
    """Validate two dice, each an integer 1..6."""
    if isinstance(dice, np.ndarray) and dice.ndim == 1:  # as nardy_env's functions take them
        dice = dice.tolist()
    if not isinstance(dice, list | tuple) or len(dice) != 2:
        raise ValueError(f"dice must be a list of two integers 1..6, got {_shown(dice)}")
    out = []
    for d in dice:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or not 1 <= int(d) <= 6:
            raise ValueError(f"dice must be integers 1..6, got {_shown(list(dice))}")
        out.append(int(d))
    return out[0], out[1]


def parse_live_npn(npn: str) -> tuple[np.ndarray, Color]:
    """``parse_npn`` that also rejects a finished game, naming the winner."""
    state, side = parse_npn(npn)
    if state[OFF_MOVER] == state[OFF_OPPONENT] == NUM_CHECKERS:
        raise ValueError(f"both sides have borne off all {NUM_CHECKERS} checkers: no game reaches that, "
                         "and it has no moves")
    result = int(outcome(state))  # points for the side to move; 0 while the game goes on
    if result:
        winner = side if result > 0 else side.other
        raise ValueError(f"the game is over: {winner.name.lower()} has borne off all {NUM_CHECKERS} "
                         "checkers, so there are no moves")
    return state, side


def legal_plays(npn: str, dice: Sequence[int], rules: RulesLike | None = DEFAULT_RULES) -> list[Play]:
    """Every distinct legal end of turn, sorted by its NPN string.

    Each play: ``{"moves": [[from, to], ...], "result": NPN}`` in common point
    numbers (``to = 0`` for bearing off); the result has the other side to move.
    """
    d1, d2 = parse_dice(list(dice))
    state, side = parse_live_npn(npn)
    res = legal_afterstates(state[None], np.array([[d1, d2]]), rules)
    plays: list[Play] = []
    used = np.arange(res.moves.shape[1]) < res.num_moves[:, None]  # each play's moves, in order
    common = np.zeros_like(res.moves)
    common[used] = to_common_point(res.moves[used], side)
    flipped = flip(res.states)  # the results from the side to move next
    for k in range(res.states.shape[0]):
        result = format_npn(flipped[k], side.other, validate=False)
        plays.append({"moves": common[k, :int(res.num_moves[k])].tolist(), "result": result})
    plays.sort(key=lambda p: p["result"])
    return plays


STREAM_OPTIONS = {"rules": "--rules", "ply": "--ply", "filter": "--filter", "top": "--top", "player": "--player",
                  "policy": "--policy"}
"""Keys a request line might carry to change its answer, which only the command line sets;
any other key besides position and dice (a request id, say) is ignored."""


def _stream_option(key: str) -> str | None:
    """The stream option a request key stands for: its name in any case, with leading dashes,
    or singular/plural (``Rule``, ``--ply``, ``plies``, ``players``); None for any other key."""
    word = key.lower().lstrip("-")
    return next((option for option in STREAM_OPTIONS
                 if word in (option, f"{option}s", option.removesuffix("s"))
                 or (option.endswith("y") and word == f"{option[:-1]}ies")),
                None)


def moves_record(line: str, rules: RulesLike | None = DEFAULT_RULES, ranked: bool = False) -> dict[str, Any]:
    """Answer one ``nardy moves --jsonl`` input line (FORMATS.md); raises ValueError on bad input.
    ``ranked``: the line is ``nardy hint``'s, whose options include the ranking's (--ply, ...)."""
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON object: {exc.msg}") from None
    if not isinstance(request, dict):
        raise ValueError("each line must be a JSON object with 'position' and 'dice'")
    missing = [k for k in ("position", "dice") if k not in request]
    if missing:
        raise ValueError(f"missing key(s) {missing}")
    # Answered without them, the line would get another answer than it asks for; a near miss
    # ("Rule", "--ply", "players") is taken for what it surely means, but nothing further off:
    # "plays" (a field of moves' own answer), "reply" or "topic" are a caller's own keys.
    options = {key: option for key in request if (option := _stream_option(key)) is not None}
    ranking = {key: option for key, option in options.items() if option != "rules"}
    if ranking and not ranked:  # --ply and the rest are nardy hint's: moves lists plays unranked
        rules_too = [k for k, o in options.items() if o == "rules"]
        raise ValueError(f"{', '.join(repr(k) for k in ranking)}: nardy moves lists the legal plays without "
                         f"ranking them; to rank them, send the line to nardy hint --jsonl with "
                         f"{', '.join(STREAM_OPTIONS[o] for o in ranking.values())} on its command line"
                         + (f"; and {rules_too[0]!r} cannot be set per line either (--rules, on either command's "
                            "command line)" if rules_too else ""))
    if options:
        raise ValueError(f"{', '.join(repr(k) for k in options)} cannot be set per line: such settings apply to "
                         f"the whole stream, as command-line options "
                         f"({', '.join(STREAM_OPTIONS[o] for o in options.values())})")
    position, dice = request["position"], request["dice"]
    plays = legal_plays(position, parse_dice(dice), rules)
    return {
        "position": position,
        "dice": list(dice),
        "results": [p["result"] for p in plays],
        "plays": plays,
    }


def format_move_sequence(moves: Sequence[Sequence[int]]) -> str:
    """``24/18 18/13`` style text; bearing off is ``/off``; an empty play is ``(no move)``."""
    if not moves:
        return "(no move)"
    return " ".join(f"{f}/{'off' if t == 0 else t}" for f, t in moves)

"""A terminal game against any player (``nardy play``).

The board is drawn after every move with the dice. On your turn, type a play
as moves in common point numbers (``24/18 18/13``; ``off`` or ``0`` to bear
off; ``24-18`` works too, and one checker's moves in any order), or the number
of a play from the list. You then see the board and confirm it, undo it or
type another play. Other commands: ``list`` (the legal plays again), ``hint``
(the opponent's ranking of your plays, or the shipped player's, else
heuristic's, when the opponent does not score them or rates them all the
same), ``npn`` (the position as an NPN string, with the ``nardy hint``
command for it), ``resign``, ``quit`` (or ``exit``, ``q``), ``help``.

Plays are listed sorted by their moves, in columns; a typed play that cannot
be legal is refused with the reason (no checker there, backwards, a distance
the dice cannot make, bearing off too early, or the whole-turn rules).

Resigning (at your turn, after the roll) concedes a single game, 1 point,
when you have borne a checker off or your escape from mars is certain
whatever is rolled (RULES.md, article 50.7: resignation without mars; judged
over this roll, and once the sides can no longer meet over your next turns,
three at most: ``nardy_env.game.resignation_points``); otherwise it concedes the mars,
2 points. ``resign`` and ``quit`` ask for a ``y`` first. The confirmation
prompt takes ``y`` (or Enter) to play, ``undo`` (or ``n``) to choose again,
and ``resign`` / ``quit`` as at the play prompt.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Callable
from itertools import combinations, permutations
from typing import Any, TextIO

import numpy as np

from nardy_env import (
    Color,
    Rules,
    flip,
    format_npn,
    initial_states,
    legal_afterstates,
    outcome,
    parse_npn,
    to_common_point,
    turn_head_limit,
)
from nardy_env._runtime import printable
from nardy_env.core import NUM_CHECKERS, OFF_MOVER
from nardy_env.game import escape_turns, opening_roll, resignation_points, roll_dice
from nardy_env.players import Player, PlayerFailed, choose_indices, player_name
from nardy_env.render import board_text, board_words
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules
from train.moves import format_move_sequence, legal_plays
from train.progress import stop_behind

__all__ = ["play_session", "parse_play"]

_POINT = r"(?:\d{1,2}|off)"
_MOVE = re.compile(rf"^(\d{{1,2}})((?:/{_POINT})+)(?:\(([1-4])\))?$")
ROUTES = {
    Color.WHITE: "White moves 24 -> 1; its home is 1-6 (bear off with e.g. 6/off).",
    Color.BLACK: "Black moves 12 -> 1, then on from 24 -> 13; its home is 13-18 (bear off with e.g. 18/off).",
}


def help_text(side: Color) -> str:
    """What to type at the play prompt, with examples for the human's colour."""
    example, through, via, twice = (("24/18 18/13", "24/13", "24/18/13", "13/7(2)") if side == Color.WHITE
                                    else ("12/6 6/1", "12/1", "12/6/1", "24/18(2)"))
    return "\n".join(wrap(paragraph) for paragraph in (
        f"Enter a play as moves in common point numbers, like '{example}' ('0' or 'off' bears off; "
        f"'{through}' or '{via}' moves one checker with both dice; '{twice}' moves two checkers the same "
        "way), "
        "or the number of a play from the list.",
        ROUTES[side],
        "Commands: list (the plays again), hint (your plays ranked by the opponent, or by the shipped player "
        "when the opponent does not tell them apart), read (the position "
        "in words, for a screen reader), npn (the position, for nardy hint), resign, quit (or exit, q), help. After choosing, confirm with y (or Enter), undo, or type "
        "another play."))


def line_width() -> int:
    """Columns a line may take: the terminal's less one (79 when output is not a terminal), 99 at most."""
    return min(shutil.get_terminal_size((80, 24)).columns, 100) - 1


def wrap(text: str) -> str:
    """A paragraph broken into lines that fit the terminal (79 columns when it is not one, 99 at most)."""
    width = line_width()
    # A word wider than the line (a position string, for nardy hint) stays whole, to be copied.
    return textwrap.fill(text, width=max(width, 30), break_on_hyphens=False, break_long_words=False)


class _Quit(Exception):
    pass


YES = ("y", "yes", "д", "да")
"""Answers taken for yes at every [y/N] prompt (a Russian keyboard's too)."""

AMBIGUOUS = ("н",)
"""Asked again: 'н' begins 'нет' (no), and it is what the y key types on a Russian keyboard."""
AMBIGUOUS_ANSWER = "н is the y key on a Russian keyboard, and the start of нет: answer y or n (да or нет)."


MAX_INPUT = 200
"""Characters in one line typed at a prompt; a longer one is refused without being read."""


def _is_choice(text: str) -> bool:
    """Whether ``text`` reads as a play or a list number (at the confirm prompt: choose it instead)."""
    if re.fullmatch(r"#?[0-9]+", text):
        return True
    try:
        parse_play(text)
    except ValueError:
        return False
    return True


EXAMPLES = {
    Color.WHITE: "13/7, 13/7/1, 13/7(2) or 3/off",
    Color.BLACK: "12/6, 12/6/1, 24/18(2) or 15/off",
}
"""Moves in the error for text that is not one: forward for the side to move."""


def parse_play(text: str, side: Color = Color.WHITE) -> list[tuple[int, int]]:
    """``"24/18 18/13"`` -> [(24, 18), (18, 13)]; raises ValueError saying what is wrong
    (with examples of moves for ``side``, the side to move).

    Also ``"24/18/13"`` (one checker through a point), ``"13/7(2)"`` (two checkers),
    ``"24-18"`` and ``"24.18"`` (the '/' key of a Russian keyboard layout types '.');
    full-width digits read as plain ones.
    """
    moves = []
    text = unicodedata.normalize("NFKC", text)  # full-width digits and slashes as plain ones
    text = re.sub("[\u2010-\u2015\u2212]", "-", text)  # the dashes a phone or word processor types for '-'
    text = re.sub(r"\s*/\s*", "/", text)  # 24 / 18
    text = re.sub(r"(?<=\d)\s+-\s*(?=\d|off)|(?<=\d)\s*-\s+(?=\d|off)", "-", text, flags=re.I)  # 24 - 18
    text = re.sub(r"(?<=\d)[-.](?=\d|off)", "/", text, flags=re.I)  # 24-18, as many clubs write it; 24.18; 6-OFF
    for token in re.sub(r"\s+\(", "(", text).replace(",", " ").split():
        m = _MOVE.match(token.lower())
        if not m and ("*" in token or "bar" in token.lower()):
            raise ValueError(f"'{token}': long nardy has no hitting and no bar (a checker never lands on "
                             f"the opponent's); write moves as FROM/TO, e.g. {EXAMPLES[side].split(',')[0]}")
        if not m:
            raise ValueError(f"'{token}' is not a move; write moves as FROM/TO, e.g. {EXAMPLES[side]}")
        stops = [int(m.group(1))] + [0 if p == "off" else int(p) for p in m.group(2).split("/")[1:]]
        if any(p == 0 for p in stops[1:-1]):
            raise ValueError(f"'{token}': a checker borne off goes no further")
        if not 1 <= stops[0] <= 24 or not all(0 <= p <= 24 for p in stops[1:]):
            raise ValueError(f"'{token}': points are numbered 1..24 (0 or 'off' for bearing off)")
        legs = list(zip(stops[:-1], stops[1:], strict=True))
        moves += legs * int(m.group(3) or 1)
    if not moves:
        raise ValueError("no moves given")
    return moves


def _playable_order(npn: str, dice: list[int], moves: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The moves in an order in which each one can be made (``18/16 24/18`` -> ``24/18 18/16``);
    as typed when none is (``why_not_legal`` then says why)."""
    if not 2 <= len(moves) <= 4 or why_not_legal(npn, dice, moves) is None:  # a turn has 4 moves at most
        return moves
    for order in sorted(set(permutations(moves))):
        if why_not_legal(npn, dice, list(order)) is None:
            return list(order)
    return moves


def why_not_legal(npn: str, dice: list[int], moves: list[tuple[int, int]]) -> str | None:
    """A reason a typed play cannot be legal, checked move by move, or None if none is found.

    Catches a checker that is not there, a move backwards, a distance no dice can make,
    and bearing off with checkers outside home. The end position is checked separately
    against the legal results (which also catches the rules about the whole turn).
    """
    state, side = parse_npn(npn)
    mine = [max(int(v), 0) for v in state[:24]]  # personal points 1..24 as indices 0..23
    there = list(mine)  # before any move of the play
    colour = "white" if side == Color.WHITE else "black"
    faces = [dice[0]] * 4 if dice[0] == dice[1] else list(dice)
    reach = sorted({sum(c) for k in range(1, len(faces) + 1) for c in combinations(faces, k)})
    if len(moves) > len(faces):  # each move takes a die at least
        return (f"that is {len(moves)} moves; {dice[0]}-{dice[1]} plays {len(faces)} dice, so "
                f"{len(faces)} moves at most")
    for src, dst in moves:
        # Personal <-> common is a shift by 12 points, its own inverse (0, off, stays 0).
        a, b = int(to_common_point(src, side)), int(to_common_point(dst, side))
        name = f"{src}/{'off' if dst == 0 else dst}"
        if mine[a - 1] == 0 and there[a - 1]:
            n = there[a - 1]
            return (f"{name} needs another {colour} checker on {src}: the {n if n > 1 else 'one'} there "
                    f"{'are' if n > 1 else 'is'} moved already by the moves before it")
        if mine[a - 1] == 0:
            return f"there is no {colour} checker on {src} for {name}"
        if b == a:
            return f"{name} does not move the checker"
        if b > a:
            return f"{name} goes backwards: {ROUTES[side].rstrip('.')}"
        if b and state[b - 1] < 0:
            return f"{name} ends on {dst}, which the opponent holds"
        if b == 0:
            outside = sum(mine[6:])
            if outside - (a > 6):  # others outside (this one may come home and off within the move)
                return (f"{name}: you bear off only once all your checkers are home "
                        f"({outside} {'is' if outside == 1 else 'are'} still outside)")
            if reach[-1] < a:
                return f"{name} needs {a} points to bear off; {dice[0]}-{dice[1]} moves at most {reach[-1]}"
            higher = [p + 1 for p in range(a, 6) if mine[p]]
            if a not in reach and higher:  # no exact die or sum: an overshoot, legal only from the top
                return (f"{name}: a die larger than {a} bears off from {src} only when no checker of yours "
                        f"stands higher in your home (one is on {to_common_point(higher[-1], side)})")
        elif a - b not in reach:
            return f"{name} is {a - b} point{'s' * (a - b > 1)}; with {dice[0]}-{dice[1]} a checker moves {', '.join(map(str, reach))}"
        held = _stops_held(state, a, b, faces)
        if held:
            where = " or ".join(str(to_common_point(p, side)) for p in held)
            return (f"{name} takes more than one die, so the checker stops on the way, on {where}, and the "
                    f"opponent holds {'it' if len(held) == 1 else 'both' if len(held) == 2 else 'all of them'}")
        mine[a - 1] -= 1
        if b:
            mine[b - 1] += 1
    personal = [(int(to_common_point(s, side)), int(to_common_point(d, side))) for s, d in moves]
    if not _dice_fit([(a - b, b == 0) for a, b in personal], faces):
        return f"{dice[0]}-{dice[1]} cannot make all of {format_move_sequence(moves)}: each die moves once"
    return None


def _stops_held(state: np.ndarray, a: int, b: int, faces: list[int]) -> list[int]:
    """The points (personal) a checker moved from ``a`` to ``b`` (0: off) would stop on, when every
    way the dice can carry it there stops on a point the opponent holds; else [] (one die does it,
    a way is open, or a bear-off overshoots, which this does not follow)."""
    distance = a - b
    stops: set[int] = set()
    for k in range(1, len(faces) + 1):
        for combo in set(combinations(faces, k)):
            if sum(combo) > distance and b == 0:
                return []
            if sum(combo) != distance:
                continue
            if k == 1:
                return []
            for order in set(permutations(combo)):
                path = [a - sum(order[:i]) for i in range(1, k)]
                held = [p for p in path if state[p - 1] < 0]
                if not held:
                    return []
                stops.update(held)
    return sorted(stops, reverse=True)


def _dice_fit(legs: list[tuple[int, bool]], faces: list[int]) -> bool:
    """Whether the dice can be shared out, each used once, so that every leg gets dice that sum
    to its distance (at least to it when it bears off)."""
    if not legs:
        return True
    (distance, bear_off), rest = legs[0], legs[1:]
    for k in range(1, len(faces) + 1):
        for chosen in set(combinations(range(len(faces)), k)):
            total = sum(faces[i] for i in chosen)
            if total == distance or (bear_off and total > distance):
                left = [f for i, f in enumerate(faces) if i not in chosen]
                if _dice_fit(rest, left):
                    return True
    return False


def _die_by_die(mine: list[int], held: list[bool], legs: list[tuple[int, int, int]], faces: list[int],
                limit: int) -> list[tuple] | None:
    """The fewest broken rules with which the typed moves ``legs`` ((index, from, to), personal
    points, 0: off) can be played one die at a time, in any order of the dice and of the moves
    (a checker may stop halfway while another moves), as a list in the order they are broken
    (empty: none), or None if the dice cannot make them at all or not within ``limit``. The rules
    watched are those of a single die's move: no stop on a point the opponent holds, ``("held",
    index, point)``; bearing off only with every checker home, ``("outside", index, point)``; and
    by a larger die than the point only from the highest checker, ``("over", index, point, higher
    point)``. ``mine`` holds the mover's checkers (those on their way where they stand); ``held``
    the opponent's points."""
    if all(at == b for _, at, b in legs):
        return []
    best: list[tuple] | None = None
    for k, (index, at, b) in enumerate(legs):
        if at == b or mine[at - 1] == 0:
            continue
        others = list(mine)
        others[at - 1] -= 1  # the checker in flight
        for f in sorted(set(faces)):
            to = at - f
            if b and to < b:
                continue  # past the end of a move within the board
            broken: list[tuple] = []
            if to > 0 and held[to - 1]:
                broken.append(("held", index, to))
            if to <= 0:  # off, from ``at``
                if any(others[6:]):
                    broken.append(("outside", index, at))
                elif to < 0 and any(others[at:6]):
                    broken.append(("over", index, at, max(p + 1 for p in range(at, 6) if others[p])))
            if len(broken) > limit or (best is not None and len(broken) >= len(best)):
                continue
            after = list(others)
            if to > 0:
                after[to - 1] += 1
            left = list(faces)
            left.remove(f)
            moved = legs[:k] + [(index, max(to, 0), b)] + legs[k + 1:]
            found = _die_by_die(after, held, moved, left, limit - len(broken))
            if found is not None and (best is None or len(broken) + len(found) < len(best)):
                best = broken + found
            if best == []:
                return best
    return best


def _die_rule_broken(state: np.ndarray, personal: list[tuple[int, int]], faces: list[int]) -> tuple | None:
    """A rule of a single die's move (see ``_die_by_die``) broken on the nearest way of playing
    ``personal`` one die at a time (the way that breaks fewest, its first), when every way breaks
    one; None if some way breaks none (the play is refused for a rule of the whole position, as
    the block rule)."""
    mine = [max(int(v), 0) for v in state[:24]]
    held = [int(v) < 0 for v in state[:24]]
    broken = _die_by_die(mine, held, [(i, a, b) for i, (a, b) in enumerate(personal)], faces, len(faces))
    return broken[0] if broken else None


def _dice_needed(distance: int, faces: list[int], bear_off: bool) -> int:
    """The fewest dice that move a checker ``distance`` points (at least that far to bear off)."""
    for k in range(1, len(faces) + 1):
        if any((sum(c) >= distance) if bear_off else (sum(c) == distance) for c in combinations(faces, k)):
            return k
    return len(faces)


def why_not_whole_turn(npn: str, dice: list[int], moves: list[tuple[int, int]], plays: list[dict],
                       rules: RulesLike = DEFAULT_RULES) -> str:
    """Which whole-turn rule a play that passed ``why_not_legal`` breaks, as precisely as can be said."""
    rules = as_rules(rules)
    state, side = parse_npn(npn)
    faces = [dice[0]] * 4 if dice[0] == dice[1] else list(dice)
    personal = [(int(to_common_point(a, side)), int(to_common_point(b, side))) for a, b in moves]
    used = sum(_dice_needed(a - b if b else a, faces, bear_off=b == 0) for a, b in personal)
    most = max(len(p["moves"]) for p in plays)
    roll = f"{dice[0]}-{dice[1]}"
    # The head rule first: a play breaking it may also seem to use too many dice, because the
    # checker it may not move is what would have used them (6-6 on a first turn without the exception).
    head = sum(a == 24 for a, _ in personal)
    allowed = int(turn_head_limit(state, [dice], rules)[0])
    if head > allowed > 1:  # the first turn's exception applies, and this takes more still
        return (f"it takes {head} checkers from the head ({to_common_point(24, side)}); at most {allowed} may "
                f"leave it this turn (a first turn's {roll})")
    if head > allowed:
        doubles = ", ".join(f"{d}-{d}" for d in rules.head_exception)
        return (f"it takes {head} checkers from the head ({to_common_point(24, side)}); one may leave it a turn"
                + (f" (two on a first turn's {doubles})" if doubles else " (no exception under these rules)"))
    if used > most:
        return f"that takes {used} dice; {roll} plays {most} here"
    if used < most:
        return f"that plays {used} {'die' if used == 1 else 'dice'} where {most} can be played: a play uses as many as it can"
    if most == 1 and dice[0] != dice[1] and len(personal) == 1:
        a, b = personal[0]
        if b and a - b == min(dice):
            return f"only one die can be played here, and then it must be the larger one, the {max(dice)}"
    broken = _die_rule_broken(state, personal, faces)
    if broken is not None:  # each way of playing it breaks this rule of a single die's move
        common = [int(to_common_point(p, side)) for p in broken[2:]]
        src, dst = moves[broken[1]]
        name = f"{src}/{'off' if dst == 0 else dst}"
        said = {
            "held": f"{name} would stop on {common[0]}, which the opponent holds",
            "outside": f"{name} would bear off from {common[0]} while a checker of yours is still outside your home",
            "over": (f"{name} would bear off from {common[0]} by a die larger than it needs, which it may only when "
                     f"no checker of yours stands higher in your home (one is on {common[-1]})"),
        }[broken[0]]
        return (f"{roll} cannot make all of {format_move_sequence(moves)} in any order of the dice; the nearest "
                f"way breaks a rule: {said}")
    needs = ("no opponent checker in its home yet (the block rule as played here, block_rule \"home\"" if rules.block_home
             else "no opponent checker ahead of them (the block rule")
    return (f"it would build six points in a row with {needs}, after every single die), or reach a position no "
            "order of the dice allows")


def _own_numbering_hint(npn: str, dice: list[int], moves: list[tuple[int, int]], results: dict[str, Any],
                        side: Color) -> str:
    """For black, whose own numbering (from its head, 24) is not the common one the board shows:
    the play meant, when the moves read in black's own numbering make a legal play; else ''."""
    if side != Color.BLACK:
        return ""
    # Only a slip of numbering: a move from a point black does not hold, or one that goes
    # backwards in the board's numbers (a play refused for a held point, the dice, or a
    # whole-turn rule was typed in them).
    state = parse_npn(npn)[0]
    personal = [(int(to_common_point(a, side)), int(to_common_point(b, side))) for a, b in moves]
    if not any(state[a - 1] <= 0 or b > a for a, b in personal):
        return ""
    meant = _playable_order(npn, dice, [(int(to_common_point(a, side)), int(to_common_point(b, side)))
                                        for a, b in moves])
    if why_not_legal(npn, dice, meant) is not None or _apply_common(npn, meant) not in results:
        return ""
    return (f" Points are numbered as on the board (black's head is 12, its home 13-18), not counted from "
            f"black's own head: did you mean {format_move_sequence(meant)}?")


def _apply_common(npn: str, moves: list[tuple[int, int]]) -> str | None:
    """Board of the NPN after moving the side to move's checkers; None if a move is impossible."""
    fields = npn.split(":")
    cells = [int(x) for x in fields[0].split(",")]
    offs = [int(x) for x in fields[1].split(",")]
    side = fields[2]
    sign = 1 if side == "w" else -1
    for src, dst in moves:
        if cells[src - 1] * sign <= 0:
            return None
        cells[src - 1] -= sign
        if dst == 0:
            offs[0 if side == "w" else 1] += 1
        else:
            if cells[dst - 1] * sign < 0:
                return None
            cells[dst - 1] += sign
    other = "b" if side == "w" else "w"
    return f"{','.join(map(str, cells))}:{offs[0]},{offs[1]}:{other}"


class _Session:
    def __init__(self, opponent: Player, human: Color | None, rules: Rules, seed: int | None,
                 read: Callable[[str], str], out: TextIO) -> None:
        self.opponent = opponent
        self.opponent_name = player_name(opponent, "the bot")
        self.human_choice = human
        self.rules = rules
        # A fresh session's seed is drawn here and said at the start, so that its games can be
        # played again (a bug report, a game to study): --seed N gives the same dice.
        self.fresh_seed = None if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        self.rng = np.random.default_rng(seed if seed is not None else self.fresh_seed)
        self.read = read
        self.out = out
        self.said = 0  # lines said so far: whether the last thing on screen is the board of a play
        self.previewed = -1  # self.said just after the board of the play being confirmed
        self.score = {"you": 0, "opponent": 0}
        self.fallback: Player | None = None  # ranks plays for a hint when the opponent does not
        self.conceded = 2  # points of the resignation last confirmed

    def say(self, text: str = "") -> None:
        """One message: control characters escaped (an error may quote what was typed, and an
        escape sequence typed must not drive the terminal); a one-line message longer than the
        terminal is wide wrapped at words (boards and lists are drawn to fit already)."""
        text = printable(text)
        if "\n" not in text and len(text) > line_width():
            text = wrap(text)
        print(text, file=self.out, flush=True)
        self.said += 1

    def ask(self, prompt: str) -> str:
        while True:
            try:
                # A byte order mark (a script saved by Windows Notepad starts with one) is invisible.
                text = self.read(prompt).replace("\ufeff", "").strip()
                if len(text) > MAX_INPUT:  # never echoed back whole (a paste gone wrong)
                    self.say(f"That line is {len(text):,} characters long; a play is a few moves, e.g. "
                             "24/18 18/13 (type help for more).")
                    continue
                return text
            except EOFError:
                self.say()  # end the prompt's line
                raise _Quit() from None
            except UnicodeDecodeError as exc:  # bytes the terminal's encoding cannot read
                self.say(f"That was not {exc.encoding} text (is your terminal set to another encoding?); "
                         "type it again.")

    def human_turn(self, state: np.ndarray, side: Color, dice: np.ndarray) -> np.ndarray | None:
        """The human's afterstate (mover's view), or None on resign."""
        npn = format_npn(state, side)
        # Listed by their moves, so one checker's plays stand together, in the mover's own point
        # order (the common one for white; black's from its home to its head, as white's are).
        plays = sorted(legal_plays(npn, dice.tolist(), self.rules),
                       key=lambda p: [tuple(int(to_common_point(x, side)) for x in m) for m in p["moves"]])
        if len(plays) == 1 and not plays[0]["moves"]:
            self.say("You have no legal move: the turn passes.")
            return state.copy()
        self.list_plays(plays)
        results = {p["result"]: p for p in plays}
        roll = f"{dice[0]}-{dice[1]}"
        pending: str | None = None
        while True:
            text = (pending if pending is not None else self.ask(f"your play ({roll})> ")).lower().rstrip(".")
            # Typed at the confirm prompt instead of y: if it is no play, neither is played.
            dropped = " The play you were confirming is not played either." if pending is not None else ""
            pending = None
            text = unicodedata.normalize("NFKC", text)
            if text in ("", "help", "?", "list", "hint", "npn", "position", "read"):
                self.command(text, side, npn, dice, plays)
                continue
            if text == "undo":
                self.say("Nothing to undo yet: choose a play first; you can undo it when asked to confirm.")
                continue
            leaving = self.resign_or_quit(text, state, dice)
            if leaving is not None:
                if leaving:
                    return None
                continue
            if re.fullmatch(r"#?[0-9]+", text):
                text = text.lstrip("#")
                k = int(text)
                if not 1 <= k <= len(plays):
                    self.say(f"There {'is' if len(plays) == 1 else 'are'} {len(plays)} play{'' if len(plays) == 1 else 's'}; "
                             f"choose 1..{len(plays)}.{dropped}")
                    continue
                chosen = plays[k - 1]
            else:
                try:
                    moves = parse_play(text, side)
                except ValueError as exc:
                    self.say(f"{exc}. Type 'help' for how to enter a play.{dropped}")
                    continue
                moves = _playable_order(npn, dice.tolist(), moves)
                reason = why_not_legal(npn, dice.tolist(), moves)
                result = None if reason else _apply_common(npn, moves)
                if result is None or result not in results:
                    why = reason or why_not_whole_turn(npn, dice.tolist(), moves, plays, self.rules)
                    self.say(f"{format_move_sequence(moves)} is not a legal play with {roll}: {why}."
                             f"{_own_numbering_hint(npn, dice.tolist(), moves, results, side)} "
                             f"Type 'list' to see the legal plays.{dropped}")
                    continue
                chosen = results[result]
            after_state = flip(_state_of(chosen["result"]))
            if after_state[OFF_MOVER] == NUM_CHECKERS:
                then = f"this play wins the game, by {'mars' if outcome(after_state) == 2 else 'oin'}"
            else:
                then = f"{'black' if side == Color.WHITE else 'white'} rolls next"
            self.say(board_text(flip(after_state), side.other,
                                caption=f"After your play {format_move_sequence(chosen['moves'])} ({then})"))
            self.previewed = self.said
            while True:
                answer = unicodedata.normalize("NFKC", self.ask(f"play {format_move_sequence(chosen['moves'])}? "
                                                                "[Y/undo] ").lower()).rstrip(".")
                if answer in ("",) + YES:
                    return after_state
                leaving = self.resign_or_quit(answer, state, dice)
                if leaving:
                    return None
                if leaving is False:  # resign or quit declined: ask again
                    continue
                if answer in AMBIGUOUS:
                    self.say(AMBIGUOUS_ANSWER)
                    continue
                if answer in ("undo", "u", "n", "no", "нет") or _is_choice(answer):
                    break
                if answer == "read":  # the position previewed, not the one before the play
                    self.say(f"After your play {format_move_sequence(chosen['moves'])} ({then}): "
                             + board_words(flip(after_state), side.other))
                    continue
                if answer in ("list", "hint", "npn", "position", "help", "?"):
                    self.command(answer, side, npn, dice, plays)
                    continue
                self.say("Answer y (or Enter) to play it, undo to choose again, another play, or resign / quit.")
            if not _is_choice(answer):
                self.say("Undone; the turn starts again.")
                self.say(board_text(state, side, dice.tolist()))
                self.list_plays(plays)
                continue
            pending = answer  # another play or list number: chosen instead, at the play prompt

    def command(self, text: str, side: Color, npn: str, dice: np.ndarray, plays: list[dict]) -> None:
        """help, list, hint, read or npn, at either prompt."""
        if text in ("", "help", "?"):
            self.say(help_text(side))
        elif text == "list":
            self.list_plays(plays)
        elif text == "hint":
            self.hint(npn, dice, plays)
        elif text == "read":
            self.say(board_words(*parse_npn(npn), dice.tolist()))
        else:
            changes = self.rules.changes()
            rules = f" --rules '{json.dumps(changes)}'" if changes else ""
            # The command on a line of its own, never wrapped: to be copied whole.
            self.say(f"{npn}  (dice {dice[0]}-{dice[1]}); to see your plays ranked:\n"
                     f"  nardy hint \"{npn}\" {dice[0]} {dice[1]}{rules}")

    def list_plays(self, plays: list[dict]) -> None:
        """The numbered plays, in columns (read down) to fit the terminal."""
        width = len(str(len(plays)))
        cells = [f"{n:>{width}}. {format_move_sequence(p['moves'])}" for n, p in enumerate(plays, 1)]
        cell = max(len(c) for c in cells) + 3
        columns = max(1, min(4, (line_width() - 2 + 3) // cell))  # the last column needs no gap after it
        rows = -(-len(cells) // columns)
        self.say(f"{len(plays)} legal play{'' if len(plays) == 1 else 's'}:")
        for r in range(rows):
            self.say("  " + "".join(c.ljust(cell) for c in cells[r::rows]).rstrip())

    def hint(self, npn: str, dice: np.ndarray, plays: list[dict]) -> None:
        """A ranking of the human's plays, numbered as in the list: the opponent's, or the shipped
        player's (else heuristic's) when the opponent does not score plays or rates them all the same."""
        from train.hint import can_rank

        if len(plays) == 1:
            self.say("There is only one legal play.")
            return
        ranker, name, ranked = self.opponent, self.opponent_name, None
        why = ""
        if can_rank(self.opponent):
            ranked = self._ranked(self.opponent, npn, dice)
            if ranked is None:
                return
            if all(e["equity"] == ranked[0]["equity"] for e in ranked):
                why = f"{self.opponent_name} rates every play the same"
                ranked = None
        else:
            why = f"{self.opponent_name} chooses plays without scoring them"
        if ranked is None:
            ranker = self._fallback_ranker()
            name = player_name(ranker, "the bot")
            ranked = self._ranked(ranker, npn, dice)
            if ranked is None:
                return
            if all(e["equity"] == ranked[0]["equity"] for e in ranked):
                self.say(f"{why}, and so does {name}: no hint.")
                return
            self.say(f"{why}; {name} ranks them instead.")
        number = {p["result"]: n for n, p in enumerate(plays, 1)}
        label = "equity" if "outcomes" in ranked[0] else "score"
        whose = "The shipped player" if name == "the shipped player" else name  # a player's name as it is
        self.say(f"{whose}'s ranking, best first ({label}, higher is better for you; each "
                 "play keeps its number in the list: type it to choose the play):")
        for entry in ranked[:5]:  # not numbered by rank: a rank typed would choose another play
            self.say(f"  #{number[entry['result']]:<3} {format_move_sequence(entry['moves']):<26} "
                     f"{entry['equity']:+8.3f}")
        if len(ranked) > 5:
            self.say(f"  ... and {len(ranked) - 5} more")

    def _ranked(self, ranker: Player, npn: str, dice: np.ndarray) -> list[dict] | None:
        """``ranker``'s ranking of the plays, or None when it failed (said; the game goes on)."""
        from train.hint import rank_plays

        try:
            return rank_plays(ranker, npn, dice.tolist(), self.rules)
        except PlayerFailed as exc:  # its equities(), not its play: the game goes on
            self.say(wrap(f"No hint: {exc}"))
            return None

    def _fallback_ranker(self) -> Player:
        """The player that ranks plays for a hint when the opponent does not: the shipped player
        (``default``) where it is installed, else the heuristic bot; loaded once, on first use."""
        if self.fallback is None:
            import warnings

            from nardy_env import RulesMismatchWarning
            from nardy_env.players import load_player
            from train.hint import default_player_spec

            spec = default_player_spec()
            with warnings.catch_warnings():  # a hint under other rules than it learnt: still a ranking
                warnings.simplefilter("ignore", RulesMismatchWarning)
                try:
                    self.fallback = load_player(spec, self.rules)
                except Exception as exc:  # a damaged or unloadable shipped player: the bot ranks instead
                    if spec == "heuristic":
                        raise
                    self.say(wrap(f"(The shipped player could not be loaded: {exc})"))
                    spec, self.fallback = "heuristic", load_player("heuristic", self.rules)
            if spec != "heuristic":
                self.fallback.name = "the shipped player"  # type: ignore[attr-defined]  # not a path
        return self.fallback

    def resign_or_quit(self, text: str, state: np.ndarray, dice: np.ndarray) -> bool | None:
        """``resign`` or ``quit`` typed at any prompt, confirmed first: True to resign now
        (``quit`` confirmed ends the session), False if declined, None for other text."""
        if text == "resign":
            points = resignation_points(state, dice, self.rules)
            roll = f"{dice[0]}-{dice[1]}"
            turns = escape_turns(state, self.rules)
            if points == 1 and state[OFF_MOVER] > 0:
                why = "a single game: you have borne a checker off, so no mars is possible"
            elif points == 1:
                why = "a single game: your escape from mars is secured"
            elif turns is None:
                until = (" (under the home block rule, until one of the opponent's checkers is home)"
                         if self.rules.block_home else "")
                why = (f"mars: you have borne off nothing and no play of {roll} bears a checker off; while the "
                       f"sides can still meet{until}, only this roll counts")
            elif turns == 1:
                why = (f"mars: you have borne off nothing, no play of {roll} bears a checker off, and your "
                       "opponent could finish in its next turn")
            else:
                why = (f"mars: you have borne off nothing and no play of {roll} makes a checker off certain "
                       f"within this turn and your next {turns - 1} (as many as your opponent could need to "
                       "finish, three turns in all at most)")
            # The reason said first, fitted to the terminal; the question itself stays short.
            self.say(wrap(f"To resign now is to lose {points} point{'s' * (points > 1)} ({why})."))
            self.conceded = points
            return self.confirmed(f"resign and lose {points} point{'s' * (points > 1)}? [y/N] ")
        if text in ("quit", "exit", "q"):
            self.say(wrap("To quit abandons the game in progress: it is not scored."))
            if self.confirmed("quit? [y/N] "):
                raise _Quit()
            return False
        return None

    def confirmed(self, prompt: str) -> bool:
        """A [y/N] question before something that cannot be undone: yes only for a yes."""
        while True:
            answer = self.ask(prompt).lower()
            if answer not in AMBIGUOUS:
                return answer in YES
            self.say(AMBIGUOUS_ANSWER)

    def game(self) -> dict[str, int]:
        human = self.human_choice if self.human_choice is not None else Color(int(self.rng.integers(2)))
        first, dice = opening_roll(self.rng, 1, self.rules)
        side = Color(int(first[0]))
        dice = dice[0]
        state = initial_states(1)[0]
        first_name = "White" if side == Color.WHITE else "Black"
        self.say(wrap(f"You play {'white' if human == Color.WHITE else 'black'} against {self.opponent_name}. "
                      f"{ROUTES[human]}"))
        if self.rules.opening == "play":
            self.say(wrap(f"Opening roll: white {dice[0]}, black {dice[1]}: {first_name} moves first with "
                          f"{dice[0]}-{dice[1]}."))
        else:
            self.say(wrap(f"{first_name} wins the opening roll and rolls {dice[0]}-{dice[1]}."))
        shown = False  # this position's board was just drawn: the preview of the play confirmed
        while True:
            self.say()
            if shown:
                self.say(f" {'White' if side == Color.WHITE else 'Black'} to move, dice {dice[0]}-{dice[1]} "
                         "(the board as above)")
            else:
                self.say(board_text(state, side, dice.tolist()))
            shown = False
            if side == human:
                after = self.human_turn(state, side, dice)
                if after is None:
                    points = self.conceded  # as said when the resignation was confirmed
                    self.say(f"You resign and lose {points} point{'s' * (points > 1)}.")
                    return {"you": 0, "opponent": points}
                # A play whose preview is still the last thing shown (no list or help since), not a pass.
                shown = not np.array_equal(after, state) and self.said == self.previewed
            else:
                found = legal_afterstates(state[None], dice[None], self.rules)
                k = int(choose_indices(self.opponent, state[None], found, self.rng, np.array([int(side)]),
                                       dice[None], name_failures=True)[0])  # a failure: one line from the CLI
                after = found.states[k]
                n = int(found.num_moves[k])
                moves = [(int(to_common_point(int(f), side)), int(to_common_point(int(t), side)))
                         for f, t in found.moves[k, :n]]
                self.say(f"{self.opponent_name} plays {format_move_sequence(moves)}")
            if after[OFF_MOVER] == NUM_CHECKERS:
                points = int(outcome(after))
                kind = "mars" if points == 2 else "oin"
                winner = "White" if side == Color.WHITE else "Black"
                self.say(board_text(flip(after), side.other, caption=f"Game over: {winner} wins"))
                loser = "black" if side == Color.WHITE else "white"
                why = (f"{loser} bore off no checker" if points == 2
                       else f"{loser} had borne off a checker; with none, a mars scores 2")
                if side == human:
                    self.say(f"You win by {kind}: {points} point{'s' * (points > 1)} ({why}).")
                    return {"you": points, "opponent": 0}
                self.say(f"{self.opponent_name} wins by {kind}: {points} point{'s' * (points > 1)} ({why}).")
                return {"you": 0, "opponent": points}
            state = flip(after)
            side = side.other
            dice = roll_dice(self.rng, 1)[0]

    def run(self, games: int | None) -> dict[str, int]:
        played = 0
        if self.fresh_seed is not None:
            self.say(f"(Seed {self.fresh_seed}: nardy play --seed {self.fresh_seed} with the same options, "
                     "and your same plays, gives this session's games again.)")
        in_game = False
        try:
            while games is None or played < games:
                in_game = True
                result = self.game()
                in_game = False
                played += 1
                for k in self.score:
                    self.score[k] += result[k]
                self.say(f"Score: you {self.score['you']}, {self.opponent_name} {self.score['opponent']} "
                         f"after {played} game{'s' * (played > 1)}.")
                if games is None and not self.yes_or_no("another game? [y/N] "):
                    break
        except _Quit:
            self.say(f"Bye. Score: you {self.score['you']}, {self.opponent_name} {self.score['opponent']}.")
        except BaseException as exc:
            stop = stop_behind(exc)  # Ctrl-C, or the command line's SIGTERM
            if stop is None:
                raise
            unfinished = " (the game in progress is not counted)" if in_game else ""
            self.say(f"\n{'Interrupted' if isinstance(stop, KeyboardInterrupt) else 'Stopped'}. Score: you "
                     f"{self.score['you']}, {self.opponent_name} {self.score['opponent']}{unfinished}.")
            raise
        return self.score

    def yes_or_no(self, prompt: str) -> bool:
        """y / n (Enter: no); anything else asks again rather than ending the session on a typo."""
        while True:
            answer = self.ask(prompt).lower()
            if answer in YES:
                return True
            if answer in ("", "n", "no", "нет"):
                return False
            if answer in AMBIGUOUS:
                self.say(AMBIGUOUS_ANSWER)
                continue
            self.say("Answer y or n.")


def _state_of(npn: str) -> np.ndarray:
    return parse_npn(npn)[0]


def play_session(opponent: Player, human: Color | None = None, rules: RulesLike | None = DEFAULT_RULES,
                 seed: int | None = None, games: int | None = None,
                 read: Callable[[str], str] | None = None, out: TextIO | None = None) -> dict[str, int]:
    """Play games in the terminal; returns the final score."""
    rules = as_rules(rules)
    interactive = out is None and sys.stdin is not None and sys.stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  (line editing and history for input() on a terminal)
        except ImportError:
            interactive = False

    def default_read(prompt: str) -> str:
        if interactive:
            return input(prompt)
        print(prompt, end="", file=out or sys.stdout, flush=True)
        if sys.stdin is None:  # closed (<&-): the end of input
            raise EOFError
        buffer = getattr(sys.stdin, "buffer", None)
        line = buffer.readline() if buffer is not None else sys.stdin.readline()
        if not line:
            raise EOFError
        if isinstance(line, bytes):  # decoded line by line: a bad byte spoils one line, not the stream
            line = line.decode(sys.stdin.encoding or "utf-8")
        return line

    return _Session(opponent, human, rules, seed, read or default_read, out or sys.stdout).run(games)

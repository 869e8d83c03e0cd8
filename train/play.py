"""A terminal game against any player (``nardy play``).

The board is drawn after every move with the dice. On your turn, type a play
as moves in common point numbers (``24/18 18/13``; ``off`` or ``0`` to bear
off), or the number of a play from the list. You then see the board and
confirm it or undo it. Other commands: ``list`` (the legal plays again),
``hint`` (the opponent's ranking of your plays), ``resign``, ``quit``, ``help``.

Resigning (at your turn, after the roll) concedes a single game, 1 point,
when you have borne a checker off or the roll lets you bear one off (RULES.md,
article 50.7: resignation without mars); otherwise it concedes the mars,
2 points. The confirmation prompt takes ``y`` (or Enter) to play, ``undo``
(or ``n``) to choose again, and ``resign`` / ``quit`` as at the play prompt.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TextIO

import numpy as np

from nardy_env import Color, Rules, flip, format_npn, initial_states, legal_afterstates
from nardy_env.core import NUM_CHECKERS, OFF_MOVER, OFF_OPPONENT
from nardy_env.game import opening_roll, resignation_points, roll_dice
from nardy_env.players import Player, choose_indices
from nardy_env.render import board_text
from nardy_env.rules import DEFAULT_RULES
from train.moves import format_move_sequence, legal_plays

__all__ = ["play_session", "parse_play"]

_MOVE = re.compile(r"^(\d{1,2})/(\d{1,2}|off)$")
HELP = (
    "Enter a play as moves like '24/18 18/13' (bear off with '6/off' or '6/0'),\n"
    "or the number of a play from the list. Commands: list, hint, resign, quit, help."
)


class _Quit(Exception):
    pass


def parse_play(text: str) -> list[tuple[int, int]]:
    """``"24/18 18/13"`` -> [(24, 18), (18, 13)]; raises ValueError saying what is wrong."""
    moves = []
    for token in text.replace(",", " ").split():
        m = _MOVE.match(token.lower())
        if not m:
            raise ValueError(f"'{token}' is not a move; write moves as FROM/TO, e.g. 24/18 or 3/off")
        src, dst = int(m.group(1)), 0 if m.group(2) == "off" else int(m.group(2))
        if not 1 <= src <= 24 or not 0 <= dst <= 24:
            raise ValueError(f"'{token}': points are numbered 1..24 (0 or 'off' for bearing off)")
        moves.append((src, dst))
    if not moves:
        raise ValueError("no moves given")
    return moves


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
        self.human_choice = human
        self.rules = rules
        self.rng = np.random.default_rng(seed)
        self.read = read
        self.out = out
        self.score = {"you": 0, "opponent": 0}

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        try:
            return self.read(prompt).strip()
        except EOFError:
            raise _Quit() from None

    def human_turn(self, state: np.ndarray, side: Color, dice: np.ndarray) -> np.ndarray | None:
        """The human's afterstate (mover's view), or None on resign."""
        npn = format_npn(state, side)
        plays = legal_plays(npn, dice.tolist(), self.rules)
        if len(plays) == 1 and not plays[0]["moves"]:
            self.say("You have no legal move: the turn passes.")
            return state.copy()
        self.list_plays(plays)
        results = {p["result"]: p for p in plays}
        while True:
            text = self.ask("your play> ").lower()
            if text in ("", "help", "?"):
                self.say(HELP)
                continue
            if text == "list":
                self.list_plays(plays)
                continue
            if text == "hint":
                self.hint(npn, dice)
                continue
            if text == "resign":
                return None
            if text == "quit":
                raise _Quit()
            if text.isdigit():
                k = int(text)
                if not 1 <= k <= len(plays):
                    self.say(f"There {'is' if len(plays) == 1 else 'are'} {len(plays)} play{'' if len(plays) == 1 else 's'}; "
                             f"choose 1..{len(plays)}.")
                    continue
                chosen = plays[k - 1]
            else:
                try:
                    moves = parse_play(text)
                except ValueError as exc:
                    self.say(f"{exc}. Type 'help' for how to enter a play.")
                    continue
                result = _apply_common(npn, moves)
                if result is None or result not in results:
                    self.say(f"{format_move_sequence(moves)} is not a legal play with {dice[0]}-{dice[1]}. "
                             "Type 'list' to see the legal plays.")
                    continue
                chosen = results[result]
            after_state = flip(_state_of(chosen["result"]))
            self.say(board_text(flip(after_state), side.other))
            while True:
                answer = self.ask(f"play {format_move_sequence(chosen['moves'])}? [Y/undo] ").lower()
                if answer in ("", "y", "yes"):
                    return after_state
                if answer == "resign":
                    return None
                if answer == "quit":
                    raise _Quit()
                if answer in ("undo", "u", "n", "no"):
                    break
                self.say("Answer y (or Enter) to play it, or undo to choose again.")
            self.say("Undone; the turn starts again.")
            self.say(board_text(state, side, dice.tolist()))

    def list_plays(self, plays: list[dict]) -> None:
        width = len(str(len(plays)))
        for n, p in enumerate(plays, 1):
            self.say(f"  {n:>{width}}. {format_move_sequence(p['moves'])}")

    def hint(self, npn: str, dice: np.ndarray) -> None:
        from train.hint import rank_plays

        for entry in rank_plays(self.opponent, npn, dice.tolist(), self.rules)[:5]:
            self.say(f"  {entry['equity']:+.3f}  {format_move_sequence(entry['moves'])}")

    def game(self) -> dict[str, int]:
        human = self.human_choice if self.human_choice is not None else Color(int(self.rng.integers(2)))
        first, dice = opening_roll(self.rng, 1, self.rules)
        side = Color(int(first[0]))
        dice = dice[0]
        state = initial_states(1)[0]
        self.say(f"You play {'white' if human == Color.WHITE else 'black'} against {self.opponent.name}. "
                 f"{'White' if side == Color.WHITE else 'Black'} wins the opening roll.")
        while True:
            self.say()
            self.say(board_text(state, side, dice.tolist()))
            if side == human:
                after = self.human_turn(state, side, dice)
                if after is None:
                    points = resignation_points(state, dice, self.rules)
                    kind = ("a single game: your escape from mars is secured" if points == 1
                            else "mars: you have borne off nothing and this roll bears nothing off")
                    self.say(f"You resign and lose {points} point{'s' * (points > 1)} ({kind}).")
                    return {"you": 0, "opponent": points}
            else:
                found = legal_afterstates(state[None], dice[None], self.rules)
                k = int(choose_indices(self.opponent, state[None], found, self.rng, np.array([int(side)]))[0])
                after = found.states[k]
                n = int(found.num_moves[k])
                from nardy_env import to_common_point

                moves = [(int(to_common_point(int(f), side)), int(to_common_point(int(t), side)))
                         for f, t in found.moves[k, :n]]
                self.say(f"{self.opponent.name} plays {format_move_sequence(moves)}")
            if after[OFF_MOVER] == NUM_CHECKERS:
                points = 2 if after[OFF_OPPONENT] == 0 else 1
                kind = "mars" if points == 2 else "oin"
                self.say(board_text(flip(after), side.other))
                if side == human:
                    self.say(f"You win by {kind}: {points} point{'s' * (points > 1)}.")
                    return {"you": points, "opponent": 0}
                self.say(f"{self.opponent.name} wins by {kind}: {points} point{'s' * (points > 1)}.")
                return {"you": 0, "opponent": points}
            state = flip(after)
            side = side.other
            dice = roll_dice(self.rng, 1)[0]

    def run(self, games: int | None) -> dict[str, int]:
        played = 0
        try:
            while games is None or played < games:
                result = self.game()
                played += 1
                for k in self.score:
                    self.score[k] += result[k]
                self.say(f"Score: you {self.score['you']}, {self.opponent.name} {self.score['opponent']} "
                         f"after {played} game{'s' * (played > 1)}.")
                if games is None and self.ask("another game? [y/N] ").lower() not in ("y", "yes"):
                    break
        except _Quit:
            self.say(f"Bye. Score: you {self.score['you']}, {self.opponent.name} {self.score['opponent']}.")
        return self.score


def _state_of(npn: str) -> np.ndarray:
    from nardy_env import parse_npn

    return parse_npn(npn)[0]


def play_session(opponent: Player, human: Color | None = None, rules: Rules = DEFAULT_RULES,
                 seed: int | None = None, games: int | None = None,
                 read: Callable[[str], str] | None = None, out: TextIO | None = None) -> dict[str, int]:
    """Play games in the terminal; returns the final score."""
    def default_read(prompt: str) -> str:
        print(prompt, end="", file=out or sys.stdout, flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    return _Session(opponent, human, rules, seed, read or default_read, out or sys.stdout).run(games)

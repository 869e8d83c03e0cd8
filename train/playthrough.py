"""One seeded game written out as text, OpenSpiel-style, for regression tests.

Every ply shows the board, the dice, the number of legal plays and the play
chosen. ``tests/data/playthrough_heuristic_race.txt`` is one such game; a test
regenerates it and compares, so any change in the rules, the notation, the
bots or the dice stream shows up as a readable diff. After an intended change,
rewrite it with

    python -m train.playthrough heuristic race --seed 7 > tests/data/playthrough_heuristic_race.txt
"""

from __future__ import annotations

import argparse

import numpy as np

from nardy_env import Color, flip, format_npn, initial_states, legal_afterstates, outcome, to_common_point
from nardy_env.core import NUM_CHECKERS, OFF_MOVER
from nardy_env.game import opening_roll, roll_dice
from nardy_env.players import choose_indices, load_player, player_name
from nardy_env.render import board_text
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules
from train.moves import format_move_sequence

__all__ = ["playthrough"]


def playthrough(white: str, black: str, seed: int, rules: RulesLike | None = DEFAULT_RULES) -> str:
    """The text of one game between two named players, white first named."""
    rules = as_rules(rules)
    players = {Color.WHITE: load_player(white, rules), Color.BLACK: load_player(black, rules)}
    rng = np.random.default_rng(seed)
    first, dice = opening_roll(rng, 1, rules)
    side = Color(int(first[0]))
    state = initial_states(1)
    lines = [f"game: white={white} black={black} seed={seed} rules={rules.to_dict()}",
             f"opening roll: {side.name.lower()} moves first with {dice[0, 0]}-{dice[0, 1]}", ""]
    ply = 0
    while True:
        ply += 1
        found = legal_afterstates(state, dice, rules)
        row = int(choose_indices(players[side], state, found, rng, np.array([int(side)]), dice)[0])
        n = int(found.num_moves[row])
        moves = [(int(to_common_point(int(f), side)), int(to_common_point(int(t), side)))
                 for f, t in found.moves[row, :n]]
        lines += [f"ply {ply}: {format_npn(state[0], side)}",
                  board_text(state[0], side, dice[0].tolist()),
                  f" legal plays: {int(found.counts()[0])}; {player_name(players[side])} plays {format_move_sequence(moves)}",
                  ""]
        after = found.states[row]
        if after[OFF_MOVER] == NUM_CHECKERS:
            points = int(outcome(after))
            lines.append(f"result: {side.name.lower()} wins by {'mars' if points == 2 else 'oin'}, "
                         f"{points} point{'s' * (points > 1)}, after {ply} plies")
            return "\n".join(lines) + "\n"
        state = flip(after[None])
        side = side.other
        dice = roll_dice(rng, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description="Write one seeded game as text.")
    parser.add_argument("white")
    parser.add_argument("black")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(playthrough(args.white, args.black, args.seed), end="")


if __name__ == "__main__":
    main()

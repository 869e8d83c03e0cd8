"""How many legal afterstates a player's decisions offer, in games between two copies of it.

Self-play scores every afterstate of every decision, so this is what the
actors' forward pass grows with as a player learns (docs/training.md,
"Throughput"):

    python tools/afterstates_per_decision.py random heuristic checkpoints/default
"""

from __future__ import annotations

import argparse

import numpy as np

from nardy_env import flip, initial_states, legal_afterstates
from nardy_env.core import NUM_CHECKERS, OFF_MOVER
from nardy_env.game import roll_dice
from nardy_env.players import choose_indices, load_player


def afterstates_per_decision(spec: str, games: int = 200, seed: int = 0) -> tuple[float, float]:
    """(mean afterstates per decision, decisions per game) over ``games`` games of ``spec`` against itself."""
    player = load_player(spec, None)
    rng = np.random.default_rng(seed)
    states = initial_states(games)
    colors = np.zeros(games, dtype=np.int8)  # white moves first in every game; sides alternate
    active = np.arange(games)
    total = decisions = 0
    while active.size:
        dice = roll_dice(rng, active.size)
        found = legal_afterstates(states[active], dice)
        total += int(found.counts().sum())
        decisions += active.size
        after = found.states[choose_indices(player, states[active], found, rng, colors[active], dice)]
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        states[active] = flip(after)
        colors[active] ^= 1
        active = active[~over]
    return total / decisions, decisions / games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("players", nargs="+", help="player names, as nardy eval takes them")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for spec in args.players:
        per, length = afterstates_per_decision(spec, args.games, args.seed)
        print(f"{spec}: {per:.1f} afterstates per decision, {length:.1f} decisions per game")


if __name__ == "__main__":
    main()

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
from nardy_env.players import PlayerNotFound, PlayerSpec, choose_indices, load_player
from train.cli import COUNT, SEED, TEXT


def afterstates_per_decision(spec: PlayerSpec, games: int = 200, seed: int = 0) -> tuple[float, float]:
    """(mean afterstates per decision, decisions per game) over ``games`` games of ``spec`` (a player or
    its name) against itself."""
    if games < 1:
        raise ValueError(f"games must be 1 or more, got {games}")
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("players", nargs="+", type=TEXT, help="player names, as nardy eval takes them")
    parser.add_argument("--games", type=COUNT, default=200, help="games of each player against itself (default 200)")
    parser.add_argument("--seed", type=SEED, default=0, help="dice seed, 0 to 2**32 - 1 (default 0)")
    args = parser.parse_args(argv)
    players = []
    for spec in args.players:  # every name checked before the first one plays
        try:
            players.append((spec, load_player(spec, None)))
        except (PlayerNotFound, ValueError) as exc:
            parser.error(str(exc))
    for spec, player in players:
        per, length = afterstates_per_decision(player, args.games, args.seed)
        print(f"{spec}: {per:.1f} afterstates per decision, {length:.1f} decisions per game")


if __name__ == "__main__":
    main()

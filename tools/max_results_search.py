"""Search for positions with many distinct afterstates (docs/rules.md, "How many results").

Hill climbing over valid positions: start from random spreads of the mover's
checkers, move one checker at a time, keep changes that do not lower the
largest result count over all 21 rolls. Prints the best position found.

    python tools/max_results_search.py --seconds 120 --seed 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nardy_env import Color, format_npn, legal_afterstates
from train.cli import SECONDS, SEED

ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], dtype=np.int64)


def score(state: np.ndarray) -> tuple[int, int]:
    found = legal_afterstates(np.repeat(state[None], len(ROLLS), axis=0), ROLLS, threads=1)
    counts = found.counts()
    k = int(np.argmax(counts))
    return int(counts[k]), k


def random_state(rng: np.random.Generator) -> np.ndarray:
    s = np.zeros(26, dtype=np.int8)
    opp_points = int(rng.integers(1, 3))
    opp_on = int(rng.integers(opp_points, 16))
    for p in rng.choice(24, opp_points, replace=False):
        s[p] = -1
    left = opp_on - opp_points
    while left > 0:
        s[rng.choice(np.flatnonzero(s[:24] < 0))] -= 1
        left -= 1
    s[25] = 15 - opp_on
    free = np.flatnonzero(s[:24] == 0)
    for p in rng.choice(free, 15, replace=False):
        s[p] = 1
    return s


def mutate(state: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    s = state.copy()
    src = rng.choice(np.flatnonzero(s[:24] > 0))
    dst = rng.choice(np.flatnonzero(s[:24] >= 0))
    s[src] -= 1
    s[dst] += 1
    return s


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=SECONDS, default=60, help="how long to search (default 60)")
    parser.add_argument("--seed", type=SEED, default=0, help="random seed, 0 to 2**32 - 1 (default 0)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    best, best_state, best_roll = 0, None, None
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        state = random_state(rng)
        value, roll = score(state)
        stale = 0
        while stale < 200 and time.time() < deadline:
            cand = mutate(state, rng)
            v, r = score(cand)
            if v >= value:
                stale = 0 if v > value else stale + 1
                state, value, roll = cand, v, r
            else:
                stale += 1
        if value > best:
            best, best_state, best_roll = value, state, roll
            print(f"{best} results: {format_npn(best_state, Color.WHITE)} dice {ROLLS[best_roll].tolist()}",
                  flush=True)
    print(f"best: {best}")


if __name__ == "__main__":
    main()

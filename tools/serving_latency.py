"""How fast a player answers one position at a time, as a bot server asks it (docs/policy.md).

Positions come from games of the shipped player against itself; each request is one position
and its roll. Measured: the player's own call (``choose`` through ``choose_indices``) at each
ply asked, mean and 99th percentile; the same requests from several threads sharing the
player; and ``nardy hint --jsonl`` over a pipe, one request line at a time:

    python tools/serving_latency.py                      # default at 0- and 1-ply, 8 threads
    python tools/serving_latency.py --player my-policy --plies 0 --requests 500
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nardy_env import flip, format_npn, initial_states, legal_afterstates
from nardy_env.core import NUM_CHECKERS, OFF_MOVER
from nardy_env.game import roll_dice
from nardy_env.notation import Color
from nardy_env.players import PlayerNotFound, choose_indices, load_player
from train.cli import COUNT, PLY, TEXT


def requests(count: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, Color]]:
    """``count`` (state row, roll, side to move) from games of the shipped player, in order."""
    player = load_player("default")
    rng = np.random.default_rng(seed)
    out: list[tuple[np.ndarray, np.ndarray, Color]] = []
    while len(out) < count:
        state, side = initial_states(1), Color.WHITE
        while len(out) < count:
            dice = roll_dice(rng, 1)
            out.append((state[0].copy(), dice[0].copy(), side))
            found = legal_afterstates(state, dice)
            after = found.states[choose_indices(player, state, found, rng)]
            if after[0, OFF_MOVER] == NUM_CHECKERS:
                break
            state, side = flip(after), side.other
    return out


def _percentiles(seconds: list[float]) -> str:
    ms = np.array(seconds) * 1e3
    return f"mean {ms.mean():.2f} ms, p99 {np.percentile(ms, 99):.2f} ms"


def time_calls(spec: str, reqs: list[tuple[np.ndarray, np.ndarray, Color]], threads: int = 1) -> tuple[list[float], float]:
    """Seconds per request and the wall time of all, ``threads`` threads sharing one player."""
    player = load_player(spec)
    rng = np.random.default_rng(0)

    def one(req: tuple[np.ndarray, np.ndarray, Color]) -> float:
        state, dice, _ = req
        t = time.perf_counter()
        found = legal_afterstates(state[None], dice[None], threads=1)
        choose_indices(player, state[None], found, rng)
        return time.perf_counter() - t

    for req in reqs[:20]:  # warm: compiled core, sessions, first batch sizes
        one(req)
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        seconds = list(pool.map(one, reqs))
    return seconds, time.perf_counter() - start


def time_jsonl(spec: str, reqs: list[tuple[np.ndarray, np.ndarray, Color]]) -> list[float]:
    """Seconds per request of ``nardy hint --jsonl`` over a pipe, each answered before the next is sent."""
    nardy = os.path.join(os.path.dirname(sys.executable), "nardy")
    proc = subprocess.Popen([nardy, "hint", "--jsonl", "--player", spec], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    seconds = []
    try:
        for k, (state, dice, side) in enumerate(reqs):
            line = json.dumps({"position": format_npn(state, side), "dice": [int(d) for d in dice]})
            t = time.perf_counter()
            proc.stdin.write(line + "\n")
            answer = proc.stdout.readline()
            if not answer:
                raise SystemExit(f"nardy hint --jsonl --player {spec} ended without answering (exit {proc.wait()})")
            if k >= 5:  # the first requests load the player
                seconds.append(time.perf_counter() - t)
            if "error" in json.loads(answer):
                raise SystemExit(f"nardy hint --jsonl answered {answer.strip()}")
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--player", type=TEXT, default="default",
                        help="a player name, as nardy hint takes it (default: default)")
    parser.add_argument("--plies", type=PLY, nargs="+", default=[0, 1], help="search depths to time (default: 0 1)")
    parser.add_argument("--requests", type=COUNT, default=1000, help="positions to ask about, 10 or more (default: 1000)")
    parser.add_argument("--threads", type=COUNT, default=8, help="threads sharing one player (default: 8)")
    args = parser.parse_args(argv)
    if args.requests < 10:
        parser.error("--requests must be 10 or more (the first ones warm the player)")
    for ply in args.plies:  # every depth checked before the first is timed
        try:
            load_player(f"{args.player}@{ply}" if ply else args.player)
        except (PlayerNotFound, ValueError) as exc:
            parser.error(str(exc))
    reqs = requests(args.requests)
    print(f"{len(reqs)} requests, one position each, from games of the shipped player")
    for ply in args.plies:
        spec = f"{args.player}@{ply}" if ply else args.player
        alone, wall1 = time_calls(spec, reqs)
        shared, wall_n = time_calls(spec, reqs, args.threads)
        print(f"{spec}: one thread {_percentiles(alone)} ({len(reqs) / wall1:.0f} requests/s); "
              f"{args.threads} threads sharing it {_percentiles(shared)} a request "
              f"({len(reqs) / wall_n:.0f} requests/s)")
        piped = time_jsonl(spec, reqs[: min(len(reqs), 300)])
        print(f"{spec}: nardy hint --jsonl over a pipe {_percentiles(piped)} a request")


if __name__ == "__main__":
    main()

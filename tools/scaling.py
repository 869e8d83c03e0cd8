"""Self-play throughput against the number of actors, from the runs' own logs.

    python tools/scaling.py --actors 1 2 --games-per-actor 6000

Runs ``nardy train`` once per actor count (the default network and config,
evaluations off, each run in a fresh folder under ``--out``), reads the
``trained ...`` line each run prints at the end, and prints a markdown table:
games/s and learner updates/s over the run (actors' start-up included, so short
runs read low) and over the run's last window (docs/training.md, Throughput),
the learner's busy share, and each row's last-window games/s over the first row's. Each run starts
its own local Ray sized to the machine, unless ``--address`` names a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINED = re.compile(
    r"trained (?P<games>[\d,]+) games; this session (?P<gps>[\d.]+) games/s and (?P<ups>[\d.]+) updates/s "
    r".*?with (?P<actors>\d+) actors?; last window (?P<wgps>[\d.]+) games/s, (?P<wups>[\d.]+) updates/s, "
    r"learner busy (?P<busy>[\d.]+)%")


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def parse_trained(output: str) -> dict[str, float]:
    """The figures of the ``trained ...`` line of a run's output (ValueError if it has none)."""
    found = TRAINED.search(output)
    if found is None:
        raise ValueError("the run printed no 'trained ... last window ...' line")
    return {"games": int(found["games"].replace(",", "")), "actors": int(found["actors"]),
            "games_per_s": float(found["gps"]), "updates_per_s": float(found["ups"]),
            "window_games_per_s": float(found["wgps"]), "window_updates_per_s": float(found["wups"]),
            "learner_busy": float(found["busy"]) / 100}


def run_one(actors: int, games: int, config: Path, out: Path, address: str | None, timeout: float) -> dict[str, float]:
    command = [sys.executable, "-c", "import sys; from train.cli import main; sys.exit(main())", "train",
               "--config", str(config), "--out", str(out), "--quiet", "--set", f"actors={actors}",
               "--set", f"total_games={games}", "--set", "eval_every_games=0", "--set", "final_eval_games=0"]
    if address:
        command += ["--address", address]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"nardy train with {actors} actors failed (exit {done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    figures = parse_trained(done.stdout + done.stderr)
    figures["wall_s"] = wall
    return figures


def table(rows: list[dict[str, float]]) -> str:
    lines = ["| actors | games | games/s over the run | updates/s over the run | games/s, last window | "
             "updates/s, last window | learner busy, last window | last window vs the first row | wall s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base = max(rows[0]["window_games_per_s"], 1e-9) if rows else 1.0
    for row in rows:
        lines.append(f"| {row['actors']} | {row['games']:,} | {row['games_per_s']:.0f} | {row['updates_per_s']:.0f} | "
                     f"{row['window_games_per_s']:.0f} | {row['window_updates_per_s']:.0f} | "
                     f"{row['learner_busy']:.0%} | {row['window_games_per_s'] / base:.2f} | {row['wall_s']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=positive, nargs="+", default=[1, 2], help="actor counts to run (default 1 2)")
    parser.add_argument("--games-per-actor", type=positive, default=6000,
                        help="games each run plays per actor (default 6000; at least 12,000 a run)")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "default.yaml",
                        help="the training config (default configs/default.yaml)")
    parser.add_argument("--address", help="a Ray cluster to run on (default: a local Ray per run)")
    parser.add_argument("--out", type=Path, help="folder for the runs (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write one JSON object per run to this file")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take (default 1800)")
    args = parser.parse_args(argv)
    if not args.config.is_file():
        parser.error(f"--config {args.config}: no such file")

    with tempfile.TemporaryDirectory(prefix="nardy-scaling-") as scratch:
        base = args.out or Path(scratch)
        rows = []
        for actors in args.actors:
            games = max(12000, actors * args.games_per_actor)
            out = base / f"actors{actors}"
            if out.exists():
                parser.error(f"{out} exists: give --out a folder without earlier runs")
            row = run_one(actors, games, args.config, out, args.address, args.timeout)
            rows.append(row)
            print(f"{actors} actor{'' if actors == 1 else 's'}: {row['window_games_per_s']:.0f} games/s last window, "
                  f"{row['games_per_s']:.0f} over the run, learner busy {row['learner_busy']:.0%}", flush=True)
            if args.json:
                with args.json.open("a") as handle:
                    handle.write(json.dumps({**row, "cpus": os.cpu_count()}) + "\n")
    print(f"\n{os.cpu_count()} CPUs, config {args.config.name}\n")
    print(table(rows))


if __name__ == "__main__":
    main()

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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from train.cli import COUNT, SECONDS, Terminated

ROOT = Path(__file__).resolve().parents[1]
TRAINED = re.compile(
    r"trained (?P<games>[\d,]+) games; this session (?P<gps>[\d.]+) games/s and (?P<ups>[\d.]+) updates/s "
    r".*?with (?P<actors>\d+) actors?; last window (?P<wgps>[\d.]+) games/s, (?P<wups>[\d.]+) updates/s, "
    r"learner busy (?P<busy>[\d.]+)%")


def parse_trained(output: str) -> dict[str, float]:
    """The figures of the ``trained ...`` line of a run's output (ValueError if it has none)."""
    found = TRAINED.search(output)
    if found is None:
        raise ValueError("the run printed no 'trained ... last window ...' line")
    return {"games": int(found["games"].replace(",", "")), "actors": int(found["actors"]),
            "games_per_s": float(found["gps"]), "updates_per_s": float(found["ups"]),
            "window_games_per_s": float(found["wgps"]), "window_updates_per_s": float(found["wups"]),
            "learner_busy": float(found["busy"]) / 100}


class RunFailed(Exception):
    """A run that did not end with its ``trained ...`` line (its exit, or the time limit)."""

    def __init__(self, message: str, log: Path, status: int = 1) -> None:
        super().__init__(message)
        self.log = log
        self.status = status  # the tool's exit status: 130 / 143 when it was stopped itself
        self.lines = ""

    def last_lines(self, count: int = 15) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.is_file() else ""
        return "\n".join("  " + line for line in text.splitlines()[-count:])


def run_one(actors: int, games: int, config: Path, out: Path, address: str | None, timeout: float) -> dict[str, float]:
    """One ``nardy train`` run, its output in ``out``.log beside its folder. A time limit, Ctrl-C or
    SIGTERM stops it as ``nardy train`` stops (it saves and shuts its Ray down; on Windows only
    Ctrl-C does, the others end it at once), then raises."""
    command = [sys.executable, "-c", "import sys; from train.cli import main; sys.exit(main())", "train",
               "--config", str(config), "--out", str(out), "--quiet", "--set", f"actors={actors}",
               "--set", f"total_games={games}", "--set", "eval_every_games=0", "--set", "final_eval_games=0"]
    if address:
        command += ["--address", address]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    started = time.perf_counter()
    log = out.parent / f"{out.name}.log"
    with log.open("w", encoding="utf-8") as output:
        child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            raise RunFailed(f"took more than {timeout:g} s (--timeout)", log) from None
        except (KeyboardInterrupt, Terminated) as exc:
            _stop(child, ctrl_c=isinstance(exc, KeyboardInterrupt))
            raise RunFailed("was interrupted" if isinstance(exc, KeyboardInterrupt) else "was terminated", log,
                            130 if isinstance(exc, KeyboardInterrupt) else 143) from None
    wall = time.perf_counter() - started
    text = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        raise RunFailed(f"ended with exit status {code}", log)
    try:
        figures = parse_trained(text)
    except ValueError as exc:
        raise RunFailed(str(exc), log) from None
    figures["wall_s"] = wall
    return figures


def _stop(child: subprocess.Popen, grace: float = 60.0, ctrl_c: bool = False) -> None:
    """Stop a ``nardy train`` run as Ctrl-C would (it saves a checkpoint and shuts its Ray down),
    killing it only if it has not ended within ``grace`` seconds. Windows sends a process no
    SIGINT: there a Ctrl-C typed in the console (``ctrl_c``) has reached the run too, which is
    left to stop itself; for any other reason the run is ended at once (TerminateProcess)."""
    if child.poll() is None and not (ctrl_c and os.name == "nt"):
        child.send_signal(signal.SIGTERM if os.name == "nt" else signal.SIGINT)
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def table(rows: list[dict[str, float]]) -> str:
    lines = ["| actors | games | games/s over the run | updates/s over the run | games/s, last window | "
             "updates/s, last window | learner busy, last window | last window vs the first row | wall s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base = max(rows[0]["window_games_per_s"], 1e-9) if rows else 1.0
    for row in rows:
        lines.append(f"| {row['actors']} | {row['games']:,} | {row['games_per_s']:,.0f} | {row['updates_per_s']:,.0f} | "
                     f"{row['window_games_per_s']:,.0f} | {row['window_updates_per_s']:,.0f} | "
                     f"{row['learner_busy']:.0%} | {row['window_games_per_s'] / base:.2f} | {row['wall_s']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=COUNT, nargs="+", default=[1, 2], help="actor counts to run (default 1 2)")
    parser.add_argument("--games-per-actor", type=COUNT, default=6000,
                        help="games each run plays per actor (default 6000; at least 12,000 a run)")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "default.yaml",
                        help="the training config (default configs/default.yaml)")
    parser.add_argument("--address", help="a Ray cluster to run on (default: RAY_ADDRESS if set, else a local Ray "
                                           "per run)")
    parser.add_argument("--out", type=Path, help="a folder for the runs and their output, which holds none of "
                                                 "them yet (default: a temporary folder, removed at the end)")
    parser.add_argument("--json", type=Path, help="also write one JSON object per run to this file (replaced)")
    parser.add_argument("--timeout", type=SECONDS, default=1800, help="seconds one run may take (default 1800)")
    args = parser.parse_args(argv)
    # Paths as the caller means them: each run starts in the checkout (ROOT).
    config = args.config.resolve()
    if not config.is_file():
        parser.error(f"--config {args.config}: no such file")
    counts = list(dict.fromkeys(args.actors))
    if len(counts) < len(args.actors):
        parser.error(f"--actors {' '.join(map(str, args.actors))}: each count once")
    out = args.out.resolve() if args.out else None
    if out is not None:
        taken = [n for n in counts if (out / f"actors{n}").exists() or (out / f"actors{n}.log").exists()]
        if taken:
            parser.error(f"--out {args.out} already holds the run for {taken[0]} actor{'' if taken[0] == 1 else 's'}:"
                         f" give a folder without earlier runs")
        if out.exists() and not out.is_dir():
            parser.error(f"--out {args.out} is a file, not a folder")
    json_path = args.json.resolve() if args.json else None
    if json_path is not None:
        if json_path.is_dir():
            parser.error(f"--json {args.json} is a folder; give a file name")
        if json_path.parent.exists() and not json_path.parent.is_dir():
            parser.error(f"--json {args.json}: {json_path.parent} is a file, not a folder")
        if not json_path.parent.is_dir():
            parser.error(f"--json {args.json}: folder {json_path.parent} does not exist")
    address = args.address or os.environ.get("RAY_ADDRESS") or None  # what nardy train will join
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--out {args.out}: cannot make it ({exc.strerror or exc})")

    rows: list[dict[str, float]] = []
    failure: RunFailed | None = None
    name = ""
    previous = signal.signal(signal.SIGTERM, _terminated)  # stops the run in hand, as Ctrl-C does
    try:
        with tempfile.TemporaryDirectory(prefix="nardy-scaling-") as scratch:
            base = out or Path(scratch)
            if json_path is not None:
                json_path.write_text("", encoding="utf-8")
            for actors in counts:
                name = f"{actors} actor{'' if actors == 1 else 's'}"
                try:
                    row = run_one(actors, max(12000, actors * args.games_per_actor), config,
                                  base / f"actors{actors}", args.address, args.timeout)
                except RunFailed as exc:
                    failure = exc
                    failure.lines = exc.last_lines()  # read before a temporary folder goes
                    break
                rows.append(row)
                print(f"{name}: {row['window_games_per_s']:.0f} games/s last window, "
                      f"{row['games_per_s']:.0f} over the run, learner busy {row['learner_busy']:.0%}", flush=True)
                if json_path is not None:
                    record = {**row, "cpus": None if address else os.cpu_count(), "address": address}
                    with json_path.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(record) + "\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    if rows:
        where = f"the Ray cluster at {address}" if address else f"{os.cpu_count()} CPUs here"
        print(f"\n{where}, config {config.name}\n")
        print(table(rows))
    if failure is None:
        return 0
    said = f"scaling: the run with {name} {failure}"
    if rows:
        said += "; the table above holds the runs before it"
    if out is not None:
        said += f"; its output: {failure.log}"
    print(said + (f"; its last lines:\n{failure.lines}" if failure.lines else ""), file=sys.stderr)
    return failure.status


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())

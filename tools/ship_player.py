"""Package a trained run as a shipped player, with its measured strength.

    python tools/ship_player.py runs/default checkpoints/default --games 2000

Copies the small files of the run (checkpoint.pt, config.json, eval.jsonl),
exports policy.onnx + policy.json (verified against torch), draws the
training curve, and measures with paired dice: 0-ply against random, race and
heuristic, and 1-ply against 0-ply. Writes everything it measured to
``strength.json`` and a README.md that quotes it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from agents.td import load_checkpoint
from train.cli import MATCH_GAMES, TEXT
from train.evaluate import evaluate
from train.export import export_policy
from train.plots import training_curve

ROOT = Path(__file__).resolve().parents[1]
RUN_FILES = ("checkpoint.pt", "config.json", "eval.jsonl")


def _commit() -> str:
    """The checkout's commit the measurements were made at (of this tool's checkout, from any folder)."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown (not a git checkout)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the trained run directory (checkpoint.pt, config.json, eval.jsonl)")
    parser.add_argument("out", type=Path, help="the folder to ship it in (made if missing; its files are replaced)")
    parser.add_argument("--games", type=MATCH_GAMES, default=2000,
                        help="paired-dice games of 0-ply against each bot (default 2000)")
    parser.add_argument("--ply-games", type=MATCH_GAMES, default=2000, help="games of 1-ply against 0-ply (default 2000)")
    parser.add_argument("--command", action="append", type=TEXT,
                        help="the training command(s), in order (repeat for a run trained in stages)")
    args = parser.parse_args(argv)
    commands = args.command or ["nardy train --config configs/default.yaml --out runs/default"]

    out: Path = args.out
    missing = [name for name in RUN_FILES if not (args.run / name).is_file()]
    if missing:  # checked before anything is written
        parser.error(f"{args.run} is not a run directory: it lacks {', '.join(missing)}")
    if out.exists() and out.resolve() == args.run.resolve():
        parser.error(f"{out} is the run itself: ship it in another folder")
    try:
        load_checkpoint(args.run / "checkpoint.pt")
    except ValueError as exc:
        parser.error(f"{args.run / 'checkpoint.pt'}: {exc}")
    out.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        shutil.copyfile(args.run / name, out / name)
    export_policy(out / "checkpoint.pt", out, force=True)
    training_curve(out / "eval.jsonl", out / "training_curve.png",
                   title="checkpoints/default: win rate against the bots (paired dice, 0-ply)")
    _, payload = load_checkpoint(out)
    config = payload["config"]
    games_trained = payload["training"]["games"]

    player = str(out)
    results = {}
    t0 = time.time()
    for opponent in ("random", "race", "heuristic"):
        results[f"0-ply vs {opponent}"] = evaluate(player, opponent, args.games, seed=2026).summary()
        print(json.dumps(results[f"0-ply vs {opponent}"]), flush=True)
    results["1-ply vs 0-ply"] = evaluate(f"{player}@1", player, args.ply_games, seed=2027).summary()
    print(json.dumps(results["1-ply vs 0-ply"]), flush=True)
    seconds = time.time() - t0
    commit = _commit()
    strength = {"games_trained": games_trained, "measured_at_commit": commit, "seconds": round(seconds),
                "command": shlex.join(["python", "tools/ship_player.py", str(args.run), str(out), "--games",
                                       str(args.games), "--ply-games", str(args.ply_games)]
                                      + [part for c in args.command or () for part in ("--command", c)]),
                "matches": results}
    (out / "strength.json").write_text(json.dumps(strength, indent=2) + "\n", encoding="utf-8", newline="\n")

    def row(key: str) -> str:
        s = results[key]
        return (f"| {key} | {s['games']} | {s['win_rate']:.1%} [{s['win_rate_ci95'][0]:.1%}, "
                f"{s['win_rate_ci95'][1]:.1%}] | {s['points_per_game']:+.3f} [{s['ci95'][0]:+.3f}, "
                f"{s['ci95'][1]:+.3f}] | {s['mars_rate_a']:.1%} | {s['mars_rate_b']:.1%} |")

    with_these = " these commands, in order" if len(commands) > 1 else ""
    command_lines = "\n".join("    " + c for c in commands)
    stages_note = ("; the later stages continue the run with `--resume`, the learning rate and exploration "
                   "decaying on from the values reached") if len(commands) > 1 else ""
    readme = f"""# The shipped player: `checkpoints/default`

A TD(lambda) network ({' x '.join(map(str, config['hidden']))} hidden units, features
`{payload['features_version']}`) trained by self-play for {games_trained:,} games under the 2026
sports code (default rules), seed {config['seed']}, with{with_these}

{command_lines}

(`configs/default.yaml`; on the 2-core development machine{stages_note}). Files:

- `checkpoint.pt`: weights plus the training state (`nardy train --resume` continues it
  once copied back into a run directory with `config.json`).
- `config.json`: the resolved configuration; `eval.jsonl`: the run's periodic evaluations.
- `policy.onnx`, `policy.json`: the export for other frontends (`nardy export`; docs/policy.md).
- `strength.json`: the matches below; `training_curve.png`: win rate vs games trained.

## Strength

Paired dice (every game played twice with the same dice and the sides swapped), 95%
intervals over pairs; "mars A/B" are the shares of games won by mars by each side.
Measured with `{strength['command']}`
(at commit {commit}); one row alone: `nardy eval checkpoints/default heuristic --games {args.games} --seed 2026`,
`nardy eval checkpoints/default@1 checkpoints/default --games {args.ply_games} --seed 2027`.

| match (A vs B) | games | A wins | A points per game | mars A | mars B |
| --- | ---: | ---: | ---: | ---: | ---: |
{row('0-ply vs random')}
{row('0-ply vs race')}
{row('0-ply vs heuristic')}
{row('1-ply vs 0-ply')}

![training curve](training_curve.png)

Use it: `nardy play` (it is the default opponent), `nardy hint NPN 6 5`,
`nardy eval checkpoints/default heuristic`, or the ONNX files from any language.
"""
    (out / "README.md").write_text(readme, encoding="utf-8", newline="\n")
    print(f"wrote {out}/README.md and strength.json in {seconds:.0f} s")


if __name__ == "__main__":
    sys.exit(main())

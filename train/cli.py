"""The ``nardy`` command line: a thin layer over the library's functions."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _rules(text: str | None):
    from nardy_env import Rules, RulesError

    if not text:
        return Rules()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"nardy: --rules is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SystemExit("nardy: --rules must be a JSON object of variant keys")
    try:
        return Rules.from_dict(data)
    except (RulesError, TypeError) as exc:
        raise SystemExit(f"nardy: --rules: {exc}") from None


def _cmd_moves(args: argparse.Namespace) -> int:
    from nardy_env import NPNError
    from nardy_env.render import npn_board_text
    from train.moves import format_move_sequence, legal_plays, moves_record

    rules = _rules(args.rules)
    if args.jsonl:
        failed = 0
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                out = moves_record(line, rules)
            except (ValueError, NPNError) as exc:
                failed += 1
                out = {"error": str(exc)}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
        return 1 if failed else 0
    if args.position is None or len(args.dice) != 2:
        print('nardy moves: give a position and two dice, e.g. nardy moves "<NPN>" 6 5, or use --jsonl',
              file=sys.stderr)
        return 2
    try:
        plays = legal_plays(args.position, args.dice, rules)
        board = npn_board_text(args.position, args.dice)
    except (ValueError, NPNError) as exc:
        print(f"nardy moves: {exc}", file=sys.stderr)
        return 2
    print(board)
    print()
    if len(plays) == 1 and not plays[0]["moves"]:
        print("No legal move: the turn passes.")
    else:
        print(f"{len(plays)} legal plays:")
        width = len(str(len(plays)))
        for n, play in enumerate(plays, 1):
            print(f" {n:>{width}}. {format_move_sequence(play['moves']):<28} -> {play['result']}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from train.bench import bench_core

    if args.games < 1:
        print("nardy bench: --games must be at least 1", file=sys.stderr)
        return 2
    result = bench_core(args.games, seed=args.seed, rules=_rules(args.rules), threads=args.threads)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['games']} random games in {result['seconds']:.2f} s "
              f"({result['threads']} threads): {result['games_per_s']:,.0f} games/s, "
              f"{result['positions_per_s']:,.0f} positions/s, "
              f"{result['plies_per_game']:.1f} plies per game")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``nardy`` command."""
    parser = argparse.ArgumentParser(
        prog="nardy", description="Train, measure and ship players of Long Nardy."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    moves = sub.add_parser("moves", help="list the legal plays of a position and roll",
                           description="List the legal plays of a position (NPN) and two dice.")
    moves.add_argument("position", nargs="?", help="position as an NPN string")
    moves.add_argument("dice", nargs="*", type=int, help="the two dice, e.g. 6 5")
    moves.add_argument("--jsonl", action="store_true",
                       help="read JSON lines from stdin, write JSON lines (FORMATS.md)")
    moves.add_argument("--rules", help='rule variants as JSON, e.g. \'{"block_rule": "home"}\'')
    moves.set_defaults(func=_cmd_moves)

    bench = sub.add_parser("bench", help="measure the rules core with random games",
                           description="Play random games through the batched rules core and time them.")
    bench.add_argument("--games", type=int, default=10000, help="games to play (default 10000)")
    bench.add_argument("--seed", type=int, default=0, help="random seed")
    bench.add_argument("--threads", type=int, default=None, help="threads for move generation (default: all CPUs)")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--rules", help="rule variants as JSON")
    bench.set_defaults(func=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nardy`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

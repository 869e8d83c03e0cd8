"""Play Long Nardy against an exported policy, as a frontend would (docs/policy.md), with nothing but
the exported folder, onnxruntime, numpy and the rules core (for the legal results).

    python examples/frontend.py POLICY_DIR [--auto SEED]  # you play white (--auto: random plays, unattended)"""

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from nardy_env import START_NPN, Rules, flip, format_npn, legal_afterstates, parse_npn, to_common_point


def legal_plays(npn, dice, rules):
    """Step 1: {result NPN: moves} of every position the side to move may end its turn in."""
    state, side = parse_npn(npn)
    found = legal_afterstates(state[None], np.array([dice]), rules)
    return {format_npn(flip(s), side.other): " ".join(
        f"{to_common_point(int(a), side)}/{to_common_point(int(b), side) or 'off'}" for a, b in m[:n])
        for s, m, n in zip(found.states, found.moves, found.num_moves, strict=True)}


def encode(result):
    """Step 2: the 50 numbers of a result, seen by the side that has just moved ("me")."""
    points, off, to_move = result.split(":")
    c = [int(x) for x in points.split(",")]
    white_off, black_off = (int(x) for x in off.split(","))
    white = [max(c[p], 0) for p in range(24)]  # white's personal point p+1 is common p+1
    black = [max(-c[(p + 12) % 24], 0) for p in range(24)]  # black's is common p+13, wrapping
    if to_move == "b":  # white has just moved
        return white + black + [white_off, black_off]
    return black + white + [black_off, white_off]


def best_result(session, results):
    """Steps 3-4: the highest equity (the graph values finished results exactly); ties go to the earliest."""
    raw = np.array([encode(r) for r in results], dtype=np.float32)
    return results[int(np.argmax(session.run(["equity"], {"positions": raw})[0]))]


def opening(rng, rules):
    """Each side rolls one die until they differ; the higher moves first."""
    while (white := int(rng.integers(1, 7))) == (black := int(rng.integers(1, 7))):
        pass
    dice = [white, black] if rules.opening == "play" else [int(x) for x in rng.integers(1, 7, size=2)]
    return ("w" if white > black else "b"), dice


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("policy", type=Path, help="an exported policy folder")
    parser.add_argument("--auto", type=int, metavar="SEED", help="play random moves for white")
    args = parser.parse_args()
    os.environ["ORT_DISABLE_TELEMETRY"] = os.environ.get("ORT_DISABLE_TELEMETRY") or "1"  # before the import
    import onnxruntime as ort  # (1.29+ keeps a device id and may send usage data unless told so)
    try:  # docs/policy.md's checks: the format, the files belong together, a session from a copy alone in a folder
        info, model = json.loads((args.policy / "policy.json").read_text()), (args.policy / "policy.onnx").read_bytes()
        if info.get("format") != "nardy-policy/1" or info.get("known_outcomes_in_graph") is not True or hashlib.sha256(model).hexdigest() != info.get("onnx", {}).get("sha256"):
            raise ValueError("not a nardy-policy/1 export with known_outcomes_in_graph (best_result needs it: export an older one again), or policy.onnx is not the file policy.json names")
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "policy.onnx").write_bytes(model)
            session = ort.InferenceSession(str(Path(folder) / "policy.onnx"), providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own classes for a graph it refuses
        parser.error(f"{args.policy} is not an exported policy folder nardy can load ({error})")
    rules, rng = Rules.from_dict(info["rules"]), np.random.default_rng(args.auto)
    side, dice = opening(rng, rules)
    npn = START_NPN[:-1] + side
    for turn in range(1, 1000):
        plays = legal_plays(npn, dice, rules)
        results = sorted(plays)  # the order of FORMATS.md's `results`, which breaks ties
        if side == "b":
            npn = best_result(session, results)
        elif args.auto is not None or len(results) == 1:
            npn = results[int(rng.integers(len(results)))]
        else:
            print(f"\n{npn}  you (white) rolled {dice[0]}-{dice[1]}",
                  *(f"  {n:3d}. {plays[r]:<24} -> {r}" for n, r in enumerate(results, 1)), sep="\n")
            choice = ""
            while not (choice.isascii() and choice.isdigit() and 1 <= int(choice) <= len(results)):
                choice = input(f"your play (1-{len(results)}): ").strip()
            npn = results[int(choice) - 1]
        print(f"{turn:3d}. {'bot' if side == 'b' else 'you'} {dice[0]}-{dice[1]}: {plays[npn] or '(no move)'} -> {npn}")
        if (state := parse_npn(npn)[0])[25] == 15:  # the side that just moved (not the one to move) is off
            print(f"{'bot (black)' if side == 'b' else 'you (white)'} won {1 + (state[24] == 0)} point(s) in {turn} plies")
            return 0
        side = "w" if side == "b" else "b"
        dice = [int(x) for x in rng.integers(1, 7, size=2)]
    raise SystemExit("no result after 1000 plies")


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (EOFError, KeyboardInterrupt):  # the player closed the input or pressed Ctrl-C
        raise SystemExit("\ngame abandoned") from None

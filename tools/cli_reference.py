"""Write docs/cli.md: every ``nardy`` command's --help, as this checkout's parser prints it.

    python tools/cli_reference.py            # rewrite docs/cli.md
    python tools/cli_reference.py --check    # exit 1 if docs/cli.md is out of date

``tests/test_docs.py`` checks that every command and option appears in the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "cli.md"

INTRO = """# The `nardy` command

Every command and option, as `nardy COMMAND --help` prints it (written by
`python tools/cli_reference.py`). Players are named the same way everywhere: a
bot (`random`, `race`, `heuristic`), `default` (the shipped player) or a level
of it (`easy`, `medium`, `hard`, `expert`), a run
directory or checkpoint file, or an exported policy folder, with `@N` appended
to search N plies, or your own player as `FILE.py:NAME`
([agents.md](agents.md)). Positions are NPN strings ([formats.md](formats.md)).

Exit status: 0 done. When a command cannot do what was asked it says why on
stderr and exits 2 (bad arguments or input, a file named that cannot be read or
a path too long, a run that cannot start or go on, a match whose worker process
died) or 1 (a failure while writing: a full disk, a file that cannot be written;
any error of `nardy export` past its arguments, a bad source or folder included; a `--jsonl` input with bad
lines, each answered by an error line, as FORMATS.md says). 130: interrupted by
Ctrl-C; 143: stopped by SIGTERM (a match stops its worker processes, which
also end by themselves if nardy is killed outright; `nardy train` first saves
a checkpoint and prints how to resume); 141: the reader of
the output went away (`nardy ... | head`). With standard output closed
(`>&-`) what a command prints is discarded, as Python's `print` does, and the
status is that of the work; with standard error closed (`2>&-`) so are its
messages and progress.

Progress (`train`, `eval`, `ladder`) goes to stderr: a live bar on a terminal;
when stderr is a file or a pipe (a log, CI), a plain line every 30 seconds and
one at the end, without the bar's carriage returns. With `--json` (`eval`,
`ladder`), only the live bar on a terminal: a script reading the JSON gets
nothing else.
"""


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subparsers of the ``nardy`` parser, by name, in the order of ``nardy --help``."""
    for action in parser._actions:  # argparse keeps them here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def render() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: fix it for a stable file
    # This checkout's parser, for this checkout's docs/cli.md, whichever nardy the interpreter has
    # installed (a second clone run with another clone's venv).
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from train.cli import build_parser

    if not Path(sys.modules["train.cli"].__file__ or "").resolve().is_relative_to(ROOT):
        raise SystemExit(f"tools/cli_reference.py: train.cli was already imported from elsewhere than {ROOT}")

    parser = build_parser()
    parts = [INTRO, "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    for name, sub in subcommands(parser).items():
        parts.append(f"## `nardy {name}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that docs/cli.md is up to date")
    args = ap.parse_args()
    text = render()
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

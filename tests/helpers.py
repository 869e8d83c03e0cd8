"""Small builders shared by the tests."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from unittest import mock

import numpy as np

from nardy_env import DEFAULT_RULES, Rules, parse_npn
from train.moves import legal_plays


def npn(white: dict[int, int], black: dict[int, int], off: tuple[int, int] = (0, 0), side: str = "w") -> str:
    """An NPN string from {common point: count} for each colour."""
    cells = [0] * 24
    for p, n in white.items():
        assert cells[p - 1] == 0, p
        cells[p - 1] = n
    for p, n in black.items():
        assert cells[p - 1] == 0, p
        cells[p - 1] = -n
    text = f"{','.join(map(str, cells))}:{off[0]},{off[1]}:{side}"
    parse_npn(text)  # the builder never makes an invalid position
    return text


def results(position: str, d1: int, d2: int, rules: Rules = DEFAULT_RULES) -> list[str]:
    """Sorted result NPNs (other side to move)."""
    return [p["result"] for p in legal_plays(position, (d1, d2), rules)]


def plays(position: str, d1: int, d2: int, rules: Rules = DEFAULT_RULES) -> list[dict]:
    return legal_plays(position, (d1, d2), rules)


def board(result: str) -> dict[int, int]:
    """{common point: signed count} of the non-empty points of an NPN."""
    cells = [int(x) for x in result.split(":")[0].split(",")]
    return {p: v for p, v in enumerate(cells, 1) if v}


def off(result: str) -> tuple[int, int]:
    w, b = result.split(":")[1].split(",")
    return int(w), int(b)


def as_array(position: str) -> np.ndarray:
    return parse_npn(position)[0]


def nardy(capsys, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """What the ``nardy`` command answers (status, stdout, stderr), from ``train.cli.main`` in this
    process, under a fresh interpreter's warning filters: for tests of what a command does and
    says, not of its process (signals, closed streams, imports, environment, what happens at exit:
    those, and a normal run of each command, run the command)."""
    from train.cli import main

    def to_stderr(message, category, filename, lineno, file=None, line=None) -> None:  # as Python's own
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    capsys.readouterr()
    with contextlib.ExitStack() as stack:
        # A fresh interpreter's warning filters, and warnings printed to stderr (pytest's would
        # record them instead, and show DeprecationWarnings a command does not).
        stack.enter_context(warnings.catch_warnings())
        warnings.resetwarnings()
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.showwarning = to_stderr
        if stdin is not None:  # read as the command reads a pipe: bytes, line by line
            stack.enter_context(mock.patch.object(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()))))
        status = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["nardy", *args], status, out.out, out.err)

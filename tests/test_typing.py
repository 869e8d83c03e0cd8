"""The public API as a type checker sees it: documented calls in a user's strict-mypy code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


USER, MISTAKES = DATA / "typed_user.py", DATA / "typed_mistakes.py"


@pytest.fixture(scope="module")
def strict_mypy(tmp_path_factory) -> subprocess.CompletedProcess:
    """One ``mypy --strict`` run over both files (most of its time goes to reading numpy, torch and
    gymnasium, once for both): each error line names its file."""
    cwd = tmp_path_factory.mktemp("mypy")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--no-incremental",
                           "--cache-dir", str(cwd / "cache"), "--no-error-summary", str(USER), str(MISTAKES)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def _errors(out: subprocess.CompletedProcess, source: Path) -> list[str]:
    return [line for line in out.stdout.splitlines() if line.startswith(f"{source}:") and ": error:" in line]


def test_documented_calls_type_check_strictly_in_user_code(strict_mypy):
    # Lists for arrays, dicts for rules, "w" for a colour, a three-argument player, the env's
    # reset and step: what the docs show and the functions accept must pass mypy --strict too.
    assert strict_mypy.returncode in (0, 1) and not strict_mypy.stderr, strict_mypy.stdout + strict_mypy.stderr
    assert not _errors(strict_mypy, USER), strict_mypy.stdout
    ran = subprocess.run([sys.executable, str(USER)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr  # and it does what it says


def test_mistakes_refused_at_run_time_are_type_errors_too(strict_mypy):
    """A player's class for a player, a function that is no player, a mode's typo: each marked line
    (and only those) is an error to mypy --strict, as each is a clear error when it runs."""
    marked = {n for n, line in enumerate(MISTAKES.read_text().splitlines(), 1) if ")  # E" in line}
    flagged = {int(line.split(":")[1]) for line in _errors(strict_mypy, MISTAKES)}
    assert marked and flagged == marked, strict_mypy.stdout + strict_mypy.stderr
    # Every error line belongs to one of the two files (none hides under another name).
    errors = [line for line in strict_mypy.stdout.splitlines() if ": error:" in line]
    assert len(errors) == len(_errors(strict_mypy, USER)) + len(_errors(strict_mypy, MISTAKES))


def test_the_envs_signatures_resolve_at_run_time():
    """Tools that read annotations at run time (get_type_hints: sphinx, jsonargparse) find every name."""
    import typing

    from nardy_env.envs import LongNardyEnv
    from nardy_env.envs.vector import LongNardyVectorEnv

    for cls in (LongNardyEnv, LongNardyVectorEnv):
        hints = typing.get_type_hints(cls.__init__)
        assert {"opponent", "agent_color", "rules"} <= set(hints)

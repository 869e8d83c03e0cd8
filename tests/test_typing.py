"""The public API as a type checker sees it: documented calls in a user's strict-mypy code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def test_documented_calls_type_check_strictly_in_user_code(tmp_path):
    # Lists for arrays, dicts for rules, "w" for a colour, a three-argument player, the env's
    # reset and step: what the docs show and the functions accept must pass mypy --strict too.
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--no-incremental",
                          "--cache-dir", str(tmp_path / "cache"), str(DATA / "typed_user.py")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    ran = subprocess.run([sys.executable, str(DATA / "typed_user.py")], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr  # and it does what it says


def test_mistakes_refused_at_run_time_are_type_errors_too(tmp_path):
    """A player's class for a player, a function that is no player, a mode's typo: each marked line
    (and only those) is an error to mypy --strict, as each is a clear error when it runs."""
    source = DATA / "typed_mistakes.py"
    marked = {n for n, line in enumerate(source.read_text().splitlines(), 1) if ")  # E" in line}
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--no-incremental",
                          "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(source)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    flagged = {int(line.split(":")[1]) for line in out.stdout.splitlines() if ": error:" in line}
    assert marked and flagged == marked, out.stdout + out.stderr


def test_the_envs_signatures_resolve_at_run_time():
    """Tools that read annotations at run time (get_type_hints: sphinx, jsonargparse) find every name."""
    import typing

    from nardy_env.envs import LongNardyEnv
    from nardy_env.envs.vector import LongNardyVectorEnv

    for cls in (LongNardyEnv, LongNardyVectorEnv):
        hints = typing.get_type_hints(cls.__init__)
        assert {"opponent", "agent_color", "rules"} <= set(hints)

"""One process at a time in a run's folder: an advisory lock on ``RUN/.lock``.

Two ``nardy train`` sessions on one run (a resume given while the run still trains in
another terminal) would overwrite each other's checkpoints and interleave their
evaluation logs. Whoever writes a run holds an exclusive ``flock`` on its ``.lock``
file; a second process is refused with the holder's pid. The kernel drops the lock
when its process ends, however it ends (SIGKILL included), so a killed run never
leaves its folder locked. Within one process the lock is shared (a library caller
may hold several ``Trainer`` objects on one run, as the tests do).

Where ``fcntl`` is missing (Windows) or the lock file cannot be made (a read-only
folder, which no run can write anyway) nothing is locked. Across machines sharing a
folder the lock holds where the file system carries ``flock`` between them (NFS on
Linux does; some FUSE or ``local_lock`` mounts keep it to one machine).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "RunInUse", "acquire", "release"]

LOCK_NAME = ".lock"

_held: dict[Path, list] = {}  # the run folder (resolved) -> [open lock file, holders in this process]


class RunInUse(RuntimeError):
    """Another process holds the run's lock."""


def acquire(run_dir: Path) -> Path | None:
    """Lock ``run_dir`` for this process; returns the key to release, or None if nothing was locked.

    Raises RunInUse if another process holds it."""
    if fcntl is None or not run_dir.is_dir():
        return None
    key = run_dir.resolve()
    if key in _held:
        _held[key][1] += 1
        return key
    path = key / LOCK_NAME
    try:
        fh: IO[str] = open(path, "a+")  # noqa: SIM115 - held open while locked
    except OSError:
        try:  # one another user made (a shared folder): flock needs no write access
            fh = open(path)  # noqa: SIM115
        except OSError:  # none there and none can be made: a read-only folder, which no run writes
            return None
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = _holder(fh.read())
        fh.close()
        raise RunInUse(f"{run_dir} is in use by another process{holder}: one nardy train at a time writes "
                       "a run. Wait for it to finish, or stop it (Ctrl-C saves a checkpoint) and resume "
                       "then") from None
    except OSError:  # a filesystem without locks
        fh.close()
        return None
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()} {socket.gethostname()}\n")
        fh.flush()
    except OSError:  # not ours to write, or a full disk: the lock holds all the same, without the pid
        pass
    _held[key] = [fh, 1]
    return key


def _holder(text: str) -> str:
    """`` (pid N)``, `` (pid N on HOST)`` for another machine (a shared folder), or nothing."""
    pid, _, host = text.strip().partition(" ")
    if not pid.isdigit():
        return ""
    return f" (pid {pid})" if not host or host == socket.gethostname() else f" (pid {pid} on {host})"


def release(key: Path | None) -> None:
    """Give back one hold of ``acquire``; the lock goes with the last one in this process."""
    if key is None or key not in _held:
        return
    _held[key][1] -= 1
    if _held[key][1] <= 0:
        fh = _held.pop(key)[0]
        fh.close()  # closing the file drops the flock

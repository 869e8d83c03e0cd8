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

import contextlib
import os
import socket
import stat
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "LockError", "RunInUse", "acquire", "release", "looks_like_a_run"]

LOCK_NAME = ".lock"

_held: dict[Path, list] = {}  # the run folder (resolved) -> [lock file descriptor, holders in this process]


class LockError(RuntimeError):
    """The run's lock cannot be taken."""


class RunInUse(LockError):
    """Another process holds the run's lock."""


def looks_like_a_run(run_dir: Path) -> bool:
    """A folder a run has written (config.json or a checkpoint), not any folder named by mistake."""
    return (run_dir / "config.json").exists() or any(run_dir.glob("checkpoint*.pt"))


def acquire(run_dir: Path, new: bool = False) -> Path | None:
    """Lock ``run_dir`` for this process; returns the key to release, or None if nothing was locked.

    Only a folder that ``looks_like_a_run`` is locked (no ``.lock`` is left in a folder named
    by mistake), or with ``new`` the folder a new run has just made. Raises RunInUse if another
    process holds it, LockError if ``.lock`` is not a plain file (a link would have its target
    written)."""
    if fcntl is None or not run_dir.is_dir() or not (new or looks_like_a_run(run_dir)):
        return None
    key = run_dir.resolve()
    if key in _held:
        _held[key][1] += 1
        return key
    path = key / LOCK_NAME
    for _ in range(10):
        fd = _open(path)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(os.pread(fd, 200, 0).decode("utf-8", "replace"))
            os.close(fd)
            raise RunInUse(f"{run_dir} is in use by another process{holder}: one nardy train at a time writes "
                           "a run. Wait for it to finish, or stop it (Ctrl-C saves a checkpoint) and resume "
                           "then") from None
        except OSError:  # a filesystem without locks
            os.close(fd)
            return None
        try:  # the file locked is still the one named .lock (not one a new run's end removed meanwhile)
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    else:
        return None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    except OSError:  # not ours to write, or a full disk: the lock holds all the same, without the pid
        pass
    _held[key] = [fd, 1]
    return key


def _open(path: Path) -> int | None:
    """The lock file, opened without following a link or waiting on a FIFO; None where none can be."""
    flags = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    except OSError:
        if path.is_symlink():
            raise LockError(f"{path} is a link, not a lock file; remove it, then try again") from None
        try:  # one another user made (a shared folder): flock needs no write access
            fd = os.open(path, os.O_RDONLY | flags)
        except OSError:  # none there and none can be made (a read-only folder, which no run
            return None  # writes; a full disk, whose writes fail soon enough with their own message)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockError(f"{path} is not a plain file; remove it, then try again")
    return fd


def _holder(text: str) -> str:
    """`` (pid N)``, `` (pid N on HOST)`` for another machine (a shared folder), or nothing."""
    pid, _, host = text.strip().partition(" ")
    if not pid.isdigit():
        return ""
    return f" (pid {pid})" if not host or host == socket.gethostname() else f" (pid {pid} on {host})"


def release(key: Path | None, remove: bool = False) -> None:
    """Give back one hold of ``acquire``; the lock goes with the last one in this process, and
    with ``remove`` its file too (a new run that never started), but only then."""
    if key is None or key not in _held:
        return
    _held[key][1] -= 1
    if _held[key][1] <= 0:
        fd = _held.pop(key)[0]
        if remove:
            with contextlib.suppress(OSError):
                (key / LOCK_NAME).unlink()
        os.close(fd)  # closing the file drops the flock


def _forget_in_child() -> None:
    """A forked child shares its parent's locks; it closes its copies (the parent keeps the locks)."""
    for fd, _ in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)

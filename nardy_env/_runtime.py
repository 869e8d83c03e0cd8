"""What the rules core needs from the machine it runs on: numba's cache folder and the CPUs.

The rules themselves (``core``) are pure functions; the I/O they rest on lives here.

numba caches compiled code beside the sources (``__pycache__``) or in the
user's cache folder (``NUMBA_CACHE_DIR``, else ``~/.cache``), whichever it can
write; with neither (a read-only install run by a user without a writable
home, as in many containers) ``cache=True`` raises at import. Then the core's
cache goes to a per-user folder in the temp dir that this user owns and no one
else may write (numba loads its cache with pickle), and failing that nothing is
cached: every process compiles, about 8 s. A warning says which.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
import threading
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numba as nb

__all__ = ["not_a_file", "numba_cache", "numba_cache_placed", "from_numba_cache", "without_numba_cache", "cgroup_cpu_quota",
           "printable", "is_control", "NardyWarning", "RulesMismatchWarning", "NumbaCacheWarning", "caught_warnings"]


class NardyWarning(UserWarning):
    """Every warning nardy gives is one: ``warnings.filterwarnings("ignore", category=NardyWarning)``
    (or pytest's ``ignore::nardy_env.NardyWarning``) silences them, and a subclass silences its kind."""


class RulesMismatchWarning(NardyWarning):
    """A player that learnt (or searches) under other rules than those of the game it is asked to play."""


class NumbaCacheWarning(NardyWarning, RuntimeWarning):
    """numba's cache cannot be used where it was meant to be: the core compiles elsewhere or each time."""


_WARNINGS_LOCK = threading.RLock()


def _new_warnings_lock() -> None:
    # A child forked while another thread held the lock would wait for it forever.
    global _WARNINGS_LOCK
    _WARNINGS_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_warnings_lock)


@contextlib.contextmanager
def caught_warnings(record: bool = False) -> Iterator[Any]:
    """``warnings.catch_warnings``, one thread at a time: it swaps the process's warning state,
    and two threads doing so at once (matches played from threads) could leave every later
    warning of the process swallowed."""
    with _WARNINGS_LOCK, warnings.catch_warnings(record=record) as caught:
        yield caught


def not_a_file(path: str | os.PathLike[str]) -> str:
    """Why something is under ``path`` that is no readable file, as the end of a sentence
    ('is a folder, not a file'), or '' when nothing is there at all (or a regular file is)."""
    if os.path.isdir(path):
        return "is a folder, not a file"
    if os.path.islink(path) and not os.path.exists(path):
        return "is a link that leads nowhere (to a missing file, or round in a loop)"
    if os.path.lexists(path) and not os.path.isfile(path):
        return "is not a regular file"
    return ""


def printable(text: str) -> str:
    """``text`` with control characters but newlines escaped (``\\x1b``): what a file or a model
    says (a weight's name, a run's name, an error quoting them) must not drive the terminal.
    Other text (a no-break space, a zero-width joiner of Persian or an emoji) is kept."""
    return "".join(repr(c)[1:-1] if c != "\n" and is_control(c) else c for c in text)


def is_control(char: str) -> bool:
    """Whether ``char`` is a control character or a line or paragraph separator (Unicode Cc, Zl, Zp)."""
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")

_saved_cache_dir: list[str] = []


def _cache_probe():  # pragma: no cover - never called; numba places a cache by this file's folder
    return 0


_decided: list[tuple[bool, str | None]] = []  # the answer and the temp folder, found once per process


def numba_cache() -> bool:
    """Whether the core's functions may be compiled with ``cache=True`` (see above). When the
    temp folder is used, numba's ``CACHE_DIR`` points there until ``numba_cache_placed()``.
    Found once per process (each module with compiled functions asks; the warning is said once)."""
    if _decided:
        usable, folder = _decided[0]
        if folder is not None:
            _saved_cache_dir.append(nb.config.CACHE_DIR)  # type: ignore[attr-defined]
            nb.config.CACHE_DIR = folder  # type: ignore[attr-defined]
        return usable
    usable = _find_numba_cache()
    _decided.append((usable, nb.config.CACHE_DIR if _saved_cache_dir else None))  # type: ignore[attr-defined]
    return usable


def _find_numba_cache() -> bool:
    try:
        nb.njit(cache=True)(_cache_probe)
        return True
    except RuntimeError:  # "cannot cache function ...: no locator available"
        pass
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    places = (f"in NUMBA_CACHE_DIR ({chosen}), " if chosen else "") + "beside nardy_env or in the home folder"
    try:
        # No usable temp folder at all (a read-only container) raises here: compiled uncached then.
        folder = os.path.join(tempfile.gettempdir(), f"nardy-numba-cache-{user}")
        new = not os.path.lexists(folder)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        unsafe = _not_private(folder)
        if unsafe:
            raise OSError(f"{folder} {unsafe}")
        tempfile.TemporaryFile(dir=folder).close()
        _saved_cache_dir.append(nb.config.CACHE_DIR)  # type: ignore[attr-defined]
        nb.config.CACHE_DIR = folder  # type: ignore[attr-defined]
        nb.njit(cache=True)(_cache_probe)
    except (OSError, RuntimeError) as exc:
        numba_cache_placed()
        warnings.warn(f"numba can write its cache neither {places}, nor safely in the temp folder ({exc}): the "
                      "rules core is compiled in every process (about 8 s); "
                      + ("make NUMBA_CACHE_DIR writable or set it to another folder" if chosen else
                         "set NUMBA_CACHE_DIR to a writable folder"), NumbaCacheWarning, stacklevel=4)
        return False
    if new:  # said once, when the folder is made (not again in every worker process)
        choose = "make NUMBA_CACHE_DIR writable to keep it there" if chosen else "set NUMBA_CACHE_DIR to choose"
        warnings.warn(f"numba cannot write its cache {places}; the compiled rules core is kept in {folder} "
                      f"({choose})", NumbaCacheWarning, stacklevel=4)
    return True


_WINDOWS = os.name == "nt"


def _not_private(folder: str) -> str | None:
    """Why ``folder`` is not safe for a cache that is unpickled (None when it is): it must be a real
    folder of this user's that no one else may write."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder (a link?)"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    # Windows reports every folder as 0o777 whatever its access rules (the temp folder is the user's own).
    if not _WINDOWS and info.st_mode & 0o022:
        return "may be written by other users"
    return None


def numba_cache_placed() -> None:
    """Give numba's ``CACHE_DIR`` its value back once the core's functions have their cache places,
    so that other libraries' caches do not follow the core into the temp folder."""
    while _saved_cache_dir:
        nb.config.CACHE_DIR = _saved_cache_dir.pop()  # type: ignore[attr-defined]


def from_numba_cache(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while numba read or wrote its cache (a damaged file: an
    unpickling or value error; a full disk: an OSError)."""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if name.endswith(("numba/core/caching.py", "numba/core/serialize.py")):
            return True
        tb = tb.tb_next
    return False


def without_numba_cache(exc: BaseException, dispatchers: Iterable[Any], where: str,
                        what: str = "the compiled rules core") -> None:
    """Stop using numba's cache for ``dispatchers`` (``what`` they are, for the message) in this
    process, after it failed to load or save (a damaged file, a full disk), saying where it is; a
    numba whose cache internals moved (it has no NullCache or CPUDispatcher where this reaches for
    them) gets the original error back with the same advice, not an ImportError of nardy's own."""
    try:
        from numba.core.caching import NullCache
        dispatcher_type = nb.core.registry.CPUDispatcher
    except (ImportError, AttributeError):
        raise RuntimeError(f"{what} could not be read from or written to numba's cache "
                           f"({type(exc).__name__}: {exc}), and this numba ({nb.__version__}) cannot be told to "
                           f"go on without it: delete {where} and run the command again") from exc

    warnings.warn(f"{what} could not be read from or written to numba's cache ({type(exc).__name__}: "
                  f"{exc}); compiling without it. Delete {where} if it is damaged.", NumbaCacheWarning, stacklevel=4)
    for dispatcher in dispatchers:
        if isinstance(dispatcher, dispatcher_type):
            dispatcher._cache = NullCache()  # type: ignore[attr-defined]


@functools.cache
def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> int | None:
    """The CPU quota of this process's cgroup in whole CPUs, rounded up, or None without one
    (cgroup v2's ``cpu.max``, else v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``)."""
    def read(name: str) -> str | None:
        try:
            with open(os.path.join(root, name), encoding="ascii") as fh:
                return fh.read().strip()
        except (OSError, UnicodeDecodeError):
            return None

    fields = (read("cpu.max") or "").split()
    if len(fields) == 2:
        quota, period = fields
        return None if quota == "max" or not (quota.isdigit() and period.isdigit()) or int(period) == 0 \
            else max(1, -(-int(quota) // int(period)))
    for folder in ("cpu", "cpu,cpuacct"):
        quota_us, period_us = read(f"{folder}/cpu.cfs_quota_us"), read(f"{folder}/cpu.cfs_period_us")
        if quota_us is not None and period_us is not None:
            try:
                q, p = int(quota_us), int(period_us)
            except ValueError:
                return None
            return max(1, -(-q // p)) if q > 0 and p > 0 else None
    return None

"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["write_atomic", "is_stream", "compressed_entries", "file_sha256"]


def shipped_data(package_file: str, installed: str, *checkout: str) -> Path:
    """Data that ships with nardy: the folder ``installed`` beside ``package_file`` when the wheel
    put it there (setup.py), else the checkout's own ``checkout`` path from the repository root.
    An installed package never looks beside itself, where site-packages may hold another's."""
    here = Path(package_file).resolve().parent
    return here / installed if (here / installed).is_dir() else here.parent.joinpath(*checkout)


TEMP_NAME_EXTRA = len(".") + len(".") + 8 + len(".tmp")
"""What write_atomic's temporary file adds to the name it replaces (``.NAME.XXXXXXXX.tmp``)."""


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object], follow: bool = False) -> Path:
    """Write ``path`` through ``write(file)`` into a temporary file beside it, then rename.

    A killed writer leaves the previous file intact (and no temporary file
    behind when it can clean up). A new file gets the usual permissions (0666
    less the umask), not mkstemp's 0600, so a web server can serve it; a file
    replaced keeps its own.

    ``follow`` is for a path the user named (an output option): a symbolic link
    is followed (the file it points to is replaced and the link stays), and what
    is not a file to replace (a pipe, ``/dev/stdout``, a device) is written to
    directly, as a stream. Without it (nardy's own files, such as those of a run
    directory, which may have come from anyone) a link is replaced itself and
    nothing outside the folder is touched.
    """
    path = Path(path)
    if follow and is_stream(path):
        for stream in (sys.stdout, sys.stderr):  # the process's own output (/dev/stdout): through it
            if _same_file(path, stream):
                stream.flush()  # what was printed before comes first
                write(stream.buffer)
                stream.buffer.flush()
                return path
        # Appended: a /dev/fd/N a shell opened onto a file keeps what was written through it.
        with open(path, "ab") as fh:
            write(fh)
        return path
    target = Path(os.path.realpath(path)) if follow and path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = os.lstat(target)
        mode = old.st_mode & 0o777 if stat.S_ISREG(old.st_mode) else 0o666 & ~_umask()  # never setuid and such
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = _new_file_beside(target)
    try:
        with os.fdopen(fd, "wb") as fh:  # closed whatever fails below
            try:
                os.chmod(tmp, mode)
            except OSError:  # vfat, exFAT, some network mounts refuse it: their own modes stand
                pass
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)  # the rename itself survives a power cut
    return path


def _new_file_beside(target: Path) -> tuple[int, str]:
    """A new, empty file ``.NAME.XXXXXXXX.tmp`` beside ``target``, open for writing: its descriptor and path.

    Not ``tempfile.mkstemp``: on Windows before Python 3.13 it takes a folder the user may not
    write in for a name clash and tries other names for hours (CPython gh-66305). Here only a
    clash is retried; a refusal is raised at once.
    """
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = os.path.join(target.parent, f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name beside the file", str(target))


def creation_refused(folder: Path, who: str, stacklevel: int = 2) -> str | None:
    """Why no new file can be made in ``folder``, or None when one can: a file
    ``.nardy-WHO-probe-...`` made there and removed again says.

    ``os.access`` answers yes to root for folders no one may write (/proc, a root-squashed
    share), and on Windows to folders whose access rules refuse the user: the file answers
    truly, before the work rather than after it. One name, one try. A probe that cannot be
    removed (a folder that takes new files but lets none go) is left there with a warning.
    """
    probe = folder / f".nardy-{who}-probe-{os.getpid()}-{secrets.token_hex(8)}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        os.unlink(probe)
    except OSError as exc:
        from nardy_env import NardyWarning

        warnings.warn(f"could not remove the test file {probe} ({exc.strerror or exc}); delete it",
                      category=NardyWarning, stacklevel=stacklevel + 1)
    return None


def is_stream(path: str | Path) -> bool:
    """Whether ``path`` names something written as a stream, not a file replaced whole: an
    existing pipe, socket or device, or a name under /dev or /proc (``/dev/stdout``,
    ``/dev/fd/N``, which a shell's ``>(...)`` gives)."""
    name = os.path.abspath(path)
    for _ in range(40):  # the name, then each link on the way (a link to /dev/stdout is a stream too)
        if name.startswith(("/dev/", "/proc/")) and not name.startswith("/dev/shm/") and os.path.exists(name):
            return True  # (shm holds files in memory; a name there that does not exist is a typo)
        if not os.path.islink(name):
            break
        name = os.path.join(os.path.dirname(name), os.readlink(name))
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:  # not there (yet), or a dangling link: a file to create
        return False


def _same_file(path: Path, stream: object) -> bool:
    """Whether ``path`` names the file or pipe behind ``stream`` (sys.stdout, say)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(stream.fileno()))  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return False


def compressed_entries(archive: zipfile.ZipFile) -> list[str]:
    """The names of an archive's compressed entries. torch.save and np.savez store theirs, so
    in a file of theirs from elsewhere such an entry is refused: it could unpack a small file
    into gigabytes."""
    return [entry.filename for entry in archive.infolist() if entry.compress_type != zipfile.ZIP_STORED]


def _umask() -> int:
    """The process umask, read without changing it where the system allows (os.umask can only
    be read by setting it, which races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not on every system (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file (provenance of exports, integrity of policy folders)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""Atomic writes: whole files, the usual permissions, nothing left behind."""

from __future__ import annotations

import os
import stat

import pytest

from agents.files import _umask, write_atomic


def test_the_umask_is_read_without_being_changed():
    old = os.umask(0o027)
    try:
        assert _umask() == 0o027
        assert os.umask(0o027) == 0o027  # still in force
    finally:
        os.umask(old)


def test_a_written_file_gets_0666_less_the_umask_and_no_temporary_file_stays(tmp_path):
    old = os.umask(0o027)
    try:
        path = write_atomic(tmp_path / "sub" / "file.bin", lambda fh: fh.write(b"data"))
    finally:
        os.umask(old)
    assert path.read_bytes() == b"data"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in path.parent.iterdir()] == ["file.bin"]


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = write_atomic(tmp_path / "file.bin", lambda fh: fh.write(b"old"))

    def fail(fh):
        fh.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, fail)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]


def test_a_checkpoint_that_does_not_fit_on_the_disk_leaves_nothing_behind(tmp_path, monkeypatch):
    import errno

    import agents.files
    import agents.td
    from agents.network import TDNetwork

    real_fdopen = agents.files.os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(bytes(data)[:10])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(agents.files.os, "fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(OSError) as caught:
        agents.td.save_checkpoint(path, TDNetwork([8]))
    assert caught.value.errno == errno.ENOSPC
    assert not path.exists() and list(tmp_path.iterdir()) == []  # no half-written file


def _holding_itself() -> dict:
    """A dict that holds itself (pickle writes that) and a function (pickle does not)."""
    d: dict = {}
    d["self"] = d
    d["fn"] = lambda: 0
    return d


def _counts_looping_back() -> dict:
    """A dict holding a defaultdict of a lambda (pickle cannot write it) that holds the dict."""
    import collections

    d: dict = {}
    counts: collections.defaultdict = collections.defaultdict(lambda: 0)
    counts["up"] = d
    d["counts"] = counts
    return d


def _ring() -> dict:
    """A loop through two dicts (pickle writes that) beside a function (pickle does not)."""
    a: dict = {}
    a["b"] = {"a": a}
    a["fn"] = lambda: 0
    return a


def test_extra_data_a_checkpoint_could_not_load_is_refused_before_the_good_file_is_replaced(tmp_path):
    import numpy as np
    import torch

    from agents.network import TDNetwork
    from agents.td import load_checkpoint, save_checkpoint

    path = save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork([8]), note="first")
    good = path.read_bytes()
    with pytest.raises(ValueError, match="objects other than tensors") as caught:
        save_checkpoint(path, TDNetwork([8]), scores=np.arange(3), config={"lr": 0.1}, step=torch.tensor(3))
    # Only the key at fault is named, with what to store instead; torch's advice to load it anyway is not passed on.
    assert "'scores' (numpy data)" in str(caught.value) and "torch.from_numpy(a)" in str(caught.value)
    assert "config" not in str(caught.value) and "'step'" not in str(caught.value)
    assert "weights_only" not in str(caught.value) and "\x1b" not in str(caught.value)
    with pytest.raises(ValueError, match=r"\['state_dict'\] are the checkpoint's own keys"):
        save_checkpoint(path, TDNetwork([8]), state_dict={})
    # What pickle cannot write at all is named the same way, not pickle's own error.
    for extra, kind in (({"fn": lambda: 0}, "'fn' (function, which cannot be pickled)"),
                        ({"gen": (c for c in "ab")}, "'gen' (generator, which cannot be pickled)"),
                        # Inside the dicts and lists a trainer stores: the culprit, not the dict, is named.
                        ({"config": {"lr": 0.1, "fn": lambda: 0}}, "'config' (function at ['fn'], which cannot"),
                        ({"log": [1, {"g": (c for c in "ab")}]}, "'log' (generator at [1]['g'], which cannot"),
                        ({"loop": _holding_itself()}, "'loop' (function at ['fn'], which cannot"),
                        ({"ring": _ring()}, "'ring' (function at ['fn'], which cannot"),
                        # A container can be the culprit itself, loop or not: a defaultdict's factory.
                        ({"stats": _counts_looping_back()}, "'stats' (defaultdict at ['counts'], which cannot")):
        with pytest.raises(ValueError, match="objects other than tensors") as caught:
            save_checkpoint(path, TDNetwork([8]), **extra)
        assert kind in str(caught.value)
    for network in (None, torch.nn.Linear(2, 2)):
        with pytest.raises(TypeError, match="network must be a TDNetwork"):
            save_checkpoint(path, network)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"is a folder; name the file to write, such as .*checkpoint.pt"):
        save_checkpoint(tmp_path, TDNetwork([8]))
    assert path.read_bytes() == good and load_checkpoint(path)[1]["note"] == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temporary file left


def test_a_symbolic_link_the_user_named_is_followed_and_kept(tmp_path):
    real = write_atomic(tmp_path / "runs" / "best.pt", lambda fh: fh.write(b"old"))
    link = tmp_path / "latest.pt"
    link.symlink_to(real)
    assert write_atomic(link, lambda fh: fh.write(b"new"), follow=True) == link
    assert link.is_symlink() and real.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "runs"]


def test_nardys_own_files_replace_a_link_never_what_it_points_to(tmp_path):
    # A run directory from elsewhere may hold eval.jsonl -> ~/.bashrc: rewriting the log must not
    # write the victim, nor stream into a device a link names.
    victim = tmp_path / "bashrc"
    victim.write_bytes(b"mine")
    run = tmp_path / "run"
    run.mkdir()
    (run / "eval.jsonl").symlink_to(victim)
    (run / "training_curve.png").symlink_to("/dev/null")
    write_atomic(run / "eval.jsonl", lambda fh: fh.write(b"{}\n"))
    write_atomic(run / "training_curve.png", lambda fh: fh.write(b"png"))
    assert victim.read_bytes() == b"mine"
    assert not (run / "eval.jsonl").is_symlink() and (run / "eval.jsonl").read_bytes() == b"{}\n"
    assert not (run / "training_curve.png").is_symlink()


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    path = write_atomic(tmp_path / "private.json", lambda fh: fh.write(b"1"))
    path.chmod(0o600)
    write_atomic(path, lambda fh: fh.write(b"2"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_bytes() == b"2"


def test_a_pipe_or_a_link_to_dev_stdout_is_written_as_a_stream_not_replaced(tmp_path):
    import threading

    from agents.files import is_stream

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, lambda fh: fh.write(b"records\n"), follow=True)
    reader.join(timeout=10)
    assert got == [b"records\n"] and stat.S_ISFIFO(fifo.stat().st_mode)  # still the pipe
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    assert is_stream(link) and is_stream("/dev/stdout") and is_stream("/dev/fd/1")
    assert not is_stream(tmp_path / "new.jsonl") and not is_stream("/dev/shm/run.pt") and not is_stream(tmp_path)
    assert not is_stream("/dev/stdot")  # a typo names no device: not written into /dev as a stream


def test_a_replaced_file_never_takes_setuid_or_sticky_bits(tmp_path):
    path = write_atomic(tmp_path / "f", lambda fh: fh.write(b"1"))
    path.chmod(0o4755 | stat.S_ISVTX)
    write_atomic(path, lambda fh: fh.write(b"2"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_the_temporary_file_is_named_as_the_name_check_expects_and_a_refusal_is_not_retried(tmp_path, monkeypatch):
    """The file is written beside its target as .NAME.XXXXXXXX.tmp (TEMP_NAME_EXTRA more bytes);
    a name clash takes another name, a refusal is raised at once (tempfile.mkstemp on Windows
    before Python 3.13 takes a refusal for a clash and tries names for hours)."""
    import errno
    import re

    import agents.files
    from agents.files import TEMP_NAME_EXTRA

    real_open = os.open
    tried: list[str] = []

    def clash_once(path, flags, *args):
        if not os.fspath(path).endswith(".tmp"):  # the folder, opened to sync the rename
            return real_open(path, flags, *args)
        tried.append(os.fspath(path))
        if len(tried) == 1:
            raise FileExistsError(errno.EEXIST, "File exists", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(agents.files.os, "open", clash_once)
    write_atomic(tmp_path / "eval.jsonl", lambda fh: fh.write(b"{}\n"))
    assert len(tried) == 2 and tried[0] != tried[1]
    for name in tried:
        assert re.fullmatch(r"\.eval\.jsonl\.[0-9a-f]{8}\.tmp", os.path.basename(name)), name
        assert len(os.path.basename(name)) == len("eval.jsonl") + TEMP_NAME_EXTRA
    assert (tmp_path / "eval.jsonl").read_bytes() == b"{}\n"

    tried.clear()

    def refused(path, flags, *args):
        tried.append(os.fspath(path))
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(agents.files.os, "open", refused)
    with pytest.raises(PermissionError, match="Permission denied"):
        write_atomic(tmp_path / "eval.jsonl", lambda fh: fh.write(b"new"))
    assert len(tried) == 1
    tried.clear()
    target = tmp_path / "eval.jsonl"
    monkeypatch.setattr(os, "name", "nt")  # where mkstemp takes a refusal for a clash and tries again
    with pytest.raises(PermissionError, match="Permission denied"):
        agents.files._new_file_beside(target)
    monkeypatch.undo()
    assert len(tried) == 1
    assert (tmp_path / "eval.jsonl").read_bytes() == b"{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.jsonl"]


def test_creation_refused_asks_the_folder_itself(tmp_path, monkeypatch):
    import errno

    import agents.files
    from agents.files import creation_refused

    assert creation_refused(tmp_path, "plot") is None
    assert not list(tmp_path.iterdir())  # the probe is gone again
    real_open = os.open
    seen: list[str] = []

    def read_only(path, *args, **kwargs):
        seen.append(os.path.basename(path))
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(agents.files.os, "open", read_only)
    assert creation_refused(tmp_path, "plot") == "Read-only file system"
    assert seen and seen[0].startswith(".nardy-plot-probe-")
    monkeypatch.setattr(agents.files.os, "open", real_open)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc")
def test_a_file_system_that_refuses_chmod_still_gets_the_file_and_no_open_file_is_left(tmp_path, monkeypatch):
    """vfat, exFAT and some network mounts refuse chmod: the file is written with the modes they
    give, and a write that fails closes its file all the same."""
    import errno

    import agents.files

    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(agents.files.os, "chmod", refused)
    before = len(os.listdir("/proc/self/fd"))
    for i in range(10):
        write_atomic(tmp_path / "eval.jsonl", lambda fh, i=i: fh.write(b"%d\n" % i))
    assert (tmp_path / "eval.jsonl").read_bytes() == b"9\n"

    def fail(fh):
        raise OSError(errno.EIO, "Input/output error")

    for _ in range(10):
        with pytest.raises(OSError, match="Input/output error"):
            write_atomic(tmp_path / "eval.jsonl", fail)
    assert len(os.listdir("/proc/self/fd")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.jsonl"]

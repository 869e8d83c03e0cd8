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


def test_a_checkpoint_torch_cannot_write_is_an_oserror_naming_the_file(tmp_path, monkeypatch):
    import errno

    import agents.td
    from agents.network import TDNetwork

    def cut_short(payload, fh):
        fh.write(b"PK")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 31040 vs 30932")

    monkeypatch.setattr(agents.td.torch, "save", cut_short)
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(OSError, match="writing failed .*unexpected pos.*is the disk full") as caught:
        agents.td.save_checkpoint(path, TDNetwork([8]))
    assert caught.value.errno == errno.EIO and caught.value.filename == str(path)
    assert not path.exists() and list(tmp_path.iterdir()) == []  # no half-written file

"""The rules core works wherever numba cannot keep its cache, or finds it damaged.

Each case compiles the core afresh in a subprocess (about 8 s each), so these are slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = """
import sys, warnings
from numba.core import caching
case = sys.argv[1]
# Public names from numba 0.62; before, the same classes were private (nardy supports numba >= 0.59).
LOCATORS = [getattr(caching, name, None) or getattr(caching, "_" + name)
            for name in ("InTreeCacheLocator", "UserWideCacheLocator")]
if case in ("read-only", "nowhere"):  # a read-only install, no writable home: no locator works
    for cls in LOCATORS:
        cls.from_function = classmethod(lambda cls, function, path: None)
if case == "nowhere":
    import tempfile
    tempfile.gettempdir = lambda: "/proc/nowhere"
if case == "no-temp-dir":  # a read-only root (a container), as tempfile itself says it
    for cls in LOCATORS:
        cls.from_function = classmethod(lambda cls, function, path: None)
    import tempfile
    def none_usable():
        raise FileNotFoundError(2, "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp']")
    tempfile.gettempdir = none_usable
if case == "disk-full":
    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")
    caching.IndexDataCacheFile.save = full
warnings.simplefilter("always")
import numpy as np
from nardy_env import initial_states, legal_afterstates
print(legal_afterstates(initial_states(2), np.array([[6, 5], [3, 3]])).counts().tolist())
from nardy_env.encoding import features, raw_positions  # compiled too, with the same cache
print("features", features(raw_positions(initial_states(1)))[0, [95, 98]].tolist())
from numba.core import config
print("CACHE_DIR", repr(config.CACHE_DIR))  # given back: other libraries' caches stay where they were
"""


def _run(case: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "case.py"
    script.write_text(SCRIPT)
    clean = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return subprocess.run([sys.executable, str(script), case], capture_output=True, text=True, timeout=300,
                          env={**clean, "TMPDIR": str(tmp_path), **env})


def test_without_a_writable_cache_location_the_cache_goes_to_the_temp_folder_and_survives_damage(tmp_path):
    out = _run("read-only", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "[1, 2]"
    folder = next(tmp_path.glob("nardy-numba-cache-*"))
    assert f"the compiled rules core is kept in {folder}" in out.stderr
    assert out.stdout.splitlines()[1:] == ["features [6.0, 1.0]", "CACHE_DIR ''"]
    assert out.stderr.count("is kept in") == 1  # the encoding's compiled code is kept there too, unsaid
    indexes = list(folder.rglob("*.nbi"))
    assert indexes  # the cache was written there
    for index in indexes:  # damaged: cut short
        index.write_bytes(index.read_bytes()[:10])
    out = _run("read-only", tmp_path)
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "[1, 2]", out.stderr
    assert "could not be read from or written to numba's cache" in out.stderr and "Delete " in out.stderr
    assert "is kept in" not in out.stderr  # said once, when the folder was made


def test_with_nowhere_to_write_the_core_is_compiled_without_a_cache(tmp_path):
    out = _run("nowhere", tmp_path)
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert out.stderr.count("compiled in every process") == 1
    assert "set NUMBA_CACHE_DIR to a writable folder" in out.stderr


def test_with_no_usable_temp_folder_at_all_the_core_is_compiled_without_a_cache(tmp_path):
    out = _run("no-temp-dir", tmp_path)
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert out.stderr.count("compiled in every process") == 1 and "No usable temporary directory" in out.stderr


def test_an_unwritable_numba_cache_dir_is_named_in_the_warning(tmp_path):
    out = _run("read-only", tmp_path, NUMBA_CACHE_DIR="/proc/nowhere")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "[1, 2]", out.stderr
    assert "cannot write its cache in NUMBA_CACHE_DIR (/proc/nowhere), beside nardy_env" in out.stderr
    assert "make NUMBA_CACHE_DIR writable to keep it there" in out.stderr


def test_a_full_disk_under_the_cache_does_not_stop_the_core(tmp_path):
    out = _run("disk-full", tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert "OSError: [Errno 28] No space left on device" in out.stderr and "compiling without it" in out.stderr


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_temp_cache_folder_others_may_write_is_not_used(tmp_path):
    # numba unpickles its cache: a folder planted by another user (or open to all) could run code.
    uid = os.getuid()
    planted = tmp_path / f"nardy-numba-cache-{uid}"
    planted.mkdir()
    planted.chmod(0o777)
    out = _run("read-only", tmp_path)
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "[1, 2]", out.stderr
    assert "may be written by other users" in out.stderr and "compiled in every process" in out.stderr
    assert not list(planted.iterdir())  # nothing cached there, nothing read from there


def test_on_windows_a_folders_mode_bits_do_not_make_it_shared(tmp_path, monkeypatch):
    """Windows reports every folder as 0o777 whatever its access rules: there the temp cache
    folder (the user's own temp) is not refused for them (it would be, in every process)."""
    from nardy_env import _runtime

    open_to_all = tmp_path / "cache"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    assert _runtime._not_private(str(open_to_all)) == "may be written by other users"
    monkeypatch.setattr(_runtime, "_WINDOWS", True)
    assert _runtime._not_private(str(open_to_all)) is None
    (tmp_path / "file").write_text("x")
    assert _runtime._not_private(str(tmp_path / "file")) == "is not a folder (a link?)"


def test_a_numba_whose_cache_internals_moved_gets_the_cache_error_back_with_the_advice(monkeypatch):
    """without_numba_cache reaches into numba's internals (NullCache): if a numba moves them, the
    user is told what failed and which folder to delete, not shown an ImportError of nardy's."""
    import sys
    import warnings

    from nardy_env._runtime import without_numba_cache

    monkeypatch.setitem(sys.modules, "numba.core.caching", None)  # import of it fails
    damaged = ValueError("unsupported pickle protocol: 9")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning that it went on without the cache
        with pytest.raises(RuntimeError, match=r"unsupported pickle protocol: 9.*delete /some/cache and run the command again") as err:
            without_numba_cache(damaged, [], "/some/cache")
    assert err.value.__cause__ is damaged

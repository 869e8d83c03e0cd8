"""The rules core works wherever numba cannot keep its cache, or finds it damaged.

Each case compiles the core afresh in a subprocess (about 8 s each), so these are slow; they run
two at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
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


def _run_then_damage_and_run_again(tmp_path: Path) -> tuple:
    first = _run("read-only", tmp_path)
    folders = list(tmp_path.glob("nardy-numba-cache-*"))
    indexes = list(folders[0].rglob("*.nbi")) if folders else []
    for index in indexes:  # damaged: cut short
        index.write_bytes(index.read_bytes()[:10])
    return first, folders, indexes, _run("read-only", tmp_path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case's process, started together and run two at a time (each compiles the core afresh,
    some 8 s of one core): the tests below wait for their own. Selecting one test still runs all."""
    def folder(name: str) -> Path:
        return tmp_path_factory.mktemp(name)

    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        jobs = {
            "damaged": pool.submit(_run_then_damage_and_run_again, folder("damaged")),
            "nowhere": pool.submit(_run, "nowhere", folder("nowhere")),
            "no-temp-dir": pool.submit(_run, "no-temp-dir", folder("no-temp-dir")),
            "unwritable": pool.submit(_run, "read-only", folder("unwritable"), NUMBA_CACHE_DIR="/proc/nowhere"),
        }
        full = folder("disk-full")
        jobs["disk-full"] = pool.submit(_run, "disk-full", full, NUMBA_CACHE_DIR=str(full / "cache"))
        if hasattr(os, "getuid"):
            # numba unpickles its cache: a folder planted by another user (or open to all) could run code.
            planted = folder("planted") / f"nardy-numba-cache-{os.getuid()}"
            planted.mkdir()
            planted.chmod(0o777)
            jobs["planted"] = pool.submit(lambda: (_run("read-only", planted.parent), planted))
        yield jobs


def test_without_a_writable_cache_location_the_cache_goes_to_the_temp_folder_and_survives_damage(runs):
    out, folders, indexes, again = runs["damaged"].result()
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "[1, 2]"
    assert len(folders) == 1
    assert f"the compiled rules core is kept in {folders[0]}" in out.stderr
    assert out.stdout.splitlines()[1:] == ["features [6.0, 1.0]", "CACHE_DIR ''"]
    assert out.stderr.count("is kept in") == 1  # the encoding's compiled code is kept there too, unsaid
    assert indexes  # the cache was written there, then damaged
    out = again
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "[1, 2]", out.stderr
    assert "could not be read from or written to numba's cache" in out.stderr and "Delete " in out.stderr
    assert "is kept in" not in out.stderr  # said once, when the folder was made


def test_with_nowhere_to_write_the_core_is_compiled_without_a_cache(runs):
    out = runs["nowhere"].result()
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert out.stderr.count("compiled in every process") == 1
    assert "set NUMBA_CACHE_DIR to a writable folder" in out.stderr


def test_with_no_usable_temp_folder_at_all_the_core_is_compiled_without_a_cache(runs):
    out = runs["no-temp-dir"].result()
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert out.stderr.count("compiled in every process") == 1 and "No usable temporary directory" in out.stderr


def test_an_unwritable_numba_cache_dir_is_named_in_the_warning(runs):
    out = runs["unwritable"].result()
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "[1, 2]", out.stderr
    assert "cannot write its cache in NUMBA_CACHE_DIR (/proc/nowhere), beside nardy_env" in out.stderr
    assert "make NUMBA_CACHE_DIR writable to keep it there" in out.stderr


def test_a_full_disk_under_the_cache_does_not_stop_the_core(runs):
    out = runs["disk-full"].result()
    assert out.returncode == 0 and out.stdout.splitlines()[:2] == ["[1, 2]", "features [6.0, 1.0]"], out.stderr
    assert "OSError: [Errno 28] No space left on device" in out.stderr and "compiling without it" in out.stderr


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_temp_cache_folder_others_may_write_is_not_used(runs):
    out, planted = runs["planted"].result()
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


def test_a_damaged_cache_of_the_feature_encoding_is_named_as_such(monkeypatch):
    """The warning once said "the compiled rules core" for the encoding's cache file too."""
    import numpy as np

    from nardy_env import NumbaCacheWarning, encoding, initial_states
    from nardy_env.encoding import raw_positions

    compiled, calls = encoding._encode, []

    def damaged_once(flat):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("unsupported pickle protocol: 9")
        return compiled(flat)

    monkeypatch.setattr(encoding, "_encode", damaged_once)
    monkeypatch.setattr(encoding, "from_numba_cache", lambda exc: True)
    raw = raw_positions(initial_states(2))
    with pytest.warns(NumbaCacheWarning, match=r"^the compiled feature encoding could not be read from or "
                                               r"written to numba's cache \(ValueError: unsupported pickle"):
        got = encoding.features(raw)
    assert len(calls) == 2 and np.array_equal(got, compiled(raw)[0].reshape(got.shape))

"""What a wheel holds: installed without the checkout, nardy finds its shipped player and configs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_shipped_config_goes_by_its_name_and_a_file_of_that_name_comes_first(tmp_path, monkeypatch):
    from train.config import ConfigError, config_file, load_config, shipped_config_names

    monkeypatch.chdir(tmp_path)
    assert shipped_config_names() == ["default", "quick", "smoke"]
    assert config_file("quick") == ROOT / "configs" / "quick.yaml"
    assert load_config("quick") == load_config(ROOT / "configs" / "quick.yaml")
    (tmp_path / "quick").write_text("name: mine\ntotal_games: 64\n")
    assert load_config("quick").name == "mine"  # the user's own file named quick
    (tmp_path / "quick").unlink()
    (tmp_path / "quick").mkdir()  # a folder is no config: the shipped one is read
    assert load_config("quick") == load_config(ROOT / "configs" / "quick.yaml")
    for wrong in ("quik", "quick.yaml", "configs/quick"):  # only a bare name is looked up
        with pytest.raises(ConfigError, match=r"no config file at .*the shipped configs go by name: default, "
                                              r"quick, smoke"):
            load_config(wrong)


@pytest.mark.slow
def test_the_wheel_ships_the_default_player_and_the_configs(tmp_path):
    """Built from this checkout and installed elsewhere: `default` and `--config quick` work there."""
    if not (ROOT / "checkpoints" / "default" / "policy.onnx").is_file():
        pytest.skip("needs checkpoints/default (a clone of the repository)")
    # From a copy: a build in the checkout would write build/ there, and a build/lib left by an
    # earlier one would hand its files to this wheel whatever setup.py does now.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "*.nbi", "*.nbc", ".*_cache", ".hypothesis", "runs",
        "tests", "docs"))
    (source / "configs" / "stale.yaml").write_text("name: stale\n")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(tmp_path / "first"), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (source / "configs" / "stale.yaml").unlink()  # gone from configs/: gone from the next wheel, build/ or not
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(tmp_path / "dist"), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("nardy-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("policy.onnx", "policy.json", "checkpoint.pt", "config.json"):
        assert f"agents/shipped/{name}" in names
    assert {n for n in names if n.startswith("train/configs/")} == {
        "train/configs/smoke.yaml", "train/configs/quick.yaml", "train/configs/default.yaml"}
    assert not any(n.startswith(("tests/", "checkpoints/", "configs/")) or "__pycache__" in n for n in names)
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                                str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    probe = """
import json, agents, train
from agents.registry import SHIPPED_PLAYER
from nardy_env.players import load_player
from train.config import load_config
from train.hint import rank_plays
import nardy_env
player = load_player("default")
print(json.dumps({"agents": agents.__file__, "shipped": str(SHIPPED_PLAYER), "name": player.name,
                  "config": load_config("quick").name,
                  "best": rank_plays(player, nardy_env.START_NPN, [6, 5])[0]["result"]}))
"""
    (site / "configs").mkdir()  # another distribution's top-level configs/ beside nardy's packages
    (site / "configs" / "default.yaml").write_text("foo: 1\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["agents"].startswith(str(site)) and got["shipped"] == str(site / "agents" / "shipped")
    assert got["name"] == "default" and got["config"] == "quick"
    from nardy_env import START_NPN
    from nardy_env.players import load_player
    from train.hint import rank_plays

    assert got["best"] == rank_plays(load_player("default"), START_NPN, [6, 5])[0]["result"]  # the same player

"""Packaging beyond pyproject.toml: the shipped player and the configs go into the wheel.

A clone runs them from ``checkpoints/default`` and ``configs/``; an installed package has neither
folder, so ``build_py`` copies them in as package data (``agents/shipped/``, ``train/configs/``),
where ``agents.registry.SHIPPED_PLAYER`` and ``train.config`` find them. An editable install
reads them from the checkout and copies nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("policy.onnx", "policy.json", "checkpoint.pt", "config.json", "eval.jsonl", "README.md")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        into = Path(self.build_lib)
        for name in SHIPPED:
            self._copy(ROOT / "checkpoints" / "default" / name, into / "agents" / "shipped" / name)
        for config in sorted((ROOT / "configs").glob("*.yaml")):
            self._copy(config, into / "train" / "configs" / config.name)

    def _copy(self, source: Path, target: Path) -> None:
        if not source.is_file():
            raise FileNotFoundError(f"{source} is missing: the wheel ships it (checkpoints/default, configs/)")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


setup(cmdclass={"build_py": BuildPyWithData})

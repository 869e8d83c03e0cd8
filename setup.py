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
NEEDED = ("policy.onnx", "policy.json", "checkpoint.pt", "config.json")  # what plays and exports it
BESIDE = ("README.md", "eval.jsonl", "strength.json", "training_curve.png")  # its record, where present
CONFIGS = ("smoke.yaml", "quick.yaml", "default.yaml")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        shipped = ROOT / "checkpoints" / "default"
        pairs = [(shipped / name, Path("agents", "shipped", name)) for name in NEEDED]
        pairs += [(shipped / name, Path("agents", "shipped", name)) for name in BESIDE if (shipped / name).is_file()]
        pairs += [(config, Path("train", "configs", config.name)) for config in sorted((ROOT / "configs").glob("*.yaml"))]
        missing = [str(source) for source in [*(shipped / n for n in NEEDED), *(ROOT / "configs" / n for n in CONFIGS)]
                   if not source.is_file()]
        if missing:
            raise FileNotFoundError(f"{', '.join(missing)} missing: the wheel ships the player and the configs")
        into = Path(self.build_lib)
        for folder in ("agents/shipped", "train/configs"):  # nothing left from an earlier build
            shutil.rmtree(into / folder, ignore_errors=True)
        self._data_outputs = []
        for source, target in pairs:
            (into / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into / target)
            self._data_outputs.append(str(into / target))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *getattr(self, "_data_outputs", [])]


setup(cmdclass={"build_py": BuildPyWithData})

"""The modules of ``FILE.py:NAME`` players, findable again in any process.

``load_player("path/to/mine.py:agent")`` runs the file as a module of its own.
Its name spells the file's absolute path (``_nardy_player_`` and the path's
bytes in hex), so that the name is the same in every process, and a finder at
the end of ``sys.meta_path`` (installed by ``import nardy_env``) runs the file
again when a process that does not have the module yet meets the name: a
player, a function or a class from the file then pickles into a spawned or
forkserver worker (Gymnasium's ``AsyncVectorEnv``, Stable-Baselines3's
``SubprocVecEnv``) like one of nardy's own. The finder answers only for those
names, and only with a ``.py`` file that exists; unpickling runs code anyway.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

PREFIX = "_nardy_player_"


def module_name(path: str) -> str:
    """The module name of the player file at absolute ``path``."""
    return PREFIX + os.fsencode(path).hex()


def module_path(name: str) -> str | None:
    """The file a ``module_name`` spells, or None for another name."""
    if not name.startswith(PREFIX) or "." in name:
        return None
    try:
        return os.fsdecode(bytes.fromhex(name[len(PREFIX):]))
    except ValueError:
        return None


class PlayerFileLoader(importlib.machinery.SourceFileLoader):
    """Runs a player's file as Python runs a script: modules beside it can be imported (its
    folder leads sys.path while it runs). Those it imports are then forgotten again, so two
    player files with a helpers.py each get their own, and nothing beside a file shadows another
    module later (a train.py beside it would replace nardy's in a match's worker processes)."""

    def exec_module(self, module: ModuleType) -> None:
        folder = os.path.dirname(self.path)
        before = set(sys.modules)
        sys.path.insert(0, folder)
        try:
            super().exec_module(module)
        finally:
            sys.path.remove(folder)
            for name in set(sys.modules) - before - {module.__name__}:
                file = getattr(sys.modules[name], "__file__", None) or ""
                if os.path.dirname(os.path.abspath(file)) == folder or file.startswith(folder + os.sep):
                    del sys.modules[name]


def module_spec(name: str, path: str) -> importlib.machinery.ModuleSpec:
    spec = importlib.util.spec_from_file_location(name, path, loader=PlayerFileLoader(name, path))
    assert spec is not None
    return spec


class PlayerFileFinder:
    """Finds the module of a player file by its name (see the module's docstring)."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        file = module_path(name)
        if file is None or not (os.path.isabs(file) and file.endswith(".py") and os.path.isfile(file)):
            return None
        return module_spec(name, file)


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if PlayerFileFinder not in sys.meta_path:
        sys.meta_path.append(PlayerFileFinder)  # type: ignore[arg-type]

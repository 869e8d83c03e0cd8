"""nardy_env: the Long Nardy rules core, notation, encodings and environments.

numpy, numba and gymnasium only; never torch or Ray.

Importing it registers ``LongNardy-v0`` with Gymnasium (``nardy_env.envs``). The rules core's
names are in docs/rules.md ("The core's names at a glance"), the environments in
docs/environments.md.
"""

from . import _player_files
from ._runtime import NardyWarning, NumbaCacheWarning, RulesMismatchWarning
from .core import (
    HEAD,
    HEAD_INDEX,
    HOME_SIZE,
    MAX_DICE_MOVES,
    MAX_RESULTS,
    NUM_CHECKERS,
    NUM_POINTS,
    OFF_MOVER,
    OFF_OPPONENT,
    STATE_SIZE,
    Afterstates,
    StateError,
    flip,
    initial_states,
    legal_afterstates,
    legal_continuations,
    outcome,
    pip_counts,
    turn_head_limit,
    validate_states,
)
from .notation import START_NPN, Color, NPNError, format_npn, parse_npn, to_common_point
from .rules import DEFAULT_RULES, Rules, RulesError


def _distribution_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nardy")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: The installed ``nardy`` distribution's version (``nardy --version`` prints it).
__version__ = _distribution_version()

__all__ = [
    "__version__",
    "HEAD", "HEAD_INDEX", "HOME_SIZE", "MAX_DICE_MOVES", "MAX_RESULTS", "NUM_CHECKERS",
    "NUM_POINTS", "OFF_MOVER", "OFF_OPPONENT", "STATE_SIZE", "Afterstates", "StateError",
    "flip", "initial_states", "legal_afterstates", "legal_continuations", "turn_head_limit", "outcome", "pip_counts", "validate_states",
    "START_NPN", "Color", "NPNError", "format_npn", "parse_npn", "to_common_point",
    "DEFAULT_RULES", "Rules", "RulesError",
    "NardyWarning", "RulesMismatchWarning", "NumbaCacheWarning",
]


def _register() -> None:
    """Register ``LongNardy-v0`` with Gymnasium (single and native vector entry points)."""
    from gymnasium.envs.registration import register, registry

    if "LongNardy-v0" not in registry:
        register(
            id="LongNardy-v0",
            entry_point="nardy_env.envs.long_nardy:LongNardyEnv",
            vector_entry_point="nardy_env.envs.vector:LongNardyVectorEnv",
        )


_register()
_player_files.install()  # FILE.py:NAME players unpickle in spawned processes

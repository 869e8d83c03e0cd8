"""Gymnasium environments of Long Nardy: ``LongNardy-v0``, its native vector env, checker-level play.

See ``docs/environments.md``. ``gymnasium.make("LongNardy-v0")`` and
``gymnasium.make_vec("LongNardy-v0", num_envs=N)`` find them once ``nardy_env``
is imported.
"""

from .checker import NUM_CHECKER_ACTIONS, PASS_ACTION, checker_action, checker_move
from .games import Action, ActionMode, IllegalActionError, ObsMode
from .long_nardy import GameOverError, LongNardyEnv
from .policy import CheckerPolicy
from .vector import LongNardyVectorEnv, split_afterstates
from .wrappers import AnyActionLegal, VectorAnyActionLegal

__all__ = [
    "LongNardyEnv",
    "LongNardyVectorEnv",
    "IllegalActionError",
    "GameOverError",
    "AnyActionLegal",
    "VectorAnyActionLegal",
    "split_afterstates",
    "CheckerPolicy",
    "NUM_CHECKER_ACTIONS",
    "PASS_ACTION",
    "checker_action",
    "checker_move",
    "Action",
    "ActionMode",
    "ObsMode",
]

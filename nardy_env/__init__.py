"""nardy_env: the Long Nardy game: rules core, notation and encodings (numpy only)."""

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
    validate_states,
)
from .notation import START_NPN, Color, NPNError, format_npn, parse_npn, to_common_point
from .rules import DEFAULT_RULES, Rules, RulesError

__all__ = [
    "HEAD", "HEAD_INDEX", "HOME_SIZE", "MAX_DICE_MOVES", "MAX_RESULTS", "NUM_CHECKERS",
    "NUM_POINTS", "OFF_MOVER", "OFF_OPPONENT", "STATE_SIZE", "Afterstates", "StateError",
    "flip", "initial_states", "legal_afterstates", "legal_continuations", "outcome", "pip_counts", "validate_states",
    "START_NPN", "Color", "NPNError", "format_npn", "parse_npn", "to_common_point",
    "DEFAULT_RULES", "Rules", "RulesError",
]

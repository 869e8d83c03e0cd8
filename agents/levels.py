"""Weaker players for difficulty levels: a network player that samples its plays.

A game needs bots a beginner can beat. ``Sampling`` keeps a network player's judgement but
picks among a roll's plays at random, the better ones more often: each play with probability
proportional to ``exp(equity / temperature)``. At temperature 0 it is the player itself; the
higher the temperature, the more it strays from the best play, and the weaker it plays, by
degrees the ladder in docs/agents.md measures (``LEVELS`` names four of them). It draws from
the game's generator, so a seeded match or ``nardy play --seed`` replays it exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nardy_env import Afterstates
from nardy_env.notation import results_rank
from nardy_env.players import PlayerSpec, check_batch, load_player, player_name

from .common import segment_argmax

__all__ = ["Sampling", "LEVELS", "level"]

LEVELS = {"easy": 0.5, "medium": 0.2, "hard": 0.05, "expert": 0.0}
"""Temperatures of four difficulty levels of the shipped player (docs/agents.md measures them:
``easy`` between ``random`` and ``race``, ``medium`` about ``race``, ``hard`` between
``heuristic`` and the shipped player, ``expert`` the shipped player itself)."""


class Sampling:
    """``player`` (a network player: a name such as ``"default"`` or ``"runs/quick"``, or a
    ``SearchPlayer``), choosing each play at random with probability proportional to
    ``exp(equity / temperature)`` over the plays of its roll; ``temperature`` 0 plays as
    ``player`` does. Equities are in points (-2..+2): at 0.05 a play 0.1 points worse is
    e^2 = 7.4 times less likely than the best, at 0.5 only 1.2 times.
    """

    def __init__(self, player: PlayerSpec = "default", temperature: float = 0.1, name: str | None = None) -> None:
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) \
                or not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be a finite number, 0 or more (points of equity), got {temperature!r}")
        self.player: Any = load_player(player) if isinstance(player, str) else player
        if not callable(getattr(self.player, "evaluate", None)):
            raise TypeError(f"Sampling needs a network player, which values every play in points "
                            f"(a SearchPlayer, or a name such as 'default'), not {player_name(self.player, type(self.player).__name__)}: "
                            "a bot's scores are no equities")
        self.temperature = float(temperature)
        self.name = name or f"{player_name(self.player)} T={self.temperature:g}"

    def __repr__(self) -> str:
        return f"Sampling({self.player!r}, temperature={self.temperature:g}, name={self.name!r})"

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator,
               colors: np.ndarray | None = None) -> np.ndarray:
        """One play per position (``Player``): sampled by equity, or at temperature 0 the best, exact
        ties going by ``colors`` as FORMATS.md says."""
        check_batch(states, found)
        ties = None if colors is None else results_rank(found.states, colors, found.offsets)
        values = np.asarray(self.player.evaluate(found, ties), dtype=np.float64)
        if self.temperature == 0:
            return segment_argmax(values, found.offsets, ties)
        # Gumbel-max: the argmax of value / T plus independent Gumbel noise is a draw from the
        # softmax of value / T, one draw per position, in one pass over the flat list.
        return segment_argmax(values / self.temperature + rng.gumbel(size=values.shape), found.offsets)


def level(name: str, player: PlayerSpec = "default") -> Sampling:
    """The difficulty level ``name`` of ``LEVELS`` (``easy``, ``medium``, ``hard``, ``expert``), of
    the shipped player or another network ``player``."""
    if name not in LEVELS:
        raise ValueError(f"no level named {name!r}; the levels are {', '.join(LEVELS)}")
    return Sampling(player, LEVELS[name], name=name)

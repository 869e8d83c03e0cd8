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
import os
from typing import Any

import numpy as np

from nardy_env import Afterstates, Rules
from nardy_env.notation import results_rank
from nardy_env.players import PlayerSpec, check_batch, load_player, player_name
from nardy_env.rules import RulesLike

from .common import segment_argmax, segment_max

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
    e^2 = 7.4 times less likely than the best, at 0.5 only 1.2 times. A player that searches
    (``default@1``) draws among the plays its move filter searched (the best ``filter_k``, 5, by
    0-ply), so its levels are stronger than the 0-ply player's. A named player is loaded under
    ``rules`` (default: those it was trained under); the game's rules are checked against its
    own as for the player itself.
    """

    runs_your_code = True  # its failures are its network's or evaluator's (PlayerFailed.of)

    def __init__(self, player: PlayerSpec = "default", temperature: float = 0.1, name: str | None = None,
                 rules: RulesLike | None = None) -> None:
        if isinstance(temperature, bool | np.bool_) or not isinstance(temperature, int | float | np.integer | np.floating) \
                or not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be a finite number, 0 or more (points of equity), got {temperature!r}")
        temperature = float(temperature)
        self.player: Any = load_player(player, rules) if isinstance(player, str | os.PathLike) else player
        if isinstance(self.player, Sampling):  # a level of a level: the network it samples
            self.player = self.player.player
        if not callable(getattr(self.player, "evaluate", None)):
            raise TypeError(f"Sampling needs a network player, which values every play in points "
                            f"(a SearchPlayer, or a name such as 'default'), not {player_name(self.player, type(self.player).__name__)}: "
                            "a bot's scores are no equities")
        self.temperature = float(temperature)
        self.name = name or f"{player_name(self.player)} T={self.temperature:g}"

    # What load_player checks against the game's rules, as for the player itself.
    @property
    def rules(self) -> Rules | None:
        """The rules the sampled player searches under."""
        return getattr(self.player, "rules", None)

    @property
    def trained_under(self) -> Rules | None:
        """The rules the sampled network was trained under, when known."""
        return getattr(self.player, "trained_under", None)

    @property
    def ply(self) -> int:
        """The sampled player's search depth."""
        return int(getattr(self.player, "ply", 0))

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
        # softmax of value / T, one draw per position, in one pass over the flat list. Each value
        # is taken from its position's best first, so that no temperature overflows: the best is 0.
        best = np.repeat(segment_max(values, found.offsets), np.diff(found.offsets))
        with np.errstate(over="ignore"):  # a tiny temperature: the others -inf, never drawn, as in the limit
            scaled = (values - best) / self.temperature
        return segment_argmax(scaled + rng.gumbel(size=values.shape), found.offsets)


def level(name: str, player: PlayerSpec = "default", rules: RulesLike | None = None) -> Sampling:
    """The difficulty level ``name`` of ``LEVELS`` (``easy``, ``medium``, ``hard``, ``expert``), of
    the shipped player or another network ``player`` (loaded under ``rules``, as ``Sampling``)."""
    if name not in LEVELS:
        raise ValueError(f"no level named {name!r}; the levels are {', '.join(LEVELS)}")
    return Sampling(player, LEVELS[name], name=name, rules=rules)

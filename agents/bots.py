"""Baseline bots: hand-written evaluations of afterstates, from weak to strong.

Each bot scores every candidate afterstate from the mover's view and plays the
best; exact ties (frequent: every play of a roll removes the same pips) go to
the earliest afterstate in the core's order, which is the mover's view and so
the same for both colours. (FORMATS.md's sorted results, which the network
players' rare ties follow, are spelt in white's numbering: a bot breaking its
many ties by them plays differently as white and as black; the racer lost
about half a point a game more as black.) They are deterministic: the same
position and roll always get the same play.

- ``random`` (built into ``nardy_env.players``): uniform over the afterstates.
- ``race``: a pure racer. It values progress (fewer pips), checkers borne off,
  and few tall stacks; it ignores the opponent.
- ``heuristic``: the strongest hand-written player here. On top of the race
  terms it values blocks (runs of held points) standing in front of opponent
  checkers, holding points in the opponent's path, taking checkers off the
  head in time, spreading over several points instead of stacking, and, once
  the opponent is close to finishing, getting home to avoid mars.
"""

from __future__ import annotations

import numpy as np

from nardy_env import Afterstates
from nardy_env.core import NUM_CHECKERS, NUM_POINTS
from nardy_env.encoding import raw_positions
from nardy_env.players import check_batch

from .common import checked_raw, segment_argmax

__all__ = ["RaceBot", "HeuristicBot", "race_values", "heuristic_values", "BOTS"]

_PERSONAL = np.arange(1, NUM_POINTS + 1, dtype=np.float32)


def _pips(counts: np.ndarray) -> np.ndarray:
    return counts @ _PERSONAL


def race_values(raw: np.ndarray) -> np.ndarray:
    """The racer's value of afterstates in the raw layout ``[N, 50]`` (higher is better for me)."""
    raw = checked_raw(raw)  # float32: uint8 counts would wrap below zero in the sums below
    me = raw[:, :NUM_POINTS]
    stacks = np.maximum(me[:, :NUM_POINTS - 1] - 3, 0).sum(axis=1)  # the head is not a stack
    return -_pips(me) + 2.0 * raw[:, 48] - 1.5 * stacks


_RUN_WEIGHT = np.array([0, 0, 1, 2.5, 5, 9, 14], dtype=np.float32)


def _runs_in_front(held: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blocking value of ``held`` points against the ``other`` side's checkers.

    Both arrays are indexed along the other side's route (index = its personal
    point - 1, so lower indices are further along). A run of held points only
    hinders the other side's checkers behind it (at higher indices). Returns
    (weighted blocking score, longest run with checkers behind it).
    """
    n = held.shape[0]
    rows = np.arange(n)
    # behind_from[:, k]: the other side's checkers at index >= k.
    behind_from = np.zeros((n, NUM_POINTS + 1), dtype=np.float32)
    behind_from[:, :NUM_POINTS] = np.cumsum(other[:, ::-1], axis=1)[:, ::-1]
    score = np.zeros(n, dtype=np.float32)
    longest = np.zeros(n, dtype=np.float32)
    run = np.zeros(n, dtype=np.int64)
    for k in range(NUM_POINTS - 1, -1, -1):  # from the back of the route to the front
        run = (run + 1) * (held[:, k] > 0)
        front = held[:, k - 1] == 0 if k > 0 else np.ones(n, dtype=bool)
        ended = (run > 0) & front  # k is the front end of a run of length `run`
        behind = behind_from[rows, np.minimum(k + run, NUM_POINTS)]
        score += np.where(ended, _RUN_WEIGHT[np.minimum(run, 6)] * np.minimum(behind, 8) / 8, 0)
        longest = np.maximum(longest, np.where(ended & (behind > 0), run, 0))
    return score, longest


def heuristic_values(raw: np.ndarray) -> np.ndarray:
    """The heuristic bot's value of afterstates in the raw layout ``[N, 50]`` (higher is better for me)."""
    raw = checked_raw(raw)  # float32: uint8 counts would wrap below zero in the sums below
    me = raw[:, :NUM_POINTS]
    opp = raw[:, NUM_POINTS:2 * NUM_POINTS]
    my_off, opp_off = raw[:, 48], raw[:, 49]
    my_pips, opp_pips = _pips(me), _pips(opp)

    # My points and the opponent's checkers along the opponent's route, and vice versa.
    my_held_opp_route = np.roll(me > 0, -12, axis=1).astype(np.float32)
    opp_held_my_route = np.roll(opp > 0, -12, axis=1).astype(np.float32)
    my_block, my_longest = _runs_in_front(my_held_opp_route, opp)
    opp_block, _ = _runs_in_front(opp_held_my_route, me)

    head = me[:, NUM_POINTS - 1]
    stacks = np.maximum(me[:, :NUM_POINTS - 1] - 3, 0).sum(axis=1)
    points_held = (me[:, :NUM_POINTS - 1] > 0).sum(axis=1)
    # Points in the opponent's path before its home: my personal 13..23 is its
    # 1..11... its outfield is my personal 1..12 (its 13..24): holding those
    # early is what blocks it.
    path_points = (me[:, 0:12] > 0).sum(axis=1)
    home_checkers = me[:, :6].sum(axis=1)

    # Game phase: 0 at the start, 1 when the race is nearly over.
    progress = np.clip(1 - (my_pips + opp_pips) / 720, 0, 1)
    # My blocks weighed 6 until 2026-12-05: an audit found them behind nine in ten of the bot's
    # large errors (holding runs, in the opponent's home above all, instead of coming home); at 1
    # the bot beats the weight-6 one by +0.25 points a game and gains against race and the shipped
    # player too (paired dice, 2,000 games each; at 0 it loses more to race).
    value = (
        -1.0 * my_pips
        + 3.0 * my_off
        + 1.0 * my_block
        - 5.0 * opp_block
        + 4.0 * np.where(my_longest >= 6, 1, 0)
        - (2.0 + 10.0 * progress) * np.maximum(head - 1, 0)
        - 2.0 * stacks
        + 1.5 * points_held * (1 - progress)
        + 1.0 * path_points * (1 - progress)
    )
    # Mars danger: the opponent is bearing off. With nothing off yet I hurry home; a checker off
    # escapes the mars and is worth the most this term gives (4 a checker home, 15 home, with
    # nothing left to travel): else the first checker borne off would lose the hurry's bonus and
    # the bot would rather shuffle inside home than save the game.
    hurry = np.where(my_off == 0, 4.0 * home_checkers - 1.0 * my_pips, 4.0 * NUM_CHECKERS)
    value = value + np.where(opp_off >= 8, hurry, 0)
    value = value + np.where(my_off >= NUM_CHECKERS, 1e6, 0)
    return value.astype(np.float64)


VALUE_ROWS = 65536
"""Afterstates a hand-written bot scores at a time."""


class _ValueBot:
    name = "value-bot"
    version = 1  # raised whenever the bot's play changes: match results record it (player_a_bot_version)

    @staticmethod
    def values(raw: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator,
               colors: np.ndarray | None = None) -> np.ndarray:
        """The afterstate of highest score for each position (``Player``); ties to the earliest in the
        core's order, whatever the colours."""
        check_batch(states, found)
        # Ties to the core's (mover's-view) order whatever the colours: see the module's docstring.
        return segment_argmax(self.equities(found), found.offsets)

    def equities(self, found: Afterstates) -> np.ndarray:
        """The bot's own scores of every afterstate (not game points), ``VALUE_ROWS`` at a time."""
        rows = found.states.shape[0]
        if rows <= VALUE_ROWS:
            return self.values(raw_positions(found.states))
        # A vector env of 16,384 games hands over some 1.5 million afterstates: scored whole, their
        # raw layout and the scores' intermediates took over a GB (each row is scored on its own).
        return np.concatenate([self.values(raw_positions(found.states[start:start + VALUE_ROWS]))
                               for start in range(0, rows, VALUE_ROWS)])


class RaceBot(_ValueBot):
    """Pure racer: fewer pips, more borne off, few stacks."""

    name = "race"
    version = 1
    values = staticmethod(race_values)


class HeuristicBot(_ValueBot):
    """Blocks, head timing, spreading, racing and mars avoidance, by hand."""

    name = "heuristic"
    version = 2  # 2 since 2026-12-05: bears off to escape a mars; its own blocks weigh 1, not 6
    values = staticmethod(heuristic_values)


BOTS = {"race": RaceBot, "heuristic": HeuristicBot}
"""The hand-written bots by name (``random`` is ``nardy_env.players.RandomPlayer``)."""

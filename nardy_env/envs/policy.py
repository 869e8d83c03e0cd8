"""A checker-mode policy as a player: what an agent trained in the env plays everywhere else.

An agent trained with ``action_mode="checker"`` maps an observation and its
action mask to one checker move. ``CheckerPolicy`` turns such a function into
a player (``nardy_env.players.Player``): for each position it asks the policy
move by move, with exactly the observations and masks the checker env would
give it, until the turn is complete, and answers with the afterstate reached.
So the agent can be measured with paired dice (``train.evaluate``, ``nardy
eval FILE.py:NAME``), play in ``nardy play``, and be the env's ``opponent=``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import HEAD_INDEX, NUM_CHECKERS, Afterstates
from ..players import _accepts, check_batch
from ..rules import DEFAULT_RULES, RulesLike, as_rules
from .checker import (
    NUM_CHECKER_ACTIONS,
    TurnTargets,
    checker_options,
    dice_left,
    play_checker_moves,
    turn_need,
)
from .games import OBS_MODES, ObsMode, observe

__all__ = ["CheckerPolicy"]


class CheckerPolicy:
    """A function ``policy(observations, masks) -> actions`` over checker-mode actions, as a player.

    ``observations``: float32 ``[B, obs_size]`` in the env's ``obs_mode`` layout
    (docs/environments.md), from the mover's view; ``masks``: int8 ``[B, 145]``,
    the env's ``action_mask``; the policy returns ``B`` allowed actions. All the
    positions of a batch still choosing go to the policy in one call, move
    after move. A turn with only one result (a pass, a forced play) is played
    without asking. ``rules``: those of the games it plays (they decide the
    masks; a game under other rules is refused when the player is loaded for
    it). Needs each position's dice: callers pass them through
    ``nardy_env.players.choose_indices`` (evaluation, the env's ``opponent=``
    and ``nardy play`` do). A policy that samples should draw from the
    generator it is given as ``rng=`` (when it takes that keyword): the
    match's or the env's, so that its games follow the seed.
    """

    runs_your_code = True  # its failures are the policy's (PlayerFailed.of)

    lists_moves = True
    """Its moves are listed under its ``rules``: ``load_player`` refuses it for a game under others."""

    def __init__(self, policy: Callable[..., Any], obs_mode: ObsMode = "raw",
                 rules: RulesLike | None = DEFAULT_RULES, name: str | None = None) -> None:
        if not callable(policy):
            raise TypeError(f"policy must be a function (observations, masks) -> actions, got {type(policy).__name__}")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        self.policy = policy
        self.obs_mode = obs_mode
        self.rules = as_rules(rules)
        self.name = name or getattr(policy, "__name__", None) or "checker-policy"
        self.calls = 0  # policy calls made, for cost reports

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, obs_mode={self.obs_mode!r}, rules={self.rules.to_json()})"

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator,
               colors: np.ndarray | None = None, dice: np.ndarray | None = None) -> np.ndarray:
        """The turn the policy plays checker by checker from each position with its ``dice`` (needed),
        as the index of that turn's afterstate (``Player``)."""
        if dice is None:
            raise ValueError(f"{self.name}: a checker-mode policy needs each position's dice; call it through "
                             "nardy_env.players.choose_indices(..., dice=) as evaluation, the env and play do")
        check_batch(states, found)
        state = np.array(states, dtype=np.int8).reshape(-1, states.shape[-1])
        n = state.shape[0]
        dice = np.asarray(dice, dtype=np.int64).reshape(n, 2)
        counts = found.counts()
        picks = np.zeros(n, dtype=np.int64)  # a turn with one result: that one
        targets = TurnTargets(found)
        left = dice_left(dice).copy()
        heads = np.zeros(n, dtype=np.int64)
        first = state[:, HEAD_INDEX] == NUM_CHECKERS
        played = np.zeros(n, dtype=np.int64)
        need = turn_need(found, dice)
        active = np.flatnonzero(counts > 1)
        while active.size:
            options = checker_options(state[active], dice[active], left[active], heads[active], first[active],
                                      played[active], need[active], targets, active, self.rules)
            stuck = ~options.mask.any(axis=1)
            if stuck.any():
                raise ValueError(f"{self.name}: no checker move leads to a legal play of position "
                                 f"{int(active[stuck][0])}: does the game use other rules than the player's "
                                 f"({self.rules.to_json()})? Make the CheckerPolicy with rules= the game's")
            actions = self._ask(observe(state[active], left[active], heads[active], self.obs_mode), options.mask,
                                rng)
            complete = play_checker_moves(active, actions, options.results[np.arange(active.size), actions], state,
                                          left, heads, played, need)
            done = active[complete]
            picks[done] = targets.index(done, state[done])
            active = active[~complete]
        return picks

    def _ask(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.calls += 1
        try:
            given = {"rng": rng} if _accepts(self.policy, "rng") else {}  # asked each time: policy may be swapped
            raw = np.asarray(self.policy(observations, masks.copy(), **given))
        except Exception as exc:
            exc.add_note(f"({self.name} was given observations of shape {list(observations.shape)}, "
                         f"obs_mode={self.obs_mode!r}, and masks of shape {list(masks.shape)})")
            raise
        if raw.size and (raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer)):
            raise ValueError(f"{self.name} returned {raw.dtype} actions {raw.ravel()[:3].tolist()}: the policy "
                             f"returns integer checker actions 0..{NUM_CHECKER_ACTIONS - 1}, one per observation")
        actions = raw.astype(np.int64).reshape(-1)
        if actions.shape[0] != masks.shape[0]:
            shaped = f" (an array of shape {list(raw.shape)})" if raw.ndim != 1 else ""
            raise ValueError(f"{self.name} returned {actions.shape[0]} actions{shaped} for {masks.shape[0]} "
                             f"observations: one action per observation, shape [{masks.shape[0]}]")
        bad = (actions < 0) | (actions >= NUM_CHECKER_ACTIONS)
        bad[~bad] = masks[np.flatnonzero(~bad), actions[~bad]] == 0
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            allowed = np.flatnonzero(masks[k]).tolist()
            raise ValueError(f"{self.name} chose action {int(actions[k])} for observation {k}, which its mask "
                             f"does not allow (allowed: {allowed})")
        return actions

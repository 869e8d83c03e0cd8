"""Wrappers for algorithms that cannot use an action mask."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .games import as_action

__all__ = ["AnyActionLegal"]


class AnyActionLegal(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Plays action ``k`` as the ``(k mod n)``-th of the ``n`` legal actions of the step.

    ``LongNardy-v0`` raises ``IllegalActionError`` on an action its
    ``info["action_mask"]`` forbids. Algorithms that sample from the whole
    action space (and Gymnasium's ``check_env``, which does) can use this
    wrapper instead: every action in the space is then legal, at the price of a
    mapping that changes from step to step. Algorithms that can mask should use
    the mask instead.
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._legal = np.zeros(1, dtype=np.int64)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._legal = np.flatnonzero(info["action_mask"])
        return obs, info

    def step(self, action: Any):
        k = as_action(action)
        obs, reward, terminated, truncated, info = self.env.step(int(self._legal[k % self._legal.size]))
        self._legal = np.flatnonzero(info["action_mask"])
        return obs, reward, terminated, truncated, info

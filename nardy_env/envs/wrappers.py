"""Wrappers for algorithms that cannot use an action mask."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from .games import Action, as_action, as_actions

__all__ = ["AnyActionLegal", "VectorAnyActionLegal"]


class AnyActionLegal(gym.Wrapper[np.ndarray, Action, np.ndarray, Action], gym.utils.RecordConstructorArgs):
    """Plays action ``k`` as the ``(k mod n)``-th of the ``n`` legal actions of the step.

    ``LongNardy-v0`` raises ``IllegalActionError`` on an action its
    ``info["action_mask"]`` forbids. Algorithms that sample from the whole
    action space (and Gymnasium's ``check_env``, which does) can use this
    wrapper instead: every action in the space is then legal, at the price of a
    mapping that changes from step to step. Algorithms that can mask should use
    the mask instead.
    """

    def __init__(self, env: gym.Env[np.ndarray, Action]):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._legal = np.zeros(1, dtype=np.int64)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._legal = np.flatnonzero(info["action_mask"])
        return obs, info

    def action_masks(self) -> np.ndarray:
        """Every action is legal through this wrapper (a masking algorithm sees no mask)."""
        return np.ones(self.action_space.n, dtype=bool)  # type: ignore[attr-defined]

    def step(self, action: Action | np.ndarray) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        k = as_action(action)
        obs, reward, terminated, truncated, info = self.env.step(int(self._legal[k % self._legal.size]))
        self._legal = np.flatnonzero(info["action_mask"])
        return obs, reward, terminated, truncated, info


class VectorAnyActionLegal(gym.vector.VectorWrapper[np.ndarray, np.ndarray, np.ndarray]):
    """``AnyActionLegal`` for a vector env: sub-env i plays ``actions[i]`` as the
    ``(actions[i] mod n_i)``-th of its ``n_i`` legal actions.

    Wraps the native vector env (``gymnasium.make_vec("LongNardy-v0", ...,
    vectorization_mode="vector_entry_point")``, which takes no per-env
    wrappers) or any vector env whose info carries ``action_mask``. Sub-envs
    in an autoreset step ignore their action, as usual.
    """

    def __init__(self, env: gym.vector.VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
        super().__init__(env)
        self._mask: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._take_mask(info)
        return obs, info

    def _take_mask(self, info: dict[str, Any]) -> None:
        mask = np.asarray(info["action_mask"], dtype=bool)
        present = info.get("_action_mask")
        if self._mask is not None and present is not None and not np.all(present):
            # Gymnasium's sync and async envs fill the rows of sub-envs that returned no info
            # (the ones a partial reset left alone) with zeros: those keep their mask.
            present = np.asarray(present, dtype=bool)
            mask = np.where(present[:, None], mask, self._mask)
        self._mask = mask

    def action_masks(self) -> np.ndarray:
        """Every action of every sub-env is legal through this wrapper."""
        n = int(self.single_action_space.n)  # type: ignore[attr-defined]
        return np.ones((self.num_envs, n), dtype=bool)

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._mask is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        k = as_actions(actions, self.num_envs)
        counts = self._mask.sum(axis=1)
        rank = k % np.maximum(counts, 1)
        # The column where the running count of legal actions first exceeds the rank.
        chosen = np.argmax(np.cumsum(self._mask, axis=1) > rank[:, None], axis=1)
        obs, reward, terminated, truncated, info = self.env.step(chosen.astype(np.int64))
        self._take_mask(info)
        return obs, reward, terminated, truncated, info

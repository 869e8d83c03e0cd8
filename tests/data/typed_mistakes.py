"""Mistakes nardy refuses at run time, which a type checker must flag too (each line marked ``# E``)."""
import numpy as np

from nardy_env import Afterstates
from nardy_env.envs import LongNardyEnv
from nardy_env.players import load_player


class FirstPlay:
    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(len(states), dtype=np.int64)


load_player(FirstPlay)  # E: the class, not an instance
load_player(len)  # E: a callable that is no player
LongNardyEnv(opponent=print)  # E
LongNardyEnv(action_mode="turns")  # E: a mode's typo
LongNardyEnv(obs_mode="feature")  # E
load_player(FirstPlay())

"""The native vector env of ``LongNardy-v0``: many games, one batched rules call per step."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import error, logger, spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .._runtime import NardyWarning
from ..core import MAX_RESULTS, Afterstates, is_whole
from ..notation import ColorLike
from ..players import PlayerSpec
from ..rules import RulesLike, as_rules
from .checker import NUM_CHECKER_ACTIONS
from .games import (
    ActionMode,
    GameBatch,
    ObsMode,
    OpponentView,
    as_actions,
    observation_bounds,
    read_only,
    resolve_color,
    resolve_opponent,
)
from .long_nardy import (
    failure_needs_reset,
    failure_note,
    opponent_ended_preset,
    render_rgb,
    render_text,
    start_presets,
)


def split_afterstates(found: Afterstates) -> list[Afterstates]:
    """The flat ``info["afterstates"]`` of the vector env, cut into one ``Afterstates`` per sub-env.

    Sub-env i's piece is what the single env's ``info["afterstates"]`` would
    hold (its own ``offsets == [0, n_i]``); the arrays are views, not copies.
    """
    if not isinstance(found, Afterstates):
        raise TypeError(f"split_afterstates takes the vector env's info['afterstates'] (Afterstates), "
                        f"got {type(found).__name__}")
    pieces = []
    for start, end in zip(found.offsets[:-1].tolist(), found.offsets[1:].tolist(), strict=True):
        pieces.append(Afterstates(found.states[start:end], found.moves[start:end],
                                  found.num_moves[start:end], np.array([0, end - start], dtype=found.offsets.dtype)))
    return pieces


def _sub_env_seeds(seed: Any, n: int) -> list[int | None]:
    """One seed (or None) per sub-env, as ``SyncVectorEnv`` reads ``seed``; checked before anything changes."""
    if seed is None:
        return [None] * n
    if isinstance(seed, np.ndarray) and seed.ndim == 0:
        seed = seed.item()
    if isinstance(seed, bool):
        raise TypeError(f"seed must be None, an int, or a list of {n} ints or None, got the bool {seed}")
    if isinstance(seed, int | np.integer):
        if seed < 0:
            raise ValueError(f"seed must be at least 0, got {seed}")
        return [int(seed) + i for i in range(n)]
    if not isinstance(seed, list | tuple | np.ndarray):
        raise TypeError(f"seed must be None, an int, or a list of {n} ints or None, got {type(seed).__name__}")
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"give one seed per sub-env ({n}), got {len(seeds)}")
    for i, s in enumerate(seeds):
        if s is not None and (not isinstance(s, int | np.integer) or isinstance(s, bool)):
            raise TypeError(f"seed[{i}] must be an int or None, got {type(s).__name__} {s!r}")
        if s is not None and s < 0:
            raise ValueError(f"seed[{i}] must be at least 0, got {s}")
    return [None if s is None else int(s) for s in seeds]


def _reset_mask(mask: Any, n: int) -> np.ndarray | None:
    """Gymnasium's partial reset: a bool array ``[n]`` with at least one True, or None."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise ValueError(f'reset option "reset_mask" must be a bool array of shape ({n},), '
                         f"got {mask.dtype} {mask.shape}")
    if not mask.any():
        raise ValueError('reset option "reset_mask" must have at least one True (a sub-env to reset)')
    return mask


__all__ = ["LongNardyVectorEnv", "split_afterstates"]


class LongNardyVectorEnv(OpponentView, VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """``num_envs`` games of Long Nardy stepped together (``gymnasium.make_vec("LongNardy-v0", ...)``).

    Sub-env i behaves exactly like ``LongNardyEnv`` reset with seed ``seed + i``
    (same spaces, rewards and info per sub-env; see its docstring), except that
    a finished game restarts by itself, in Gymnasium's next-step autoreset mode
    (``metadata["autoreset_mode"]``): the step that ends a game returns
    ``terminated[i] = True`` with the final observation; the next step ignores
    ``actions[i]``, starts a new game and returns its first observation with
    reward 0 and ``terminated[i] = False``.

    Each step makes one ``legal_afterstates`` call for all sub-envs that begin a
    turn, split over the CPUs (plus one for the opponent's turns, with an
    opponent; plus two batched ``legal_continuations`` calls in checker mode);
    the rest is numpy. Python loops over sub-envs run only where a game starts
    (its opening roll) or a game's buffer of 128 rolls runs out.

    ## Action Space

    ``MultiDiscrete([3060] * num_envs)`` (turn mode) or ``[145] * num_envs``
    (checker mode), as ``LongNardyEnv``'s per sub-env.

    ## Observation Space

    ``Box(float32, [num_envs, 57])`` (raw) or ``[num_envs, 211]`` (features).

    ## Rewards

    ``reward[i]``: the points of sub-env i's step for the side that acted in it
    (``info["player"][i]`` of the previous observation) in self-play, or for the
    agent with an opponent: +1 oin, +2 mars, negative when the opponent's move
    won; 0 otherwise and on autoreset steps.

    ## Information

    Arrays over sub-envs: ``player`` (int8 Color values: 0 white, 1 black),
    ``dice`` (int64 ``[num_envs, 2]``), ``action_mask`` (int8
    ``[num_envs, n_actions]``); in turn mode ``afterstates``, the core's
    ``Afterstates`` of all sub-envs in one flat batch (sub-env i's rows
    ``offsets[i]:offsets[i+1]`` are the afterstates its actions 0.. play;
    read-only views), so that one forward pass can score every candidate of
    every sub-env; ``split_afterstates`` cuts it per sub-env. Every key has
    its Gymnasium ``_key`` mask (all True: every sub-env reports every key).
    ``action_masks()`` returns the masks as bools (for sb3-contrib).

    ## Starting State

    Every sub-env starts from the starting position after its own opening
    roll. ``reset(options={"position": NPN or [NPN] * num_envs, "dice": [d1, d2]
    or one pair per sub-env})`` starts them from given positions instead (each
    side to move moves first; without ``"dice"`` the dice are rolled); games
    that restart later by autoreset begin from the starting position.
    ``options={"reset_mask": m}`` (Gymnasium's partial reset) restarts only
    the sub-envs where the bool array ``m`` is True.

    ## Episode End

    Terminated when a side bears off its 15th checker; truncated after
    ``max_episode_steps`` steps of a sub-env when that is set (as with
    Gymnasium's ``TimeLimit``, a game that ends on that very step reports both
    flags). Either way sub-env i restarts on its next step (autoreset, above).

    ## Arguments

    ``num_envs``, then those of ``LongNardyEnv``; with an opponent, one
    generator drives the bot of all sub-envs, so a random bot's choices differ
    from those of N single envs. ``max_episode_steps``: truncate a game after
    that many steps (None: never). ``autoreset_mode``: only
    ``AutoresetMode.NEXT_STEP`` (any other is refused; Gymnasium's ``sync``
    vector env over ``LongNardy-v0`` offers the others).

    ## Version History

    - v0: first version.
    """

    metadata = {
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 2,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        action_mode: ActionMode = "turn",
        obs_mode: ObsMode = "raw",
        opponent: PlayerSpec | None = None,
        agent_color: ColorLike | None = None,
        rules: RulesLike | None = None,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ):
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.NEXT_STEP.value):
            raise ValueError(f"the native vector env resets finished games in next-step mode only "
                             f"(AutoresetMode.NEXT_STEP), got {autoreset_mode!r}; for another mode use "
                             "gymnasium.make_vec(..., vectorization_mode='sync', "
                             "vector_kwargs={'autoreset_mode': ...})")
        if not is_whole(num_envs, 1):
            raise ValueError(f"num_envs must be an integer of at least 1, got {num_envs!r}")
        if max_episode_steps is not None and (isinstance(max_episode_steps, bool)
                                              or not isinstance(max_episode_steps, int | np.integer)
                                              or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be None or an integer of at least 1, got {max_episode_steps!r}")
        num_envs = int(num_envs)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            sync = (" (for 'human', one printed board per sub-env: gym.make_vec(..., vectorization_mode='sync'))"
                    if render_mode == "human" else "")
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, "
                             f"got {render_mode!r}{sync}")
        self.num_envs = num_envs
        self.rules = as_rules(rules)
        self.render_mode = render_mode
        self.action_mode = action_mode
        self.obs_mode = obs_mode
        self.max_episode_steps = max_episode_steps
        self.batch = GameBatch(
            num_envs, self.rules, action_mode, obs_mode,
            resolve_opponent(opponent, self.rules), resolve_color(agent_color),
        )
        n_actions = MAX_RESULTS if action_mode == "turn" else NUM_CHECKER_ACTIONS
        self.single_action_space = spaces.Discrete(n_actions)
        self.action_space = batch_space(self.single_action_space, num_envs)
        low, high = observation_bounds(obs_mode)
        self.single_observation_space = spaces.Box(low, high, dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._started = False  # generators set up (by the first reset or a seed)
        self._playable = False  # reset() succeeded
        self._all = np.arange(num_envs, dtype=np.int64)

    def _result(self) -> tuple[np.ndarray, dict[str, Any]]:
        b = self.batch
        info: dict[str, Any] = {
            "player": b.viewers().copy(),
            "dice": b.dice.copy(),
            "action_mask": b.action_mask(),
        }
        if self.action_mode == "turn":
            # Read-only views: the env keeps playing from these arrays.
            info["afterstates"] = read_only(b.found)
        for key in list(info):
            info[f"_{key}"] = np.ones(self.num_envs, dtype=bool)
        return b.observations(), info

    def _check_open(self, what: str) -> None:
        if self.closed:
            raise error.ClosedEnvironmentError(f"{what}() on a closed LongNardyVectorEnv")
        if not self._playable:
            raise error.ResetNeeded(f"call reset() before {what}(){failure_note(self)}")

    def action_masks(self) -> np.ndarray:
        """bool ``[num_envs, n_actions]``: the legal actions of every sub-env now."""
        self._check_open("action_masks")
        return self.batch.action_mask().view(bool)  # a fresh 0/1 array each call: viewing it costs nothing

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        seeds = _sub_env_seeds(seed, self.num_envs)
        if self.closed:
            raise error.ClosedEnvironmentError("reset() on a closed LongNardyVectorEnv")
        options = dict(options) if isinstance(options, dict) else options  # never change the caller's dict
        mask = _reset_mask(options.pop("reset_mask", None), self.num_envs) if isinstance(options, dict) else None
        if mask is not None and not self._playable:
            raise error.ResetNeeded('options={"reset_mask": ...} restarts some sub-envs of a running batch; '
                                    "call reset() without it first")
        presets = start_presets(options, self.num_envs, also_known=("reset_mask",))
        rows = self._all if mask is None else np.flatnonzero(mask)
        b = self.batch
        if mask is None:
            super().reset(seed=seeds[0])
        # A sub-env seeded None carries on with its dice, as a single env's reset(seed=None) (and so
        # SyncVectorEnv's) does; the first reset gives every one a generator.
        for i in rows:
            if seeds[i] is not None or not self._started:
                b.set_generator(int(i), seeding.np_random(seeds[i])[0])
        if mask is None and (seeds[0] is not None or not self._started):
            first = seeds[0]
            b.opponent_rng = np.random.default_rng(None if first is None else [first, 1])
        self._started = True
        self._autoreset[rows] = False
        self._steps[rows] = 0
        self._playable = False  # until every new game stands (an opponent that raises leaves some mid-turn)
        with failure_needs_reset(self):
            _, terminated = b.advance(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), rows, presets)
        self._playable = not terminated.any()
        if terminated.any():
            ended = np.flatnonzero(terminated).tolist()
            given: Any = (options or {}).get("position")  # only a preset's game ends so
            which = f"sub-env(s) {ended}" if len(ended) <= 20 else f"sub-env(s) {ended[:20]} ... ({len(ended)} in all)"
            one = isinstance(given, str)
            raise ValueError(f"{which}: {opponent_ended_preset(given if one else str(given[ended[0]]))}"
                             + (f" (that is sub-env {ended[0]}'s position)" if not one and len(ended) > 1 else ""))
        return self._result()

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open("step")
        actions = as_actions(actions, self.num_envs)
        reset_rows = np.flatnonzero(self._autoreset)
        play_rows = self._all if reset_rows.size == 0 else np.flatnonzero(~self._autoreset)
        play_actions = actions[play_rows]
        self.batch.check(play_rows, play_actions, "sub-env {}")
        with failure_needs_reset(self):
            reward, terminated = self.batch.advance(play_rows, play_actions, reset_rows)
        self._steps[reset_rows] = 0
        self._steps[play_rows] += 1
        if self.max_episode_steps is not None:
            # As Gymnasium's TimeLimit: truncated at the limit even when that step also ends the game.
            truncated = self._steps >= self.max_episode_steps
            truncated[reset_rows] = False
        else:
            truncated = np.zeros(self.num_envs, dtype=bool)
        self._autoreset = terminated | truncated
        obs, info = self._result()
        return obs, reward, terminated, truncated, info

    def render(self) -> tuple[str | np.ndarray, ...] | None:
        if self.render_mode is None:
            logger.warn('call gymnasium.make_vec("LongNardy-v0", render_mode="ansi" or "rgb_array") to render',
                        category=NardyWarning)
            return None
        self._check_open("render")
        draw = render_text if self.render_mode == "ansi" else render_rgb
        return tuple(draw(self.batch, i) for i in range(self.num_envs))

"""Long Nardy as a PettingZoo AEC environment (optional: ``pip install nardy[pettingzoo]``).

Two agents, ``"white"`` and ``"black"``, act in turn through the same machinery
as ``LongNardy-v0`` (so the same action modes, observations and rules)::

    from nardy_env.pettingzoo_env import env
    game = env(action_mode="turn")
    game.reset(seed=0)
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        action = None if terminated or truncated else game.action_space(agent).sample(obs["action_mask"])
        game.step(action)

Each agent observes ``{"observation": ..., "action_mask": ...}`` from its own
view; the mask is all zeros for the agent not to act. A turn with no legal
move is still a step of its player: its mask allows only the pass (action 0 in
turn mode, 144 in checker mode). In checker mode one agent acts several times
in a row, one checker move each, until its play is complete. When the game ends
the winner gets +1 (oin) or +2 (mars) and the loser the negative.

In turn mode the acting agent's ``info["afterstates"]`` lists what each action
plays (as ``LongNardy-v0``'s info does); every agent's info has ``player``,
``dice`` and ``action_mask`` (all zeros for the agent not to act). An illegal
action raises ``IllegalActionError`` and changes nothing (wrap the env in
``pettingzoo.utils.wrappers.TerminateIllegalWrapper`` to end the game with a
penalty instead). ``state()`` is the whole game from white's view, for
centralised critics (see ``state_space``). The dice to come are drawn from the
env's generator, so a ``copy.deepcopy`` of the env will roll the same ones: a
search that must not see the future should reset its copies with a fresh seed.

``render_mode``: ``"ansi"`` (``render()`` returns the text board),
``"rgb_array"`` (a picture) or ``"human"`` (the text board printed after every
``reset()`` and ``step()``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import logger, spaces
from gymnasium.utils import seeding

try:
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers
except ModuleNotFoundError as exc:
    if exc.name != "pettingzoo":
        raise
    raise ModuleNotFoundError("nardy_env.pettingzoo_env needs PettingZoo, an optional extra: "
                              "pip install 'nardy[pettingzoo]' (or pip install pettingzoo)",
                              name="pettingzoo") from None

from ._runtime import NardyWarning
from .core import MAX_RESULTS, NUM_CHECKERS, Afterstates, flip
from .encoding import RAW_SIZE, features, raw_positions
from .envs.checker import NUM_CHECKER_ACTIONS
from .envs.games import ActionMode, GameBatch, ObsMode, as_action, as_seed, observation_bounds
from .envs.long_nardy import render_rgb, render_text, start_presets
from .notation import Color
from .rules import RulesLike, as_rules

__all__ = ["env", "raw_env"]

AGENTS = ("white", "black")
RENDER_MODES = ("ansi", "rgb_array", "human")


def env(
    action_mode: ActionMode = "turn",
    obs_mode: ObsMode = "raw",
    rules: RulesLike | None = None,
    render_mode: str | None = None,
) -> AECEnv:
    """The AEC env wrapped in PettingZoo's order-enforcing wrapper (arguments as ``raw_env``)."""
    return wrappers.OrderEnforcingWrapper(raw_env(action_mode, obs_mode, rules, render_mode))


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Long Nardy for two agents; arguments as ``LongNardyEnv`` (no opponent)."""

    metadata = {
        "render_modes": list(RENDER_MODES),
        "name": "long_nardy_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        action_mode: ActionMode = "turn",
        obs_mode: ObsMode = "raw",
        rules: RulesLike | None = None,
        render_mode: str | None = None,
    ):
        super().__init__()
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {list(RENDER_MODES)} or None, got {render_mode!r}")
        self.rules = as_rules(rules)
        self.render_mode = render_mode
        self.batch = GameBatch(1, self.rules, action_mode, obs_mode)
        self.possible_agents = list(AGENTS)
        self.agents = self.possible_agents[:]
        n_actions = MAX_RESULTS if action_mode == "turn" else NUM_CHECKER_ACTIONS
        low, high = observation_bounds(obs_mode)
        self.action_spaces = {a: spaces.Discrete(n_actions) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(low, high, dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(n_actions,), dtype=np.int8),
            })
            for a in self.possible_agents
        }
        # state(): white's raw position (FORMATS.md's 50 numbers), the dice left per face, the
        # checkers taken off the head this turn, and the side to move (0 white, 1 black).
        state_high = np.concatenate([np.full(RAW_SIZE, NUM_CHECKERS), high[-7:], [1]]).astype(np.float32)
        self.state_space = spaces.Box(np.zeros_like(state_high), state_high, dtype=np.float32)
        self._rng: np.random.Generator | None = None
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def _started(self, what: str) -> None:
        if self._rng is None:  # the wrapped env() says so too; raw_env played from a made-up state
            raise RuntimeError(f"{what} before reset(): call reset() to start a game")

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._started("observe()")
        b = self.batch
        if agent not in AGENTS:
            raise KeyError(f"no agent {agent!r} in this game: its agents are {list(AGENTS)}")
        colour = AGENTS.index(agent)
        acting = colour == int(b.side[0]) and not b.over[0]
        if acting:
            obs = b.observations()[0]
            mask = b.action_mask()[0].copy()
        else:
            state = b.state[:1] if colour == int(b.side[0]) else flip(b.state[:1])
            raw = raw_positions(state)
            position = raw if b.obs_mode == "raw" else features(raw)
            obs = np.concatenate([position[0], np.zeros(7, dtype=np.float32)])
            mask = np.zeros(b.num_actions, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def state(self) -> np.ndarray:
        """The whole game, the same whoever asks: white's view of the position (the 50 numbers of
        FORMATS.md), the dice left per face, the checkers taken off the head this turn, and the
        side to move (0 white, 1 black); ``state_space`` bounds it."""
        b = self.batch
        side = int(b.side[0])
        white = b.state[:1] if side == Color.WHITE else flip(b.state[:1])
        return np.concatenate([raw_positions(white)[0], b.left[0], [b.heads[0], side]]).astype(np.float32)

    def _sync(self) -> None:
        b = self.batch
        self.agent_selection = AGENTS[int(b.side[0])]
        mask = b.action_mask()[0]
        for agent in self.agents:
            # The same keys for both agents; nobody may act once the game is over.
            self.infos[agent] = {"player": Color(AGENTS.index(agent)), "dice": b.dice[0].copy(),
                                 "action_mask": np.zeros_like(mask)}
        if not b.over[0]:
            info = self.infos[self.agent_selection]
            info["action_mask"] = mask.copy()
            if b.action_mode == "turn":
                f = b.found
                info["afterstates"] = Afterstates(f.states.copy(), f.moves.copy(), f.num_moves.copy(),
                                                  f.offsets.copy())

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict, got {type(options).__name__}")
        if options:
            # PettingZoo's api_test resets with an unknown option and expects it to be
            # accepted, so unknown keys are warned about here rather than refused.
            unknown = sorted(set(options) - {"position", "dice"})
            if unknown:
                logger.warn("ignoring unknown reset option(s) %s; known options are ['position', 'dice']", unknown,
                            category=NardyWarning)  # %s: the keys may hold a % themselves
            options = {k: v for k, v in options.items() if k in ("position", "dice")}
        preset = start_presets(options, 1)  # bad options change nothing
        seed = as_seed(seed)
        if seed is not None or self._rng is None:
            self._rng, _ = seeding.np_random(seed)
            self.batch.set_generator(0, self._rng)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        none = np.zeros(0, dtype=np.int64)
        self.batch.advance(none, none, np.zeros(1, dtype=np.int64), preset)
        self._sync()
        if self.render_mode == "human":
            self.render()

    def step(self, action: Any) -> None:
        self._started("step()")
        if not self.agents:  # both have seen the end (PettingZoo then empties the list)
            raise RuntimeError("step() after the game is over: call reset() to start another")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        b = self.batch
        rows = np.zeros(1, dtype=np.int64)
        acts = np.array([as_action(action)], dtype=np.int64)
        b.check(rows, acts, f"{agent}")
        self._cumulative_rewards[agent] = 0
        reward, terminated = b.advance(rows, acts, np.zeros(0, dtype=np.int64))
        self.rewards = dict.fromkeys(self.agents, 0)
        if terminated[0]:
            points = int(reward[0])
            other = AGENTS[1 - AGENTS.index(agent)]
            self.rewards[agent] = points
            self.rewards[other] = -points
            self.terminations = dict.fromkeys(self.agents, True)
        self._sync()
        if terminated[0]:
            # The winner made the last move; let it see the end first, then the loser.
            self.agent_selection = agent
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | np.ndarray | None:
        """The board as text (``"ansi"``), a picture (``"rgb_array"``), or printed (``"human"``)."""
        if self.render_mode is None:
            logger.warn('call env(render_mode="ansi", "rgb_array" or "human") to render', category=NardyWarning)
            return None
        self._started("render()")
        if self.render_mode == "ansi":
            return render_text(self.batch, 0)
        if self.render_mode == "human":
            print(render_text(self.batch, 0), flush=True)
            return None
        return render_rgb(self.batch, 0)

    def close(self) -> None:
        pass

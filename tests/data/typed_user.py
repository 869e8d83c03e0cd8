"""What a type-checked user writes with nardy's documented calls."""
import numpy as np
from gymnasium.wrappers import RecordEpisodeStatistics

from nardy_env import (
    Color,
    flip,
    format_npn,
    legal_afterstates,
    legal_continuations,
    outcome,
    parse_npn,
    pip_counts,
)
from nardy_env.encoding import raw_positions
from nardy_env.envs import AnyActionLegal, LongNardyEnv, checker_action, checker_move
from nardy_env.game import opening_roll, resignation_points
from nardy_env.notation import results_rank, to_common_point
from nardy_env.players import Player, choose_indices
from nardy_env.render import board_text, board_words


class ThreeArg:
    def choose(self, states: np.ndarray, found: object, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(len(states), dtype=np.int64)


state, side = parse_npn("0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,15:0,0:w")
found = legal_afterstates([state.tolist()], [[6, 5]], {"block_rule": "home"})
more = legal_continuations(state[None], [6, 6], 4, 0, 2)
point: int = to_common_point(5, "b")
text: str = format_npn(state, "w") + board_text(state, "w")
first, dice = opening_roll(np.random.default_rng(0), 2, {"opening": "reroll"})
points: int = resignation_points(state, [6, 5])
rank = results_rank(found.states, Color.WHITE, found.offsets)
player: Player = ThreeArg()
env = LongNardyEnv(rules={"block_rule": "home"})
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(0)
total: float = reward + 1.0
over: bool = terminated or truncated
picked = choose_indices(player, state[None], found, np.random.default_rng(0))
rows = [state.tolist()]
mirrored = flip(rows)
ended = outcome(rows)
pips = pip_counts(rows)
raw = raw_positions(rows)
words: str = board_words(state.tolist(), "w") + board_text(state.tolist(), 0)
again = opening_roll(np.random.default_rng(0), 1, None)
solo = LongNardyEnv(opponent="random", agent_color=0)
wrapped = RecordEpisodeStatistics(LongNardyEnv(action_mode="turn", obs_mode="raw"))  # Gymnasium's typed wrapper
wrapped.reset(seed=1)
wrapped.step(0)  # a Python int, as the docs' examples pass
masked = AnyActionLegal(LongNardyEnv())
seen, _ = masked.reset(seed=2)
after, gain, done, cut, _ = masked.step(np.int64(3))
shape: tuple[int, ...] = seen.shape + after.shape
source_die: tuple[int, int] = checker_move(np.int64(5))
action: int = checker_action(np.int8(6), np.int64(1))  # a core move's points are int8

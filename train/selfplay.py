"""Self-play in lockstep batches, and the TD(lambda) targets it produces.

A worker plays many games at once with one network: every ply it gathers all
candidate afterstates of every unfinished game, scores them in one forward
pass, and plays the best (or, with probability epsilon, a random one). For
every position played it keeps the afterstate (the raw 50-number layout from
the mover's view) and the network's outcome probabilities for it. When a game
ends, each afterstate gets its forward-view lambda-return target, computed
backwards from the result with the same values the worker used to choose:

    target_T = the actual outcome (one-hot, from the last mover's view)
    target_t = swap((1 - lam) * V(x_{t+1}) + lam * target_{t+1})

``swap`` exchanges the win and lose halves ([w, wm, l, lm] -> [l, lm, w, wm]),
because consecutive afterstates are seen by opposite sides. This module needs
neither Ray nor a learner: ``train/trainer.py`` runs it inside Ray actors.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from agents.common import SWAP, outcome_one_hot, segment_argmax, unsound_row
from agents.network import TDNetwork
from agents.search import EQUITY
from agents.td import wrapper_prefix
from nardy_env import Rules, flip, initial_states, legal_afterstates
from nardy_env.core import NUM_CHECKERS, OFF_MOVER, is_whole
from nardy_env.encoding import features, raw_positions
from nardy_env.game import opening_roll, roll_dice
from nardy_env.rules import RulesLike

__all__ = ["SWAP", "lambda_returns", "outcome_one_hot", "SelfPlayWorker"]

_CALIBRATION_BINS = 10


def _check_unit(value: Any, name: str, what: str) -> None:
    """Refuse ``value`` unless it is a real number in [0, 1] (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) \
            or not 0.0 <= value <= 1.0:  # NaN fails the comparison too
        raise ValueError(f"{name} must be {what}, a number in [0, 1], got {value!r}")


def lambda_returns(values: np.ndarray, lam: float) -> np.ndarray:
    """Forward-view lambda-return targets of one game's afterstates.

    ``values``: ``[T + 1, 4]`` outcome probabilities of the afterstates played,
    in order, each from its mover's view; the last row is the game's actual
    result (one-hot). Returns ``[T + 1, 4]`` targets (the last equals the result).
    """
    _check_unit(lam, "lam", "the lambda of TD(lambda)")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] != 4:
        raise ValueError(f"values must have shape [T + 1, 4] (one row of outcome probabilities per afterstate, "
                         f"the result last), got {list(values.shape)}")
    if not np.isfinite(values).all():
        raise ValueError("values must be finite numbers (outcome probabilities), got NaN or infinite ones")
    row = unsound_row(values, tol=1e-3)
    if row is not None:  # targets made of them would not be probabilities either
        raise ValueError(f"values must be outcome probabilities (non-negative, summing to 1); row {row} is "
                         f"{values[row].tolist()}")
    if sorted(values[-1].tolist()) != [0.0, 0.0, 0.0, 1.0]:
        raise ValueError(f"the last row of values is the game's result, one-hot (such as [1, 0, 0, 0] for a "
                         f"win), got {values[-1].tolist()}")
    targets = np.empty_like(values)
    targets[-1] = values[-1]
    for t in range(values.shape[0] - 2, -1, -1):
        targets[t] = ((1 - lam) * values[t + 1] + lam * targets[t + 1])[SWAP]
    return targets.astype(np.float32)


def _lambda_returns_padded(values: np.ndarray, valid: np.ndarray, lam: float) -> np.ndarray:
    """``lambda_returns`` for many games at once: ``[G, L, 4]`` right-aligned, ``valid`` marks real plies."""
    targets = np.zeros_like(values)
    targets[:, -1] = values[:, -1]
    for t in range(values.shape[1] - 2, -1, -1):
        step = ((1 - lam) * values[:, t + 1] + lam * targets[:, t + 1])[:, SWAP]
        targets[:, t] = np.where(valid[:, t, None], step, 0.0)
    return targets


class SelfPlayWorker:
    """Plays batches of self-play games with given weights; no Ray needed."""

    def __init__(self, hidden: list[int] | tuple[int, ...], rules: RulesLike | None = None,
                 threads: int | None = None) -> None:
        """``threads``: torch's thread count for this process (the trainer's actors use 1);
        None leaves it as it is, so a worker made in your own process does not change it."""
        if threads is not None:
            if not is_whole(threads, 1):
                raise ValueError(f"threads must be a whole number, 1 or more, got {threads!r}")
            torch.set_num_threads(int(threads))
        self.network = TDNetwork(hidden).eval()
        self.rules = Rules.from_dict(rules or {}) if not isinstance(rules, Rules) else rules
        self.games_played = 0

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load the network's weights (a state dict of numpy arrays, as the trainer publishes them:
        ``{k: v.numpy() for k, v in net.state_dict().items()}``; tensors are taken too)."""
        if not isinstance(weights, Mapping):
            raise TypeError(f"weights must be a state dict of numpy arrays, got {type(weights).__name__}")
        want = {k: tuple(v.shape) for k, v in self.network.state_dict().items()}
        arrays = {k: (v.detach().cpu().float() if v.is_floating_point() else v.detach().cpu()).numpy()
                  if isinstance(v, torch.Tensor) else np.asarray(v)
                  for k, v in weights.items()}  # tensors too (a bfloat16 one numpy cannot hold)
        prefix = wrapper_prefix(arrays)
        if prefix is not None:
            raise ValueError(f"the weights' names start with {prefix!r}: a wrapped network's; publish the state "
                             f"dict of the network it wraps (its .{prefix[:-1]})")
        wrong = [f"{k!r} has no place in it" for k in arrays if k not in want]
        wrong += [f"{k} is missing" for k in want if k not in arrays]
        wrong += [f"{k} is {list(arrays[k].shape)}, the network needs {list(want[k])}" for k in want
                  if k in arrays and arrays[k].shape != want[k]]
        wrong += [f"{k} holds {arrays[k].dtype} values, not floating-point ones" for k in want
                  if k in arrays and arrays[k].dtype.kind != "f"]
        if wrong:
            more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
            raise ValueError(f"the weights do not fit this worker's network (hidden {self.network.hidden}): "
                             f"{'; '.join(wrong[:3])}{more}")
        self.network.load_state_dict({k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in arrays.items()})

    def _outcomes(self, states: np.ndarray) -> np.ndarray:
        raw = raw_positions(states)
        with torch.inference_mode():  # the features computed in numpy: the same numbers, sooner
            return self.network(torch.from_numpy(raw), torch.from_numpy(features(raw))).numpy()

    def play(self, weights: dict[str, np.ndarray] | None, games: int, seed: int | Sequence[int], epsilon: float,
             lam: float) -> dict[str, Any]:
        """Play ``games`` games; return training samples and statistics.

        Samples: ``raw`` uint8 ``[S, 50]`` afterstates and ``targets`` float32
        ``[S, 4]`` lambda-returns. Statistics: games, plies, mars results,
        seconds, and calibration counts [count, predicted sum, actual sum] per bin
        (``calibration``: win probability in 10 bins of [0, 1]; ``equity_calibration``:
        equity vs points scored in 10 bins of [-2, 2]; exact final positions left out).
        """
        if not is_whole(games, 1):
            raise ValueError(f"games must be a whole number, 1 or more, got {games!r}")
        try:  # as numpy takes it: a whole number 0 or more, or a list of them (the trainer's)
            rng = np.random.default_rng(seed)
        except (TypeError, ValueError):
            raise ValueError(f"seed must be a whole number 0 or more, or a list of them, got {seed!r}") from None
        _check_unit(epsilon, "epsilon", "the chance of a random move")
        _check_unit(lam, "lam", "the lambda of TD(lambda)")
        t0 = time.perf_counter()
        if weights is not None:
            self.set_weights(weights)
        rules = self.rules
        states = initial_states(games)
        _, dice = opening_roll(rng, games, rules)
        ply = np.zeros(games, dtype=np.int64)
        active = np.arange(games)
        rec_game, rec_ply, rec_raw, rec_val = [], [], [], []
        while active.size:
            found = legal_afterstates(states[active], dice[active], rules, validate=False, threads=1)
            over_all = found.states[:, OFF_MOVER] == NUM_CHECKERS
            probs = np.empty((found.states.shape[0], 4), dtype=np.float32)
            live = np.flatnonzero(~over_all)
            if live.size:
                probs[live] = self._outcomes(found.states[live])
            if over_all.any():
                probs[over_all] = outcome_one_hot(found.states[over_all])
            pick = segment_argmax(probs.astype(np.float64) @ EQUITY, found.offsets)
            if epsilon > 0:
                explore = rng.random(active.size) < epsilon
                counts = found.counts()
                pick = np.where(explore, (rng.random(active.size) * counts).astype(np.int64), pick)
            rows = found.offsets[:-1] + pick
            after = found.states[rows]
            rec_game.append(active.copy())
            rec_ply.append(ply[active].copy())
            rec_raw.append(raw_positions(after).astype(np.uint8))
            rec_val.append(probs[rows])
            over = after[:, OFF_MOVER] == NUM_CHECKERS
            states[active] = flip(after)
            ply[active] += 1
            active = active[~over]
            dice[active] = roll_dice(rng, active.size)
        game = np.concatenate(rec_game)
        step = np.concatenate(rec_ply)
        raw = np.concatenate(rec_raw)
        val = np.concatenate(rec_val)
        length = ply  # plies per game
        # Right-align every game in a [G, L, 4] array so one backward sweep covers all.
        width = int(length.max())
        col = width - length[game] + step
        padded = np.zeros((games, width, 4), dtype=np.float32)
        valid = np.zeros((games, width), dtype=bool)
        padded[game, col] = val
        valid[game, col] = True
        targets = _lambda_returns_padded(padded, valid, lam)[game, col].astype(np.float32)
        # Results from the first mover's view, for statistics.
        final = val[col == width - 1]
        mars = int(final[:, 1].sum())
        # Calibration of the afterstates the network valued (not the exact final ones):
        # predicted win probability vs won, and predicted equity vs the points scored,
        # each from the view of the side that made that play.
        final_by_game = np.zeros((games, 4), dtype=np.float32)
        last = col == width - 1
        final_by_game[game[last]] = val[last]
        plies_to_end = (length[game] - 1 - step) % 2  # 0: same mover as the last ply
        valued = ~last
        won = np.where(plies_to_end == 0, 1.0, 0.0)[valued]
        predicted = (val[:, 0] + val[:, 1])[valued]
        bins = np.minimum((predicted * _CALIBRATION_BINS).astype(np.int64), _CALIBRATION_BINS - 1)
        cal_count = np.bincount(bins, minlength=_CALIBRATION_BINS)
        cal_pred = np.bincount(bins, weights=predicted, minlength=_CALIBRATION_BINS)
        cal_won = np.bincount(bins, weights=won, minlength=_CALIBRATION_BINS)
        winner_points = final_by_game[game] @ EQUITY  # +1 or +2: the last mover won
        points = np.where(plies_to_end == 0, winner_points, -winner_points)[valued]
        equity = (val @ EQUITY)[valued]
        ebins = np.clip(((equity + 2.0) / 4.0 * _CALIBRATION_BINS).astype(np.int64), 0, _CALIBRATION_BINS - 1)
        eq_count = np.bincount(ebins, minlength=_CALIBRATION_BINS)
        eq_pred = np.bincount(ebins, weights=equity, minlength=_CALIBRATION_BINS)
        eq_points = np.bincount(ebins, weights=points, minlength=_CALIBRATION_BINS)
        self.games_played += games
        return {
            "raw": raw,
            "targets": targets,
            "games": games,
            "plies": int(length.sum()),
            "mars": mars,
            "seconds": time.perf_counter() - t0,
            "calibration": np.stack([cal_count, cal_pred, cal_won]).astype(np.float64),
            "equity_calibration": np.stack([eq_count, eq_pred, eq_points]).astype(np.float64),
        }

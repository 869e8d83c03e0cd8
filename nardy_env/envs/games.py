"""A batch of Long Nardy games in lockstep: the machinery both environments share.

``LongNardyEnv`` runs a batch of one, ``LongNardyVectorEnv`` a batch of
``num_envs``; both go through ``GameBatch.advance``, so a vector env and N
single envs seeded alike play the same games. Per game the batch keeps::

    state   int8 [26]  the position from the view of ``side`` (mid-turn in checker mode)
    side    Color      the side to move; after the last move, the side that would move next
    dice    [2]        the current roll, (0, 0) once the game is over
    over    bool       the game has ended

Every game has its own generator (sub-env i of a vector env seeded with s gets
seed s + i, like Gymnasium's SyncVectorEnv). Its dice come from it in blocks of
``ROLL_BLOCK`` rolls, so a vector step rolls for every game without a Python
loop; the opening roll and a random agent colour are drawn from it directly at
the start of each game. A bot opponent draws from one separate generator.
"""

from __future__ import annotations

import operator
from typing import Any, Literal, TypeAlias

import numpy as np

from ..core import (
    HEAD_INDEX,
    MAX_RESULTS,
    NUM_CHECKERS,
    NUM_POINTS,
    OFF_MOVER,
    STATE_SIZE,
    Afterstates,
    available_cpus,
    flip,
    initial_states,
    legal_afterstates,
    outcome,
    split_over_threads,
)
from ..encoding import NUM_FEATURES, RAW_SIZE, features, raw_positions
from ..game import opening_roll, roll_dice
from ..notation import Color, as_color
from ..players import Player, choose_indices, load_player
from ..rules import DEFAULT_RULES, Rules
from .checker import (
    NUM_CHECKER_ACTIONS,
    NUM_FACES,
    PASS_ACTION,
    TurnTargets,
    checker_move,
    checker_options,
    dice_left,
    play_checker_moves,
    turn_need,
)

__all__ = [
    "Action",
    "ActionMode",
    "ObsMode",
    "ACTION_MODES",
    "OBS_MODES",
    "ROLL_BLOCK",
    "IllegalActionError",
    "as_action",
    "as_actions",
    "GameBatch",
    "OpponentView",
    "observation_bounds",
    "observe",
    "resolve_opponent",
    "resolve_color",
]

ACTION_MODES = ("turn", "checker")
OBS_MODES = ("raw", "features")
ActionMode: TypeAlias = Literal["turn", "checker"]
"""``action_mode`` of the envs, for type checkers (``ACTION_MODES`` at run time)."""
ObsMode: TypeAlias = Literal["raw", "features"]
"""``obs_mode`` of the envs, for type checkers (``OBS_MODES`` at run time)."""
Action: TypeAlias = int | np.integer[Any]
"""One env action: a Python or numpy integer (a 0-d integer array is accepted too)."""
ROLL_BLOCK = 128
"""Rolls drawn from a game's generator at a time."""

_TURN_COLUMNS = NUM_FACES + 1  # dice left per face, checkers already off the head
_THEIR_POINTS = (np.arange(NUM_POINTS) + NUM_POINTS // 2) % NUM_POINTS  # my index of their point y at y - 1


class IllegalActionError(ValueError):
    """An action the action mask does not allow; the environment is left unchanged."""


def as_action(action: Any) -> int:
    """One action as a Python int, or IllegalActionError: integers only (no bool, float or str)."""
    if isinstance(action, np.ndarray) and action.ndim == 0:
        action = action[()]
    if isinstance(action, bool | np.bool_) or "bool" in str(getattr(action, "dtype", "")):
        # The dtype test catches a torch bool tensor, which operator.index would read as 0 or 1.
        raise IllegalActionError(f"an action must be an integer, got the bool {action!r}")
    if getattr(action, "ndim", 0) != 0:  # torch's one-element tensors have __index__; numpy's arrays don't
        raise IllegalActionError(f"an action must be one integer, got {type(action).__name__} of shape "
                                 f"{list(getattr(action, 'shape', ()))}")
    try:
        a = operator.index(action)
    except TypeError:
        raise IllegalActionError(f"an action must be an integer, got {action!r} ({type(action).__name__})") from None
    if not -(2**62) < a < 2**62:
        raise IllegalActionError(f"action {a} is out of range")
    return a


def as_seed(seed: Any) -> int | None:
    """A single env's reset seed as Gymnasium's seeding takes it (None or an int from 0), checked as
    the vector env checks its seeds: a numpy integer or 0-d array as an int; a bool, which would
    read as 0 or 1, or any other type refused with TypeError, a negative one with ValueError."""
    if seed is None:
        return None
    if isinstance(seed, np.ndarray) and seed.ndim == 0:
        seed = seed.item()
    if isinstance(seed, bool | np.bool_):
        raise TypeError(f"seed must be None or an int, got the bool {seed}")
    if not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be None or an int, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be at least 0, got {seed}")
    return int(seed)


def as_actions(actions: Any, num_envs: int) -> np.ndarray:
    """One integer action per sub-env as int64 ``[num_envs]``, or IllegalActionError."""
    if actions is None:
        raise IllegalActionError(f"actions is None: step() takes one integer action per sub-env, shape ({num_envs},)")
    if isinstance(actions, list | tuple) and any(isinstance(a, bool | np.bool_) for a in actions):
        raise IllegalActionError(f"actions must be integers, not True or False (numpy would read them as 1 and 0): "
                                 f"got {list(actions)!r}"[:300])
    arr = np.asarray(actions)
    if arr.shape != (num_envs,):
        raise IllegalActionError(f"actions must have shape ({num_envs},), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise IllegalActionError(f"actions must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and (arr >= 2**62).any():
        raise IllegalActionError(f"action {int(arr.max())} is out of range")
    return arr.astype(np.int64, copy=False)


def observation_bounds(obs_mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact low and high of every observation column (float32)."""
    if obs_mode == "raw":
        position_high = np.full(RAW_SIZE, NUM_CHECKERS, dtype=np.float32)
    elif obs_mode == "features":
        # Per side: 24 points x 4 TD-Gammon units (the fourth is (n - 3) / 2 <= 6), then 6 in [0, 1].
        units = np.tile(np.array([1, 1, 1, (NUM_CHECKERS - 3) / 2], dtype=np.float32), 24)
        side = np.concatenate([units, np.ones(6, dtype=np.float32)])
        position_high = np.concatenate([side, side])
        assert position_high.size == NUM_FEATURES
    else:
        raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
    turn_high = np.array([4] * NUM_FACES + [2], dtype=np.float32)
    high = np.concatenate([position_high, turn_high])
    return np.zeros_like(high), high


def read_only(found: Afterstates) -> Afterstates:
    """The same afterstates as read-only views (for code outside the env)."""
    views = []
    for arr in found:
        view = arr.view()
        view.setflags(write=False)
        views.append(view)
    return Afterstates(*views)


def resolve_opponent(opponent: Any, rules: Rules) -> Player | None:
    """A Player from a name or folder (``load_player``), a Player object, or a plain callable."""
    if opponent is None:
        return None
    if isinstance(opponent, str) or callable(opponent) or callable(getattr(opponent, "choose", None)):
        return load_player(opponent, rules)
    raise TypeError(
        "opponent must be a player name, an exported policy folder, an object with choose(), "
        f"or a callable(states, found, rng); got {type(opponent).__name__}"
    )


def resolve_color(color: Any) -> Color | None:
    """``"white"``/``"w"``/``Color.WHITE``/0 and the black equivalents; None stays None."""
    if color is None:
        return None
    try:
        return as_color(color.strip() if isinstance(color, str) else color)
    except ValueError:
        raise ValueError(f"agent_color must be 'white', 'black' or None (random), got {color!r}") from None


_PREFIX_MASKS: np.ndarray | None = None


def _prefix_masks() -> np.ndarray:
    """Row k: the turn-mode mask of a turn with k afterstates (built once; gathering beats comparing)."""
    global _PREFIX_MASKS
    if _PREFIX_MASKS is None:
        index = np.arange(MAX_RESULTS)
        _PREFIX_MASKS = (index[None, :] < np.arange(MAX_RESULTS + 1)[:, None]).view(np.int8)
        _PREFIX_MASKS.setflags(write=False)
    return _PREFIX_MASKS


_SPLIT_MIN = 64  # positions per thread below which one thread is faster


def _afterstates(states: np.ndarray, dice: np.ndarray, rules: Rules) -> Afterstates:
    """``legal_afterstates`` of states the core made, split over the CPUs for a vector env's batch.

    The core itself splits only batches of many hundred positions; a step of a
    few hundred sub-envs already gains from two threads.
    """
    n = states.shape[0]
    threads = min(available_cpus(), n // _SPLIT_MIN)
    return split_over_threads(n, threads, lambda lo, hi: legal_afterstates(
        states[lo:hi], dice[lo:hi], rules, validate=False, threads=1))


def _placeholders(states: np.ndarray) -> Afterstates:
    """One result per finished game: its final position (action 0, which is ignored)."""
    k = states.shape[0]
    return Afterstates(
        states.astype(np.int8, copy=True),
        np.zeros((k, 4, 2), dtype=np.int8),
        np.zeros(k, dtype=np.int8),
        np.arange(k + 1, dtype=np.int64),
    )


def _assemble(n: int, old: Afterstates, pieces: list[tuple[np.ndarray, Afterstates]]) -> Afterstates:
    """Afterstates of n rows: each piece's (sorted) rows replaced, the others kept from ``old``."""
    pieces = [(rows, af) for rows, af in pieces if rows.size]
    if len(pieces) == 1 and pieces[0][0].size == n:
        return pieces[0][1]
    source = np.zeros(n, dtype=np.int64)
    counts = old.counts().copy()
    for k, (rows, af) in enumerate(pieces, 1):
        source[rows] = k
        counts[rows] = af.counts()
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    out_states = np.empty((total, STATE_SIZE), dtype=np.int8)
    out_moves = np.empty((total, 4, 2), dtype=np.int8)
    out_num = np.empty(total, dtype=np.int8)
    where = np.repeat(source, counts)
    kept = np.repeat(source == 0, old.counts())
    at = where == 0
    out_states[at] = old.states[kept]
    out_moves[at] = old.moves[kept]
    out_num[at] = old.num_moves[kept]
    for k, (_, af) in enumerate(pieces, 1):
        at = where == k
        out_states[at] = af.states
        out_moves[at] = af.moves
        out_num[at] = af.num_moves
    return Afterstates(out_states, out_moves, out_num, offsets)


class GameBatch:
    """``n`` games of Long Nardy advanced together; see the module docstring."""

    def __init__(
        self,
        n: int,
        rules: Rules = DEFAULT_RULES,
        action_mode: str = "turn",
        obs_mode: str = "raw",
        opponent: Player | None = None,
        agent_color: Color | None = None,
    ):
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if opponent is None and agent_color is not None:
            raise ValueError("agent_color needs an opponent: without one, both sides are played through step()")
        self.n = n
        self.rules = rules
        self.action_mode = action_mode
        self.obs_mode = obs_mode
        self.opponent = opponent
        self.agent_color = agent_color
        self.num_actions = MAX_RESULTS if action_mode == "turn" else NUM_CHECKER_ACTIONS
        self._action_index = np.arange(self.num_actions)

        self.state = initial_states(n)
        self.side = np.zeros(n, dtype=np.int8)
        self.dice = np.zeros((n, 2), dtype=np.int64)
        self.over = np.zeros(n, dtype=bool)
        self.agent = np.full(n, -1 if agent_color is None else int(agent_color), dtype=np.int8)
        self.left = np.zeros((n, NUM_FACES), dtype=np.int8)
        self.heads = np.zeros(n, dtype=np.int64)
        self.found = _placeholders(self.state)
        self.last_points = np.zeros(n, dtype=np.int64)

        # Checker mode: the partial turn of every game.
        self.first = np.zeros(n, dtype=bool)
        self.played = np.zeros(n, dtype=np.int64)
        self.need = np.zeros(n, dtype=np.int64)
        self.targets: TurnTargets | None = None
        self.options_mask = np.zeros((n, NUM_CHECKER_ACTIONS), dtype=np.int8)
        self.options_results = np.zeros((n, NUM_CHECKER_ACTIONS, STATE_SIZE), dtype=np.int8)

        self._rngs: list[np.random.Generator | None] = [None] * n
        self._rolls = np.zeros((n, ROLL_BLOCK, 2), dtype=np.int64)
        self._next_roll = np.full(n, ROLL_BLOCK, dtype=np.int64)
        self.opponent_rng: np.random.Generator = np.random.default_rng()

    # -- seeding and dice --------------------------------------------------------

    def set_generator(self, row: int, rng: np.random.Generator) -> None:
        """Give game ``row`` a fresh generator (drops the rolls buffered from the old one)."""
        self._rngs[row] = rng
        self._next_roll[row] = ROLL_BLOCK

    def _roll(self, rows: np.ndarray) -> np.ndarray:
        empty = rows[self._next_roll[rows] >= ROLL_BLOCK]
        for r in empty:
            self._rolls[r] = roll_dice(self._rngs[r], ROLL_BLOCK)
            self._next_roll[r] = 0
        dice = self._rolls[rows, self._next_roll[rows]]
        self._next_roll[rows] += 1
        return dice

    # -- legality ---------------------------------------------------------------

    def action_mask(self) -> np.ndarray:
        """int8 ``[n, num_actions]``; a finished game allows only its placeholder action."""
        if self.action_mode == "turn":
            return _prefix_masks()[self.found.counts()]
        mask = self.options_mask.copy()
        mask[self.over] = 0
        mask[self.over, PASS_ACTION] = 1
        return mask

    def check(self, rows: np.ndarray, actions: np.ndarray, label: str = "game {}") -> None:
        """Raise IllegalActionError unless every game's action is allowed; changes nothing."""
        bad_range = (actions < 0) | (actions >= self.num_actions)
        if self.action_mode == "turn":
            counts = self.found.counts()[rows]
            bad = bad_range | (actions >= counts)
        else:
            safe = np.where(bad_range, 0, actions)
            bad = bad_range | (self.options_mask[rows, safe] == 0)
        if not bad.any():
            return
        i = int(np.flatnonzero(bad)[0])
        r, a = int(rows[i]), int(actions[i])
        where = label.format(r)
        if self.action_mode == "turn":
            n = int(self.found.counts()[r])
            raise IllegalActionError(
                f"{where}: action {a} is not legal; this turn has {n} legal afterstate"
                f"{'s' if n != 1 else ''} (actions 0..{n - 1}, see info['action_mask'])"
            )
        legal = np.flatnonzero(self.options_mask[r]).tolist()
        if 0 <= a < self.num_actions:
            what = "pass" if a == PASS_ACTION else "move from point {} by {}".format(*checker_move(a))
            desc = f"action {a} ({what})"
        else:
            desc = f"action {a} (out of range 0..{self.num_actions - 1})"
        raise IllegalActionError(
            f"{where}: {desc} is not legal; legal actions are {legal} "
            "(action = (source - 1) * 6 + (die - 1), 144 passes; see info['action_mask'])"
        )

    # -- the game loop ----------------------------------------------------------

    def advance(
        self, play_rows: np.ndarray, actions: np.ndarray, reset_rows: np.ndarray,
        preset: dict[int, tuple[np.ndarray, Color, np.ndarray | None]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Play the (already checked) actions of ``play_rows``, start new games in ``reset_rows``.

        ``preset`` maps a reset row to (state seen by the side to move, that
        side, dice or None) to start from instead of the opening.

        Returns float32 rewards and bool ``terminated`` of all n games: points to
        the side that took the action (self-play), or to the agent (with an opponent).
        """
        n = self.n
        reward = np.zeros(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        starting: list[np.ndarray] = []
        continuing = np.zeros(0, dtype=np.int64)
        ended: list[np.ndarray] = []

        if play_rows.size:
            actions = np.asarray(actions, dtype=np.int64)
            if self.action_mode == "turn":
                after = self.found.states[self.found.offsets[play_rows] + actions]
                done_rows = play_rows
            else:
                after, done_rows, continuing = self._checker_step(play_rows, actions)
            new, fin = self._end_turn(done_rows, after, reward, terminated, agent_moved=True)
            starting.append(new)
            ended.append(fin)

        if reset_rows.size:
            self._new_games(reset_rows, preset or {})
            starting.append(reset_rows)

        start = np.sort(np.concatenate(starting)) if starting else np.zeros(0, dtype=np.int64)
        if self.opponent is not None and start.size:
            mine = self.side[start] == self.agent[start]
            theirs = start[~mine]
            if theirs.size:
                new, fin = self._opponent_turn(theirs, reward, terminated)
                start = np.sort(np.concatenate([start[mine], new]))
                ended.append(fin)

        fin = np.sort(np.concatenate(ended)) if ended else np.zeros(0, dtype=np.int64)
        self._begin_turns(start, fin)
        if self.action_mode == "checker":
            self._refresh_options(np.union1d(start, continuing))
        return reward, terminated

    def _new_games(self, rows: np.ndarray, preset: dict) -> None:
        self.state[rows] = initial_states(rows.size)
        for r in rows:
            rng = self._rngs[r]
            if self.opponent is not None and self.agent_color is None:
                self.agent[r] = int(rng.integers(2))
            if int(r) in preset:
                state, side, dice = preset[int(r)]
                self.state[r] = state
                self.side[r] = side
                self.dice[r] = self._roll(np.array([r]))[0] if dice is None else dice
                continue
            first, dice = opening_roll(rng, 1, self.rules)
            self.side[r] = first[0]
            self.dice[r] = dice[0]
        self.over[rows] = False
        self.last_points[rows] = 0

    def _end_turn(self, rows, after, reward, terminated, agent_moved: bool):
        """Finish the turns of ``rows`` in ``after`` (mover's view); returns (new turns, finished)."""
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        if over.any():
            points = outcome(after[over]).astype(np.int64)
            sign = 1 if (agent_moved or self.opponent is None) else -1
            reward[rows[over]] += sign * points
            terminated[rows[over]] = True
            self.last_points[rows[over]] = points
        self.state[rows] = flip(after)
        self.side[rows] ^= 1
        self.over[rows] = over
        go_on = rows[~over]
        finished = rows[over]
        if go_on.size:
            self.dice[go_on] = self._roll(go_on)
        self.dice[finished] = 0
        return go_on, finished

    def _opponent_turn(self, rows, reward, terminated):
        found = _afterstates(self.state[rows], self.dice[rows], self.rules)
        # Read-only: an opponent (user code) that wrote into them would change the game.
        picks = choose_indices(self.opponent, self.state[rows].copy(), read_only(found), self.opponent_rng,
                               colors=self.side[rows].copy(), dice=self.dice[rows].copy())
        return self._end_turn(rows, found.states[picks], reward, terminated, agent_moved=False)

    def _begin_turns(self, rows: np.ndarray, finished: np.ndarray) -> None:
        """New afterstates for the games that begin a turn, placeholders for those just finished."""
        if rows.size == 0 and finished.size == 0:
            return
        self.left[rows] = dice_left(self.dice[rows])
        self.heads[rows] = 0
        self.left[finished] = 0
        self.heads[finished] = 0
        # One core call for both: seen by the winner (15 off, nothing on the
        # board) a finished game has exactly one result, itself, like a pass.
        if finished.size:
            both = np.concatenate([rows, finished])
            order = np.argsort(both, kind="stable")
            both = both[order]
            states = self.state[both]
            dice = self.dice[both]
            is_finished = order >= rows.size
            states[is_finished] = flip(states[is_finished])
            dice[is_finished] = 1
        else:
            both, states, dice = rows, self.state[rows], self.dice[rows]
            is_finished = np.zeros(rows.size, dtype=bool)
        found = _afterstates(states, dice, self.rules)
        if finished.size:
            found.states[found.offsets[:-1][is_finished]] = self.viewed_states(both[is_finished])
        if self.action_mode == "checker":
            self.first[rows] = self.state[rows, HEAD_INDEX] == NUM_CHECKERS
            self.played[rows] = 0
            self.need[both] = turn_need(found, dice) * ~is_finished
        self.found = _assemble(self.n, self.found, [(both, found)])
        if self.action_mode == "checker":
            self.targets = TurnTargets(self.found)

    # -- checker mode -----------------------------------------------------------

    def _checker_step(self, rows: np.ndarray, actions: np.ndarray):
        """Play one checker move per game; returns (finished plays, their rows, rows mid-turn)."""
        complete = play_checker_moves(rows, actions, self.options_results[rows, actions], self.state, self.left,
                                      self.heads, self.played, self.need)
        done = rows[complete]
        return self.state[done].copy(), done, rows[~complete]

    def _refresh_options(self, rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        assert self.targets is not None, "targets are set when a turn begins"
        opts = checker_options(
            self.state[rows], self.dice[rows], self.left[rows], self.heads[rows], self.first[rows],
            self.played[rows], self.need[rows], self.targets, rows, self.rules, validate=False,
        )
        self.options_mask[rows] = opts.mask
        self.options_results[rows] = opts.results

    # -- what the agent sees ----------------------------------------------------

    def viewers(self) -> np.ndarray:
        """The colour each game's observation is seen by: the side to move, or the agent."""
        return self.side if self.opponent is None else self.agent

    def viewed_states(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Positions of ``rows`` from their viewer's side."""
        states = self.state[rows]
        turned = self.side[rows] != self.viewers()[rows]
        if turned.any():
            states = states.copy()
            states[turned] = flip(states[turned])
        return states

    def observations(self) -> np.ndarray:
        """float32 ``[n, obs_size]``: the position, then dice left per face, then checkers off the head."""
        return observe(self.viewed_states(), self.left, self.heads, self.obs_mode)


def observe(states: np.ndarray, left: np.ndarray, heads: np.ndarray, obs_mode: str = "raw") -> np.ndarray:
    """The environments' observations of ``states`` (from their viewer's side), with ``left``
    single-die moves per face and ``heads`` checkers already off the head: float32 ``[n, obs_size]``."""
    n = states.shape[0]
    if obs_mode == "raw":
        # raw_positions, written straight into the observation (this runs every vector step).
        obs = np.empty((n, RAW_SIZE + _TURN_COLUMNS), dtype=np.float32)
        board = states[:, :NUM_POINTS]
        np.maximum(board, 0, out=obs[:, :NUM_POINTS], casting="unsafe")
        np.maximum(-board[:, _THEIR_POINTS], 0, out=obs[:, NUM_POINTS:2 * NUM_POINTS], casting="unsafe")
        obs[:, 2 * NUM_POINTS:RAW_SIZE] = states[:, OFF_MOVER:]
        position_size = RAW_SIZE
    else:
        position = features(raw_positions(states))
        position_size = position.shape[1]
        obs = np.empty((n, position_size + _TURN_COLUMNS), dtype=np.float32)
        obs[:, :position_size] = position
    obs[:, position_size:position_size + NUM_FACES] = left
    obs[:, -1] = heads
    return obs


class OpponentView:
    """The ``opponent`` and ``agent_color`` of an env whose games are ``self.batch`` (read-only)."""

    batch: GameBatch

    @property
    def opponent(self) -> Player | None:
        """The player of the other side as loaded (a name given to ``opponent=`` becomes its player
        object, a plain function a ``FunctionPlayer`` around it); None in self-play."""
        return self.batch.opponent

    @opponent.setter
    def opponent(self, value: Any) -> None:
        raise AttributeError("an env's opponent is set when it is made (opponent=); refresh the player in place "
                             "(load new weights into its network, or assign a CheckerPolicy's policy), or make "
                             "a new env")

    @property
    def agent_color(self) -> Color | None:
        """The agent's colour if fixed by ``agent_color=``; None: drawn per episode (or self-play)."""
        return self.batch.agent_color

"""``LongNardy-v0``: one game of Long Nardy as a Gymnasium environment."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .._runtime import NardyWarning
from ..core import MAX_RESULTS, Afterstates, _holds_bool, outcome
from ..notation import (
    Color,
    ColorLike,
    NPNError,
    parse_npn,
)
from ..players import PlayerSpec
from ..render import board_text
from ..rules import RulesLike, as_rules
from .checker import NUM_CHECKER_ACTIONS, NUM_FACES
from .games import (
    Action,
    ActionMode,
    GameBatch,
    ObsMode,
    OpponentView,
    as_action,
    as_seed,
    observation_bounds,
    resolve_color,
    resolve_opponent,
)

__all__ = ["LongNardyEnv", "GameOverError", "render_text"]


@contextlib.contextmanager
def failure_needs_reset(env: Any) -> Iterator[None]:
    """Around a step's or reset's turn-taking, which calls the opponent (user code): if anything
    raises there, the game may be left mid-turn, so the env refuses to go on until ``reset()``
    (saying why) rather than play on from a half-made turn."""
    try:
        yield
    except BaseException as exc:
        env._playable = False
        env._failure = f"{type(exc).__name__}: {exc}"
        exc.add_note(f"{type(env).__name__}: the game was left mid-turn; call reset() to start a new one")
        raise
    env._failure = None


def failure_note(env: Any) -> str:
    """Why the env needs a reset, when a failed step or reset is the reason."""
    failure = getattr(env, "_failure", None)
    return f" (the last step or reset failed mid-turn: {failure})" if failure else ""


class GameOverError(gym.error.ResetNeeded, RuntimeError):
    """``step()`` after the game ended, before ``reset()`` (a ``gymnasium.error.ResetNeeded``)."""


def render_text(batch: GameBatch, row: int) -> str:
    """The ``ansi`` picture of one game: board, pips, whose turn, dice (or the result)."""
    side = Color(int(batch.side[row]))
    state = batch.state[row]
    if batch.over[row]:
        winner = side.other
        points = int(batch.last_points[row])
        kind = "mars" if points == 2 else "oin"
        return board_text(state, side, caption=f"Game over: {winner.name.title()} wins, "
                                               f"{points} point{'s' if points > 1 else ''} ({kind})")
    text = board_text(state, side, [int(d) for d in batch.dice[row]])
    if batch.action_mode == "checker":
        left = [face + 1 for face in range(NUM_FACES) for _ in range(int(batch.left[row, face]))]
        text += f"; dice left: {' '.join(map(str, left)) or 'none'}"
    return text


def render_rgb(batch: GameBatch, row: int) -> np.ndarray:
    from ..render_rgb import board_image  # imported only when a picture is asked for

    over = bool(batch.over[row])
    side = Color(int(batch.side[row]))
    return board_image(
        batch.state[row],
        side,
        None if over else [int(d) for d in batch.dice[row]],
        dice_left=None if (over or batch.action_mode != "checker") else batch.left[row],
        winner=side.other if over else None,
        points=int(batch.last_points[row]) if over else 0,
    )


def _opponent_generator(dice: np.random.Generator) -> np.random.Generator:
    """The opponent's own generator, spawned from the dice generator's seed sequence: the dice it
    rolls are unchanged, it is reproducible whenever that generator is, and two envs given one
    generator get different children."""
    try:
        return dice.spawn(1)[0]
    except TypeError:  # a bit generator without a seed sequence: seeded from a copy's draw instead
        return np.random.default_rng(copy.deepcopy(dice).integers(0, 2**63, size=4))


def _named(option: str, row: int | None, parse: Callable[[], Any]) -> Any:
    """``parse()``, its error (of its own type: an NPNError stays one) saying which reset option it
    is about, and for a list of them which entry (``reset option "position"[700]: ...``)."""
    try:
        return parse()
    except ValueError as exc:
        where = f'reset option "{option}"{"" if row is None else f"[{row}]"}: '
        if isinstance(exc, NPNError):  # kept when pickled (from a worker process)
            exc._where = where
        exc.args = (where + str(exc),)
        raise


def _parse_position(position: Any) -> tuple[np.ndarray, Color]:
    state, side = parse_npn(position)
    if outcome(state) != 0:
        raise ValueError(f"the game of {position!r} is already over")
    return state, side


def _parse_dice(given: Any) -> np.ndarray | None:
    if given is None:
        return None
    dice = np.asarray(given)
    if (dice.shape != (2,) or dice.dtype.kind not in "iu" or (dice < 1).any() or (dice > 6).any()
            or _holds_bool(given)):  # [True, 2] reads as integers
        raise ValueError(f"dice must be two integers 1..6, got {given!r}"[:200])  # a flattened list runs long
    return dice.astype(np.int64)


_RESET_OPTIONS = ("position", "dice")


def opponent_ended_preset(position: Any) -> str:
    """The error of a ``reset(options=...)`` whose opponent won before the agent could move from
    ``position`` (an NPN; a list or array of one, as a single env may be given, is its NPN)."""
    if not isinstance(position, str) and np.ndim(position) == 1 and len(position) == 1:
        position = position[0]
    return (f"reset option \"position\" {str(position)!r}: the opponent moved first from it and its turn "
            "ended the game, so the episode would be over before it began; give a position where the "
            "agent moves first or the game goes on")


def start_presets(options: dict[str, Any] | None, n: int,
                  also_known: tuple[str, ...] = ()) -> dict[int, tuple] | None:
    """The games ``reset(options=...)`` asks for, by row, or None for the usual start.

    ``position``: one NPN for every game, or (``n > 1``) a list of ``n``;
    ``dice``: optional, one pair for every game or a list of ``n`` pairs.
    Unknown keys are rejected by name rather than ignored.
    """
    if options is None:
        return None
    if not isinstance(options, dict):  # an empty list or string too: it is no dict of options either
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    if not options:
        return None
    unknown = sorted(set(options) - set(_RESET_OPTIONS))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; known options are {list(_RESET_OPTIONS + also_known)}")
    if "position" not in options:
        raise ValueError('reset option "dice" needs a "position" to roll them in')
    positions: Any = options["position"]
    dice: Any = options.get("dice")
    if isinstance(positions, np.ndarray) and positions.ndim == 1:  # drawn with numpy for a curriculum
        positions = positions.tolist()
    if not isinstance(positions, str):
        if not isinstance(positions, list | tuple) or len(positions) != n:
            got = (f"a {type(positions).__name__} of {len(positions)}" if isinstance(positions, list | tuple)
                   else repr(positions)[:200])  # a list's entries could run to megabytes
            native = (" (a list with one for each sub-env is the native vector env's: gymnasium.make_vec(..., "
                      'vectorization_mode="vector_entry_point"); other vector envs hand each sub-env the same '
                      "options)" if n == 1 and isinstance(positions, list | tuple) and len(positions) > 1 else "")
            raise ValueError(f'reset option "position" must be an NPN string or a list of {n}, got {got}{native}')
    try:
        per_game_dice = dice is not None and np.ndim(dice) == 2
    except ValueError:  # numpy cannot make an array of rows of unequal lengths
        raise ValueError(f'reset option "dice" must be one pair or {n} pairs, got {dice!r}'[:200]) from None
    if per_game_dice and np.shape(dice)[0] != n:
        raise ValueError(f'reset option "dice" must be one pair or {n} pairs, got {np.shape(dice)[0]}')
    one_position = isinstance(positions, str)
    if one_position:
        state, side = _named("position", None, lambda: _parse_position(positions))
    if not per_game_dice:
        same_dice = _named("dice", None, lambda: _parse_dice(dice))
    presets = {}
    for i in range(n):
        if not one_position:
            state, side = _named("position", i, lambda: _parse_position(positions[i]))  # noqa: B023
        rolled = _named("dice", i, lambda: _parse_dice(dice[i])) if per_game_dice else same_dice  # noqa: B023
        presets[i] = (state, side, rolled)
    return presets


class LongNardyEnv(OpponentView, gym.Env[np.ndarray, Action]):
    """Long Nardy (long backgammon), one game per episode.

    Two players race 15 checkers each around the 24 points in the same
    direction; there is no hitting, a six-point block needs an opponent checker
    ahead of it, and the first to bear off all 15 wins one point (oin) or two
    (mars: the loser bore off none). The rules are those of ``RULES.md``; every
    position is seen from one side's view, as in the rules core.

    ## Action Space

    ``action_mode="turn"`` (default): ``Discrete(MAX_RESULTS)`` (3060). Action
    i plays the i-th afterstate of the turn, in the order of the rules core
    (``legal_afterstates``: afterstates sorted by their state rows); the legal
    actions are exactly ``0 .. n - 1`` for the n afterstates of the roll, which
    ``info["afterstates"]`` lists. A turn with no legal move has one afterstate,
    the unchanged position: action 0 passes.

    ``action_mode="checker"``: ``Discrete(145)``: ``(source - 1) * 6 + (die - 1)``
    moves one checker from the mover's personal point ``source`` (1..24, 24 is
    the head) by ``die``; action 144 passes and is legal only in a turn with no
    legal move. A move is allowed only if it begins some legal maximal play, so
    the turn always ends in one of turn mode's afterstates; it ends by itself
    once the play is complete. ``checker_action`` / ``checker_move`` convert.

    In both modes ``info["action_mask"]`` (int8) marks the legal actions; an
    illegal action raises ``IllegalActionError`` and changes nothing.

    ## Observation Space

    ``Box(float32)``, always from the view of ``info["player"]``:

    - ``obs_mode="raw"`` (default), 57 numbers: columns 0..49 the 50-number
      layout of FORMATS.md (my counts on my personal points 1..24, the
      opponent's on its personal points 1..24, my borne-off count, the
      opponent's); 50..55 the single-die moves still to play with each face
      1..6 (a fresh 6-5 gives a 1 under 5 and 6, a 3-3 gives a 4 under 3);
      56 the checkers that have left my head this turn (checker mode; 0 in
      turn mode).
    - ``obs_mode="features"``, 211 numbers: the TD features of the position
      (``nardy_env.encoding.features``, version ``nardy-features/1``, 204
      numbers), then the same 7 turn columns.

    Once the game is over the dice columns are 0.

    ## Rewards

    Without an opponent (self-play) the reward of a step goes to the side that
    took the action, ``info["player"]`` of the observation the action answered:
    +1 if the move won the game as oin, +2 as mars, 0 otherwise. Only the
    mover can end the game, so the loser's result is minus the last reward.
    With an ``opponent`` the reward is the agent's: +1/+2 when its move wins,
    -1/-2 when the opponent's move inside ``step()`` wins, 0 otherwise.

    ## Starting State

    The starting position; the opening roll (``nardy_env.game.opening_roll``)
    decides who moves first and with which dice. ``reset(options={"position":
    NPN, "dice": [d1, d2]})`` starts from any position instead (its side to
    move moves first; without ``"dice"`` the dice are rolled). With an
    opponent to move there, it plays its turn inside ``reset()``; if that turn
    ends the game, ``reset()`` raises ``ValueError`` (an episode cannot begin
    finished) and the env needs another ``reset()``.

    ## Episode End

    Terminated when a side has borne off all 15 checkers. Never truncated
    (wrap with ``TimeLimit`` for a step limit). ``step()`` after the end
    raises ``GameOverError`` until ``reset()``. At the end, the observation
    and ``info["player"]`` are those of the side that would move next (self-play)
    or the agent; the mask allows only action 0 (turn) or 144 (checker), a
    placeholder.

    ## Information

    ``player`` (``Color``: 0 white, 1 black) whose view the observation is
    and who acts next; ``dice`` (int64 [2], the roll of the current turn);
    ``action_mask``; in turn mode ``afterstates``: the core's ``Afterstates``
    of this one position (``.states[i]``, int8 [26], is what action i plays,
    from the player's view, core state layout; ``.moves[i]`` its single-die
    moves as personal points; ``.offsets == [0, n]``).

    ## Arguments

    - ``action_mode``: ``"turn"`` or ``"checker"``.
    - ``obs_mode``: ``"raw"`` or ``"features"``.
    - ``opponent``: None (self-play), a player name for ``load_player``
      (``"random"``, a bot, an exported policy folder), an object with
      ``choose(states, found, rng)``, or a plain function of those arguments.
      It plays whole turns inside ``reset()``/``step()``.
    - ``agent_color``: with an opponent, ``"white"``/``"black"``, or None for a
      random colour each episode.
    - ``rules``: a ``Rules`` object or a dict of variant keys (RULES.md).
    - ``render_mode``: ``"ansi"`` (text board), ``"rgb_array"`` (picture) or
      ``"human"`` (the text board printed to stdout after every ``reset()``
      and ``step()``; ``render()`` prints it too and returns None).

    ``action_masks()`` returns the legal actions as a bool array (the method
    sb3-contrib's ``MaskablePPO`` looks for); it equals ``info["action_mask"]``.

    ## Version History

    - v0: first version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(
        self,
        action_mode: ActionMode = "turn",
        obs_mode: ObsMode = "raw",
        opponent: PlayerSpec | None = None,
        agent_color: ColorLike | None = None,
        rules: RulesLike | None = None,
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.rules = as_rules(rules)
        self.render_mode = render_mode
        self.batch = GameBatch(
            1, self.rules, action_mode, obs_mode,
            resolve_opponent(opponent, self.rules), resolve_color(agent_color),
        )
        self.action_mode = action_mode
        self.obs_mode = obs_mode
        self.action_space = spaces.Discrete(MAX_RESULTS if action_mode == "turn" else NUM_CHECKER_ACTIONS)
        low, high = observation_bounds(obs_mode)
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self._started = False  # generators set up (by the first reset or a seed)
        self._playable = False  # a game in progress or just ended: reset() succeeded

    def _result(self) -> tuple[np.ndarray, dict[str, Any]]:
        b = self.batch
        info: dict[str, Any] = {
            "player": Color(int(b.viewers()[0])),
            "dice": b.dice[0].copy(),
            "action_mask": b.action_mask()[0],
        }
        if self.action_mode == "turn":
            f = b.found
            info["afterstates"] = Afterstates(
                f.states.copy(), f.moves.copy(), f.num_moves.copy(), f.offsets.copy()
            )
        return b.observations()[0], info

    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator (Gymnasium's): it rolls the dice, the opening and the agent's colour."""
        return gym.Env.np_random.fget(self)  # type: ignore[attr-defined]

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        # A generator assigned by hand rolls from the next roll on, as Gymnasium's envs draw from it.
        if not isinstance(value, np.random.Generator):
            raise TypeError(f"np_random must be a numpy Generator (np.random.default_rng(seed)), "
                            f"got {type(value).__name__}")
        gym.Env.np_random.fset(self, value)  # type: ignore[attr-defined]
        if getattr(self, "_started", False):
            self.batch.set_generator(0, value)
            self.batch.opponent_rng = _opponent_generator(value)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        preset = start_presets(options, 1)  # bad options change nothing
        seed = as_seed(seed)
        super().reset(seed=seed)
        b = self.batch
        if seed is not None or not self._started:
            b.set_generator(0, self.np_random)
            # Without a seed, from the env's generator: one assigned to np_random seeds the opponent too.
            b.opponent_rng = np.random.default_rng([seed, 1]) if seed is not None else _opponent_generator(self.np_random)
        self._started = True
        self._playable = False  # until the new game stands (an opponent that raises leaves none)
        with failure_needs_reset(self):
            _, terminated = b.advance(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                      np.zeros(1, dtype=np.int64), preset)
        self._playable = not terminated[0]
        if terminated[0]:
            raise ValueError(opponent_ended_preset((options or {})["position"]))
        if self.render_mode == "human":
            self.render()
        return self._result()

    def action_masks(self) -> np.ndarray:
        """bool ``[n_actions]``: the legal actions now (``info["action_mask"]`` as bools)."""
        if not self._playable:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self.batch.action_mask()[0].astype(bool)

    def step(self, action: Action | np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._playable:
            raise gym.error.ResetNeeded(f"call reset() before step(){failure_note(self)}")
        b = self.batch
        if b.over[0]:
            raise GameOverError("the game is over: call reset() to start a new one")
        a = as_action(action)
        rows = np.zeros(1, dtype=np.int64)
        acts = np.array([a], dtype=np.int64)
        b.check(rows, acts, "LongNardy-v0")
        with failure_needs_reset(self):
            reward, terminated = b.advance(rows, acts, np.zeros(0, dtype=np.int64))
        if self.render_mode == "human":
            self.render()
        obs, info = self._result()
        return obs, float(reward[0]), bool(terminated[0]), False, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn('call gymnasium.make("LongNardy-v0", render_mode="ansi" or "rgb_array") to render',
                            category=NardyWarning)
            return None
        if not self._playable:
            raise gym.error.ResetNeeded("call reset() before render()")
        if self.render_mode == "ansi":
            return render_text(self.batch, 0)
        if self.render_mode == "human":
            print(render_text(self.batch, 0), flush=True)
            return None
        return render_rgb(self.batch, 0)

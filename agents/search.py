"""Players that score afterstates with an outcome network, with optional lookahead.

Ply numbering follows gnubg: **0-ply** is the network's value of each
afterstate; **1-ply** averages, over the opponent's 21 rolls, the value after
the opponent's best reply chosen at 0-ply; **n-ply** averages over the
opponent's rolls the value after its best reply chosen at (n-1)-ply. At every
level deeper than 0, a move filter first ranks the candidates at 0-ply and
searches only the best ``filter_k`` of them (the rest keep their 0-ply rank
below every searched one).

Values are cubeless equities in points from the view of the side that has
just moved: terminal afterstates get their exact points (+1 oin, +2 mars).
Any evaluator with ``outcomes(raw) -> [N, 4]`` works: the torch network or an
exported ONNX policy.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from nardy_env import Afterstates, NardyWarning, Rules, RulesMismatchWarning, flip, legal_afterstates, outcome
from nardy_env.core import is_whole, validate_states
from nardy_env.encoding import raw_positions
from nardy_env.game import ROLL_WEIGHTS, ROLLS
from nardy_env.notation import results_rank
from nardy_env.players import check_batch
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules

from .common import EQUITY_WEIGHTS, SWAP, outcome_one_hot, segment_argmax, segment_max

__all__ = ["Evaluator", "SearchPlayer", "MAX_PLY", "ROLLS", "ROLL_WEIGHTS", "EQUITY", "UNSEARCHED", "searched", "rules_to_play"]

EQUITY = np.array(EQUITY_WEIGHTS)
"""Points of [win, win mars, lose, lose mars]."""
UNSEARCHED = -1e6
"""What ``SearchPlayer.evaluate`` adds to the 0-ply equity of a candidate the move filter left
out, so that it ranks below every searched one (equities lie in [-2, 2]); ``searched`` tells them apart."""


def searched(values: np.ndarray) -> np.ndarray:
    """Which of ``SearchPlayer.evaluate``'s values are searched equities, not filtered-out ranks."""
    return np.asarray(values) > UNSEARCHED / 2


class Evaluator(Protocol):
    """Outcome probabilities of raw positions (FORMATS.md layout).

    An evaluator may also have ``equity(raw) -> float32 [N]`` (the torch network
    and exported policies do); 0-ply values then come from it, exactly as a
    frontend reads the exported graph's ``equity`` output. And, with ``equity``, ``run(raw)
    -> (outcomes, equity)``, both from one pass (both have it): a search that wants the
    probabilities too (``SearchPlayer.outcomes``, ``nardy hint``) then calls it once (a
    ``run`` that gives anything else is refused with TypeError).
    """

    def outcomes(self, raw: np.ndarray) -> np.ndarray:
        """float32 ``[N, 50]`` -> float ``[N, 4]`` probabilities summing to 1."""
        ...


def rules_to_play(source: object, trained: Rules, asked: RulesLike | None) -> Rules:
    """The rules a network player plays under: those asked for, else those it was trained
    under; a warning when the two differ (the player never learnt the rules it plays)."""
    if asked is None:
        return trained
    asked = as_rules(asked)
    if asked != trained:
        was, now = trained.differences(asked)
        warnings.warn(f"{source} was trained under rules with {was}; it plays here with {now}, which it never "
                      f"learnt (to play it under its own rules: leave --rules out on the command line; in "
                      f"Python, give the game its rules, rules= to the env, evaluate() or load_player(); "
                      f"load_player(name, None) loads it under them)",
                      category=RulesMismatchWarning, stacklevel=3)
    return asked


def _terminal_equity(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(is over, exact equity for the mover) of mover's-view afterstates."""
    points = outcome(states)  # an afterstate is never lost by its mover
    return points != 0, points.astype(np.float64)


def _both_outputs(pair: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """An evaluator's ``run(raw)``, checked to be what ``Evaluator`` says: (outcomes ``[n, 4]``,
    equity ``[n]``); a ``run`` of another meaning is named rather than read as those."""
    shapes = [np.shape(part) for part in pair] if isinstance(pair, tuple | list) else []
    if shapes != [(n, 4), (n,)]:
        got = f"shapes {shapes}" if shapes else type(pair).__name__
        raise TypeError(f"the evaluator's run(raw) must give (outcomes [N, 4], equity [N]) for N = {n} positions "
                        f"(agents.search.Evaluator), got {got}: a search that wants outcome probabilities calls "
                        "run beside equity; give a run of another meaning another name")
    return np.asarray(pair[0]), np.asarray(pair[1])


def _finished_outcomes(states: np.ndarray, over: np.ndarray) -> np.ndarray:
    """``[B, 4]`` probabilities with the finished rows' exact outcome filled in (the rest 0)."""
    probs = np.zeros((states.shape[0], 4))
    probs[over] = outcome_one_hot(states[over])
    return probs


def _row_sums(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``values @ weights``, each row summed in the same order whatever the batch: a BLAS
    product rounds a row by where it stands in the matrix (1.0 or 1.0000000000000002 for the
    same 21 values), and an exact tie must stay one so the tie-break, not the batch, decides."""
    total = values[:, 0] * weights[0]
    for j in range(1, weights.shape[0]):
        total = total + values[:, j] * weights[j]
    return total


DEEP_LEAVES = 2048
"""Search at 2-ply or more takes ``batch // DEEP_LEAVES`` states at a time (32 with the default
batch): a state's 2-ply search reaches some 40,000 positions, so a group holds about 20 batches'
worth, however many positions a call brings: a 2-ply search then peaks some 450 MB above a
0-ply player (the replies' moves and orders, the network's working memory; measured on
2026-12-03), up to about 720 MB for the whole ``nardy hint --ply 2`` process."""


MAX_PLY = 5
"""The deepest search a player makes: each ply beyond 2 costs about 100 times more (2-ply about
0.4 s a move on 2 cores, 5-ply days, 6-ply more than a year)."""

_PLY_COST = {3: "a minute or so", 4: "about an hour", 5: "days"}


def _check_ply(ply: Any) -> None:
    if not is_whole(ply):
        raise ValueError(f"ply must be a whole number from 0 to {MAX_PLY}, got {ply!r}")
    if ply > MAX_PLY:
        raise ValueError(f"ply must be a whole number from 0 to {MAX_PLY} (each ply beyond 2 costs about 100 "
                         f"times more: {MAX_PLY}-ply takes {_PLY_COST[MAX_PLY]} a move), got {ply!r}")


def _warn_cost(ply: int, stacklevel: int) -> None:
    if ply >= 3:
        warnings.warn(f"{ply}-ply search multiplies the cost of 2-ply (about 160,000 positions and "
                      f"0.4 s a move on 2 cores) by about 100 per ply beyond 2: expect "
                      f"{_PLY_COST[ply]} a move", category=NardyWarning, stacklevel=stacklevel)


class SearchPlayer:
    """Plays the afterstate with the highest n-ply equity.

    ``evaluator``: the network (anything with ``outcomes(raw)``); ``ply``: the search depth
    (above); ``rules``: the rules its look-ahead follows; ``filter_k``: the candidates searched
    beyond 0-ply, the best by 0-ply; ``name``: how reports name it (``@ply`` appended beyond 0);
    ``batch``: positions per forward pass.

    ``trained_under``: the rules its network was trained under, where known (a player loaded
    from a checkpoint or an export; None for one built by hand): played under others, it
    warns (``nardy_env.players.load_player``).
    """

    trained_under: Rules | None = None

    runs_your_code = True
    """What fails inside it is the network it was given (a checkpoint's weights, an exported graph,
    your evaluator) as much as nardy's search: a failure mid-match names it in one line
    (``nardy_env.players.PlayerFailed``), not as a bug of nardy's."""

    def __init__(self, evaluator: Evaluator, ply: int = 0, rules: RulesLike | None = DEFAULT_RULES,
                 filter_k: int = 5, name: str = "td", batch: int = 65536) -> None:
        _check_ply(ply)
        self.filter_k = filter_k  # checked by its setter
        if not is_whole(batch, 1):
            raise ValueError(f"batch must be a whole number, 1 or more (positions per forward pass), got {batch!r}")
        _warn_cost(ply, stacklevel=3)
        if not callable(getattr(evaluator, "outcomes", None)):
            raise TypeError(f"SearchPlayer needs an evaluator with outcomes(raw) -> [N, 4] probabilities, got "
                            f"{type(evaluator).__name__}: for a TDNetwork, SearchPlayer(TorchEvaluator(network)) "
                            "from agents; for a player name, agents.load_player(name)")
        self.evaluator = evaluator
        self._ply = int(ply)  # checked and warned about above
        self.rules = as_rules(rules)
        self.name = name if ply == 0 else f"{name}@{ply}"
        self.batch = int(batch)
        self.evaluations = 0  # positions sent to the evaluator, for cost reports

    @property
    def ply(self) -> int:
        """The search depth, 0 to ``MAX_PLY`` (its name keeps the depth it was made with)."""
        return self._ply

    @ply.setter
    def ply(self, value: int) -> None:
        _check_ply(value)
        _warn_cost(value, stacklevel=3)
        self._ply = int(value)

    @property
    def filter_k(self) -> int:
        """The move filter: beyond 0-ply, the candidates searched at each level (the best by 0-ply);
        may be changed between decisions (``nardy hint --filter K`` does)."""
        return self._filter_k

    @filter_k.setter
    def filter_k(self, value: int) -> None:
        if not is_whole(value, 1):
            raise ValueError(f"filter_k must be a whole number, 1 or more (the candidates searched beyond 0-ply), "
                             f"got {value!r}")
        self._filter_k = int(value)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, ply={self.ply}, filter_k={self.filter_k}, "
                f"rules={self.rules.to_json()})")

    def static_equity(self, states: npt.ArrayLike) -> np.ndarray:
        """0-ply equity of mover's-view afterstates ``[B, 26]`` (a row: a batch of one), for the
        side that has just moved; StateError if a row is not a position."""
        return self._leaves(validate_states(states), False)[0]

    def equity(self, states: npt.ArrayLike, ply: int | None = None) -> np.ndarray:
        """n-ply equity of mover's-view afterstates ``[B, 26]`` (default: this player's ply), for
        the side that has just moved; StateError if a row is not a position."""
        if ply is not None:
            _check_ply(ply)
        return self._search(validate_states(states), self.ply if ply is None else int(ply), False)[0]

    def outcomes(self, states: npt.ArrayLike, ply: int | None = None) -> np.ndarray:
        """n-ply outcome probabilities ``[B, 4]`` (``OUTCOMES`` order: win, win mars, lose, lose
        mars) of mover's-view afterstates ``[B, 26]`` (default: this player's ply), for the side that
        has just moved; StateError if a row is not a position. At 0-ply the network's (exact for a
        finished game); beyond, the average over the opponent's 21 rolls of the probabilities after
        the reply the search picks for it, each at one ply less. They add up to the n-ply equity:
        ``outcomes(s, n) @ EQUITY`` is ``equity(s, n)`` up to rounding."""
        if ply is not None:
            _check_ply(ply)
        probs = self._search(validate_states(states), self.ply if ply is None else int(ply), True)[1]
        assert probs is not None
        return probs

    def equity_on_roll(self, states: npt.ArrayLike, ply: int | None = None) -> np.ndarray:
        """Equity of mover's-view positions ``[B, 26]`` for the side to roll, before its roll: the
        n-ply value (default: this player's ply) of the position as the opponent's afterstate,
        negated. At 1-ply and deeper it averages over the side's 21 rolls."""
        return -self.equity(flip(validate_states(states)), ply)

    def _leaves(self, states: np.ndarray, want: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """0-ply (equities, and with ``want`` the outcome probabilities) of afterstates."""
        over, exact = _terminal_equity(states)
        value = exact.copy()
        probs = _finished_outcomes(states, over) if want else None
        live = np.flatnonzero(~over)
        equity_of = getattr(self.evaluator, "equity", None)
        run = getattr(self.evaluator, "run", None) if want and equity_of is not None else None
        run = run if callable(run) else None
        for start in range(0, live.size, self.batch):
            rows = live[start:start + self.batch]
            raw = raw_positions(states[rows])
            self.evaluations += rows.size
            # The equity as the exported graph computes it, in float32, so that exact
            # ties (saturated outputs) fall as they do for a frontend (FORMATS.md).
            found_probs: np.ndarray | None = None
            if run is not None:  # both outputs of one pass (exported policies, the torch network)
                found_probs, equity = _both_outputs(run(raw), rows.size)
            elif equity_of is not None:
                if want:
                    found_probs = self.evaluator.outcomes(raw)
                equity = equity_of(raw)
            else:
                found_probs = self.evaluator.outcomes(raw)
                equity = _row_sums(np.asarray(found_probs, dtype=np.float32), EQUITY.astype(np.float32))
            value[rows] = np.asarray(equity, dtype=np.float32)
            if probs is not None:
                probs[rows] = found_probs
        return value, probs

    def _search(self, states: np.ndarray, ply: int, want: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """n-ply (equities, and with ``want`` the outcome probabilities) of afterstates."""
        if ply == 0:
            return self._leaves(states, want)
        over, exact = _terminal_equity(states)
        value = exact.copy()
        probs = _finished_outcomes(states, over) if want else None
        live = np.flatnonzero(~over)
        if live.size == 0:
            return value, probs
        step = max(1, self.batch // DEEP_LEAVES)
        if ply >= 2 and live.size > step:
            # All states' replies to replies at once would hold tens of millions of positions
            # (about 70 bytes each: 3 GB for a match's batch of 100 positions at 2-ply): a few
            # states at a time instead, each about DEEP_LEAVES / 20 leaves' worth of a batch.
            for start in range(0, live.size, step):
                rows = live[start:start + step]
                value[rows], part = self._search(states[rows], ply, want)
                if probs is not None:
                    probs[rows] = part
            return value, probs
        opponent = flip(states[live])
        n = opponent.shape[0]
        positions = np.repeat(opponent, len(ROLLS), axis=0)
        dice = np.tile(ROLLS, (n, 1))
        replies = legal_afterstates(positions, dice, self.rules, validate=False)
        reply_value, reply_probs = self._ranked(replies, ply - 1, want)
        best = segment_max(reply_value, replies.offsets).reshape(n, len(ROLLS))
        value[live] = -_row_sums(best, ROLL_WEIGHTS)
        if probs is not None and reply_probs is not None:
            # The reply the maximum picks (the earliest of equal ones), its probabilities seen from here.
            pick = replies.offsets[:-1] + segment_argmax(reply_value, replies.offsets)
            seen = reply_probs[pick][:, SWAP].reshape(n, len(ROLLS), 4)
            probs[live] = np.einsum("nrk,r->nk", seen, ROLL_WEIGHTS)
        return value, probs

    def _ranked(self, found: Afterstates, ply: int, want: bool,
                tie_rank: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Values of every afterstate in ``found`` for choosing among them at ``ply`` (and with
        ``want`` their probabilities: at ``ply`` where searched, at 0-ply where not).

        Beyond 0-ply only the best ``filter_k`` per position (by 0-ply) are
        searched; the others get a value below every searched one. Exact 0-ply
        ties at the filter's edge go to the smaller ``tie_rank`` (default: the
        core's order).
        """
        static, probs = self._leaves(found.states, want)
        if ply == 0:
            return static, probs
        counts = found.counts()
        seg = np.repeat(np.arange(counts.size), counts)
        # Rank within each position by 0-ply equity, best first, ties by tie_rank.
        order = np.lexsort((np.arange(static.size) if tie_rank is None else tie_rank, -static, seg))
        rank = np.empty(static.size, dtype=np.int64)
        rank[order] = np.arange(static.size) - np.repeat(found.offsets[:-1], counts)
        keep = rank < self.filter_k
        value = np.full(static.size, -np.inf)
        value[keep], kept_probs = self._search(found.states[keep], ply, want)
        if probs is not None:
            probs[keep] = kept_probs
        # Unsearched candidates keep their 0-ply order, below all searched ones.
        value[~keep] = UNSEARCHED + static[~keep]
        return value, probs

    def evaluate(self, found: Afterstates, tie_rank: np.ndarray | None = None) -> np.ndarray:
        """This player's value of every afterstate, for ranking them.

        Beyond 0-ply only the best ``filter_k`` of each position (by 0-ply) are searched; each
        other one gets its 0-ply equity plus ``UNSEARCHED`` (-1e6), so it ranks below every searched
        one in its 0-ply order (``searched(values)`` tells them apart). Those values are ranks, not equities: ``equity(states, ply)`` searches every
        row, and ``static_equity`` gives the 0-ply equity (``nardy hint`` shows the latter for
        the plays the filter leaves out)."""
        return self._ranked(found, self.ply, False, tie_rank)[0]

    def evaluate_with_outcomes(self, found: Afterstates,
                               tie_rank: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``evaluate``'s values (the same numbers) and, from the same search, the outcome
        probabilities ``[N, 4]`` behind each: at this player's ply where searched (they add up to the
        value), at 0-ply for the candidates the move filter left out. ``nardy hint`` shows both."""
        values, probs = self._ranked(found, self.ply, True, tie_rank)
        assert probs is not None
        return values, probs

    def choose(self, states: np.ndarray, found: Afterstates, rng: np.random.Generator,
               colors: np.ndarray | None = None) -> np.ndarray:
        """The afterstate of highest equity at this player's ply for each position (``Player``); exact
        ties go by ``colors`` as FORMATS.md says, else to the earliest in the core's order."""
        check_batch(states, found)
        ties = None if colors is None else results_rank(found.states, colors, found.offsets)
        return segment_argmax(self.evaluate(found, ties), found.offsets, ties)

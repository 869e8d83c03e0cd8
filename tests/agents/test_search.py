"""Search: 0-ply, 1-ply and 2-ply values against explicit computations."""

from __future__ import annotations

import numpy as np
import pytest

from agents.search import EQUITY, ROLL_WEIGHTS, ROLLS, SearchPlayer, searched
from nardy_env import NardyWarning, flip, legal_afterstates, parse_npn
from nardy_env.encoding import raw_positions
from tests.helpers import npn


class LinearEvaluator:
    """A fixed random softmax-linear evaluator: deterministic and cheap."""

    def __init__(self, seed: int = 0) -> None:
        self.w = np.random.default_rng(seed).normal(0, 0.2, size=(50, 4))

    def outcomes(self, raw: np.ndarray) -> np.ndarray:
        z = raw @ self.w
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)


# A bearing-off race keeps the explicit recursion small.
RACE = npn({6: 2, 5: 2, 3: 1}, {18: 2, 17: 1, 15: 2}, off=(10, 10))


def afterstates(position: str, dice):
    state, _ = parse_npn(position)
    return legal_afterstates(state[None], np.array([dice]))


def static(ev, states):
    out = np.zeros(len(states))
    for k, s in enumerate(states):
        if s[24] == 15:
            out[k] = 2.0 if s[25] == 0 else 1.0
        else:
            out[k] = ev.outcomes(raw_positions(s[None]))[0] @ EQUITY
    return out


def explicit_value(ev, state, ply):
    """Plain recursion: minus the roll-average of the opponent's best reply at ply - 1."""
    if state[24] == 15:
        return 2.0 if state[25] == 0 else 1.0
    if ply == 0:
        return float(ev.outcomes(raw_positions(state[None]))[0] @ EQUITY)
    total = 0.0
    for roll, weight in zip(ROLLS, ROLL_WEIGHTS, strict=True):
        replies = legal_afterstates(flip(state)[None], roll[None])
        total += weight * max(explicit_value(ev, r, ply - 1) for r in replies.states)
    return -total


def test_zero_ply_is_the_evaluator_equity():
    ev = LinearEvaluator()
    found = afterstates(RACE, [5, 3])
    player = SearchPlayer(ev, ply=0)
    assert np.allclose(player.equity(found.states), static(ev, found.states))


def test_one_ply_value_equals_the_explicit_average_over_21_rolls():
    ev = LinearEvaluator(1)
    found = afterstates(RACE, [4, 1])
    player = SearchPlayer(ev, ply=1)
    got = player.equity(found.states)
    want = [explicit_value(ev, s, 1) for s in found.states]
    assert np.allclose(got, want)


def test_two_ply_without_filtering_equals_the_explicit_recursion():
    ev = LinearEvaluator(2)
    position = npn({3: 1, 2: 1}, {16: 1, 14: 1}, off=(13, 13))
    found = afterstates(position, [1, 1])
    player = SearchPlayer(ev, ply=2, filter_k=1000)
    got = player.equity(found.states)
    want = [explicit_value(ev, s, 2) for s in found.states]
    assert np.allclose(got, want)


def explicit_outcomes(ev, state, ply):
    """Plain recursion: the roll-average of the opponent's best reply's outcomes (at ply - 1), seen from here."""
    if state[24] == 15:
        return np.array([0.0, 1.0, 0.0, 0.0]) if state[25] == 0 else np.array([1.0, 0.0, 0.0, 0.0])
    if ply == 0:
        return ev.outcomes(raw_positions(state[None]))[0]
    total = np.zeros(4)
    for roll, weight in zip(ROLLS, ROLL_WEIGHTS, strict=True):
        replies = legal_afterstates(flip(state)[None], roll[None]).states
        best = replies[int(np.argmax([explicit_value(ev, r, ply - 1) for r in replies]))]
        total += weight * explicit_outcomes(ev, best, ply - 1)[[2, 3, 0, 1]]
    return total


@pytest.mark.parametrize("ply", [0, 1, 2])
def test_searched_outcomes_are_the_roll_average_after_the_chosen_reply_and_add_up_to_the_equity(ply):
    ev = LinearEvaluator(3)
    position = npn({3: 1, 2: 1}, {16: 1, 14: 1}, off=(13, 13))  # small enough for the plain recursion at 2-ply
    found = afterstates(position, [2, 1])
    player = SearchPlayer(ev, ply=ply, filter_k=1000)
    got = player.outcomes(found.states)
    want = [explicit_outcomes(ev, s, ply) for s in found.states]
    assert np.allclose(got, want, atol=1e-12)
    assert np.allclose(got.sum(axis=1), 1.0) and (got >= 0).all()
    assert np.allclose(got @ EQUITY, player.equity(found.states), atol=1e-6)
    if ply:  # the search changes them: a test that compared 0-ply numbers with themselves would pass anyway
        assert not np.allclose(got, player.outcomes(found.states, 0), atol=1e-3)


def test_searched_outcomes_follow_the_move_filter_and_finished_games():
    ev = LinearEvaluator(4)
    found = afterstates(RACE, [3, 1])
    player = SearchPlayer(ev, ply=2)  # the filter keeps 5 replies at every level
    assert np.allclose(player.outcomes(found.states) @ EQUITY, player.equity(found.states), atol=1e-6)
    mars = afterstates(npn({1: 1}, {13: 15}, off=(14, 0)), [6, 5]).states
    oin = afterstates(npn({1: 1}, {13: 14}, off=(14, 1)), [6, 5]).states
    assert player.outcomes(np.concatenate([mars, oin])).tolist() == [[0, 1, 0, 0], [1, 0, 0, 0]]
    lost = flip(np.concatenate([mars, oin]))  # no afterstate, but a position: the probabilities match the equity
    assert player.outcomes(lost).tolist() == [[0, 0, 0, 1], [0, 0, 1, 0]]
    assert player.equity(lost).tolist() == [-2.0, -1.0]
    with pytest.raises(ValueError, match="ply must be a whole number"):
        player.outcomes(found.states, ply=1.5)


def test_terminal_afterstates_get_exact_points():
    ev = LinearEvaluator()
    found = afterstates(npn({1: 1}, {13: 15}, off=(14, 0)), [6, 5])
    assert SearchPlayer(ev, ply=1).equity(found.states).tolist() == [2.0]
    found = afterstates(npn({1: 1}, {13: 14}, off=(14, 1)), [6, 5])
    assert SearchPlayer(ev, ply=2).equity(found.states).tolist() == [1.0]


def test_move_filter_searches_only_the_best_candidates():
    ev = LinearEvaluator(3)
    found = afterstates(RACE, [2, 1])
    assert found.counts()[0] > 2
    player = SearchPlayer(ev, ply=1, filter_k=2)
    values = player.evaluate(found)
    deep = searched(values)
    assert deep.sum() == 2
    best_static = np.argsort(-static(ev, found.states), kind="stable")[:2]
    assert set(np.flatnonzero(deep)) == set(best_static.tolist())


def test_search_player_plays_its_best_value():
    # Seven candidates; the best at 1-ply (the explicit recursion's) is not the best at 0-ply.
    ev = LinearEvaluator(4)
    found = afterstates(RACE, [4, 1])
    want = [explicit_value(ev, s, 1) for s in found.states]
    assert len(want) == 7 and np.argmax(want) != np.argmax(static(ev, found.states))
    player = SearchPlayer(ev, ply=1)
    pick = int(player.choose(None, found, np.random.default_rng(0))[0])
    assert pick == int(np.argmax(want))


def test_negative_ply_is_rejected():
    with pytest.raises(ValueError, match="ply"):
        SearchPlayer(LinearEvaluator(), ply=-1)


def test_a_network_or_nothing_given_as_the_evaluator_is_refused_with_the_wrapper_to_use():
    import torch

    from agents.network import TDNetwork
    from agents.td import TorchEvaluator

    for bad in (TDNetwork((8,)), None, "default"):  # each once failed only later, deep in a game
        with pytest.raises(TypeError, match=r"outcomes\(raw\).*SearchPlayer\(TorchEvaluator\(network\)\)"):
            SearchPlayer(bad)  # type: ignore[arg-type]
    for bad in (None, torch.nn.Linear(50, 4)):
        with pytest.raises(TypeError, match="TorchEvaluator scores with a TDNetwork"):
            TorchEvaluator(bad)  # type: ignore[arg-type]


def test_a_search_depth_that_is_no_whole_number_is_refused_not_recursed_forever():
    import torch

    from agents.network import TDNetwork
    from agents.td import TorchEvaluator
    from nardy_env import initial_states

    torch.manual_seed(0)
    player = SearchPlayer(TorchEvaluator(TDNetwork((4,))))
    states = initial_states(1)
    for bad in (-1, 1.5, True, 6):
        with pytest.raises(ValueError, match="ply must be a whole number from 0 to 5"):
            player.equity(states, ply=bad)
        with pytest.raises(ValueError, match="ply must be a whole number from 0 to 5"):
            player.ply = bad  # set afterwards, checked as when made (10**12 ran for ever)
    with pytest.raises(ValueError, match=r"from 0 to 5 \(each ply beyond 2 costs about 100 times more: 5-ply takes days"):
        SearchPlayer(TorchEvaluator(TDNetwork((4,))), ply=10**12)
    player.ply = np.int64(1)
    assert player.ply == 1 and type(player.ply) is int
    with pytest.warns(NardyWarning, match="expect days a move"):
        deepest = SearchPlayer(TorchEvaluator(TDNetwork((4,))), ply=5)  # the deepest is taken, with its warning
    assert deepest.ply == 5
    with pytest.warns(NardyWarning, match="expect about an hour a move") as said:
        player.ply = 4  # set later, warned about as when made
    assert said[0].filename == __file__
    assert np.isfinite(player.equity(states, ply=np.int64(0))).all()


def test_a_batch_size_that_would_leave_positions_unscored_is_refused():
    from agents.network import TDNetwork
    from agents.td import TorchEvaluator
    from nardy_env import initial_states, legal_afterstates

    evaluator = TorchEvaluator(TDNetwork((4,)))
    found = legal_afterstates(initial_states(1), [[3, 3]])
    for bad in (-1, 0, 2.0, True):  # -1 once scored every position 0: an empty loop
        with pytest.raises(ValueError, match="batch must be a whole number, 1 or more"):
            SearchPlayer(evaluator, batch=bad)
    one_at_a_time = SearchPlayer(evaluator, batch=1).static_equity(found.states)
    assert np.allclose(one_at_a_time, SearchPlayer(evaluator).static_equity(found.states), atol=1e-6)
    assert (one_at_a_time != 0).all()


def test_colours_for_the_tie_break_are_checked():
    from agents.network import TDNetwork
    from agents.td import TorchEvaluator
    from nardy_env import Color, initial_states, legal_afterstates
    from nardy_env.notation import results_rank

    found = legal_afterstates(initial_states(2), [[3, 3], [6, 5]])
    player = SearchPlayer(TorchEvaluator(TDNetwork((4,))))
    rng = np.random.default_rng(0)
    assert (player.choose(initial_states(2), found, rng, colors=[Color.WHITE, Color.BLACK])
            == player.choose(initial_states(2), found, rng, colors=np.array([0, 1]))).all()
    assert (results_rank(found.states, Color.BLACK, found.offsets)
            == results_rank(found.states, [1, 1], found.offsets)).all()  # one Color for all
    for bad in ([0], [2, 0], ["b", "w"], [0.5, 1.0], [True, False]):
        with pytest.raises(ValueError, match=r"movers must be one Color \(0 white, 1 black\) or one per position"):
            player.choose(initial_states(2), found, rng, colors=bad)


def test_deep_search_takes_a_few_states_at_a_time_with_the_same_values(monkeypatch):
    """2-ply over many states at once listed every reply to every reply together (3 GB for a
    match's 100 positions); it goes in groups of batch // DEEP_LEAVES states, values unchanged."""
    import agents.search as search

    sizes = []
    generate = search.legal_afterstates

    def counted(positions, dice, *args, **kwargs):
        sizes.append(len(positions))
        return generate(positions, dice, *args, **kwargs)

    monkeypatch.setattr(search, "legal_afterstates", counted)
    ev = LinearEvaluator(5)
    found = afterstates(RACE, [2, 1])
    whole = SearchPlayer(ev, ply=2, batch=10**9).equity(found.states)
    biggest_whole = max(sizes)
    sizes.clear()
    grouped = SearchPlayer(ev, ply=2, batch=2 * search.DEEP_LEAVES).equity(found.states)  # 2 states a group
    assert len(found.states) > 2 and np.allclose(grouped, whole)
    assert max(sizes) < biggest_whole / 2


def test_public_values_check_their_positions_and_take_a_row_or_lists():
    player = SearchPlayer(LinearEvaluator())
    found = afterstates(RACE, [6, 5])
    want = player.static_equity(found.states)
    assert np.allclose(player.static_equity(found.states[0]), want[:1], atol=1e-6)  # BLAS: batch-size rounding
    assert np.allclose(player.static_equity(found.states.tolist()), want, atol=1e-6)
    assert np.allclose(player.equity(found.states[0], ply=1), player.equity(found.states[:1], ply=1), atol=1e-6)
    broken = found.states.copy()
    broken[0, 0] += 9  # 9 checkers more than a side has
    for value in (player.static_equity, player.equity, player.equity_on_roll):
        with pytest.raises(ValueError, match="state 0: the mover has .* checkers"):
            value(broken)


def test_equity_on_roll_is_minus_the_opponents_afterstate_value():
    player = SearchPlayer(LinearEvaluator(), ply=1)
    state, _ = parse_npn(RACE)
    assert player.equity_on_roll(state)[0] == pytest.approx(-explicit_value(player.evaluator, flip(state), 1))
    assert player.equity_on_roll(state, ply=0)[0] == pytest.approx(-explicit_value(player.evaluator, flip(state), 0))


def test_a_player_refuses_the_afterstates_of_other_positions():
    from agents.bots import HeuristicBot
    from nardy_env.players import RandomPlayer, choose_indices

    state, _ = parse_npn(RACE)
    found = afterstates(RACE, [6, 5])
    rng = np.random.default_rng(0)
    for player in (SearchPlayer(LinearEvaluator()), HeuristicBot(), RandomPlayer()):
        with pytest.raises(ValueError, match="found lists the afterstates of 1 position, but states holds 2"):
            player.choose(np.stack([state, state]), found, rng)
    with pytest.raises(ValueError, match="found lists the afterstates of 1 position, but states holds 3"):
        choose_indices(lambda states, found, rng: np.zeros(1, np.int64), np.stack([state] * 3), found, rng)
    for player in (SearchPlayer(LinearEvaluator()), HeuristicBot(), RandomPlayer()):
        with pytest.raises(TypeError, match="found must be the Afterstates that legal_afterstates"):
            player.choose(state[None], tuple(found), rng)  # once an AttributeError on offsets


def test_the_random_player_takes_none_as_the_network_players_do_but_not_a_seed():
    from nardy_env.players import RandomPlayer

    found = afterstates(RACE, [6, 5])
    state = parse_npn(RACE)[0][None]
    assert RandomPlayer().choose(state, found, None).shape == (1,)  # once: None has no attribute 'random'
    for bad in (7, True, "x"):  # a seed every turn would draw the same numbers every turn
        with pytest.raises(TypeError, match="rng must be a numpy Generator .* or None, got"):
            RandomPlayer().choose(state, found, bad)  # type: ignore[arg-type]


def test_players_say_what_they_are():
    from agents.bots import HeuristicBot
    from nardy_env.players import FunctionPlayer, RandomPlayer

    assert repr(SearchPlayer(LinearEvaluator(), ply=1, name="net")).startswith(
        "SearchPlayer('net@1', ply=1, filter_k=5, rules={\"opening\": \"play\"")
    assert (repr(HeuristicBot()), repr(RandomPlayer())) == ("HeuristicBot()", "RandomPlayer()")

    def first(states, found, rng):
        return np.zeros(len(states), np.int64)

    assert repr(FunctionPlayer(first)).startswith("FunctionPlayer(<function ")


def test_an_exact_one_ply_tie_stays_one_whatever_the_batch_holds():
    # White to move, dice 1-5: black bears off its last checker whatever white plays, so every
    # candidate is worth exactly minus one game at 1-ply, and the tie-break (the earliest sorted
    # result) must choose, not the candidate's or the position's row in the batch. A BLAS
    # product rounds a row of 21 equal values by where the row stands in the matrix.
    state, _ = parse_npn("1,1,0,1,0,1,0,0,0,0,0,0,-1,0,0,0,0,0,0,0,0,0,0,0:11,14:w")
    found = legal_afterstates(state[None], np.array([[1, 5]]))
    player = SearchPlayer(LinearEvaluator(), ply=1, filter_k=10)
    alone = player.equity(found.states)
    assert alone.size >= 3 and np.unique(alone).size == 1
    for copies in range(1, 9):
        values = player.equity(np.repeat(found.states, copies, axis=0))
        assert np.unique(values).size == 1 and values[0] == alone[0], copies
    rng = np.random.default_rng(0)
    other, _ = parse_npn(npn({2: 1, 3: 2, 5: 2, 6: 2}, {13: 1}, off=(8, 14)))
    for before in range(1, 7):
        states = np.concatenate([np.repeat(other[None], before, axis=0), state[None]])
        dice = np.concatenate([np.tile([[4, 4]], (before, 1)), [[1, 5]]])
        picks = player.choose(states, legal_afterstates(states, dice), rng)
        assert picks[-1] == 0, before  # the core's order puts the earliest sorted result first here


def test_outcome_one_hot_reads_every_result_and_refuses_a_game_not_over():
    from agents.common import outcome_one_hot

    won = afterstates(npn({1: 1}, {13: 15}, off=(14, 0)), [6, 5]).states
    assert outcome_one_hot(np.concatenate([won, flip(won)])).tolist() == [[0, 1, 0, 0], [0, 0, 0, 1]]
    with pytest.raises(ValueError, match="row 0 is a game not over"):
        outcome_one_hot(afterstates(RACE, [2, 1]).states)


def test_an_evaluators_run_is_used_for_outcomes_only_as_the_evaluator_protocol_says():
    """A search that wants probabilities takes both outputs from run(raw) when the evaluator has
    equity too; a run of another meaning (a policy-value net's (logits, value)) is refused, not
    read as probabilities."""
    found = afterstates(RACE, [2, 1])

    class PolicyValue(LinearEvaluator):
        def equity(self, raw):
            return (self.outcomes(raw) @ EQUITY).astype(np.float32)

        def run(self, raw):  # something else altogether: scores of 50 moves and a value
            return np.zeros((len(raw), 50)), np.zeros(len(raw))

    with pytest.raises(TypeError, match=r"run\(raw\) must give \(outcomes \[N, 4\], equity \[N\]\) for N = \d+ "
                                        r"positions .*got shapes \[\(\d+, 50\), \(\d+,\)\]"):
        SearchPlayer(PolicyValue(), ply=1).evaluate_with_outcomes(found)
    assert SearchPlayer(PolicyValue(), ply=1).evaluate(found).shape == (found.states.shape[0],)  # play needs no run

    class OnlyRun(LinearEvaluator):  # run without equity: not the protocol's, never called
        def run(self, raw):
            raise AssertionError("called")

    plain = SearchPlayer(LinearEvaluator(), ply=1).evaluate_with_outcomes(found)
    other = SearchPlayer(OnlyRun(), ply=1).evaluate_with_outcomes(found)
    assert np.array_equal(plain[0], other[0]) and np.array_equal(plain[1], other[1])

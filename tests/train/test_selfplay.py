"""TD(lambda) targets on hand-made episodes, and the self-play worker's output (no Ray)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.search import EQUITY
from nardy_env import flip, parse_npn
from tests.helpers import npn
from train.selfplay import SWAP, SelfPlayWorker, _lambda_returns_padded, lambda_returns, outcome_one_hot

WIN, WIN_MARS, LOSE, LOSE_MARS = np.eye(4)


def test_a_finished_game_is_a_win_or_a_mars_win_for_its_last_mover():
    # White has borne off its 15th; black has 3 off (oin) or none (mars). Afterstates: white's view.
    oin = flip(parse_npn(npn({}, {12: 12}, off=(15, 3), side="b"))[0][None])
    mars = flip(parse_npn(npn({}, {12: 15}, off=(15, 0), side="b"))[0][None])
    got = outcome_one_hot(np.concatenate([oin, mars]))
    assert np.array_equal(got, [WIN, WIN_MARS])
    assert (got @ EQUITY).tolist() == [1.0, 2.0]


def test_td0_target_is_the_next_value_seen_from_the_other_side():
    v = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], WIN])
    t = lambda_returns(v, lam=0.0)
    assert np.allclose(t[2], WIN)
    assert np.allclose(t[1], WIN[SWAP])  # the last mover won: the one before lost
    assert np.allclose(t[0], v[1][SWAP])


def test_lambda_one_is_the_monte_carlo_result_from_each_view():
    v = np.array([[0.25] * 4, [0.7, 0.1, 0.1, 0.1], [0.2, 0.2, 0.3, 0.3], WIN_MARS])
    t = lambda_returns(v, lam=1.0)
    assert np.allclose(t, [LOSE_MARS, WIN_MARS, LOSE_MARS, WIN_MARS])


def test_lambda_half_on_a_hand_computed_episode():
    a = np.array([0.5, 0.1, 0.3, 0.1])
    b = np.array([0.2, 0.0, 0.6, 0.2])
    v = np.array([a, b, WIN])
    t = lambda_returns(v, lam=0.5)
    t1 = (0.5 * WIN + 0.5 * WIN)[SWAP]  # from the second afterstate: the opponent wins
    t0 = (0.5 * b + 0.5 * t1)[SWAP]
    assert np.allclose(t[1], t1) and np.allclose(t[0], t0)
    # From the first mover's view: half the opponent's values turned over
    # ([0.6, 0.2, 0.2, 0]) and half its own win ([1, 0, 0, 0]).
    assert np.allclose(t0, [0.8, 0.1, 0.1, 0.0])


def test_padded_targets_equal_one_game_at_a_time():
    rng = np.random.default_rng(0)
    games = [rng.dirichlet(np.ones(4), size=n) for n in (3, 7, 1, 5)]
    for g in games:
        g[-1] = np.eye(4)[rng.integers(4)]
    width = max(len(g) for g in games)
    padded = np.zeros((len(games), width, 4))
    valid = np.zeros((len(games), width), dtype=bool)
    for k, g in enumerate(games):
        padded[k, width - len(g):] = g
        valid[k, width - len(g):] = True
    got = _lambda_returns_padded(padded, valid, 0.7)
    for k, g in enumerate(games):
        assert np.allclose(got[k, width - len(g):], lambda_returns(g, 0.7))


def test_worker_samples_are_one_per_ply_with_probability_targets():
    worker = SelfPlayWorker((16,))
    out = worker.play(None, games=12, seed=3, epsilon=0.1, lam=0.7)
    assert out["games"] == 12
    assert out["raw"].shape == (out["plies"], 50) and out["targets"].shape == (out["plies"], 4)
    assert out["raw"].dtype == np.uint8
    assert np.allclose(out["targets"].sum(axis=1), 1.0, atol=1e-5)
    assert (out["targets"] >= -1e-6).all()
    # Each game's last afterstate is a win for its mover: exactly 12 one-hot win targets at the end.
    won = (out["targets"][:, 0] == 1.0) | (out["targets"][:, 1] == 1.0)
    assert won.sum() >= 12
    # Every raw afterstate has 15 checkers per side counting those off.
    assert (out["raw"][:, :24].sum(1) + out["raw"][:, 48] == 15).all()
    assert (out["raw"][:, 24:48].sum(1) + out["raw"][:, 49] == 15).all()


def test_lambda_returns_refuses_what_it_would_misread():
    good = np.array([[0.5, 0.1, 0.3, 0.1], WIN])
    for lam in (2.0, -0.1, float("nan"), None, True, "0.7"):  # 2.0 once gave targets outside [0, 1]
        with pytest.raises(ValueError, match=r"lam must be the lambda of TD\(lambda\), a number in \[0, 1\]"):
            lambda_returns(good, lam)  # type: ignore[arg-type]
    for values in (np.array([0.1, 0.2, 0.3, 0.4]), np.zeros((3, 3)), np.zeros((0, 4)), np.zeros((2, 2, 4))):
        with pytest.raises(ValueError, match=r"values must have shape \[T \+ 1, 4\]"):
            lambda_returns(values, 0.7)
    with pytest.raises(ValueError, match="values must be finite"):
        lambda_returns(np.array([[np.nan, 0, 0, 0], WIN]), 0.7)
    for values in (np.full((3, 4), 1e300), np.array([[0.5, 0.5, 0.5, 0.5], WIN]), np.array([[1.2, -0.2, 0, 0], WIN]),
                   np.array([[0.504, 0.5, 0, 0], WIN])):  # off by 0.004: more than float32 rounding
        with pytest.raises(ValueError, match=r"values must be outcome probabilities .*; row 0 is"):
            lambda_returns(values, 0.7)
    with pytest.raises(ValueError, match=r"the last row of values is the game's result, one-hot .*got \[0.25"):
        lambda_returns(np.array([[0.5, 0.1, 0.3, 0.1], [0.25] * 4]), 0.7)
    assert np.array_equal(lambda_returns(np.array([WIN]), 0.7), [WIN])  # a game of one afterstate: its result


def test_a_worker_refuses_arguments_out_of_range_before_playing():
    worker = SelfPlayWorker((8,))
    good = {"games": 1, "seed": 0, "epsilon": 0.1, "lam": 0.7}
    for key, bad, said in (("games", 0, "games must be a whole number, 1 or more"),
                           ("games", 2.0, "games must be a whole number"),
                           ("seed", -1, "seed must be a whole number 0 or more, or a list of them"),
                           ("seed", [3, -1], "seed must be a whole number 0 or more"),
                           ("seed", 1.5, "seed must be a whole number 0 or more"),
                           ("epsilon", 2, "epsilon must be the chance of a random move"),
                           ("lam", 5, "lam must be the lambda")):  # lam=5 once gave infinite targets
        with pytest.raises(ValueError, match=said):
            worker.play(None, **{**good, key: bad})
    assert worker.play(None, **{**good, "seed": [2026, 1, 0]})["games"] == 1  # the trainer's seeds


def test_weights_that_do_not_fit_the_worker_are_named_and_tensors_are_taken():
    from agents.network import TDNetwork

    worker = SelfPlayWorker((8,))
    wanted = {k: v.clone() for k, v in worker.network.state_dict().items()}
    other = TDNetwork((8,)).state_dict()
    for weights, said in (({k: v.numpy() for k, v in TDNetwork((16,)).state_dict().items()},
                           r"\(hidden \[8\]\): body.0.weight is \[16, \d+\], the network needs \[8, "),
                          ({"module." + k: v.numpy() for k, v in other.items()},
                           r"names start with 'module.': a wrapped network's; publish .* \(its .module\)"),
                          ({k: v.numpy().astype(np.int64) for k, v in other.items()}, "holds int64 values"),
                          ({k: v.long() for k, v in other.items()}, "holds int64 values"),  # tensors too
                          ({k: v > 0 for k, v in other.items()}, "holds bool values")):
        with pytest.raises(ValueError, match=said):
            worker.set_weights(weights)
        assert all(torch.equal(v, wanted[k]) for k, v in worker.network.state_dict().items())  # unchanged
    with pytest.raises(TypeError, match="weights must be a state dict of numpy arrays, got int"):
        worker.set_weights(5)  # type: ignore[arg-type]
    from types import MappingProxyType

    for given in ({k: v.to(torch.bfloat16) for k, v in other.items()}, {k: v.double().numpy() for k, v in other.items()},
                  MappingProxyType({k: v.numpy() for k, v in other.items()})):
        worker.set_weights(given)  # type: ignore[arg-type]
        assert all(torch.allclose(v, other[k], atol=0.01) for k, v in worker.network.state_dict().items())


def test_worker_is_reproducible_from_its_seed():
    a = SelfPlayWorker((16,)).play(None, games=4, seed=9, epsilon=0.0, lam=0.5)
    worker = SelfPlayWorker((16,))
    worker.set_weights({k: v.numpy() for k, v in a_weights(worker).items()})
    b = worker.play(None, games=4, seed=9, epsilon=0.0, lam=0.5)
    c = worker.play(None, games=4, seed=9, epsilon=0.0, lam=0.5)
    assert np.array_equal(b["raw"], c["raw"]) and np.array_equal(b["targets"], c["targets"])
    assert a["games"] == b["games"]


def a_weights(worker):
    return worker.network.state_dict()


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_targets_stay_distributions(lam):
    rng = np.random.default_rng(1)
    v = rng.dirichlet(np.ones(4), size=9)
    v[-1] = LOSE
    assert np.allclose(lambda_returns(v, lam).sum(1), 1.0)


def test_calibration_counts_cover_every_valued_play_and_points_are_zero_sum():
    from train.selfplay import SelfPlayWorker

    out = SelfPlayWorker((16,), {}).play(None, 12, seed=5, epsilon=0.1, lam=0.7)
    win, equity = out["calibration"], out["equity_calibration"]
    valued = out["plies"] - out["games"]  # every play but each game's last (its exact result)
    assert win[0].sum() == equity[0].sum() == valued
    assert ((win[1] >= 0) & (win[1] <= win[0])).all()  # predicted win probabilities in [0, 1]
    assert (np.abs(equity[2]) <= 2 * equity[0]).all()  # points scored are within +-2 per play
    # A game's points count +p for each play of its winner and -p for each of its loser's; the
    # loser made at least as many valued plays (the winner's last play is the exact result).
    assert -2 * out["games"] <= equity[2].sum() <= 0


def test_a_worker_leaves_torch_threads_alone_unless_told():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        SelfPlayWorker((16,))  # made in a researcher's own process
        assert torch.get_num_threads() == 2
        SelfPlayWorker((16,), threads=1)  # as the trainer's actors are made
        assert torch.get_num_threads() == 1
        with pytest.raises(ValueError, match="threads must be a whole number, 1 or more, got 0"):
            SelfPlayWorker((16,), threads=0)
    finally:
        torch.set_num_threads(before)

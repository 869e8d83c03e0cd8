"""The TD network: in-graph features match the numpy reference; checkpoints round-trip."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from agents.network import TDNetwork
from agents.td import CheckpointError, load_checkpoint, save_checkpoint, td_player
from nardy_env import Rules, RulesMismatchWarning, flip, initial_states, legal_afterstates
from nardy_env.encoding import FEATURES_VERSION, NUM_FEATURES, features, raw_positions
from nardy_env.game import roll_dice
from tests.reference_features import features as reference_features


def _positions(n: int = 2000) -> np.ndarray:
    rng = np.random.default_rng(0)
    states = initial_states(64)
    out = []
    for _ in range(60):
        found = legal_afterstates(states, roll_dice(rng, len(states)))
        out.append(found.states)
        pick = found.offsets[:-1] + (rng.random(len(states)) * found.counts()).astype(np.int64)
        after = found.states[pick]
        keep = after[:, 24] < 15
        states = flip(after[keep])
        if len(states) == 0:
            break
    return np.concatenate(out)[:n]


def test_compiled_and_in_graph_features_equal_the_plain_reference_bit_for_bit():
    """nardy_env.encoding.features (compiled), RawFeatures (in the graph, so in the export) and
    the plain numpy reference give the same float32 bits, on positions from random games and
    on every count 0..15 at every point (the units' edges)."""
    raw = raw_positions(_positions(20000))
    counts = np.zeros((16, 50), dtype=np.float32)
    for c in range(16):
        counts[c, [c % 24, 24 + (c * 5) % 24]] = c  # one stack of c on each side
        counts[c, 48], counts[c, 49] = 15 - c, c
    raw = np.concatenate([raw, counts])
    want = reference_features(raw)
    with torch.no_grad():
        in_graph = TDNetwork().features(torch.from_numpy(raw)).numpy()
    compiled = features(raw)
    assert compiled.shape == in_graph.shape == (raw.shape[0], NUM_FEATURES) and compiled.dtype == np.float32
    assert np.array_equal(compiled.view(np.int32), want.view(np.int32))
    assert np.array_equal(in_graph.view(np.int32), want.view(np.int32))
    # Any leading shape, any float or integer input; a single position too.
    assert np.array_equal(features(raw[:6].reshape(2, 3, 50)), compiled[:6].reshape(2, 3, NUM_FEATURES))
    assert np.array_equal(features(raw[:5].astype(np.uint8)), compiled[:5])
    assert np.array_equal(features(raw[7]), compiled[7])
    assert features(raw[:0]).shape == (0, NUM_FEATURES)


def test_the_features_are_laid_out_as_the_encoding_docstring_says():
    """Column by column, for a porter who reads only nardy_env/encoding.py's docstring."""
    raw = np.zeros(50, dtype=np.float32)
    raw[[0, 1, 2, 3, 4, 5, 6, 7]] = 1  # my personal points 1..8 (with the head, 24: a run of 9 along the route)
    raw[23] = 5  # my head
    raw[48] = 2  # two of mine off
    raw[24 + 12: 24 + 17] = [1, 1, 1, 1, 1]  # the opponent's points 13..17: a run of 5 read from 13 on
    raw[24 + 23] = 10  # its head
    f = features(raw)
    assert f.shape == (204,)
    # Point-major units: point 24 (the head, 5 checkers) holds columns 92..95.
    assert list(f[92:96]) == [1, 1, 1, 1.0] and list(f[0:4]) == [1, 0, 0, 0]
    assert f[96] == np.float32(2 / 15) and f[97] == np.float32((sum(range(1, 9)) + 24 * 5) / 360)
    assert f[98] == np.float32(5 / 15) and f[99] == np.float32(6 / 15)
    assert f[100] == 1.0  # a run of 9 counts as 6: min(9, 6) / 6
    assert f[101] == 0  # the head is not home
    theirs = f[102:]
    assert list(theirs[92:96]) == [1, 1, 1, 3.5] and theirs[100] == np.float32(5 / 6) and theirs[96] == 0
    raw[23], raw[48] = 0, 9  # every checker of mine left is home or off: bearing off is possible
    raw[[6, 7]] = 0
    f = features(raw)
    assert f[101] == 1 and f[100] == 1.0  # points 1..6: a run of exactly 6
    assert np.array_equal(f, reference_features(raw[None])[0])
    # The route runs 13..24, then 1..12: 24 and 1 are neighbours on it, 12 and 13 are its two ends.
    ends, joined = np.zeros((2, 50), dtype=np.float32)
    ends[[11, 12]] = 1
    joined[[23, 0]] = 1
    assert features(ends)[100] == np.float32(1 / 6) and features(joined)[100] == np.float32(2 / 6)


def test_a_network_given_the_features_scores_as_from_raw_positions():
    net = TDNetwork((16, 8))
    raw = raw_positions(_positions(500))
    x = torch.from_numpy(raw)
    with torch.no_grad():
        assert torch.equal(net(x, torch.from_numpy(features(raw))), net(x))
        assert torch.equal(net.double().logits(x, torch.from_numpy(features(raw))), net.logits(x))
    with pytest.raises(ValueError, match=r"features must be a float tensor \[N, 204\] for the N = 500 positions"):
        net(x, torch.from_numpy(features(raw[:-1])))


def test_outputs_are_probabilities_and_equity_is_derived():
    net = TDNetwork((16,))
    raw = torch.from_numpy(raw_positions(_positions(50)))
    with torch.no_grad():
        p = net(raw)
        assert torch.allclose(p.sum(1), torch.ones(len(p)))
        assert torch.allclose(net.equity(p), p[:, 0] + 2 * p[:, 1] - p[:, 2] - 2 * p[:, 3])


def test_bad_hidden_sizes_are_rejected():
    with pytest.raises(ValueError, match="hidden"):
        TDNetwork((0,))


def test_checkpoint_round_trip_keeps_shape_rules_and_weights(tmp_path):
    net = TDNetwork((24, 8))
    rules = Rules(block_rule="home")
    path = save_checkpoint(tmp_path / "run" / "checkpoint.pt", net, rules, training={"games": 7})
    loaded, payload = load_checkpoint(tmp_path / "run")
    assert payload["network"]["hidden"] == [24, 8]
    assert payload["features_version"] == FEATURES_VERSION
    assert payload["rules"]["block_rule"] == "home"
    assert payload["training"]["games"] == 7
    for a, b in zip(net.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    player = td_player(path, ply=0)
    assert player.rules == rules
    assert not list((tmp_path / "run").glob("*.tmp"))  # atomic write leaves no temp file
    # Loading leaves torch's global generator alone: a seeded run draws the same after it.
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    load_checkpoint(path)
    assert torch.equal(torch.rand(3), expected)


def test_bad_checkpoints_give_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"is not a checkpoint \(not a zip archive as torch.save writes"):
        load_checkpoint(tmp_path / "junk.pt")
    (tmp_path / "config.json").write_text('{"name": "smoke"}')  # a run's other files, named by mistake
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        load_checkpoint(tmp_path / "config.json")
    save_checkpoint(tmp_path / "whole.pt", TDNetwork((8,)))
    (tmp_path / "cut.pt").write_bytes((tmp_path / "whole.pt").read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"not a readable checkpoint \(damaged or cut short\?\)"):
        load_checkpoint(tmp_path / "cut.pt")
    torch.save({"format": "something-else"}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="nardy-checkpoint/1"):
        load_checkpoint(tmp_path / "other.pt")
    net = TDNetwork((8,))
    save_checkpoint(tmp_path / "old.pt", net)
    payload = torch.load(tmp_path / "old.pt", weights_only=False)
    payload["features_version"] = "nardy-features/0"
    torch.save(payload, tmp_path / "old.pt")
    with pytest.raises(CheckpointError, match="features"):
        load_checkpoint(tmp_path / "old.pt")


def _resaved(tmp_path, name, change):
    """A checkpoint of a small network, with ``change`` applied to its payload before saving."""
    save_checkpoint(tmp_path / "base.pt", TDNetwork((8,)))
    payload = torch.load(tmp_path / "base.pt", weights_only=True)
    change(payload)
    torch.save(payload, tmp_path / name)
    return tmp_path / name


def test_what_load_checkpoint_would_refuse_is_not_saved_over_a_good_checkpoint(tmp_path):
    """save_checkpoint wrote files load_checkpoint refused: a config that is no mapping or names
    other rules or layers, and a network whose layers are not those its shape records."""
    from torch import nn

    good = save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((8,)))
    before = good.read_bytes()

    class WithDropout(TDNetwork):
        def __init__(self, hidden):
            super().__init__(hidden)
            self.body = nn.Sequential(self.body[0], nn.ReLU(), nn.Dropout(0.2), self.body[2])

    swapped = TDNetwork((16,))
    swapped.body = nn.Sequential(nn.Linear(NUM_FEATURES, 8), nn.ReLU(), nn.Linear(8, 4))
    for network, extra, said in (
            (TDNetwork((8,)), {"config": "configs/mine.yaml"}, "its training config is a str"),
            (TDNetwork((8,)), {"config": {"rules": {"block_rule": "home"}}}, "contradicts itself: it records rules"),
            (TDNetwork((8,)), {"config": {"hidden": [128, 64]}}, r"hidden layers \[8\], but its config says hidden"),
            (WithDropout((8,)), {}, "'body.3.weight' has no place in it"),
            (swapped, {}, r"body.0.weight is \[8, \d+\], the shape needs \[16, ")):
        with pytest.raises(ValueError, match=f"^save_checkpoint: load_checkpoint would refuse this file .*{said}"):
            save_checkpoint(good, network, **extra)
        assert good.read_bytes() == before
    deep: list = [0]
    for _ in range(25):  # 2**25 values once written out: refused on load, so not written
        deep = [deep, deep]
    with pytest.raises(ValueError, match="load_checkpoint would refuse this file .*unfolds into more than"):
        save_checkpoint(good, TDNetwork((8,)), history=deep)
    assert good.read_bytes() == before
    save_checkpoint(good, TDNetwork((8,)), config={"hidden": [8], "rules": {}})  # agreeing with it: saved
    assert load_checkpoint(good)[1]["config"] == {"hidden": [8], "rules": {}}


def test_wrapped_networks_and_bare_weights_are_refused_with_what_to_give(tmp_path):
    from agents.td import TorchEvaluator

    net = TDNetwork((8,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.compile's first import: torch.jit's own
        compiled = torch.compile(net)  # compiles at its first call, never made here
    for wrapper, inner in ((compiled, "_orig_mod"), (torch.nn.DataParallel(net), "module")):
        with pytest.raises(TypeError, match=rf"got {type(wrapper).__name__}; it wraps one: pass its \.{inner}$"):
            TorchEvaluator(wrapper)
        with pytest.raises(TypeError, match=rf"it wraps one: pass its \.{inner}$"):
            save_checkpoint(tmp_path / "c.pt", wrapper)
    torch.save(net.state_dict(), tmp_path / "weights.pt")
    with pytest.raises(CheckpointError, match=r"it holds weights alone \(a state_dict\?\): write checkpoints with "
                                              r"agents.td.save_checkpoint\(path, network, rules\)"):
        load_checkpoint(tmp_path / "weights.pt")
    for prefix in ("_orig_mod.", "module."):
        renamed = _resaved(tmp_path, "renamed.pt", lambda p: p.update(  # noqa: B023
            state_dict={prefix + k: v for k, v in p["state_dict"].items()}))  # noqa: B023
        with pytest.raises(CheckpointError, match=rf"its weights' names start with '{prefix}': saved from a wrapped "
                                                  rf"network; save the network it wraps \(its \.{prefix[:-1]}\)"):
            load_checkpoint(renamed)
    # Wrappers inside wrappers: the whole way in.
    both = _resaved(tmp_path, "both.pt", lambda p: p.update(
        state_dict={"_orig_mod.module." + k: v for k, v in p["state_dict"].items()}))
    with pytest.raises(CheckpointError, match=r"start with '_orig_mod.module.'.*\(its \._orig_mod\.module\)"):
        load_checkpoint(both)
    with pytest.raises(TypeError, match=r"got DataParallel; it wraps one: pass its \.module\._orig_mod$"):
        TorchEvaluator(torch.nn.DataParallel(compiled))


def test_checkpoints_from_elsewhere_are_refused_by_what_is_wrong(tmp_path):
    newer = _resaved(tmp_path, "newer.pt", lambda p: p.update(format="nardy-checkpoint/2"))
    with pytest.raises(CheckpointError, match=r"newer.pt is not a nardy-checkpoint/1 file \(written by a newer nardy\?\)"):
        load_checkpoint(newer)
    no_rules = _resaved(tmp_path, "no_rules.pt", lambda p: p.pop("rules"))
    with pytest.raises(CheckpointError, match="no_rules.pt records no rules"):
        td_player(no_rules)
    # Its config is the run's settings, and plays the rules it records (hint played "home", export refused it).
    listed = _resaved(tmp_path, "listed.pt", lambda p: p.update(config=[1]))
    with pytest.raises(CheckpointError, match=r"listed.pt: its training config is a list, not a mapping of settings"):
        td_player(listed)
    mixed = _resaved(tmp_path, "mixed.pt", lambda p: p.update(rules={**p["rules"], "block_rule": "home"}, config={"rules": {}}))
    with pytest.raises(CheckpointError, match=r"mixed.pt contradicts itself: it records rules .*\"home\".*, but its "
                                              r"config \{\} \(damaged or hand-made\?\)"):
        td_player(mixed)
    same = _resaved(tmp_path, "same.pt", lambda p: p.update(rules={**p["rules"], "block_rule": "home"},
                                                            config={"rules": {"block_rule": "home"}}))
    assert load_checkpoint(same)[1]["config"]["rules"] == {"block_rule": "home"}  # fewer keys, the same game
    (tmp_path / "odd" / "checkpoint.pt").mkdir(parents=True)
    with pytest.raises(CheckpointError, match=r"odd/checkpoint.pt is a folder, not a file"):  # was "no checkpoint"
        load_checkpoint(tmp_path / "odd")
    bogus = _resaved(tmp_path, "bogus.pt", lambda p: p.update(config={"rules": {"block_rule": "bogus"}}))
    with pytest.raises(CheckpointError, match=r"bogus.pt contradicts itself: .* but its config \{\"block_rule\": \"bogus\"\}"):
        td_player(bogus)
    odd_rules = _resaved(tmp_path, "odd_rules.pt", lambda p: p.update(rules={"crawford": True}))
    with pytest.raises(CheckpointError, match=r"odd_rules.pt: its rules cannot be read: .*crawford"):
        td_player(odd_rules)
    # Weights for another shape: the message names the layer, not torch's empty first line.
    shape = _resaved(tmp_path, "shape.pt", lambda p: p["network"].update(hidden=[16]))
    with pytest.raises(CheckpointError, match=r"shape.pt: its weights do not fit .*hidden \[16\].*body.0.weight is \[8, "):
        load_checkpoint(shape)
    # A shape made for another network, or weights turned into integers (loaded, they would be zeros).
    feats = _resaved(tmp_path, "feats.pt", lambda p: p["network"].update(features_version="nardy-features/2"))
    with pytest.raises(CheckpointError, match=r"feats.pt: its network records features_version 'nardy-features/2' "
                                              r"\(this code builds 'nardy-features/1'\)"):
        load_checkpoint(feats)
    wide = _resaved(tmp_path, "wide.pt", lambda p: p["network"].update(input=51, outputs=["win", "lose", "draw"]))
    with pytest.raises(CheckpointError, match=r"wide.pt: its network records input 51 \(this code builds 50\); "
                                              r"outputs \['win', 'lose', 'draw'\]"):
        load_checkpoint(wide)
    ints = _resaved(tmp_path, "ints.pt", lambda p: p.update(
        state_dict={name: t.to(torch.int32) for name, t in p["state_dict"].items()}))
    with pytest.raises(CheckpointError, match=r"ints.pt: its weights body.0.weight, .* hold torch.int32 values, "
                                              "not floating-point ones"):
        td_player(ints)
    extra = _resaved(tmp_path, "extra.pt", lambda p: p["state_dict"].update(stray=torch.zeros(2)))
    with pytest.raises(CheckpointError, match="'stray' has no place in it"):
        load_checkpoint(extra)
    # A name that would drive the terminal is shown escaped, by the library and by the command.
    title = "\x1b]0;owned\x07\x1b[2J"
    hostile = _resaved(tmp_path, "hostile.pt", lambda p: p["state_dict"].update({title: torch.zeros(2)}))
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(hostile)
    assert "\x1b" not in str(caught.value) and "\\x1b]0;owned\\x07" in str(caught.value)
    out = subprocess.run([sys.executable, "-m", "train.cli", "eval", str(hostile), "random", "--games", "2"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "has no place in it" in out.stderr
    assert not any(ch in out.stderr for ch in "\x1b\x07")


def test_damaged_checkpoints_are_refused_not_played(tmp_path):
    """torch.load checks no checksums, so a flipped byte would load silently."""
    net = TDNetwork((8,))
    save_checkpoint(tmp_path / "whole.pt", net)
    data = bytearray((tmp_path / "whole.pt").read_bytes())
    start = bytes(data).index(b"data/0") + 100  # inside the first tensor's stored bytes
    data[start] ^= 0x40
    (tmp_path / "flipped.pt").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"flipped.pt is damaged: its entry '.*data/0' fails its checksum"):
        load_checkpoint(tmp_path / "flipped.pt")
    # torch may be told to record no checksums (CRC 0): such a file is whole, not damaged.
    before = torch.serialization.get_crc32_options()
    torch.serialization.set_crc32_options(False)
    try:
        save_checkpoint(tmp_path / "no_crc.pt", net)
    finally:
        torch.serialization.set_crc32_options(before)
    assert load_checkpoint(tmp_path / "no_crc.pt")[0].hidden == [8]
    with torch.no_grad():
        net.body[0].weight[0, 0] = float("nan")
    torch.save({**torch.load(tmp_path / "whole.pt", weights_only=True), "state_dict": net.state_dict()},
               tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match=r"nan.pt is damaged: body.0.weight holds values that are not finite"):
        td_player(tmp_path / "nan.pt")


def test_finite_weights_that_overflow_float32_are_refused_or_named_not_played(tmp_path):
    """A float64 checkpoint holding 1e39 passes a check for NaN/inf and is infinite once loaded; weights
    that are finite but huge make NaN outputs, which a player would choose by and hint would print."""
    from agents.search import SearchPlayer
    from agents.td import NetworkError, TorchEvaluator

    net = TDNetwork((8,))
    save_checkpoint(tmp_path / "whole.pt", net)
    weights = {name: t.double() for name, t in net.state_dict().items()}
    last = [name for name in weights if name.endswith(".bias")][-1]
    weights[last][0] = 1e39
    torch.save({**torch.load(tmp_path / "whole.pt", weights_only=True), "state_dict": weights}, tmp_path / "big.pt")
    with pytest.raises(CheckpointError, match=rf"big.pt is damaged: {last} holds values too large for float32"):
        load_checkpoint(tmp_path / "big.pt")
    with torch.no_grad():
        for layer in net.body:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.mul_(1e30)
    evaluator = TorchEvaluator(net)
    raw = raw_positions(_positions(5))
    for score in (evaluator.outcomes, evaluator.equity):
        with pytest.raises(NetworkError, match=r"the network's outputs for row 0 are not outcome probabilities "
                                               r"\(outcomes \[nan.*hidden \[8\]\) overflow float32 arithmetic"):
            score(raw)
    player = SearchPlayer(evaluator)
    states = _positions(3)
    with pytest.raises(NetworkError):
        player.choose(states, legal_afterstates(states, np.array([[6, 5]] * 3)), np.random.default_rng(0))


class _Payload:
    """Stands for arbitrary pickled code in a hostile .pt file."""


def test_checkpoints_load_without_running_pickled_code(tmp_path):
    net = TDNetwork((8,))
    save_checkpoint(tmp_path / "ok.pt", net)
    payload = torch.load(tmp_path / "ok.pt", weights_only=True)
    payload["extra"] = _Payload()
    torch.save(payload, tmp_path / "hostile.pt")
    with pytest.raises(CheckpointError, match="holds objects other than tensors") as caught:
        load_checkpoint(tmp_path / "hostile.pt")
    assert "weights_only=False" not in str(caught.value)  # no advice to load it unsafely


def test_outcomes_settled_by_the_position_are_exact():
    """A finished result is worth its exact points; no mars against a side with a checker off."""
    torch.manual_seed(1)
    net = TDNetwork((16,))
    with torch.no_grad():  # make the untrained net believe in mars both ways
        net.body[-1].bias.copy_(torch.tensor([0.0, 3.0, 0.0, 3.0]))
    raw = np.zeros((6, 50), dtype=np.float32)
    raw[:, 0] = 1  # some checker left on board for the unfinished rows
    raw[0, [0, 48, 49]] = (0, 15, 0)   # I have won, the opponent has none off: mars
    raw[1, [0, 48, 49]] = (0, 15, 3)   # I have won, the opponent has 3 off: oin
    raw[2, [48, 49]] = (0, 0)          # nothing settled
    raw[3, [48, 49]] = (0, 2)          # the opponent has 2 off: I cannot win a mars
    raw[4, [48, 49]] = (5, 0)          # I have 5 off: I cannot lose a mars
    raw[5, [48, 49]] = (5, 2)          # neither mars is possible
    with torch.no_grad():
        p = net(torch.from_numpy(raw)).numpy()
        free = torch.softmax(net.logits(torch.from_numpy(raw)), dim=-1).numpy()
    np.testing.assert_array_equal(p[0], [0, 1, 0, 0])
    np.testing.assert_array_equal(p[1], [1, 0, 0, 0])
    np.testing.assert_allclose(p[2], free[2])
    assert p[2, 1] > 0.1 and p[2, 3] > 0.1
    assert p[3, 1] == 0 and np.isclose(p[3, 0], free[3, 0] + free[3, 1]) and p[3, 3] > 0.1
    assert p[4, 3] == 0 and np.isclose(p[4, 2], free[4, 2] + free[4, 3]) and p[4, 1] > 0.1
    assert p[5, 1] == 0 and p[5, 3] == 0
    np.testing.assert_allclose(p.sum(axis=1), 1, atol=1e-6)
    # So no unfinished position is worth more than winning now.
    equity = net.equity(torch.from_numpy(p)).numpy()
    assert equity[3] <= 1 and equity[5] <= 1 and equity[1] == 1 and equity[0] == 2


@pytest.mark.parametrize("precision", [torch.float32, torch.bfloat16, torch.float16])
def test_an_unfinished_position_is_worth_strictly_less_than_winning_now(precision):
    """Even where float32 saturates, so FORMATS.md's first-result tie-break cannot skip a win; in
    bfloat16 or float16 too, whose 1 - 2**-20 is 1 (their probabilities are settled in float32)."""
    net = TDNetwork((8,)).to(precision)
    with torch.no_grad():
        net.body[-1].weight.zero_()
        net.body[-1].bias.copy_(torch.tensor([0.0, 200.0, 0.0, 0.0]))  # softmax gives win_mars = 1.0
    raw = np.zeros((4, 50), dtype=np.float32)
    raw[:, 0] = 1
    raw[1, 49] = 3                       # unfinished, no mars possible
    raw[2, [0, 48, 49]] = (0, 15, 0)     # won now: mars
    raw[3, [0, 48, 49]] = (0, 15, 3)     # won now: oin
    with torch.no_grad():
        assert torch.softmax(net.logits(torch.from_numpy(raw)), -1)[0, 1].item() == 1.0
        p = net(torch.from_numpy(raw))
        equity = net.equity(p).float().numpy()
    assert equity[0] < equity[2] == 2.0 and equity[0] > 2.0 - 1e-5
    assert equity[1] < equity[3] == 1.0 and equity[1] > 1.0 - 1e-5
    np.testing.assert_allclose(p.sum(1).float().numpy(), 1, atol=1e-6)


def test_a_player_asked_to_play_other_rules_than_it_learnt_warns(tmp_path):
    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "checkpoint.pt", TDNetwork((8,)), Rules(block_rule="home"))
    assert td_player(path).rules == Rules(block_rule="home")  # its own rules by default
    with pytest.warns(RulesMismatchWarning, match="trained under rules"):
        assert td_player(path, rules=Rules()).rules == Rules()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        td_player(path, rules=Rules(block_rule="home"))  # the same rules: no warning


def test_a_damaged_checkpoint_only_ever_raises_checkpoint_error(tmp_path):
    """Byte flips anywhere in the file: loading succeeds or says the checkpoint is unreadable;
    nothing else escapes (a resume falls back to an older copy on CheckpointError only)."""
    save_checkpoint(tmp_path / "ok.pt", TDNetwork((8,)))
    data = bytearray((tmp_path / "ok.pt").read_bytes())
    rng = np.random.default_rng(0)
    damaged = 0
    for _ in range(150):
        bad = bytearray(data)
        at = int(rng.integers(len(bad)))
        bad[at] ^= 1 << int(rng.integers(8))
        (tmp_path / "bad.pt").write_bytes(bytes(bad))
        try:
            load_checkpoint(tmp_path / "bad.pt")
        except CheckpointError:
            damaged += 1
    assert damaged > 10


def test_bad_layer_sizes_and_inputs_of_another_width_are_named():
    for hidden in ("128", 128, [64.9], [0], [True]):
        with pytest.raises(ValueError, match="hidden must be a list of layer sizes"):
            TDNetwork(hidden)
    net = TDNetwork((8,))
    for width in (57, 211):  # the env's observations, not raw positions
        with pytest.raises(ValueError, match=r"raw positions, a float tensor \[N, 50\]"):
            net(torch.zeros(3, width))
    assert net(torch.zeros(3, 50)).shape == (3, 4)


def test_the_torch_evaluator_refuses_what_the_exported_policy_refuses():
    import warnings

    from agents.td import TorchEvaluator

    evaluator = TorchEvaluator(TDNetwork((8,)))
    raw = raw_positions(_positions(20))
    frozen = raw.copy()
    frozen.setflags(write=False)  # as the env hands out its arrays
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warned about a non-writable array
        assert np.array_equal(evaluator.outcomes(frozen), evaluator.outcomes(raw))
    near = raw[:2].astype(np.float64)
    near[1, 3] = 14.99999999  # float32 would round it to 15 (and 1e-46 to 0) before the check
    for bad in (np.full((2, 50), np.nan), -np.ones((1, 50)), np.full((1, 50), 16.0), np.full((1, 50), 0.5),
                near):  # once scored
        for score in (evaluator.outcomes, evaluator.equity):
            with pytest.raises(ValueError, match="positions are checker counts, whole numbers 0..15"):
                score(bad)
    with pytest.raises(ValueError, match=r"positions must have shape \[N, 50\]"):
        evaluator.equity(np.zeros(50))
    with pytest.raises(ValueError, match="checker counts, not True/False"):
        evaluator.equity(raw > 0)  # a mask: one checker on each held point
    with pytest.raises(ValueError, match="checker counts, not a bool tensor"):
        evaluator.network(torch.from_numpy(raw > 0))


def test_positions_of_another_dtype_are_scored_as_float32_ones():
    net = TDNetwork((8,))
    x = torch.from_numpy(raw_positions(_positions(200)))
    want = net(x)
    for other in (torch.float64, torch.uint8):  # numpy's default float, and raw counts as stored
        got = net(x.to(other))
        assert got.dtype == torch.float32 and torch.allclose(got, want)


def test_a_network_is_float32_whatever_torchs_default_dtype_and_runs_in_other_precisions(tmp_path):
    """torch.set_default_dtype(torch.float64) once made float64 layers beside the float32 features
    (every forward pass failed, the shipped checkpoint's too), and .bfloat16() or .half() failed on
    features built in float32."""
    from agents.td import TorchEvaluator
    from train.export import export_policy

    raw = raw_positions(_positions(200))
    torch.manual_seed(3)
    want = TorchEvaluator(TDNetwork((8,))).equity(raw)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(3)
        net = TDNetwork((8,))
        assert {t.dtype for t in net.state_dict().values()} == {torch.float32}
        assert np.array_equal(TorchEvaluator(net).equity(raw), want)
        save_checkpoint(tmp_path / "c.pt", net)
        assert load_checkpoint(tmp_path / "c.pt")[0].body[0].weight.dtype == torch.float32
        export_policy(tmp_path / "c.pt", tmp_path / "policy", positions=64)  # verified against torch inside
    finally:
        torch.set_default_dtype(default)
    for precision, close in ((torch.float64, 1e-6), (torch.bfloat16, 0.05), (torch.float16, 0.01)):
        other = TDNetwork((8,)).to(precision)
        other.load_state_dict({k: v.to(precision) for k, v in net.state_dict().items()})
        got = TorchEvaluator(other).equity(raw)
        assert np.abs(got - want).max() < close, (precision, np.abs(got - want).max())


def test_a_checkpoint_asking_for_a_huge_network_is_refused_before_it_is_built(tmp_path):
    import io
    import zipfile

    from agents.td import CHECKPOINT_FORMAT

    small = {"format": CHECKPOINT_FORMAT, "network": {"hidden": [20000, 20000]}, "state_dict": {},
             "features_version": FEATURES_VERSION, "rules": Rules().to_dict()}
    torch.save(small, tmp_path / "huge.pt")  # 1.5 KB asking for 400 million weights
    with pytest.raises(CheckpointError, match="nardy builds at most 16 layers and 20,000,000 parameters"):
        load_checkpoint(tmp_path / "huge.pt")
    torch.save({**small, "network": {"hidden": [1] * 100_000}}, tmp_path / "deep.pt")
    with pytest.raises(CheckpointError, match="100000 layers"):
        load_checkpoint(tmp_path / "deep.pt")
    # A compressed entry (torch.save never writes one) could unpack a small file into gigabytes.
    good = io.BytesIO()
    torch.save(small, good)
    with zipfile.ZipFile(io.BytesIO(good.getvalue())) as src, \
            zipfile.ZipFile(tmp_path / "packed.pt", "w", zipfile.ZIP_DEFLATED) as dst:
        for entry in src.infolist():
            dst.writestr(entry.filename, src.read(entry))
    with pytest.raises(CheckpointError, match="is compressed"):
        load_checkpoint(tmp_path / "packed.pt")


def test_a_checkpoint_whose_data_unfolds_exponentially_is_refused(tmp_path, monkeypatch):
    import agents.td

    nested: list = []
    for _ in range(40):  # x = [x, x], 40 deep: a small file that JSON would write out as 2**40 values
        nested = [nested, nested]
    with pytest.raises(ValueError, match="load_checkpoint would refuse this file .*unfolds into more than"):
        save_checkpoint(tmp_path / "bomb.pt", TDNetwork((8,)), config={"notes": nested})
    _resaved(tmp_path, "bomb.pt", lambda p: p.update(config={"notes": nested}))  # by hand, then
    assert (tmp_path / "bomb.pt").stat().st_size < 200_000
    monkeypatch.setattr(agents.td, "MAX_PLAIN_NODES", 100_000)  # the same check, quicker
    with pytest.raises(CheckpointError, match="unfolds into more than 100,000 values"):
        load_checkpoint(tmp_path / "bomb.pt")
    save_checkpoint(tmp_path / "fine.pt", TDNetwork((8,)), config={"notes": [1, 2, 3]})
    assert load_checkpoint(tmp_path / "fine.pt")[1]["config"] == {"notes": [1, 2, 3]}


class KeywordBuilt:
    """Pickled with NEWOBJ_EX from protocol 4 on (keyword arguments to __new__)."""

    def __new__(cls, size=0):
        return super().__new__(cls)

    def __init__(self, size=0):
        self.size = size

    def __getnewargs_ex__(self):
        return (), {"size": self.size}


def test_checkpoints_are_written_with_pickle_protocol_2_and_the_size_check_reads_later_ones(tmp_path):
    """torch writes protocol 2 today and its weights_only loader reads no other reliably: the
    protocol is named, not left to torch's default; the size check reads protocol 4 and 5's
    opcodes (STACK_GLOBAL, NEWOBJ_EX) rather than refusing every such file."""
    import pickle
    import zipfile
    from collections import OrderedDict

    from agents.td import _pickle_unfolds_within

    save_checkpoint(tmp_path / "two.pt", TDNetwork((8,)), config={"notes": [1, (2, 3)]})
    with zipfile.ZipFile(tmp_path / "two.pt") as archive:
        pickled = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    assert pickled[:2] == b"\x80\x02"  # PROTO 2
    nested: list = []
    for _ in range(30):
        nested = [nested, nested]
    for protocol in (2, 4, 5):
        data = pickle.dumps({"state": OrderedDict(w=[1.0, 2.0]), "notes": [1, (2, 3)], "kw": KeywordBuilt(3)},
                            protocol=protocol)
        if protocol >= 4:  # the opcodes the reader had to learn
            assert b"\x93" in data and b"\x92" in data  # STACK_GLOBAL, NEWOBJ_EX
        assert _pickle_unfolds_within(data, 100), protocol
        assert not _pickle_unfolds_within(pickle.dumps(nested, protocol=protocol), 100_000), protocol


def _with_shared_tuple_key(tmp_path, depth: int):
    """A checkpoint whose config holds {t: 1}, t = (t', t'), ... ``depth`` deep: small on disk, but
    unpickling hashes the key 2**depth times (crafted at the opcode level; Python could not build it)."""
    import zipfile

    save_checkpoint(tmp_path / "base.pt", TDNetwork((8,)), config={"notes": "SLOT"})
    with zipfile.ZipFile(tmp_path / "base.pt") as src:
        name = next(n for n in src.namelist() if n.endswith("data.pkl"))
        data = src.read(name)
        slot = b"X\x04\x00\x00\x00SLOT"  # BINUNICODE 'SLOT'
        dag = b"K\x01\x85" + b"q\xfah\xfa\x86" * depth  # (1,), then (t, t) via BINPUT/BINGET 250, TUPLE2
        crafted = data.replace(slot, b"}" + dag + b"K\x01s")  # EMPTY_DICT, key, 1, SETITEM
        assert crafted != data
        with zipfile.ZipFile(tmp_path / "bomb.pt", "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                dst.writestr(info, crafted if info.filename == name else src.read(info))
    return tmp_path / "bomb.pt"


def test_a_checkpoint_that_would_take_hours_to_unpickle_is_refused_before_unpickling(tmp_path):
    bomb = _with_shared_tuple_key(tmp_path, 60)  # 2**60 hashes: never finished
    with pytest.raises(CheckpointError, match="unfolds into more than"):
        load_checkpoint(bomb)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_child_forked_after_the_network_ran_can_run_it(tmp_path):
    """torch's threads do not survive fork: without one thread in the child, its first forward
    pass waits forever (a server forking workers after loading its bot)."""
    script = tmp_path / "fork.py"
    script.write_text(
        "import os, torch\nfrom agents.network import TDNetwork\ntorch.set_num_threads(2)\nnet = TDNetwork()\n"
        "x = torch.zeros(3000, 50)\nwith torch.inference_mode():\n    net(x)\npid = os.fork()\nif pid == 0:\n"
        "    with torch.inference_mode():\n        net(x)\n    os._exit(0)\n"
        "print('child', os.waitpid(pid, 0)[1], 'parent threads', torch.get_num_threads())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["child", "0", "parent", "threads", "2"], out.stderr


FEATURES_DIGEST = {"nardy-features/1": "d81c5e4fab6f7f6fe0c41e8f2da64e62fbfdf74f0249ba3c9c2c2b44a2dbbd8a"}
"""SHA-256 of the features (little-endian float32) of ``_fixed_positions()``, per features version."""


def _fixed_positions() -> np.ndarray:
    """Every afterstate of every roll of the positions of tests/data/perft.tsv: thousands of
    positions that depend on no random generator, only on the rules."""
    from pathlib import Path

    from nardy_env import parse_npn

    table = Path(__file__).resolve().parents[1] / "data" / "perft.tsv"
    npns = sorted({line.split("\t")[0] for line in table.read_text(encoding="utf-8").splitlines()[1:] if line.strip()})
    states = np.stack([parse_npn(npn)[0] for npn in npns])
    rolls = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)])
    found = legal_afterstates(np.repeat(states, len(rolls), axis=0), np.tile(rolls, (len(states), 1)))
    return found.states


def test_features_that_change_change_their_version():
    """Checkpoints and exports record FEATURES_VERSION and are refused under another; features
    that changed under the same version would be read silently by every old network."""
    import hashlib

    digest = hashlib.sha256(features(raw_positions(_fixed_positions())).astype("<f4").tobytes()).hexdigest()
    assert FEATURES_VERSION in FEATURES_DIGEST, f"record the digest of {FEATURES_VERSION}: {digest}"
    assert digest == FEATURES_DIGEST[FEATURES_VERSION], (
        f"the features changed under {FEATURES_VERSION}: give them a new FEATURES_VERSION (CONTRIBUTING, "
        f"'A change of the features'), or undo the change; their digest is now {digest}")


def test_the_shipped_checkpoint_and_its_export_agree():
    """The shipped player is played from its export; its checkpoint, read with this code's
    features, must score as the export does (a features change without a new export would not)."""
    from agents.onnx_policy import load_policy
    from agents.registry import SHIPPED_PLAYER
    from agents.td import TorchEvaluator

    if not (SHIPPED_PLAYER / "checkpoint.pt").is_file() or not (SHIPPED_PLAYER / "policy.onnx").is_file():
        pytest.skip("no shipped player in this checkout")
    raw = raw_positions(_positions(2000))
    exported, _ = load_policy(SHIPPED_PLAYER)
    torch_equity = TorchEvaluator(load_checkpoint(SHIPPED_PLAYER / "checkpoint.pt")[0]).equity(raw)
    assert np.abs(exported.run(raw)[1] - torch_equity).max() < 1e-5

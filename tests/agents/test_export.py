"""Exported policies (FORMATS.md "Exported policy", docs/policy.md): export, verification, loading.

An untrained network stands in for a trained one until a trained player ships.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from agents.network import TDNetwork
from agents.onnx_policy import (
    JSON_FILE,
    ONNX_FILE,
    POLICY_FORMAT,
    RULES_METADATA,
    OnnxEvaluator,
    PolicyError,
    contract_input,
    load_policy,
    onnx_player,
    read_policy_json,
)
from agents.search import SearchPlayer
from agents.td import TorchEvaluator, file_sha256, save_checkpoint, td_player
from nardy_env import (
    DEFAULT_RULES,
    START_NPN,
    Color,
    NardyWarning,
    Rules,
    flip,
    format_npn,
    legal_afterstates,
    parse_npn,
)
from nardy_env.core import OFF_MOVER, OFF_OPPONENT
from nardy_env.encoding import FEATURES_VERSION, raw_positions
from tests.helpers import npn
from train.export import ExportError, add_export_arguments, cmd_export, export_policy, real_positions

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"hidden": [32, 16], "lr": 0.01, "games": 1234}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("run") / "checkpoint.pt"
    save_checkpoint(path, TDNetwork(CONFIG["hidden"]), DEFAULT_RULES,
                    training={"games": 1234, "steps": 99}, config=CONFIG)
    return path


def _export_amid_chatter(export) -> tuple[object, dict, str, list]:
    """Run ``export()`` while another thread prints and warns every 10 ms: what it returned, the
    thread's beats (all, and during the export), what was printed, and the warnings said."""
    import contextlib
    import io
    import threading
    import time
    import warnings

    stop, exporting = threading.Event(), threading.Event()
    beats = {"all": 0, "during": 0}

    def chatter():
        while not stop.is_set():
            print("beat")
            warnings.warn("a thread's own", UserWarning, stacklevel=1)
            beats["all"] += 1
            beats["during"] += exporting.is_set()
            time.sleep(0.01)

    with warnings.catch_warnings(record=True) as said, contextlib.redirect_stdout(io.StringIO()) as printed:
        warnings.simplefilter("always")
        thread = threading.Thread(target=chatter)
        thread.start()
        try:
            exporting.set()
            result = export()
            exporting.clear()
        finally:
            stop.set()
            thread.join()
    return result, beats, printed.getvalue(), list(said)


@pytest.fixture(scope="module")
def exported_amid_chatter(checkpoint, tmp_path_factory) -> tuple[Path, dict, dict, str, list]:
    """The module's export (the run directory; the default exporter, dynamo), made while another
    thread prints and warns: one dynamo export (some 20 s) for the tests of its files and for
    test_an_export_quiets_the_exporter_not_the_programs_other_threads[dynamo]."""
    out = tmp_path_factory.mktemp("policy")
    policy, beats, printed, said = _export_amid_chatter(lambda: export_policy(checkpoint.parent, out))
    return out, policy, beats, printed, said


@pytest.fixture(scope="module")
def exported(exported_amid_chatter) -> tuple[Path, dict]:
    out, policy = exported_amid_chatter[:2]
    return out, policy


def _positions_to_move(count: int, seed: int) -> np.ndarray:
    """Positions with the side to move still playing, from random games."""
    states = flip(real_positions(count, seed=seed))
    return states[states[:, OFF_OPPONENT] < 15]


def _copy_policy(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for name in (ONNX_FILE, JSON_FILE):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


# --- the files ------------------------------------------------------------------------------


def test_export_writes_exactly_two_files(exported):
    out, _ = exported
    assert sorted(p.name for p in out.iterdir()) == [JSON_FILE, ONNX_FILE]


def test_policy_json_follows_the_schema(exported, checkpoint):
    out, policy = exported
    info = json.loads((out / JSON_FILE).read_text())
    assert info == policy == read_policy_json(out)
    assert info["format"] == POLICY_FORMAT == "nardy-policy/1"
    # Every variant key of RULES.md: the cube and match ones say no cube, single games.
    assert info["rules"] == {**DEFAULT_RULES.to_dict(), "cube": False, "match_length": 0}
    assert Rules.from_dict(info["rules"]) == DEFAULT_RULES
    assert info["input"] == contract_input()
    assert info["input"]["name"] == "positions" and info["input"]["shape"] == ["N", 50]
    assert [(o["name"], o["dtype"], o["shape"]) for o in info["outputs"]] == [
        ("outcomes", "float32", ["N", 4]), ("equity", "float32", ["N"])]
    assert info["outputs"][0]["columns"] == ["win", "win_mars", "lose", "lose_mars"]
    assert info["outputs"][1]["weights"] == [1.0, 2.0, -1.0, -2.0]
    assert info["network"] == TDNetwork(CONFIG["hidden"]).shape()
    assert info["features_version"] == FEATURES_VERSION and info["features_in_graph"] is True
    assert info["known_outcomes_in_graph"] is True
    assert info["training"] == {"games": 1234, "config": CONFIG, "checkpoint": str(checkpoint),
                                "checkpoint_sha256": file_sha256(checkpoint)}
    meta = info["onnx"]
    assert meta["file"] == ONNX_FILE and meta["external_data"] is False
    assert isinstance(meta["opset"], int) and meta["opset"] >= 17
    assert meta["producer"].startswith("pytorch ")
    assert meta["sha256"] == file_sha256(out / ONNX_FILE) and meta["bytes"] == (out / ONNX_FILE).stat().st_size
    check = info["verification"]
    assert check["positions"] == 4096 and check["tolerance"] == 1e-5
    assert 0 <= check["max_abs_diff"]["outcomes"] <= 1e-5 and 0 <= check["max_abs_diff"]["equity"] <= 1e-5


def test_onnx_graph_is_one_file_with_the_contract_signature(exported):
    out, policy = exported
    model = onnx.load(str(out / ONNX_FILE), load_external_data=False)
    onnx.checker.check_model(model, full_check=True)
    assert not any(onnx.external_data_helper.uses_external_data(t) for t in model.graph.initializer)

    def signature(values):
        return [(v.name, v.type.tensor_type.elem_type,
                 [d.dim_value if d.HasField("dim_value") else "dynamic" for d in v.type.tensor_type.shape.dim])
                for v in values]

    assert signature(model.graph.input) == [("positions", TensorProto.FLOAT, ["dynamic", 50])]
    assert signature(model.graph.output) == [("outcomes", TensorProto.FLOAT, ["dynamic", 4]),
                                             ("equity", TensorProto.FLOAT, ["dynamic"])]
    assert {o.domain or "ai.onnx": o.version for o in model.opset_import}["ai.onnx"] == policy["onnx"]["opset"]
    assert model.producer_name == "pytorch"
    # The IR version opset 18 needs, not the exporter's 10: onnxruntime before 1.18 refused the file.
    assert model.ir_version == policy["onnx"]["ir_version"] == onnx.helper.find_min_ir_version_for(
        list(model.opset_import)) == 8
    assert {p.key: p.value for p in model.metadata_props} == {
        "nardy.format": POLICY_FORMAT, "nardy.features_version": FEATURES_VERSION,
        "nardy.rules": DEFAULT_RULES.to_json()}


def test_graph_encodes_features_itself_and_matches_torch_at_any_batch_size(exported, checkpoint):
    out, _ = exported
    evaluator, _ = load_policy(out)
    torch_eval = TorchEvaluator(td_player(checkpoint).evaluator.network)
    raw = raw_positions(real_positions(3000, seed=5))
    outcomes, equity = evaluator.run(raw)
    assert outcomes.shape == (3000, 4) and equity.shape == (3000,)
    assert outcomes.dtype == np.float32 and equity.dtype == np.float32
    np.testing.assert_allclose(outcomes.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(equity, outcomes @ np.array([1, 2, -1, -2], dtype=np.float32), atol=1e-6)
    assert np.abs(outcomes - torch_eval.outcomes(raw)).max() <= 1e-5
    for rows in (slice(0, 1), slice(7, 20), slice(100, 2100)):
        np.testing.assert_allclose(evaluator.run(raw[rows])[0], outcomes[rows], atol=1e-6)


# --- playing with it ------------------------------------------------------------------------


def test_graph_gives_finished_results_their_exact_points(exported):
    """With the exported graph alone (FORMATS.md's plain argmax), a win now is never declined."""
    out, _ = exported
    evaluator = OnnxEvaluator(out / ONNX_FILE)
    won = np.zeros((3, 50), dtype=np.float32)
    won[:, 48] = 15
    won[:, 49] = (0, 1, 14)
    won[:, 24] = 15 - won[:, 49]
    outcomes, equity = evaluator.run(won)
    np.testing.assert_array_equal(outcomes, [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_array_equal(equity, [2, 1, 1])
    live = raw_positions(_positions_to_move(400, seed=3))
    live = live[live[:, 49] > 0]
    outcomes, equity = evaluator.run(live)
    assert live.shape[0] >= 5 and (outcomes[:, 1] == 0).all() and (equity <= 1).all()


def test_round_trip_plays_like_the_torch_player(exported, checkpoint):
    out, _ = exported
    states = _positions_to_move(5000, seed=11)
    dice = np.random.default_rng(3).integers(1, 7, size=(states.shape[0], 2))
    found = legal_afterstates(states, dice)
    theirs, ours = td_player(checkpoint), onnx_player(out)
    rng = np.random.default_rng(0)
    want, got = theirs.choose(states, found, rng), ours.choose(states, found, rng)
    assert states.shape[0] > 4000 and found.states.shape[0] > 30000
    # float32 rounding may flip only a near tie: best and second best within 2e-6 for torch.
    values = theirs.evaluate(found)
    counts = found.counts()
    best = values[found.offsets[:-1] + want]
    second = np.array([np.sort(values[a:b])[-2] if b - a > 1 else -np.inf
                       for a, b in zip(found.offsets[:-1], found.offsets[1:], strict=True)])
    near_tie = best - second < 2e-6
    assert (want == got)[~near_tie].all(), np.flatnonzero((want != got) & ~near_tie)
    assert near_tie.sum() <= counts.size // 100
    assert ours.name == str(out) and ours.rules == DEFAULT_RULES


def test_round_trip_one_ply_search_plays_like_the_torch_player(exported, checkpoint):
    out, _ = exported
    states = _positions_to_move(400, seed=12)[:12]
    dice = np.random.default_rng(4).integers(1, 7, size=(states.shape[0], 2))
    found = legal_afterstates(states, dice)
    theirs, ours = td_player(checkpoint, ply=1), onnx_player(out, ply=1)
    np.testing.assert_allclose(ours.evaluate(found), theirs.evaluate(found), atol=1e-5)
    rng = np.random.default_rng(0)
    assert (ours.choose(states, found, rng) == theirs.choose(states, found, rng)).all()


def _load_frontend():
    spec = importlib.util.spec_from_file_location("frontend_example", ROOT / "examples" / "frontend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_frontend_encoding_from_npn_is_the_raw_layout():
    frontend = _load_frontend()
    states = real_positions(2000, seed=21)
    for k, state in enumerate(states):
        mover = Color(k % 2)  # either colour may have just moved
        result = format_npn(flip(state), mover.other)
        assert frontend.encode(result) == raw_positions(state).tolist(), result
    # The worked row of docs/policy.md: white's 6-5 from the start.
    after = "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b"
    assert frontend.encode(after) == [0] * 12 + [1] + [0] * 10 + [14] + [0] * 23 + [15] + [0, 0]


def test_frontend_contract_picks_what_the_player_picks(exported):
    """docs/policy.md's steps (sorted NPN results, graph equity, exact wins, first max) = onnx_player."""
    out, _ = exported
    frontend = _load_frontend()
    import onnxruntime as ort

    session = ort.InferenceSession(str(out / ONNX_FILE), providers=["CPUExecutionProvider"])
    player = onnx_player(out)
    states = _positions_to_move(600, seed=13)[:300]
    # Bearing-off positions where some plays win and others do not.
    bear_off = parse_npn(npn({1: 1, 6: 1}, {13: 10}, off=(13, 5)))[0]
    states = np.concatenate([states, bear_off[None]])
    dice = np.random.default_rng(6).integers(1, 7, size=(states.shape[0], 2))
    dice[-1] = (6, 1)
    found = legal_afterstates(states, dice)
    picks = player.choose(states, found, np.random.default_rng(0), colors=np.zeros(states.shape[0], dtype=np.int64))
    for i in range(states.shape[0]):
        results = [format_npn(flip(s), Color.BLACK) for s in found.states[found.offsets[i]:found.offsets[i + 1]]]
        assert frontend.best_result(session, sorted(results)) == results[picks[i]]
    assert found.states[found.offsets[-2] + picks[-1], OFF_MOVER] == 15


def test_exact_ties_go_to_the_earliest_sorted_result_for_both_colours():
    """FORMATS.md: equal equities go to the earliest result of the sorted list, also for black."""
    import onnxruntime as ort

    frontend = _load_frontend()
    # Zero weights: every position gets the same outcomes, so every live result ties.
    model = _toy_model(weights=np.zeros((50, 4)))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    player = SearchPlayer(OnnxEvaluator(model))
    states = _positions_to_move(300, seed=17)[:150]
    dice = np.random.default_rng(8).integers(1, 7, size=(states.shape[0], 2))
    found = legal_afterstates(states, dice)
    colors = np.arange(states.shape[0]) % 2
    picks = player.choose(states, found, np.random.default_rng(0), colors=colors)
    tied = 0
    for i in range(states.shape[0]):
        mover = Color(int(colors[i]))
        rows = found.states[found.offsets[i]:found.offsets[i + 1]]
        results = [format_npn(flip(s), mover.other) for s in rows]
        assert frontend.best_result(session, sorted(results)) == results[picks[i]]
        tied += len(results) > 1 and results[picks[i]] != results[0]
    assert tied > 10  # the NPN order really differs from the core's order here


# --- loader errors --------------------------------------------------------------------------


def _toy_model(input_name="positions", batch="N", width=50, outputs=("outcomes", "equity"),
               metadata=None, weights=None, softmax=True, points=(1, 2, -1, -2)) -> bytes:
    """A tiny graph with the contract's shape (or a broken one): softmax(x @ W) and its equity."""
    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [batch, width])
    values = np.linspace(-1, 1, width * 4) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    w = helper.make_tensor("w", TensorProto.FLOAT, [width, 4], values.tolist())
    pts = helper.make_tensor("pts", TensorProto.FLOAT, [4], list(points))
    nodes = [helper.make_node("MatMul", [input_name, "w"], ["logits"]),
             helper.make_node("Softmax" if softmax else "Relu", ["logits"], ["outcomes"],
                              **({"axis": -1} if softmax else {})),
             helper.make_node("MatMul", ["outcomes", "pts"], ["equity"])]
    shapes = {"outcomes": [batch, 4], "equity": [batch]}
    graph = helper.make_graph(nodes, "toy", [x], [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o])
                                                 for o in outputs], [w, pts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=value)
    return model.SerializeToString()


def _with_model(exported, tmp_path: Path, model: bytes, update_hash: bool = True) -> Path:
    folder = _copy_policy(exported[0], tmp_path / "policy")
    (folder / ONNX_FILE).write_bytes(model)
    if update_hash:
        info = json.loads((folder / JSON_FILE).read_text())
        info["onnx"]["sha256"] = file_sha256(folder / ONNX_FILE)
        (folder / JSON_FILE).write_text(json.dumps(info))
    return folder


def _with_json(exported, tmp_path: Path, **changes) -> Path:
    folder = _copy_policy(exported[0], tmp_path / "policy")
    info = json.loads((folder / JSON_FILE).read_text())
    for key, value in changes.items():
        if value is None:
            del info[key]
        else:
            info[key] = value
    (folder / JSON_FILE).write_text(json.dumps(info))
    return folder


def test_toy_model_with_the_contract_loads(exported, tmp_path):
    import copy
    import pickle

    folder = _with_model(exported, tmp_path, _toy_model())
    player = onnx_player(folder)
    # A copy (a worker process's) still names the file in its errors.
    assert pickle.loads(pickle.dumps(player.evaluator)).where == copy.deepcopy(player.evaluator).where == str(
        folder / ONNX_FILE)
    assert player.evaluator.outcomes(np.zeros((3, 50), np.float32)).shape == (3, 4)
    for bad in (np.full((2, 50), np.nan), np.array([[None] * 50]), -np.ones((1, 50)), np.full((1, 50), 16.0),
                np.full((1, 50), 2.5)):
        with pytest.raises(ValueError, match="positions are checker counts, whole numbers 0..15"):
            player.evaluator.run(bad)


def test_missing_folder_file_and_files(exported, tmp_path):
    with pytest.raises(PolicyError, match="does not exist"):
        onnx_player(tmp_path / "nowhere")
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(PolicyError, match="is a file, not an exported policy folder"):
        onnx_player(tmp_path / "plain.txt")
    for missing in (ONNX_FILE, JSON_FILE):
        folder = _copy_policy(exported[0], tmp_path / f"no-{missing}")
        (folder / missing).unlink()
        with pytest.raises(PolicyError, match=f"{missing} is missing"):
            onnx_player(folder)
    # A file's name taken by a folder or a link that leads nowhere: said so, not "missing".
    folder = _copy_policy(exported[0], tmp_path / "odd")
    (folder / JSON_FILE).unlink()
    (folder / JSON_FILE).mkdir()
    with pytest.raises(PolicyError, match=r"odd is not a usable exported policy: policy.json is a folder, not a file"):
        onnx_player(folder)
    (folder / JSON_FILE).rmdir()
    (folder / JSON_FILE).symlink_to(JSON_FILE)  # round in a loop
    with pytest.raises(PolicyError, match=r"policy.json is a link that leads nowhere \(to a missing file, or round"):
        onnx_player(folder)
    # A run directory named as a policy: said so, with the two ways on (play it, or export it).
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "checkpoint.pt").write_bytes(b"PK\x03\x04")
    with pytest.raises(PolicyError, match=r"run is a run directory \(it holds checkpoint.pt\), not an exported "
                                          r"policy: name it as a player \(--player .*run; load_player in Python\), "
                                          r"or export it first with `nardy export .*run --out DIR`"):
        onnx_player(run_dir)
    # Either file of a complete folder names the folder.
    assert load_policy(exported[0] / ONNX_FILE)[1]["format"] == POLICY_FORMAT


@pytest.mark.parametrize(("changes", "message"), [
    ({"format": "nardy-policy/2"}, r"has format 'nardy-policy/2'; this code reads 'nardy-policy/1' \(a newer export"),
    ({"features_version": 9}, "'features_version' must be a string, got 9"),
    ({"network": {"hidden": [8], "features_version": "nardy-features/0"}}, "features version mismatch"),
    ({"network": {"hidden": [8.5]}}, r"network 'hidden' must be a list of layer sizes .* got \[8.5\]"),
    ({"training": {"games": -5, "config": {}}}, "training 'games' must be a whole number, 0 or more, got -5"),
    ({"training": {"games": "lots", "config": {}}}, "training 'games' must be a whole number, 0 or more, got 'lots'"),
    ({"training": {"games": 10, "config": {"rules": {"block_rule": "home"}}}},
     r"policy.json contradicts itself: its rules are .* but the training config it records played "
     r"\{\"block_rule\": \"home\"\}"),
    ({"training": None}, r"lacks the key\(s\) \['training'\]"),
    ({"training": {"games": 10, "config": [1]}}, r"training 'config' must be the run's settings \(an object\) or "
                                                 r"null, got list \[1\]"),
    ({"rules": {"block_rule": "nowhere"}}, "rules: block_rule must be one of"),
    ({"input": {"name": "x", "dtype": "float32", "shape": ["N", 50]}}, "one float32 input named 'positions'"),
    ({"input": {"name": "positions", "dtype": "float32", "shape": [1, 50]}}, r"policy.json: the input shape is \[1, 50\]"),
    ({"outputs": [{"name": "outcomes", "shape": ["N", 4]}]}, r"outputs are \['outcomes'\]"),
])
def test_bad_policy_json_is_refused_with_a_clear_message(exported, tmp_path, changes, message):
    with pytest.raises(PolicyError, match=message):
        onnx_player(_with_json(exported, tmp_path, **changes))


def test_a_features_version_this_code_does_not_compute_still_plays(exported, tmp_path):
    """The encoding is inside the graph (docs/policy.md: features_version is informative), so a
    policy from another version of nardy plays: only its files must agree with each other."""
    version = "nardy-features/9"
    folder = _with_model(exported, tmp_path, _toy_model(metadata={"nardy.features_version": version}))
    info = json.loads((folder / JSON_FILE).read_text())
    info["features_version"] = info["network"]["features_version"] = version
    info["training"]["config"] = {}  # and a run's config without rules is the file's rules
    (folder / JSON_FILE).write_text(json.dumps(info))
    player = onnx_player(folder)
    assert player.evaluator.outcomes(np.zeros((2, 50), np.float32)).shape == (2, 4)


def test_the_rules_travel_in_the_graph_too(exported, tmp_path):
    """An export binds its rules to the graph's metadata: a policy.json edited to other rules, or
    a graph beside another export's file, is refused even without the file's SHA-256."""
    meta = onnx.load_model_from_string((exported[0] / ONNX_FILE).read_bytes()).metadata_props
    assert Rules.from_dict(json.loads({p.key: p.value for p in meta}[RULES_METADATA])) == DEFAULT_RULES
    club = {**DEFAULT_RULES.to_dict(), "block_rule": "home"}
    folder = _copy_policy(exported[0], tmp_path / "edited")
    info = json.loads((folder / JSON_FILE).read_text())
    del info["onnx"]  # a policy.json from elsewhere may leave the hash out
    info["rules"] = club
    info["training"]["config"] = {}
    (folder / JSON_FILE).write_text(json.dumps(info))
    with pytest.raises(PolicyError, match=r"the model was exported for rules .*\"block_rule\": \"ahead\".*"
                                          r"policy.json says .*\"block_rule\": \"home\""):
        onnx_player(folder)
    folder = _with_model(exported, tmp_path, _toy_model(metadata={RULES_METADATA: "not json"}))
    with pytest.raises(PolicyError, match="its metadata nardy.rules cannot be read"):
        onnx_player(folder)


def test_policy_json_tells_the_weights_a_run_started_from():
    """A run begun from another's weights (init_from) records that checkpoint as started_from;
    its export says so, since training.games counts only the run's own games."""
    from train.export import _provenance

    started = {"path": "/home/someone/runs/first/checkpoint.pt", "games": 400000, "sha256": "ab" * 32}
    payload = {"training": {"games": 2048}, "config": {"init_from": "runs/first"}, "started_from": started}
    assert _provenance(payload, Path("runs/second/checkpoint.pt"), "cd" * 32) == {
        "games": 2048, "config": {"init_from": "runs/first"}, "checkpoint": "runs/second/checkpoint.pt",
        "checkpoint_sha256": "cd" * 32, "started_from": {"games": 400000, "sha256": "ab" * 32}}  # no local path
    del payload["started_from"]
    assert "started_from" not in _provenance(payload, Path("c.pt"), "cd" * 32)


def test_onnxruntime_threads_are_a_whole_number_in_range(exported):
    for bad in (0, -5, True, 1.5, "3", None, 2**31):  # 0, -5, True and 1.5 were 1 thread, "3" three; None and 2**31
        with pytest.raises(ValueError, match=r"threads must be a whole number from 1 to 1024"):  # raised inside
            load_policy(exported[0], threads=bad)                                               # onnxruntime
    assert load_policy(exported[0], threads=np.int64(2))[0].session.get_session_options().intra_op_num_threads == 2


def test_policy_json_that_is_not_json(exported, tmp_path):
    folder = _copy_policy(exported[0], tmp_path / "p")
    (folder / JSON_FILE).write_text("{not json")
    with pytest.raises(PolicyError, match="is not valid JSON"):
        onnx_player(folder)
    (folder / JSON_FILE).write_text("[" * 100_000 + "]" * 100_000)  # deeper than Python's parser goes
    with pytest.raises(PolicyError, match="is not a policy.json: its JSON is nested too deeply to read"):
        onnx_player(folder)


@pytest.mark.parametrize(("model", "message"), [
    (dict(input_name="x"), r"inputs are \['x'\]; the contract is one input named 'positions'"),
    (dict(batch=8), r"'positions' has shape \[8, 50\]; the contract is \['N', 50\] with a dynamic batch"),
    (dict(width=49), r"'positions' has shape \['N', 49\]"),
    (dict(outputs=("outcomes",)), r"outputs are \['outcomes'\]; the contract is \['outcomes', 'equity'\]"),
    (dict(metadata={"nardy.features_version": "nardy-features/0"}), "the model's features_version is"),
])
def test_graph_that_breaks_the_contract_is_refused(exported, tmp_path, model, message):
    with pytest.raises(PolicyError, match=message):
        onnx_player(_with_model(exported, tmp_path, _toy_model(**model)))


@pytest.mark.parametrize("model", [dict(weights=np.full(200, np.nan)), dict(softmax=False), dict(points=(50, 100, -1, -2)),
                                   dict(points=(1, 3, -1, -2))], ids=["nan", "no-softmax", "equity-out-of-range",
                                                                      "equity-not-of-its-outcomes"])
def test_a_graph_whose_outputs_are_not_probabilities_is_not_played(exported, tmp_path, model):
    """Signature right, numbers wrong (a damaged or foreign graph): refused when it runs, not played."""
    player = onnx_player(_with_model(exported, tmp_path, _toy_model(**model)))
    with pytest.raises(PolicyError, match=r"policy.onnx: the graph's outputs for row 0 are not outcome probabilities"):
        player.evaluator.run(np.zeros((3, 50), np.float32))


def test_files_from_different_exports_are_refused(exported, tmp_path):
    folder = _with_model(exported, tmp_path, _toy_model(), update_hash=False)
    with pytest.raises(PolicyError, match="come from different exports"):
        onnx_player(folder)


def test_unreadable_onnx_is_refused(exported, tmp_path):
    folder = _with_model(exported, tmp_path, b"not an onnx file")
    with pytest.raises(PolicyError, match="onnxruntime cannot load"):
        onnx_player(folder)
    with pytest.raises(ValueError, match=r"shape \[N, 50\]"):
        OnnxEvaluator(_toy_model()).run(np.zeros((2, 26)))


# --- export errors --------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:torch has deprecated its TorchScript ONNX exporter")  # its own tests say it
def test_export_refuses_bad_sources_and_destinations(exported, checkpoint, tmp_path):
    (tmp_path / "odd" / "checkpoint.pt").mkdir(parents=True)  # there, but no file: not "a folder without" it
    with pytest.raises(ExportError, match=r"odd/checkpoint.pt is a folder, not a file"):
        export_policy(tmp_path / "odd", tmp_path / "out")
    with pytest.raises(ExportError, match="no checkpoint at .*missing.pt: give a run directory, a checkpoint "
                                          "file or default"):
        export_policy(tmp_path / "missing.pt", tmp_path / "out")
    for bot in ("random", "heuristic"):  # played by code: said so, not "no checkpoint at random"
        with pytest.raises(ExportError, match=f"{bot} is a bot, played by code, not a network: nothing to export"):
            export_policy(bot, tmp_path / "out")
    with pytest.raises(ExportError, match="folder without checkpoint.pt"):
        export_policy(tmp_path, tmp_path / "out")
    with pytest.raises(ExportError, match="drop '@1'"):
        export_policy(f"{checkpoint.parent}@1", tmp_path / "out")
    with pytest.raises(ExportError, match="already an exported policy"):
        export_policy(exported[0], tmp_path / "out")  # an export alone, no checkpoint.pt beside it
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ExportError, match="is not a checkpoint"):
        export_policy(tmp_path / "junk.pt", tmp_path / "out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match="is not a folder"):
        export_policy(checkpoint, tmp_path / "file")
    with pytest.raises(ExportError, match=r"policy.onnx and policy.json; pass --force \(force=True in Python\) "
                                          "to replace them"):
        export_policy(checkpoint, exported[0])
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "policy.json").write_text("{}")
    with pytest.raises(ExportError, match="holds policy.json; pass --force .* to replace it$"):
        export_policy(checkpoint, tmp_path / "half")
    from agents.td import load_checkpoint

    with pytest.raises(ExportError, match=r"not a TDNetwork: save it first, save_checkpoint\(path, network, rules\)"):
        export_policy(load_checkpoint(checkpoint)[0], tmp_path / "out")  # a network in memory
    for kwargs, message in (({"tolerance": float("nan")}, "tolerance must be a positive number"),
                            ({"tolerance": "1e-5"}, "tolerance must be a positive number"),
                            ({"opset": 18.0}, "opset must be a whole number"),
                            ({"positions": 10.5}, "positions must be a whole number")):
        with pytest.raises(ExportError, match=message):
            export_policy(checkpoint, tmp_path / "out", **kwargs)
    # A checkpoint whose config played other rules than it records: policy.json could not be read back.
    mixed = save_checkpoint(tmp_path / "mixed.pt", TDNetwork((4,)), Rules(block_rule="home"))
    payload = torch.load(mixed, weights_only=True)  # by hand: save_checkpoint refuses to write it
    payload["config"] = {"rules": {}}
    torch.save(payload, mixed)
    with pytest.raises(ExportError, match=r"mixed.pt contradicts itself: it records rules .*\"home\".*, but its "
                                          r"config \{\} \(damaged or hand-made\?\); nothing was written"):
        export_policy(mixed, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    info = export_policy(checkpoint, tmp_path / "np", positions=np.int64(16), opset=np.int64(18),
                         tolerance=np.float32(1e-5), exporter="torchscript")  # numpy numbers are numbers
    assert info["onnx"]["opset"] == 18


def test_an_opset_the_exporter_does_not_write_is_refused_not_replaced(checkpoint, tmp_path, caplog):
    with pytest.raises(ExportError, match="opset 13 was asked for, but the dynamo exporter wrote opset 18"):
        export_policy(checkpoint, tmp_path / "out", opset=13, positions=8)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ExportError, match="opset 5 was asked for"):
        export_policy(checkpoint, tmp_path / "out", opset=5, positions=8)
    # The version converter's own logged tracebacks stay out of it: the error above says what happened.
    assert not [r for r in caplog.records if r.name.startswith(("onnxscript", "torch.onnx"))]


def test_failed_verification_shows_the_difference_and_writes_nothing(checkpoint, tmp_path, monkeypatch):
    import train.export as export

    real = export._policy_module

    def drifting(network):
        module = real(network)
        forward = module.forward
        module.forward = lambda positions: tuple(t + 3e-4 for t in forward(positions))
        return module

    monkeypatch.setattr(export, "_policy_module", drifting)
    out = tmp_path / "out"
    with pytest.raises(ExportError) as err:
        export_policy(checkpoint, out, exporter="torchscript", positions=256)
    text = str(err.value)
    assert "onnxruntime and torch differ by 0.0003" in text and "tolerance 1e-05" in text
    assert "256 real positions" in text and "nothing was written" in text
    assert not out.exists() or not any(out.iterdir())


def test_a_graph_that_computes_nan_fails_verification(checkpoint, tmp_path, monkeypatch):
    """NaN compares false with everything, so a plain 'difference > tolerance' test would pass it."""
    import train.export as export

    real = export._policy_module

    def broken(network):
        module = real(network)
        forward = module.forward
        module.forward = lambda positions: tuple(t * float("nan") for t in forward(positions))
        return module

    monkeypatch.setattr(export, "_policy_module", broken)
    with pytest.raises(ExportError, match=r"verification failed: the exported graph: the graph's outputs for row 0 "
                                          r"are not outcome probabilities.*nothing was written"):
        export_policy(checkpoint, tmp_path / "out", exporter="torchscript", positions=64)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_an_export_quiets_the_exporter_not_the_programs_other_threads(checkpoint, tmp_path, request, exporter):
    """A service that exports while other threads work keeps their output and their warnings."""
    if exporter == "dynamo":  # the module's export (the default exporter) was made amid such a thread
        beats, out, said = request.getfixturevalue("exported_amid_chatter")[2:]
    else:
        _, beats, out, said = _export_amid_chatter(
            lambda: export_policy(checkpoint, tmp_path / "out", exporter=exporter, positions=64))
    assert beats["during"] > 0
    assert out == "beat\n" * beats["all"]  # nothing of the exporter's, nothing of the thread's lost
    # ... and nardy's own word on the legacy exporter, said before the export quiets anything
    ours = ["torch has deprecated its TorchScript ONNX exporter"] if exporter == "torchscript" else []
    assert [str(w.message)[:50] for w in said if w.category is NardyWarning] == ours
    assert [str(w.message) for w in said if w.category is not NardyWarning] == ["a thread's own"] * beats["all"]


def test_the_exporting_threads_quiet_stdout_passes_everything_once_done():
    """Another thread may redirect stdout during an export and put the quiet stream back after it:
    the exporting thread's later prints must not vanish."""
    import copy
    import io
    import threading

    from train.export import _QuietIn

    out = io.StringIO()
    quiet = _QuietIn(out, threading.get_ident())
    quiet.write("exporter chatter\n")
    quiet.writelines(["more chatter\n"])
    other = threading.Thread(target=lambda: quiet.writelines(["from another thread\n"]))
    other.start()
    other.join()
    quiet.done()
    quiet.write("after the export\n")
    assert out.getvalue() == "from another thread\nafter the export\n"
    assert copy.copy(quiet).getvalue() == out.getvalue()  # no endless __getattr__ on a bare copy


def test_a_network_whose_own_outputs_are_nan_is_named_as_the_cause(tmp_path, monkeypatch):
    """Finite weights so large that float32 overflows: the network is at fault, not the graph, and
    that is said before the graph is made (seconds of exporting for nothing)."""
    import train.export as export

    def never(*args, **kwargs):
        raise AssertionError("the graph was made for a network whose outputs are NaN")

    monkeypatch.setattr(export, "_to_onnx", never)
    net = TDNetwork((8,))
    with torch.no_grad():
        for layer in net.body:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.mul_(1e30)
    save_checkpoint(tmp_path / "huge.pt", net)
    with pytest.raises(ExportError, match=r"the network's own outputs for position 0 are not outcome probabilities "
                                          r".*overflow float32 arithmetic.*nothing was written"):
        export_policy(tmp_path / "huge.pt", tmp_path / "out", exporter="torchscript", positions=64)


def test_a_graph_onnxruntime_cannot_load_for_the_check_fails_verification(checkpoint, tmp_path, monkeypatch):
    """Loading the graph to check it writes a copy to a temporary folder, which can fail (a full disk)."""
    import onnxruntime

    def cannot(*args, **kwargs):
        raise OSError(27, "File too large")

    monkeypatch.setattr(onnxruntime, "InferenceSession", cannot)
    with pytest.raises(ExportError, match=r"verification failed: onnxruntime cannot load the exported graph: "
                                          r".*File too large.*nothing was written"):
        export_policy(checkpoint, tmp_path / "out", exporter="torchscript", positions=64)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_exporter_broken_by_ctrl_c_is_a_stop_not_a_failure(checkpoint, tmp_path, monkeypatch):
    """Ctrl-C while torch imports its exporter can surface as another error raised on the way out
    (a half-imported module: AttributeError): that is the user's stop, not an export failure."""
    def interrupted(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise AttributeError("partially initialized module 'torch._dynamo' has no attribute 'exc'") from None

    monkeypatch.setattr(torch.onnx, "export", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export_policy(checkpoint, tmp_path / "out", positions=8)
    assert not (tmp_path / "out").exists()

    def broken(*args, **kwargs):
        raise AttributeError("no attribute 'exc'")

    monkeypatch.setattr(torch.onnx, "export", broken)
    with pytest.raises(ExportError, match=r"torch.onnx.export \(dynamo, opset \d+\) failed: AttributeError: no "):
        export_policy(checkpoint, tmp_path / "out", positions=8)


def _export_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_export_arguments(parser)
    return parser.parse_args(list(argv))


def test_cmd_export_reports_success_and_failure(checkpoint, tmp_path, capsys):
    out = tmp_path / "fresh"
    with pytest.warns(NardyWarning, match="torch has deprecated its TorchScript ONNX exporter"):
        assert cmd_export(_export_args(str(checkpoint), "--out", str(out), "--exporter", "torchscript",
                                       "--positions", "512")) == 0
    printed = capsys.readouterr().out
    assert "policy.onnx" in printed and "verified: onnxruntime matches torch on 512 real positions" in printed
    assert read_policy_json(out)["onnx"]["exporter"] == "torchscript"
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out))) == 1
    assert "nardy export:" in capsys.readouterr().err
    (out / "policy.onnx").chmod(0o600)  # kept private by its owner
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out), "--force", "--json",
                                   "--exporter", "torchscript", "--positions", "64")) == 0
    assert json.loads(capsys.readouterr().out)["verification"]["positions"] == 64
    assert (out / "policy.onnx").stat().st_mode & 0o777 == 0o600  # replaced, still private


def test_an_export_that_does_not_read_back_is_reported_not_raised(checkpoint, tmp_path, capsys, monkeypatch):
    import train.export

    def unreadable(path, threads=1):
        raise PolicyError(f"{path}: cannot be read back")

    monkeypatch.setattr(train.export, "load_policy", unreadable)
    out = tmp_path / "out"
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out), "--exporter", "torchscript",
                                   "--positions", "64")) == 1
    assert f"nardy export: the export written to {out} does not read back" in capsys.readouterr().err


def test_an_export_that_cannot_be_written_whole_leaves_the_previous_one_as_it_was(checkpoint, tmp_path, capsys,
                                                                                   monkeypatch):
    import train.export

    out = tmp_path / "out"
    args = ("--exporter", "torchscript", "--positions", "64")
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out), *args)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = train.export.write_atomic

    def full_at_the_json(path, write):
        if path.name.startswith(".policy.json"):
            raise OSError(28, "No space left on device")
        return real(path, write)

    monkeypatch.setattr(train.export, "write_atomic", full_at_the_json)
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out), "--force", *args)) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no new onnx beside the old json
    fresh = tmp_path / "fresh"
    assert cmd_export(_export_args(str(checkpoint), "--out", str(fresh), *args)) == 1
    assert not fresh.exists()  # nothing half-made
    monkeypatch.undo()
    # A folder where a file of the export goes: refused before any work, nothing replaced.
    odd = tmp_path / "odd"
    (odd / "policy.json").mkdir(parents=True)
    (odd / "policy.onnx").write_bytes(b"old")
    assert cmd_export(_export_args(str(checkpoint), "--out", str(odd), "--force", *args)) == 1
    assert f"{odd / 'policy.json'} is a folder, where the export writes its policy.json; move it away" \
        in capsys.readouterr().err
    assert (odd / "policy.onnx").read_bytes() == b"old" and sorted(p.name for p in odd.iterdir()) == [
        "policy.json", "policy.onnx"]
    # Links are replaced themselves (never what they point to), a broken one or one to a folder too.
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "policy.json").symlink_to(tmp_path / "nowhere")
    (linked / "policy.onnx").symlink_to(odd)
    assert cmd_export(_export_args(str(checkpoint), "--out", str(linked), *args)) == 1  # not without --force
    assert "already holds policy.onnx and policy.json; pass --force" in capsys.readouterr().err
    assert cmd_export(_export_args(str(checkpoint), "--out", str(linked), "--force", *args)) == 0
    assert not any(p.is_symlink() for p in linked.iterdir()) and load_policy(linked)
    assert sorted(p.name for p in odd.iterdir()) == ["policy.json", "policy.onnx"]
    # A rename that fails half way leaves no staged file behind.
    real_replace = os.replace

    def refused_at_the_json(src, dst):
        if Path(dst).name == "policy.json":
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    monkeypatch.setattr(train.export.os, "replace", refused_at_the_json)
    assert cmd_export(_export_args(str(checkpoint), "--out", str(out), "--force", *args)) == 1
    assert "Permission denied" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["policy.json", "policy.onnx"]


def test_export_parser_needs_an_output_folder():
    with pytest.raises(SystemExit):
        _export_args("some/run")


# --- without torch, through the command line ------------------------------------------------


def _run_without_torch(tmp_path: Path, *args: str, stdin: str | None = None,
                       cwd: Path = ROOT, home: Path | None = None,
                       telemetry: str | None = None) -> subprocess.CompletedProcess:
    """``home``: run with that HOME, and ORT_DISABLE_TELEMETRY ``telemetry`` instead of the suite's
    (tests/conftest.py; None: unset)."""
    shim = tmp_path / "no-torch"
    shim.mkdir(exist_ok=True)
    (shim / "torch.py").write_text('raise ImportError("torch is unimportable in this test")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(ROOT)]), "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env = {k: v for k, v in env.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
        env["HOME"] = str(home)
        if telemetry is not None:
            env["ORT_DISABLE_TELEMETRY"] = telemetry
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def test_the_shim_makes_torch_unimportable(tmp_path):
    out = _run_without_torch(tmp_path, "-c", "import torch")
    assert out.returncode != 0 and "torch is unimportable" in out.stderr


def test_hint_with_a_policy_runs_without_torch(exported, checkpoint, tmp_path):
    second = "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b"
    lines = [{"position": START_NPN, "dice": [6, 5]}, {"position": second, "dice": [3, 3]},
             {"position": second, "dice": [6, 2]}]
    out = _run_without_torch(tmp_path, "-m", "train.cli", "hint", "--jsonl", "--policy", str(exported[0]),
                             stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(records) == 3
    torch_player = td_player(checkpoint)
    for rec in records:
        ranked = rec["ranked"]
        assert sorted(r["result"] for r in ranked) == rec["results"]
        assert [r["equity"] for r in ranked] == sorted((r["equity"] for r in ranked), reverse=True)
        # The same equities as the torch network gives.
        state, side = parse_npn(rec["position"])
        found = legal_afterstates(state[None], np.array([rec["dice"]]))
        want = {format_npn(flip(s), side.other): v for s, v in zip(found.states, torch_player.evaluate(found),
                                                                   strict=True)}
        for r in ranked:
            assert abs(r["equity"] - want[r["result"]]) < 2e-5


def test_eval_with_a_policy_runs_without_torch(exported, tmp_path):
    out = _run_without_torch(tmp_path, "-m", "train.cli", "eval", str(exported[0]), "heuristic",
                             "--games", "20", "--workers", "1", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["games"] == 20 and summary["player_a"] == str(exported[0])


def test_bad_policy_folder_gives_a_clear_cli_error(exported, tmp_path):
    folder = _with_json(exported, tmp_path, format="something-else")
    out = _run_without_torch(tmp_path, "-m", "train.cli", "hint", "--policy", str(folder), START_NPN, "6", "5")
    assert out.returncode != 0
    assert "nardy hint: " in out.stderr and "this code reads 'nardy-policy/1'" in out.stderr


def test_frontend_example_plays_a_game_to_the_end_without_torch(exported, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    out = _run_without_torch(tmp_path, str(ROOT / "examples" / "frontend.py"), str(exported[0]), "--auto", "1",
                             home=home, telemetry="")  # empty: no choice (onnxruntime reads it as on)
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[-1]
    assert " won " in last and "point(s) in" in last
    assert not (home / ".cache" / "Microsoft").exists()  # it asked onnxruntime for no telemetry, as nardy does
    assert len((ROOT / "examples" / "frontend.py").read_text().splitlines()) < 100


def test_frontend_example_gives_onnxruntime_the_graph_alone_in_an_empty_folder(exported, tmp_path):
    # docs/policy.md's advice, followed by the example: from bytes, onnxruntime would read the
    # external data a graph names relative to the working directory (here, a file beside it).
    import numpy as np
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load_model_from_string(_toy_model())
    weights = next(t for t in model.graph.initializer if t.name == "w")
    values = onnx.numpy_helper.to_array(weights).astype(np.float32)
    here = tmp_path / "here"
    here.mkdir()
    (here / "w.bin").write_bytes(values.tobytes())
    weights.CopyFrom(onnx.numpy_helper.from_array(values, "w"))
    set_external_data(weights, location="w.bin")
    weights.data_location = onnx.TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    folder = _with_model(exported, tmp_path, model.SerializeToString())
    out = _run_without_torch(tmp_path, str(ROOT / "examples" / "frontend.py"), str(folder), "--auto", "1", cwd=here)
    assert out.returncode == 2, out.stdout[-500:]
    assert "is not an exported policy folder nardy can load" in out.stderr and "Traceback" not in out.stderr
    # An export from before finished results were valued in the graph: best_result would misplay it.
    older = _copy_policy(exported[0], tmp_path / "older")
    info = json.loads((older / JSON_FILE).read_text())
    del info["known_outcomes_in_graph"]
    (older / JSON_FILE).write_text(json.dumps(info))
    out = _run_without_torch(tmp_path, str(ROOT / "examples" / "frontend.py"), str(older), "--auto", "1")
    assert out.returncode == 2 and "with known_outcomes_in_graph (best_result needs it: export an older one again)" \
        in out.stderr, out.stderr[-500:]


def test_nardy_export_command(checkpoint, tmp_path):
    from train.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert "export" in sub.choices
    for exporter in ("dynamo",):  # torchscript through cmd_export in this process: the tests above
        out = subprocess.run([sys.executable, "-m", "train.cli", "export", str(checkpoint), "--out",
                              str(tmp_path / exporter), "--exporter", exporter, "--positions", "256"],
                             capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        assert "verified" in out.stdout and read_policy_json(tmp_path / exporter)["format"] == POLICY_FORMAT
    out = subprocess.run([sys.executable, "-m", "train.cli", "export", str(checkpoint), "--out", "/proc/nardy-x"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode != 0 and "cannot write the export to /proc/nardy-x" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.filterwarnings("ignore:torch has deprecated its TorchScript ONNX exporter")  # its own tests say it
def test_a_folder_with_checkpoint_and_export_exports_and_plays_the_right_one(checkpoint, tmp_path):
    # Like checkpoints/default: checkpoint.pt and its own export side by side.
    from nardy_env.players import load_player

    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(checkpoint.read_bytes())
    export_policy(run, run, positions=64, exporter="torchscript")  # the exporter is not what is tested here
    assert load_player(str(run)).evaluator.__class__ is OnnxEvaluator
    export_policy(run, tmp_path / "again", positions=64, exporter="torchscript")  # the checkpoint beside it is the source
    # Training goes on: the export no longer matches the checkpoint; it still plays, with a warning.
    torch.manual_seed(1)
    save_checkpoint(run / "checkpoint.pt", TDNetwork(CONFIG["hidden"]), DEFAULT_RULES,
                    training={"games": 2000, "steps": 150}, config=CONFIG)
    with pytest.warns(UserWarning, match="another checkpoint"):
        player = load_player(str(run))
    assert player.evaluator.__class__ is OnnxEvaluator
    assert load_player(str(run / "checkpoint.pt")).evaluator.__class__ is TorchEvaluator
    # A broken export is refused (the folder names the export), pointing at the checkpoint beside it.
    (run / JSON_FILE).write_text("{broken")
    with pytest.raises(PolicyError, match=r"is not valid JSON.*\(to play the checkpoint beside it, name .*checkpoint.pt\)"):
        load_player(str(run))


def test_a_checkpoint_without_torch_gets_a_clear_error(checkpoint, tmp_path):
    out = _run_without_torch(tmp_path, "-m", "train.cli", "hint", "--player", str(checkpoint), START_NPN, "6", "5")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "torch is not installed" in out.stderr and "nardy export" in out.stderr


def test_a_graph_naming_external_data_is_refused_before_onnxruntime_reads_it(tmp_path, monkeypatch):
    # onnxruntime reads a graph-from-bytes' external data relative to the working directory: a
    # policy.onnx from elsewhere could read files there into its equities.
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.external_data_helper import set_external_data

    from agents.onnx_policy import OnnxEvaluator

    (tmp_path / "secret.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    weights = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "w")
    set_external_data(weights, location="secret.bin\x1b[31m")
    weights.data_location = TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["equity"])], "g",
                              [helper.make_tensor_value_info("positions", TensorProto.FLOAT, [None, 50])],
                              [helper.make_tensor_value_info("equity", TensorProto.FLOAT, [4])], [weights])
    model = helper.make_model(graph).SerializeToString()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyError, match=r"names external data files \(secret.bin\\x1b\[31m\)") as caught:
        OnnxEvaluator(model)
    assert "\x1b" not in str(caught.value)  # the model's strings cannot drive the terminal
    # Tucked into a Constant node's sparse value, where onnxruntime does read it from bytes.
    values = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "v")
    set_external_data(values, location="secret.bin")
    values.data_location = TensorProto.EXTERNAL
    values.ClearField("raw_data")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.arange(4, dtype=np.int64), "i"), [4])
    constant = helper.make_node("Constant", [], ["equity"], sparse_value=sparse)
    graph = helper.make_graph([constant], "g", [helper.make_tensor_value_info("positions", TensorProto.FLOAT, [None, 50])],
                              [helper.make_tensor_value_info("equity", TensorProto.FLOAT, [4])])
    with pytest.raises(PolicyError, match=r"names external data files \(secret.bin\)"):
        OnnxEvaluator(helper.make_model(graph).SerializeToString())
    onnx.checker.check_model(helper.make_model(helper.make_graph([], "g", [], [])))  # the package works here


def test_playing_an_export_loads_neither_torch_nor_the_onnx_package():
    """numpy and onnxruntime only: the onnx package (0.6 s to import) is for export and for
    graphs that may name external data, which the shipped one does not."""
    code = ("import sys; from nardy_env import initial_states, legal_afterstates; from nardy_env.players import load_player; import numpy as np; "
            "p = load_player('checkpoints/default'); s = initial_states(1); "
            "p.choose(s, legal_afterstates(s, np.array([[6, 5]])), np.random.default_rng(0)); "
            "print(sorted(m for m in ('torch', 'onnx', 'onnxruntime', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['onnxruntime']"


def test_onnxruntime_is_given_the_graph_in_an_empty_folder_of_its_own(tmp_path, monkeypatch):
    # Whatever a graph that spells `location` names as external data, there is nothing beside
    # it to read; one that never spells it (the shipped policy) is given as bytes.
    import onnxruntime

    from agents.onnx_policy import OnnxEvaluator, _session, load_policy

    seen = []
    real = onnxruntime.InferenceSession

    def session(model, *args, **kwargs):
        from pathlib import Path

        seen.append(bytes if isinstance(model, bytes) else sorted(p.name for p in Path(model).parent.iterdir()))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", session)
    evaluator, _ = load_policy(ROOT / "checkpoints/default")
    assert seen == [bytes] and isinstance(evaluator, OnnxEvaluator)
    model = onnx.load(ROOT / "checkpoints/default/policy.onnx")
    model.doc_string = "location: the word alone, no external data"
    _session(model.SerializeToString(), 1)
    assert seen == [bytes, ["policy.onnx"]]


def test_a_folder_access_calls_writable_that_is_not_is_refused_before_the_export(checkpoint, tmp_path, monkeypatch):
    # os.access says yes to root for /proc or a root-squashed share: a file made there says no.
    import errno

    import train.export

    real_open, real_unlink = os.open, os.unlink

    def read_only(path, *args, **kwargs):
        if Path(path).name.startswith(".nardy-export-probe-"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(train.export.os, "open", read_only)
    monkeypatch.setattr("agents.td.load_checkpoint", lambda *a, **k: pytest.fail("read before the check"))
    with pytest.raises(ExportError, match=r"cannot write the export to .*out: no file can be made in .* \(Read-only "
                                          r"file system\); nothing was exported"):
        export_policy(checkpoint, tmp_path / "out", positions=8)
    assert not list(tmp_path.iterdir())
    # A folder that takes new files but lets none go (append-only): said, and the export goes on.
    monkeypatch.setattr(train.export.os, "open", real_open)

    def append_only(path, *args, **kwargs):
        if Path(path).name.startswith(".nardy-export-probe-"):
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real_unlink(path, *args, **kwargs)

    class GoesOn(Exception):
        pass

    def goes_on(*args, **kwargs):
        raise GoesOn

    monkeypatch.setattr(train.export.os, "unlink", append_only)
    monkeypatch.setattr("agents.td.load_checkpoint", goes_on)
    with pytest.warns(NardyWarning, match=r"could not remove the test file .*\.nardy-export-probe-.* \(Operation "
                                          r"not permitted\); delete it") as said, pytest.raises(GoesOn):
        export_policy(checkpoint, tmp_path / "out", positions=8)
    assert said[0].filename == __file__  # the line that called export_policy


def test_an_unreadable_source_or_unwritable_folder_is_refused_before_the_export(checkpoint, tmp_path, monkeypatch):
    import errno

    import agents.files
    import train.export

    real_access = os.access
    monkeypatch.setattr(train.export.os, "access", lambda path, mode: False if Path(path) == tmp_path
                        else real_access(path, mode))
    with pytest.raises(ExportError, match=r"cannot write the export to .*new/out: .* is not writable"):
        export_policy(checkpoint, tmp_path / "new" / "out", positions=8)
    monkeypatch.undo()
    assert not (tmp_path / "new").exists()

    def unreadable(path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(agents.files, "file_sha256", unreadable)
    with pytest.raises(ExportError, match=r"cannot read .*: Permission denied"):
        export_policy(checkpoint, tmp_path / "out", positions=8)


def test_a_policy_loads_without_a_usable_temp_folder(exported, monkeypatch, tmp_path):
    # A locked-down container: no temp folder at all. A graph that names no external data
    # is read from its bytes.
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    folder, _ = exported
    evaluator, _ = load_policy(folder)
    assert evaluator.equity(raw_positions(np.stack([parse_npn(START_NPN)[0]]))).shape == (1,)


def test_a_dangling_link_as_the_output_folder_is_refused_before_the_export(checkpoint, tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ExportError, match=r"is a link to .*nowhere, which does not exist"):
        export_policy(checkpoint, link, positions=8)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match=r"file is not a folder; give a folder"):
        export_policy(checkpoint, tmp_path / "file" / "out", positions=8)


def test_a_graph_in_onnxruntimes_own_ort_format_is_refused(tmp_path):
    # Given bytes, onnxruntime would also read its ORT format, whose tensors can name external
    # data where the check for `location` does not look: only ONNX's protobuf is taken.
    from agents.onnx_policy import _session

    (tmp_path / "policy.onnx").write_bytes((ROOT / "checkpoints/default/policy.onnx").read_bytes())
    done = subprocess.run([sys.executable, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", "policy.onnx"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ort_bytes = (tmp_path / "policy.ort").read_bytes()
    assert ort_bytes[4:8] == b"ORTM" and b"location" not in ort_bytes
    with pytest.raises(PolicyError, match="protobuf parsing failed"):
        _session(ort_bytes, 1)


def test_playing_an_export_asks_onnxruntime_for_no_telemetry_unless_the_user_chose(tmp_path):
    """onnxruntime 1.29+ keeps a device id and a usage database under ~/.cache/Microsoft (and may
    send usage data) when imported: nardy asks it not to, and leaves a user's own choice alone."""
    root = Path(__file__).resolve().parents[2]
    script = ("import os\nimport numpy as np\n"
              "from agents.onnx_policy import onnx_player\n"
              "from nardy_env import initial_states, legal_afterstates\n"
              "player = onnx_player('checkpoints/default')\n"
              "s = initial_states(1); found = legal_afterstates(s, np.array([[6, 5]]))\n"
              "print(os.environ['ORT_DISABLE_TELEMETRY'], player.choose(s, found, np.random.default_rng(0))[0] >= 0)\n")
    for chosen in (None, "", "0"):
        home = tmp_path / f"home-{chosen!r}"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
        env.update(HOME=str(home), **({"ORT_DISABLE_TELEMETRY": chosen} if chosen is not None else {}))
        out = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [chosen or "1", "True"]  # empty is no choice: onnxruntime reads it as 0
        if not chosen:
            assert not (home / ".cache" / "Microsoft").exists()

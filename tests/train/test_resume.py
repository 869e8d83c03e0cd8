"""Resuming runs without Ray: the last good checkpoint, the replay, settings, finished runs, addresses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.td import load_checkpoint
from tests.helpers import nardy
from train.config import TrainConfig, load_config
from train.trainer import Trainer, TrainError, check_ray_address, config_for_resume, resume_with_changes

ROOT = Path(__file__).resolve().parents[2]


def _trained(run: Path, steps: int = 3, **overrides) -> Trainer:
    """A run whose learner has seen some samples and saved a checkpoint after each (no actors)."""
    config = load_config(ROOT / "configs/smoke.yaml", **overrides)
    trainer = Trainer(config, run, progress=False)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        raw = rng.integers(0, 4, size=(300, 50)).astype(np.uint8)
        targets = rng.dirichlet(np.ones(4), size=300).astype(np.float32)
        trainer.learn(raw, targets)
        trainer.games += 256
        trainer.save()
    return trainer


def test_resume_restores_weights_optimizer_counters_rng_and_replay(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint.pt" and not after.skipped
    for a, b in zip(before.network.state_dict().values(), after.network.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert (after.games, after.samples, after.updates) == (before.games, before.samples, before.updates)
    assert after.rng.bit_generator.state == before.rng.bit_generator.state
    assert after.optimizer.state_dict()["state"][0]["step"] == before.optimizer.state_dict()["state"][0]["step"]
    assert after.replay.count == before.replay.count == 900 and after.replay.head == before.replay.head
    assert np.array_equal(after.replay.raw[:900], before.replay.raw[:900])
    assert np.array_equal(after.replay.targets[:900], before.replay.targets[:900])
    assert [p.name for p in run.glob("replay-*.npz")] == ["replay-000000768.npz"]  # only the latest


def test_the_replay_keeps_the_newest_rows_in_a_ring():
    from train.trainer import _Replay

    def rows(values):
        raw = np.zeros((len(values), 50), dtype=np.uint8)
        raw[:, 0] = values
        return raw, np.tile(np.float32([1, 0, 0, 0]), (len(values), 1))

    ring = _Replay(10)
    ring.add(*rows([0, 1, 2]))
    ring.add(*rows([3, 4, 5]))
    assert (ring.head, ring.count) == (6, 6) and ring.raw[:6, 0].tolist() == [0, 1, 2, 3, 4, 5]
    ring.add(*rows([6, 7, 8, 9, 10, 11]))  # wraps: 10 and 11 replace the oldest, 0 and 1
    assert (ring.head, ring.count) == (2, 10) and sorted(ring.raw[:, 0].tolist()) == list(range(2, 12))
    small = _Replay(4)
    small.add(*rows([0, 1, 2, 3, 4, 5]))  # more than it holds at once: the newest four
    assert small.count == 4 and sorted(small.raw[:, 0].tolist()) == [2, 3, 4, 5]


def test_tasks_in_flight_at_a_save_are_played_again_after_resume(tmp_path):
    # A task (its index and exploration rate) sent to an actor but not back when the run stopped:
    # the resumed run plays it first, so the games it stands for are not skipped.
    run = tmp_path / "run"
    before = _trained(run, steps=1)
    before._tasks_to_redo = [[7, 0.25], [3, 0.5]]
    before.save()
    before.close()
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after._tasks_to_redo == [[3, 0.5], [7, 0.25]]
    after.close()


def test_a_corrupt_checkpoint_resumes_from_the_newest_good_copy(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)
    data = (run / "checkpoint.pt").read_bytes()
    (run / "checkpoint.pt").write_bytes(data[:1000])
    (run / "checkpoint-000000768.pt").write_bytes(data[:2000])
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint-000000512.pt" and after.games == 512
    assert any("checkpoint.pt" in note for note in after.skipped)
    assert any("replay" in note for note in after.skipped)  # that copy's replay is gone: starts empty
    assert after.replay.count == 0
    # checkpoint.pt is the good copy again (eval, export and play read it); the bad one is kept aside
    assert (run / "checkpoint.pt").read_bytes() == (run / "checkpoint-000000512.pt").read_bytes()
    assert (run / "checkpoint.pt.unreadable").read_bytes() == data[:1000]
    assert load_checkpoint(run)[1]["training"]["games"] == 512
    # The unreadable numbered copy is set aside too: no longer one of the run's copies.
    assert not (run / "checkpoint-000000768.pt").exists()
    assert (run / "checkpoint-000000768.pt.unreadable").read_bytes() == data[:2000]
    assert "checkpoint-000000768.pt is kept as checkpoint-000000768.pt.unreadable" in after.skipped
    (run / "checkpoint-000000768.pt").write_bytes(b"junk again")  # a second one, later: kept beside the first
    (run / "checkpoint.pt").write_bytes(b"junk")
    Trainer(before.config, run, resume=True, progress=False)
    assert (run / "checkpoint-000000768.pt.unreadable").read_bytes() == data[:2000]
    assert (run / "checkpoint-000000768.pt.unreadable-2").read_bytes() == b"junk again"
    for name in ("checkpoint.pt", *(p.name for p in run.glob("checkpoint-*.pt"))):
        (run / name).write_bytes(b"junk")
    with pytest.raises(TrainError, match="no readable checkpoint"):
        Trainer(before.config, run, resume=True, progress=False)


def test_a_checkpoint_with_damaged_training_state_falls_back_to_a_good_copy(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)
    payload = torch.load(run / "checkpoint.pt", weights_only=True)
    del payload["trainer"]["rng"]
    torch.save(payload, run / "checkpoint.pt")
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint-000000768.pt" and after.games == 768
    assert any("checkpoint.pt: its training state is damaged (KeyError" in note for note in after.skipped)


@pytest.mark.parametrize("damage", [
    {"schedule": {"games": 0}},  # a key missing
    {"schedule": {"games": 0, "total_games": 2048, "lr": float("nan"), "epsilon": 0.1}},  # was taken for divergence
    {"schedule": {"games": 0, "total_games": 2048, "lr": float("inf"), "epsilon": 0.1}},
    {"schedule": {"games": 0, "total_games": 2048, "lr": -0.1, "epsilon": 0.1}},
    {"games": "768"},  # a count of the wrong kind
    {"eval_history": [{"opponent": "race"}]},
    {"eval_history": [{"games_trained": 512, "race": {"win_rate": float("nan")}}]},  # eval.jsonl would say NaN
    {"eval_history": [{"games_trained": 512, "race": {"win_rate": 0.5, "points_per_game": float("nan")}}]},
])
def test_damaged_counters_schedule_or_history_fall_back_too(tmp_path, damage):
    run = tmp_path / "run"
    before = _trained(run)
    payload = torch.load(run / "checkpoint.pt", weights_only=True)
    payload["trainer"].update(damage)
    torch.save(payload, run / "checkpoint.pt")
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint-000000768.pt" and after.games == 768
    assert any("its training state is damaged" in note for note in after.skipped)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: p.update(config=[1]), r"its training config is a list, not a mapping of settings"),  # was AttributeError
    (lambda p: p["trainer"]["optimizer"]["state"][0].update(exp_avg=torch.zeros(2, 2)),  # failed in the first update
     r"its optimizer state is damaged: exp_avg has shape \[2, 2\], its parameter \[\d+, \d+\]"),
    (lambda p: p["trainer"]["optimizer"]["state"][0]["exp_avg"].view(-1).__setitem__(0, float("nan")),
     r"its optimizer state is damaged: exp_avg holds values that are not finite"),  # was taken for divergence
    (lambda p: p["trainer"]["optimizer"]["param_groups"][0].update(lr=float("inf")),
     r"its optimizer state is damaged: param_groups\[0\] has lr=inf"),
])
def test_a_damaged_config_or_optimizer_state_falls_back_to_a_good_copy(tmp_path, damage, message):
    run = tmp_path / "run"
    before = _trained(run)
    payload = torch.load(run / "checkpoint.pt", weights_only=True)
    damage(payload)
    torch.save(payload, run / "checkpoint.pt")
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint-000000768.pt" and after.games == 768
    assert any(re.search(message, note) for note in after.skipped), after.skipped
    after.learn(*_batch())  # the copy resumed from trains on


def _batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return (rng.integers(0, 4, size=(300, 50)).astype(np.uint8),
            rng.dirichlet(np.ones(4), size=300).astype(np.float32))


def test_keep_checkpoints_0_keeps_only_the_latest_also_of_earlier_sessions(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)
    assert len(list(run.glob("checkpoint-*.pt"))) == 3
    again = Trainer(resume_with_changes(before.config, {"keep_checkpoints": 0}), run, resume=True, progress=False)
    again.save()
    assert [p.name for p in run.iterdir() if p.name.startswith("checkpoint")] == ["checkpoint.pt"]


def test_eval_log_is_rewritten_from_the_checkpoint_on_resume(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    trainer.eval_history.append({"games_trained": 256, "random": {"win_rate": 0.5}})
    trainer.save()
    with open(run / "eval.jsonl", "w") as fh:  # as if evaluations were logged after that checkpoint
        for games in (256, 512, 512):
            fh.write(json.dumps({"games_trained": games}) + "\n")
        fh.write("[1, 2]\n" + "[" * 100_000 + "]" * 100_000 + "\n")  # junk is no record either
        fh.write('{"games_trained": 7')  # and one cut short by a kill: no record, not counted
    again = Trainer(trainer.config, run, resume=True, progress=False)
    lines = [json.loads(x) for x in (run / "eval.jsonl").read_text().splitlines()]
    assert lines == trainer.eval_history
    # ... and says so, rather than losing records silently.
    assert "eval.jsonl: 2 record(s) made after checkpoint.pt (at 256 games) left out" in " ".join(again.skipped)


def test_resume_refuses_a_config_that_does_not_match_the_checkpoint(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    config = json.loads((run / "config.json").read_text())
    for key, value in (("lam", 0.3), ("hidden", [8])):
        changed = {**config, key: value}
        (run / "config.json").write_text(json.dumps(changed))
        from train.trainer import config_for_resume

        with pytest.raises(TrainError, match=f"{key}="):
            Trainer(config_for_resume(run), run, resume=True, progress=False)
    assert trainer.games == 256


def test_rules_are_compared_by_meaning_on_resume(tmp_path):
    run = tmp_path / "run"
    _trained(run, steps=1, rules={"head_exception": [6, 3, 4]})
    config = json.loads((run / "config.json").read_text())
    assert config["rules"] == {"opening": "play", "head_exception": [3, 4, 6], "block_rule": "ahead",
                              "cube": False, "match_length": 0}  # in full, every key of RULES.md
    for same in ({}, {"head_exception": [3, 4, 6, 6], "cube": False}):  # the default rules, spelt otherwise
        (run / "config.json").write_text(json.dumps({**config, "rules": same}))
        assert Trainer(config_for_resume(run), run, resume=True, progress=False).games == 256
    (run / "config.json").write_text(json.dumps({**config, "rules": {"head_exception": [6]}}))
    with pytest.raises(TrainError, match="rules="):
        Trainer(config_for_resume(run), run, resume=True, progress=False)


def test_resume_may_change_only_length_cadence_and_throughput(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    longer = resume_with_changes(trainer.config, {"total_games": 5000, "eval_every_games": 1000, "lam": 0.7})
    assert longer.total_games == 5000  # lam repeated with its own value is fine
    resumed = Trainer(longer, run, resume=True, progress=False)
    assert resumed.games == 256 and resumed.config.total_games == 5000
    with pytest.raises(TrainError, match="not hidden, lr"):
        resume_with_changes(trainer.config, {"hidden": [8], "lr": 0.1})
    with pytest.raises(TrainError, match="total_games"):
        resume_with_changes(trainer.config, {"total_games": -1})
    assert resume_with_changes(trainer.config, {"name": "1e5"}).name == "1e5"  # text, as a new run's name
    with pytest.raises(TrainError, match="name must be a run name without a path in it"):  # its config.json would
        resume_with_changes(trainer.config, {"name": "x/y"})  # no longer load with --config
    with pytest.raises(TrainError, match=r"unknown key\(s\) \['total_gmes'\] \(did you mean: total_gmes -> total_games\?\)"):
        resume_with_changes(trainer.config, {"total_gmes": 5000})
    # The name is a label once the run exists: renamed by --set or by hand in config.json.
    renamed = resume_with_changes(trainer.config, {"name": "renamed"})
    assert Trainer(renamed, run, resume=True, progress=False).config.name == "renamed"
    settings = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**settings, "name": "by-hand"}))
    assert Trainer(config_for_resume(run), run, resume=True, progress=False).games == 256


def test_training_further_in_stages_never_raises_the_learning_rate_or_exploration(tmp_path):
    run = tmp_path / "run"
    first = _trained(run, steps=4)  # 1024 games: the end of smoke's schedule
    assert first.learning_rate() == pytest.approx(first.config.lr_final)
    assert first.epsilon() == pytest.approx(first.config.epsilon_final)
    longer = resume_with_changes(first.config, {"total_games": 2048})
    second = Trainer(longer, run, resume=True, progress=False)
    # Told at the resume: a finished run goes on at its final values, unlike one longer run.
    assert second.notes == [
        f"{run} has reached its final learning rate and exploration (lr {first.config.lr_final:g}, epsilon "
        f"{first.config.epsilon_final:g}); it trains on to 2,048 games at them, which is not one run of that "
        "length (docs/training.md)"]
    second.games = 1536  # stopped partway through that extension, then given more: told again
    second.save()
    third = Trainer(resume_with_changes(longer, {"total_games": 4096}), run, resume=True, progress=False)
    assert len(third.notes) == 1 and "it trains on to 4,096 games at them" in third.notes[0]
    third.save()
    assert Trainer(third.config, run, resume=True, progress=False).notes == []  # the same length: nothing new
    assert second.learning_rate() == pytest.approx(first.config.lr_final)
    assert second.epsilon() == pytest.approx(first.config.epsilon_final)
    # Halfway through a run, a longer one decays from the values reached, to the end.
    run2 = tmp_path / "half"
    half = _trained(run2, steps=2)  # 512 of 1024 games
    lr_now = half.learning_rate()
    assert half.config.lr_final < lr_now < half.config.lr
    resumed = Trainer(resume_with_changes(half.config, {"total_games": 4096}), run2, resume=True, progress=False)
    assert resumed.notes == []  # halfway: the schedules go on decaying, nothing to say
    assert resumed.learning_rate() == pytest.approx(lr_now)
    resumed.games = 4096
    assert resumed.learning_rate() == pytest.approx(half.config.lr_final)
    resumed.games = 512 + (4096 - 512) // 2
    assert resumed.learning_rate() == pytest.approx((lr_now + half.config.lr_final) / 2)
    resumed.save()  # the new segment is saved and read back as it is
    again = Trainer(resumed.config, run2, resume=True, progress=False)
    assert again.schedule == resumed.schedule


def test_a_truncated_replay_starts_empty_instead_of_failing(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    replay = run / "replay-000000256.npz"
    replay.write_bytes(replay.read_bytes()[:500])
    resumed = Trainer(trainer.config, run, resume=True, progress=False)
    assert resumed.replay.count == 0 and any("unreadable" in note for note in resumed.skipped)


@pytest.mark.parametrize("count", [np.array([1, 2]), np.array(2.5), np.array(-3)])
def test_a_replay_whose_counters_are_not_one_whole_number_starts_empty(tmp_path, count):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    replay = run / "replay-000000256.npz"
    with np.load(replay) as data:
        arrays = {k: data[k] for k in data.files}
    np.savez(replay, **{**arrays, "count": count})
    resumed = Trainer(trainer.config, run, resume=True, progress=False)
    assert resumed.replay.count == 0 and any("unreadable" in note for note in resumed.skipped)


def test_a_new_run_makes_its_folder_only_once_ray_has_started(tmp_path, monkeypatch):
    import train.trainer

    def no_cluster(address=None, num_cpus=None):
        raise TrainError("cannot join the Ray cluster at auto: nothing there")

    monkeypatch.setattr(train.trainer, "start_ray", no_cluster)
    trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)
    with pytest.raises(TrainError, match="cannot join"):
        trainer.train()
    assert not (tmp_path / "run").exists()  # so the same --out works once the cluster is there


def test_out_that_is_a_file_or_under_one_is_refused_clearly(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(TrainError, match="is a file; give --out a folder"):
        Trainer(config, tmp_path / "notes.txt", progress=False)
    with pytest.raises(TrainError, match=r"cannot make .*notes.txt is a file"):
        Trainer(config, tmp_path / "notes.txt" / "run", progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_learner_holds_one_torch_thread_while_the_run_is_open_and_gives_it_back(tmp_path):
    import gc

    import torch

    gc.collect()  # Trainers other tests left unclosed let go of the thread count
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # a notebook's own count
        with Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False):
            assert torch.get_num_threads() == 1  # the actors have the other CPUs
        assert torch.get_num_threads() == 2  # once: one thread for the rest of the process
        # Two open at once: the first to close leaves the other its one thread; the last gives back 2.
        a = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "a", progress=False)
        b = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "b", progress=False)
        a.close()
        assert torch.get_num_threads() == 1
        b.close()
        b.close()  # a second close changes nothing
        assert torch.get_num_threads() == 2
        with pytest.raises(TrainError, match="nothing to resume"):  # refused: nothing changed
            Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "none", resume=True, progress=False)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_resume_refuses_fewer_games_than_played_and_unknown_settings(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)  # 768 games
    with pytest.raises(TrainError, match="total_games=512 is below the 768 games"):
        Trainer(resume_with_changes(before.config, {"total_games": 512}), run, resume=True, progress=False)
    with pytest.raises(TrainError, match=r"unknown key\(s\) \[.totl_games.\] \(did you mean: totl_games -> total_games\?\); --resume can change"):
        resume_with_changes(before.config, {"totl_games": 5})
    with pytest.raises(TrainError) as refused:  # rules cannot change on resume: no hint to put them under rules
        resume_with_changes(before.config, {"block_rule": "home"})
    assert "under rules" not in str(refused.value) and "--resume can change" in str(refused.value)
    with pytest.raises(TrainError, match="no such folder"):
        config_for_resume(tmp_path / "nowhere")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{oops")
    with pytest.raises(TrainError, match=r"config.json is not valid JSON"):
        config_for_resume(tmp_path / "bad")
    (tmp_path / "bad" / "config.json").write_text("[" * 100_000 + "]" * 100_000)  # deeper than Python's parser goes
    with pytest.raises(TrainError, match=r"config.json is not a run's config: its JSON is nested too deeply"):
        config_for_resume(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainError, match=r"no config.json there and no readable checkpoint \(not a run folder\?\)"):
        config_for_resume(tmp_path / "empty")


def test_changed_eval_opponents_make_the_final_evaluation_again(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1, total_games=256, eval_opponents=["random"], final_eval_games=4)
    first = trainer.finish()
    assert first is not None and "random" in first and trainer.finish() is first  # made once
    resumed = Trainer(resume_with_changes(trainer.config, {"eval_opponents": ["race"]}), run,
                      resume=True, progress=False)
    assert resumed.final_evaluation is None  # the one made has no "race"
    again = resumed.finish()
    assert again is not None and "race" in again and again["final"]
    # Both stay marked (docs/training.md: the run's latest is the last record marked final).
    assert [r["games_trained"] for r in resumed.eval_history if r.get("final")] == [256, 256]
    assert resumed.eval_history[-1] is again


def test_an_opponent_retrained_under_the_same_name_is_told_apart(tmp_path):
    from agents.network import TDNetwork
    from agents.td import save_checkpoint

    torch.manual_seed(0)
    champ = tmp_path / "champ.pt"
    save_checkpoint(champ, TDNetwork((4,)))
    run = tmp_path / "run"
    trainer = _trained(run, steps=1, total_games=256, eval_opponents=["random", str(champ)], final_eval_games=4)
    first = trainer.finish()
    assert first is not None and first["random"]["player_sha256"] is None
    recorded = first[str(champ)]["player_sha256"]
    assert recorded is not None and len(recorded) == 64
    assert trainer.final_evaluation is first
    save_checkpoint(champ, TDNetwork((4,)))  # another network under the same name
    assert trainer.final_evaluation is None  # made again against the player the name now stands for
    again = trainer.finish()
    assert again is not None and again[str(champ)]["player_sha256"] not in (None, recorded)
    logged = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert [r[str(champ)]["player_sha256"] for r in logged] == [recorded, again[str(champ)]["player_sha256"]]


def test_a_bot_made_stronger_under_the_same_name_is_told_apart(tmp_path, monkeypatch):
    """A closing evaluation against heuristic version 2 does not stand for version 3."""
    from agents.bots import HeuristicBot

    run = tmp_path / "run"
    trainer = _trained(run, steps=1, total_games=256, eval_opponents=["heuristic"], final_eval_games=4)
    first = trainer.finish()
    assert first is not None and first["heuristic"]["player_bot_version"] == HeuristicBot.version
    assert first["heuristic"]["player_sha256"] is None and trainer.final_evaluation is first
    monkeypatch.setattr(HeuristicBot, "version", HeuristicBot.version + 1)
    assert trainer.final_evaluation is None  # made again against the bot the name now stands for
    again = trainer.finish()
    assert again is not None and again["heuristic"]["player_bot_version"] == HeuristicBot.version
    assert trainer.final_evaluation is again
    del again["heuristic"]["player_bot_version"]  # a record from before versions: it met version 1
    assert trainer.final_evaluation is None
    monkeypatch.setattr(HeuristicBot, "version", 1)
    assert trainer.final_evaluation is again


def test_a_records_bot_version_counts_only_as_a_whole_number():
    from train.evaluate import same_bot_version

    assert same_bot_version(2, 2) and same_bot_version(None, 1) and same_bot_version(None, None)
    assert not same_bot_version(None, 2) and not same_bot_version(True, 1) and not same_bot_version("2", 2)
    assert not same_bot_version(2, None)  # a bot's record does not stand for a network's


def test_the_fit_error_is_the_loss_less_the_targets_entropy(tmp_path):
    trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)
    raw = np.random.default_rng(0).integers(0, 4, size=(600, 50)).astype(np.uint8)
    one_hot = np.eye(4, dtype=np.float32)[np.arange(600) % 4]  # no entropy: all of the loss is misfit
    loss = trainer.learn(raw, one_hot)
    assert trainer.last_fit_error == pytest.approx(loss, rel=1e-6) and loss > 1
    trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "other", progress=False)
    uniform = np.full((600, 4), 0.25, dtype=np.float32)  # entropy ln 4, about what an untrained net says
    loss = trainer.learn(raw, uniform)
    assert loss > 1.3 and trainer.last_fit_error < 0.1 * loss


def test_two_runs_starting_on_one_folder_do_not_mix(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml")
    first = Trainer(config, tmp_path / "run", progress=False)
    second = Trainer(config, tmp_path / "run", progress=False)  # both checked the folder while it was free
    first._make_run_dir()
    with pytest.raises(TrainError, match="taken by another run"):
        second._make_run_dir()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["name"] == "smoke"


def test_resume_reads_exponents_before_comparing(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml", lr=0.001)
    assert resume_with_changes(config, {"lr": "1e-3"}).lr == 0.001  # the same value: not a change
    assert resume_with_changes(config, {"total_games": "4e3"}).total_games == 4000


def test_a_folder_left_by_a_failed_start_is_not_reused(tmp_path):
    (tmp_path / "run" / "tb").mkdir(parents=True)
    (tmp_path / "run" / "config.json").write_text("{}")
    with pytest.raises(TrainError, match="not empty"):
        Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)


def test_an_address_with_no_cluster_fails_at_once():
    with pytest.raises(TrainError, match="cannot reach a Ray cluster at 127.0.0.1:9"):
        check_ray_address("127.0.0.1:9")
    with pytest.raises(TrainError, match="not host:port"):
        check_ray_address("nowhere")
    check_ray_address("auto")  # left to Ray
    for address in ("http://127.0.0.1:6390", "127.0.0.1:99999", ":6390", "127.0.0.1:0", "127.0.0.1:\u00b2"):
        with pytest.raises(TrainError, match="is not host:port"):
            check_ray_address(address)


def test_joining_a_cluster_says_so_and_a_refusal_names_token_authentication(monkeypatch, capsys):
    import train.trainer

    class FakeRay:  # a cluster of two nodes (one lost) and 4 CPUs, or one that refuses the driver
        refuse = False
        inits: list[dict] = []

        def init(self, **kwargs):
            self.inits.append(kwargs)
            if self.refuse:
                raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379")

        def get_runtime_context(self):
            class Context:
                gcs_address = "10.0.0.1:6379"
            return Context()

        def nodes(self):
            return [{"Alive": True}, {"Alive": True}, {"Alive": False}]

        def cluster_resources(self):
            return {"CPU": 4.0}

    monkeypatch.setattr(train.trainer, "check_ray_address", lambda address: None)
    ray = FakeRay()
    assert train.trainer._init_ray(ray, "10.0.0.1:6379", None) == {"CPU": 4.0}
    assert capsys.readouterr().out == "joined the Ray cluster at 10.0.0.1:6379: 2 nodes, 4 CPUs\n"
    train.trainer._init_ray(ray, "auto", None)  # the line names the cluster auto found
    assert capsys.readouterr().out == "joined the Ray cluster at 10.0.0.1:6379: 2 nodes, 4 CPUs\n"
    train.trainer._init_ray(ray, "local", None)  # Ray's word for a Ray of one's own: the quiet embedded one
    assert ray.inits[-1]["address"] == "local" and ray.inits[-1]["object_store_memory"] == 200 * 1024 * 1024
    assert "joined" not in capsys.readouterr().out
    ray.refuse = True
    with pytest.raises(TrainError) as refused:
        train.trainer._init_ray(ray, "auto", None)
    assert "RAY_AUTH_MODE" not in str(refused.value)  # no cluster found: nothing to authenticate to
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # the address from the environment, too
    with pytest.raises(TrainError, match=r"cannot join the Ray cluster at 10.0.0.1:6379: Failed to connect .*"
                                         r"RAY_AUTH_MODE=token and its ~/.ray/auth_token"):
        train.trainer._init_ray(ray, None, None)


def test_a_ray_that_no_longer_takes_its_private_node_address_starts_without_it(monkeypatch, capsys):
    import train.trainer
    from train.trainer import TrainError

    class NewerRay:
        inits: list[dict] = []

        def init(self, **kwargs):
            self.inits.append(kwargs)
            if kwargs.get("num_cpus") == 99:
                raise RuntimeError("Unknown keyword argument(s): object_store_memory")
            if "_node_ip_address" in kwargs:
                raise RuntimeError("Unknown keyword argument(s): _node_ip_address")

        def cluster_resources(self):
            return {"CPU": 2.0}

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray = NewerRay()
    assert train.trainer._init_ray(ray, None, 2) == {"CPU": 2.0}
    assert "_node_ip_address" in ray.inits[0] and "_node_ip_address" not in ray.inits[1]
    assert ray.inits[1]["address"] == "local" and ray.inits[1]["num_cpus"] == 2
    assert "this Ray does not take _node_ip_address" in capsys.readouterr().err  # said: no longer the loopback
    with pytest.raises(TrainError, match="cannot start a local Ray: Unknown keyword argument.*object_store_memory"):
        train.trainer._init_ray(ray, None, 99)  # any other refusal is said, not retried
    assert len(ray.inits) == 3 and "_node_ip_address" in ray.inits[2]
    assert "_node_ip_address" not in capsys.readouterr().err


def test_the_resume_hint_names_the_cluster_of_ray_address_too(monkeypatch):
    from train.cli import _continue_with

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert _continue_with("runs/x", None) == "nardy train --resume runs/x"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # a later shell may not have it
    assert _continue_with("runs/x", None) == "nardy train --resume runs/x --address 10.0.0.1:6379"
    assert _continue_with("runs/x", "10.0.0.2:6379") == "nardy train --resume runs/x --address 10.0.0.2:6379"


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run([sys.executable, "-m", "train.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def test_cli_bad_address_and_resume_options_fail_fast_and_create_nothing(tmp_path, capsys):
    out = nardy(capsys, "train", "--config", str(ROOT / "configs/smoke.yaml"), "--out", str(tmp_path / "new"),
               "--address", "127.0.0.1:9")
    assert out.returncode == 2 and "cannot reach a Ray cluster" in out.stderr
    assert not (tmp_path / "new").exists()
    run = tmp_path / "run"
    _trained(run, steps=1).close()
    out = nardy(capsys, "train", "--resume", str(run), "--out", str(tmp_path / "elsewhere"))
    assert out.returncode == 2 and "--out cannot move a resumed run" in out.stderr
    for config in (str(ROOT / "configs/quick.yaml"), str(tmp_path / "missing.yaml")):  # neither is used
        out = nardy(capsys, "train", "--resume", str(run), "--config", config)
        assert out.returncode == 2 and "with its own config.json; drop --config" in out.stderr, out.stderr
    out = nardy(capsys, "train", "--resume", str(run), "--set", "hidden=[8]")
    assert out.returncode == 2 and "not hidden" in out.stderr
    before = (run / "config.json").read_text()
    out = nardy(capsys, "train", "--resume", str(run), "--set", "total_games=4096", "--address", "127.0.0.1:9")
    assert out.returncode == 2 and (run / "config.json").read_text() == before  # a refused resume changes nothing


def test_cli_resume_of_a_finished_run_does_not_train_or_evaluate_again(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=4)  # 1024 games: smoke's total
    trainer.eval_history.append({"games_trained": 1024, "final": True,
                                 "random": {"win_rate": 0.6, "win_rate_ci95": [0.4, 0.8], "points_per_game": 0.2},
                                 "race": {"win_rate": 0.1, "win_rate_ci95": [0.0, 0.3], "points_per_game": -1.2}})
    trainer.save()
    (run / "eval.jsonl").write_text(json.dumps(trainer.eval_history[-1]) + "\n")
    trainer.close()  # lets go of the run, which another process then resumes
    out = _cli("train", "--resume", str(run), "--quiet")
    assert out.returncode == 0, out.stderr
    assert "has played its 1024 games" in out.stdout and "made earlier" in out.stdout
    assert len((run / "eval.jsonl").read_text().splitlines()) == 1
    assert load_checkpoint(run)[1]["trainer"]["updates"] == trainer.updates


def test_the_next_evaluation_follows_the_last_one_made(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml", eval_every_games=512)
    trainer = Trainer(config, tmp_path / "run", progress=False)
    assert trainer.next_evaluation() == 512
    trainer.games = 1088
    trainer.eval_history = [{"games_trained": 512}]  # the one due at 1024 failed: made at the next step
    assert trainer.next_evaluation() == 1024
    trainer.eval_history.append({"games_trained": 1088})  # and then not again until the next multiple
    assert trainer.next_evaluation() == 1536
    trainer.eval_history = [{"games_trained": 512}, {"games_trained": 1024, "final": True}]
    assert trainer.next_evaluation() == 1536  # a final evaluation stands for the periodic one at its step
    no_periodic = Trainer(load_config(ROOT / "configs/smoke.yaml", eval_every_games=0), tmp_path / "b",
                          progress=False)
    assert no_periodic.next_evaluation() is None


def test_the_progress_bar_shows_only_opponents_with_a_result(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml", eval_opponents=["random", "heuristic"])
    trainer = Trainer(config, tmp_path / "run", progress=False)
    trainer.eval_history = [{"games_trained": 512, "random": {"win_rate": 0.97}}]  # heuristic added on resume
    # Which evaluation the rates are from is said (on a resume, one made before this session).
    assert trainer._postfix({"games_per_s": 250.0}) == {"games/s": "250", "eval at": "512 games", "random": "97%"}
    trainer.eval_history = [{"games_trained": 512, "race": {"win_rate": 0.5}}]  # none of these opponents
    assert trainer._postfix({"games_per_s": 250.0}) == {"games/s": "250"}


def test_a_replay_that_does_not_fit_does_not_keep_the_checkpoint_from_being_written(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)

    def disk_full() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trainer, "_save_replay", disk_full)
    trainer.games += 256
    trainer.save()
    assert load_checkpoint(run)[1]["training"]["games"] == 512
    assert "replay-000000512.npz not written (No space left on device)" in capsys.readouterr().err
    resumed = Trainer(trainer.config, run, resume=True, progress=False)
    assert resumed.games == 512 and resumed.replay.count == 0  # resumes, with an empty replay buffer


def test_a_resume_removes_replays_that_no_checkpoint_names(tmp_path):
    run = tmp_path / "run"
    before = _trained(run)
    (run / "replay-000001024.npz").write_bytes(b"left by a save whose checkpoint failed")
    Trainer(before.config, run, resume=True, progress=False)
    assert sorted(p.name for p in run.glob("replay-*.npz")) == ["replay-000000768.npz"]


def test_a_full_disk_while_training_is_one_clear_line(tmp_path, monkeypatch, capsys):
    from train.cli import main

    def disk_full(self, max_seconds=None):
        if not self.run_dir.exists():
            raise OSError(28, "No space left on device", str(self.run_dir / "config.json"))
        self.save()  # a first checkpoint, then the disk fills up
        raise OSError(28, "No space left on device", str(self.run_dir / "checkpoint.pt"))

    import train.trainer

    monkeypatch.setattr(Trainer, "train", disk_full)
    monkeypatch.setattr(train.trainer, "check_ray_address", lambda address: None)  # no cluster needed
    run = tmp_path / "run"
    args = ["train", "--config", str(ROOT / "configs/smoke.yaml"), "--out", str(run), "--quiet", "--address",
            "127.0.0.1:1"]
    assert main(args) == 1  # before anything was saved: nothing to resume
    assert (f"nardy train: No space left on device ({run / 'config.json'}). No checkpoint was written."
            in capsys.readouterr().err)
    run.mkdir()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"nardy train: No space left on device ({run / 'checkpoint.pt'}). The run's checkpoints" in err
    assert f"then: nardy train --resume {run} --address 127.0.0.1:1" in err


@pytest.mark.parametrize("damage", ["delete", "empty"])
def test_a_lost_config_json_is_written_again_from_the_checkpoint(tmp_path, damage, capsys):
    run = tmp_path / "run"
    before = _trained(run, keep_checkpoints=1)
    if damage == "delete":
        (run / "config.json").unlink()
    else:
        (run / "config.json").write_text("")
    assert config_for_resume(run) == before.config
    assert TrainConfig.from_dict(json.loads((run / "config.json").read_text())) == before.config
    lost = "missing" if damage == "delete" else "empty"
    assert f"config.json was {lost}; written again from the settings in checkpoint.pt" in capsys.readouterr().err


def test_a_config_json_that_is_not_utf8_is_one_clear_error(tmp_path):
    run = tmp_path / "run"
    _trained(run, steps=1)
    (run / "config.json").write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(TrainError, match=r"config.json is not UTF-8 text \(at byte offset 13\)"):
        config_for_resume(run)


def test_a_users_own_checkpoint_copy_is_neither_resumed_from_nor_deleted(tmp_path):
    """Only checkpoint-<games>.pt are the run's copies; checkpoint-best.pt sorts after them by name."""
    run = tmp_path / "run"
    before = _trained(run, keep_checkpoints=1)
    (run / "checkpoint-best.pt").write_bytes((run / "checkpoint-000000512.pt").read_bytes())
    (run / "checkpoint.pt").write_bytes(b"cut")
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.resumed_from == run / "checkpoint-000000768.pt" and after.games == 768
    after.games += 256
    after.save()  # keep_checkpoints=1: one copy before the latest; the user's file is not one of them
    names = sorted(p.name for p in run.glob("checkpoint-*.pt"))
    assert names == ["checkpoint-000000768.pt", "checkpoint-000001024.pt", "checkpoint-best.pt"]
    again = Trainer(resume_with_changes(before.config, {"keep_checkpoints": 0}), run, resume=True, progress=False)
    again.save()
    assert (run / "checkpoint-best.pt").is_file()


def test_an_out_that_is_a_link_to_nowhere_is_named_as_such(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(TrainError, match="link is a link to .*gone, which does not exist"):
        Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "link", progress=False)


def test_a_replay_is_not_rewritten_unchanged_and_a_failed_rewrite_keeps_the_one_there(tmp_path, monkeypatch, capsys):
    import train.trainer

    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    replay = run / "replay-000000256.npz"
    data = replay.read_bytes()

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(train.trainer.np, "savez", disk_full)
    trainer.save()  # the same games, the same buffer: nothing to write
    assert replay.read_bytes() == data and "not written" not in capsys.readouterr().err
    resumed = Trainer(trainer.config, run, resume=True, progress=False)
    resumed.save()  # another process: tries, fails, and leaves the good file alone
    err = capsys.readouterr().err
    assert "replay-000000256.npz not written" in err and "empty replay buffer" not in err  # it is still there
    assert replay.read_bytes() == data


def test_a_repair_that_cannot_write_keeps_checkpoint_pt_and_one_second_name(tmp_path, monkeypatch, capsys):
    import train.trainer
    from train.cli import main

    run = tmp_path / "run"
    before = _trained(run)
    bad = (run / "checkpoint.pt").read_bytes()[:1000]
    (run / "checkpoint.pt").write_bytes(bad)
    real = train.trainer.write_atomic

    def full(path, write):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(train.trainer, "write_atomic", full)
    for _ in range(2):
        assert main(["train", "--resume", str(run), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "nardy train: No space left on device (" in err and "The run's checkpoints on disk are whole" in err
        assert f"make room, then: nardy train --resume {run}" in err
        assert (run / "checkpoint.pt").read_bytes() == bad  # still there, as it was
    monkeypatch.setattr(train.trainer, "write_atomic", real)
    after = Trainer(before.config, run, resume=True, progress=False)
    assert after.games == 768 and [p.name for p in run.glob("checkpoint.pt.unreadable*")] == ["checkpoint.pt.unreadable"]


def test_rates_leave_out_actor_start_up_and_evaluations():
    from train.trainer import RateWindow

    first = RateWindow()  # a session's first window: the clock starts at the first finished task
    first.task_done(now=30.0, games=64, updates=1000, first_of_actor=True)  # after 30 s of start-up
    first.task_done(now=30.5, games=64, updates=1005, first_of_actor=True)  # another actor's first: not counted
    first.task_done(now=31.0, games=64, updates=1010)
    first.task_done(now=32.0, games=64, updates=1020)
    first.eval_s = 1.0  # an evaluation inside the window
    rates = first.measure(now=33.0, updates=1030, session_start=0.0, session_eval_s=1.0)
    assert rates["games_per_s"] == pytest.approx(128 / 2) and rates["updates_per_s"] == pytest.approx(30 / 2)
    # A window with only the first task back is measured from the session's start.
    lone = RateWindow()
    lone.task_done(now=30.0, games=64, updates=0, first_of_actor=True)
    assert lone.measure(now=32.0, updates=8, session_start=0.0, session_eval_s=0.0)["games_per_s"] == 2.0
    # A short last window is measured together with the one before it.
    later = RateWindow(start=33.0, updates=1030)
    later.task_done(now=33.1, games=64, updates=1030)
    both = first.merged(later)
    assert both.measure(now=33.1, updates=1040, session_start=0.0, session_eval_s=1.0)["games_per_s"] \
        == pytest.approx(192 / 2.1)
    assert later.seconds(33.1) == pytest.approx(0.1)
    # A session too short for a timed task per actor: measured over the whole session instead.
    short = RateWindow()
    for k in range(4):  # four actors' first tasks, then one more
        short.task_done(now=20.0 + k, games=64, updates=0, first_of_actor=True)
    short.task_done(now=26.0, games=64, updates=0)
    assert short.measure(now=26.0, updates=0, session_start=0.0, session_eval_s=0.0, actors=4)["games_per_s"] \
        == pytest.approx(5 * 64 / 26)
    # A later window holding only a replacement actor's first task counts it on its own clock.
    replaced = RateWindow(start=600.0, updates=0)
    replaced.task_done(now=605.0, games=128, updates=0, first_of_actor=True)
    assert replaced.measure(now=606.0, updates=0, session_start=0.0, session_eval_s=0.0)["games_per_s"] \
        == pytest.approx(128 / 6)


def test_a_diverged_network_stops_the_run_without_saving_over_the_last_good_checkpoint(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    good = (run / "checkpoint.pt").read_bytes()
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 4, size=(300, 50)).astype(np.uint8)
    targets = rng.dirichlet(np.ones(4), size=300).astype(np.float32)
    with torch.no_grad():
        trainer.network.body[0].weight[0, 0] = float("inf")
    with pytest.raises(TrainError, match=r"training diverged after 256 games at learning rate .*: the loss is nan"
                                         r".*checkpoint.pt holds the last good state.*smaller lr"):
        trainer.learn(raw, targets)
    # A checkpoint is never written from it, by the trainer or by anyone.
    with pytest.raises(ValueError, match=r"body.0.weight hold values that are not finite .*nothing was written"):
        trainer.save()
    assert (run / "checkpoint.pt").read_bytes() == good
    # Before any checkpoint, nothing can be resumed; the logs stay for a look at what blew up.
    fresh = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "fresh", progress=False)
    with torch.no_grad():
        fresh.network.body[0].weight[0, 0] = float("nan")
    with pytest.raises(TrainError, match=r"no checkpoint had been written yet, so there is nothing to resume "
                                         r"\(.*fresh keeps its logs; remove it to use that --out again\)"):
        fresh.learn(raw, targets)


def test_a_loss_far_too_high_is_warned_about_once(tmp_path, monkeypatch, capsys):
    import train.trainer as trainer_module

    monkeypatch.setattr(trainer_module, "DIVERGING_LOSS", 0.0)  # any loss counts as far too high
    _trained(tmp_path / "run", steps=3)
    err = capsys.readouterr().err
    assert err.count("warning: the training loss is") == 1 and "the learning rate (" in err


def test_an_evaluation_record_says_how_to_play_its_matches_again(tmp_path):
    import json

    import nardy_env
    from train.evaluate import evaluate

    trainer = _trained(tmp_path / "run", steps=1, eval_opponents=["race"], rules={"block_rule": "home"})
    trainer.evaluate(8)
    trainer.evaluate(8)
    first, second = [json.loads(line) for line in (tmp_path / "run" / "eval.jsonl").read_text().splitlines()]
    assert (first["seed"], second["seed"]) == (10_000, 10_001)  # each evaluation its own dice
    assert first["rules"]["block_rule"] == "home" and first["nardy_version"] == nardy_env.__version__
    again = evaluate(trainer.player(), "race", 8, seed=second["seed"], rules=second["rules"]).summary()
    assert again["points_per_game"] == second["race"]["points_per_game"]  # the same network, the same games
    with pytest.raises(ValueError, match="eval.jsonl's own keys"):
        load_config(ROOT / "configs/smoke.yaml", eval_opponents=["random", "seed"])


def test_a_run_is_evaluated_against_the_shipped_player_and_its_levels_by_name(tmp_path, monkeypatch):
    import json

    from train.evaluate import provenance

    trainer = _trained(tmp_path / "run", steps=1, eval_opponents=["default", "easy"])
    trainer.evaluate(8)
    record = json.loads((tmp_path / "run" / "eval.jsonl").read_text())
    shipped = provenance(None, "default")["player_b_sha256"]
    assert shipped and record["default"]["player_sha256"] == record["easy"]["player_sha256"] == shipped
    assert record["default"]["games"] == record["easy"]["games"] == 8
    # The shipped network, far stronger than one fit to 300 random samples, wins most of these games;
    # its easy level, drawing its plays, fewer (the same dice).
    assert record["default"]["win_rate"] < 0.5 and record["easy"]["win_rate"] > record["default"]["win_rate"]
    # A run made in a folder of that name would be evaluated against itself once saved: refused.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TrainError, match=r"eval_opponents: easy names this run's own folder \(easy\)"):
        Trainer(load_config(ROOT / "configs/smoke.yaml", eval_opponents=["random", "easy"]), Path("easy"),
                progress=False)
    assert not (tmp_path / "easy").exists()
    with pytest.raises(ValueError, match=r"levels without '@N' .*\['easy@1'\]"):
        load_config(ROOT / "configs/smoke.yaml", eval_opponents=["easy@1"])


def test_resuming_a_run_from_elsewhere_writes_nothing_through_its_links(tmp_path):
    run = tmp_path / "run"
    _trained(run, steps=1)
    victim = tmp_path / "bashrc"
    victim.write_text("mine\n")
    (run / "eval.jsonl").unlink(missing_ok=True)
    (run / "eval.jsonl").symlink_to(victim)  # a downloaded run folder pointing at the user's files
    resumed = Trainer(config_for_resume(run), run, resume=True, progress=False)
    assert resumed.games == 256 and victim.read_text() == "mine\n"
    assert not (run / "eval.jsonl").is_symlink()


def test_a_replay_from_elsewhere_that_would_take_gigabytes_is_refused(tmp_path):
    import io
    import zipfile

    def compressed(replay, kept):  # np.savez never compresses: a small file could unpack into gigabytes
        np.savez_compressed(tmp_path / "packed.npz", **kept)
        replay.write_bytes((tmp_path / "packed.npz").read_bytes())

    def huge_header(replay, kept):  # 50 TB claimed in a few hundred bytes
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": (10**12, 50)})
        with zipfile.ZipFile(replay, "w", zipfile.ZIP_STORED) as out:
            for name, array in kept.items():
                body = io.BytesIO()
                np.save(body, array)
                out.writestr(f"{name}.npy", header.getvalue() if name == "raw" else body.getvalue())

    for k, (spoil, reason) in enumerate(((compressed, "compressed entries"),
                                         (huge_header, "raw.npy is uint8 [1000000000000, 50]"))):
        run = tmp_path / f"run{k}"
        trainer = _trained(run, steps=1)
        replay = run / "replay-000000256.npz"
        with np.load(replay) as data:
            kept = {name: data[name] for name in data.files}
        spoil(replay, kept)
        resumed = Trainer(trainer.config, run, resume=True, progress=False)
        assert resumed.replay.count == 0
        assert any(reason in note for note in resumed.skipped), resumed.skipped


def test_resume_accepts_the_same_rules_spelt_otherwise_and_says_where_to_fix_refused_settings(tmp_path):
    run = tmp_path / "run"
    trainer = _trained(run, steps=1)
    for same in ({}, {"block_rule": "ahead"}, {"head_exception": [6, 4, 3]}):
        assert resume_with_changes(trainer.config, {"rules": same}).rules_obj == trainer.config.rules_obj
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "eval_opponents": ["random", "mybots.py:Greedy"]}))
    with pytest.raises(TrainError, match=r"cannot resume .*: .*config.json: eval_opponents must be .*would run code.*"
                                         r"changed in that file, not with --set"):
        config_for_resume(run)
    (run / "config.json").unlink()  # then from the checkpoint, whose settings are accepted
    assert config_for_resume(run).eval_opponents == trainer.config.eval_opponents


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl locks on Windows")
def test_a_run_another_process_holds_is_not_resumed_until_it_lets_go_even_by_sigkill(tmp_path):
    run = tmp_path / "run"
    _trained(run).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from train.trainer import Trainer, config_for_resume; "
         f"t = Trainer(config_for_resume({str(run)!r}), {str(run)!r}, resume=True, progress=False); "
         "print('held', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        (run / ".checkpoint-live.tmp").write_bytes(b"a write in progress")
        before = (run / "checkpoint.pt").read_bytes()
        with pytest.raises(TrainError, match=rf"in use by another process \(pid {holder.pid}\)"):
            Trainer(config_for_resume(run), run, resume=True, progress=False)
        out = _cli("train", "--resume", str(run), "--set", "total_games=4096")
        assert out.returncode == 2 and f"in use by another process (pid {holder.pid})" in out.stderr
        assert "Ctrl-C saves a checkpoint" in out.stderr
        # Refused before it reads the run: a lost config.json is not written again under the holder.
        (run / "config.json").rename(run / "config.aside")
        out = _cli("train", "--resume", str(run))
        assert out.returncode == 2 and "in use by another process" in out.stderr
        assert not (run / "config.json").exists()
        (run / "config.aside").rename(run / "config.json")
        # Nothing of the live run was touched: its temporary file, checkpoint and settings.
        assert (run / ".checkpoint-live.tmp").exists() and (run / "checkpoint.pt").read_bytes() == before
        assert json.loads((run / "config.json").read_text())["total_games"] == 1024
    finally:
        holder.kill()  # SIGKILL: the kernel drops the lock with the process
        holder.wait()
    log = (run / "eval.jsonl").stat()
    with Trainer(config_for_resume(run), run, resume=True, progress=False) as resumed:
        assert resumed.games == 768 and not (run / ".checkpoint-live.tmp").exists()
        assert (run / "eval.jsonl").stat().st_ino == log.st_ino  # the same history: not written again
        again = Trainer(config_for_resume(run), run, resume=True, progress=False)  # this process: shared
        assert again.games == 768
        again.close()
        out = _cli("train", "--resume", str(run), "--set", "total_games=4096")  # still held by `resumed`
        assert out.returncode == 2 and f"(pid {os.getpid()})" in out.stderr
    assert Trainer(config_for_resume(run), run, resume=True, progress=False).games == 768  # let go by close()


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl locks on Windows")
def test_a_lock_file_this_user_cannot_write_still_locks(tmp_path, monkeypatch):
    import builtins
    import socket

    from train import runlock

    run = tmp_path / "run"
    _trained(run).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from pathlib import Path; from train import runlock; "
         f"runlock.acquire(Path({str(run)!r})); print('held', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"

        def no_write_access(path, mode="r", *args, **kwargs):  # a .lock another user made, 0644
            if "a" in mode or "w" in mode:
                raise PermissionError(13, "Permission denied", str(path))
            return builtins.open(path, mode, *args, **kwargs)

        monkeypatch.setattr(runlock, "open", no_write_access, raising=False)
        with pytest.raises(runlock.RunInUse, match=rf"\(pid {holder.pid}\)"):  # once: silently not locked
            runlock.acquire(run)
    finally:
        holder.kill()
        holder.wait()
    key = runlock.acquire(run)  # read-only, and free: held, without writing the pid
    assert key is not None
    runlock.release(key)
    assert runlock._holder(f"123 {socket.gethostname()}") == " (pid 123)"
    assert runlock._holder("123 elsewhere") == " (pid 123 on elsewhere)"  # a folder shared by machines
    assert runlock._holder("") == runlock._holder("garbage") == ""


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl locks on Windows")
def test_the_lock_touches_only_runs_and_never_follows_a_link(tmp_path):
    from train import runlock

    # A folder named by mistake gets no .lock, and stays usable for a new run.
    (tmp_path / "empty").mkdir()
    out = _cli("train", "--resume", str(tmp_path / "empty"))
    assert out.returncode == 2 and "no config.json there" in out.stderr
    assert not (tmp_path / "empty" / ".lock").exists()
    assert runlock.acquire(tmp_path / "empty") is None and not (tmp_path / "empty" / ".lock").exists()
    # A .lock that links elsewhere: refused, and the file it names is not written.
    run = tmp_path / "run"
    _trained(run).close()
    # A folder with a run's config.json but no checkpoint holds no run: refused, and left without a .lock.
    (tmp_path / "config-only").mkdir()
    shutil.copy(run / "config.json", tmp_path / "config-only")
    with pytest.raises(TrainError, match="nothing to resume: no checkpoint in"):
        Trainer(config_for_resume(run), tmp_path / "config-only", resume=True, progress=False)
    assert sorted(p.name for p in (tmp_path / "config-only").iterdir()) == ["config.json"]
    (run / ".lock").unlink()
    victim = tmp_path / "precious.txt"
    victim.write_text("precious data")
    (run / ".lock").symlink_to(victim)
    with pytest.raises(TrainError, match=r"\.lock is a link, not a lock file; remove it"):
        Trainer(config_for_resume(run), run, resume=True, progress=False)
    out = _cli("train", "--resume", str(run))
    assert out.returncode == 2 and ".lock is a link" in out.stderr
    assert victim.read_text() == "precious data"
    # A tb/ that links elsewhere: TensorBoard's files are not written where it points.
    (run / ".lock").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(run / "tb", ignore_errors=True)
    (run / "tb").symlink_to(elsewhere)
    with pytest.raises(TrainError, match=r"tb is a link, not the run's folder of TensorBoard logs; remove it"):
        Trainer(config_for_resume(run), run, resume=True, progress=False)
    assert not any(elsewhere.iterdir())


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl locks on Windows")
def test_the_lock_is_shared_in_a_process_taken_again_after_close_and_not_kept_by_a_fork(tmp_path):
    from train import runlock

    run = tmp_path / "run"
    first = _trained(run)
    second = Trainer(first.config, run, resume=True, progress=False)  # the same process: shared
    second._unstarted = True  # as if a new run that never started gave up, while `first` still holds it
    second._remove_unstarted_run()
    assert (run / ".lock").exists() and runlock._held[run.resolve()][1] == 1  # first's hold and file stay
    first.close()
    assert run.resolve() not in runlock._held
    first.save()  # a Trainer that writes again holds the run again
    assert runlock._held[run.resolve()][1] == 1
    if hasattr(os, "fork"):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its copy of the lock is closed at once; it holds nothing
            os.write(write, b"1" if not runlock._held else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(read, 1) == b"1"
    first.close()


def test_a_new_run_that_never_starts_leaves_no_lock_behind(tmp_path):
    trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)
    trainer._make_run_dir()
    assert (tmp_path / "run" / ".lock").read_text().split()[0] == str(os.getpid())
    trainer._remove_unstarted_run()
    assert not (tmp_path / "run").exists()
    trainer._make_run_dir()  # tried again (a library caller's second train()): made afresh, and locked
    assert (tmp_path / "run" / "config.json").exists() and (tmp_path / "run" / ".lock").exists()
    trainer._remove_unstarted_run()
    # runs/NAME made runs/ too: both go (a folder that was there before, or holds anything, stays).
    nested = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "runs" / "a" / "run", progress=False)
    nested._make_run_dir()
    nested._remove_unstarted_run()
    assert not (tmp_path / "runs").exists()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "notes.txt").write_text("mine")
    nested = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "runs" / "a" / "run", progress=False)
    nested._make_run_dir()
    nested._remove_unstarted_run()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["notes.txt"]
    # A disk that fills up between runs/ and runs/full: what was made goes all the same.
    import errno

    real_mkdir = os.mkdir

    def full_disk(path, *args, **kwargs):
        if os.path.basename(path) == "full" and os.path.isdir(os.path.dirname(path)):  # once new/ is made
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_mkdir(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "mkdir", full_disk)
        failing = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "new" / "full", progress=False)
        with pytest.raises(TrainError, match="cannot make the run folder .*No space left on device"):
            failing._make_run_dir()
    assert not (tmp_path / "new").exists()
    # A .lock that is no lock file is named as such, not blamed on another run.
    (tmp_path / "odd" / ".lock").mkdir(parents=True)
    with pytest.raises(TrainError, match=r"\.lock is not a plain file; remove it"):
        Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "odd", progress=False)._make_run_dir()


def test_the_actor_class_is_made_once_not_once_per_actor(tmp_path, monkeypatch):
    # Ray exports a class each time ray.remote makes one (about 20 ms: pickling and
    # fingerprinting its code), so `actors: 3000` used to take minutes before any game.
    import ray

    from train import trainer as trainer_module

    made = []

    class Handle:
        def remote(self, *args, **kwargs):
            return object()

    def fake_remote(**options):
        def make(cls):
            made.append((cls, options))
            return Handle()
        return make

    monkeypatch.setattr(ray, "remote", fake_remote)
    cached = getattr(trainer_module, "_remote_worker", None)
    if cached is not None:
        cached.cache_clear()
    try:
        trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)
        actors = [trainer._new_actor() for _ in range(3)]
        assert len(actors) == 3 and len(made) == 1
        assert made[0][1] == {"num_cpus": 1, "max_restarts": 0}
    finally:
        if cached is not None:
            cached.cache_clear()  # the next caller makes the real class


def test_max_seconds_counts_from_the_start_of_train_not_from_the_actors(tmp_path, monkeypatch, capsys):
    # A slow start (joining a cluster, many actors) is part of the time given: no game is
    # waited for once it has used it all, and the session still ends with a checkpoint.
    import time

    trainer = Trainer(load_config(ROOT / "configs/smoke.yaml"), tmp_path / "run", progress=False)

    def slow_start():
        time.sleep(0.3)
        return 1

    def waited(*args, **kwargs):
        raise AssertionError("waited for a task after the time given was used up")

    import ray

    monkeypatch.setattr(trainer, "_start_actors", slow_start)
    monkeypatch.setattr(ray, "wait", waited)
    stats = trainer.train(max_seconds=0.2)
    assert "warning" not in capsys.readouterr().err
    assert stats["games"] == 0 and (tmp_path / "run" / "checkpoint.pt").exists()
    trainer.close()


def test_a_task_larger_than_the_whole_run_is_warned_about(tmp_path, monkeypatch, capsys):
    import ray

    config = load_config(ROOT / "configs/smoke.yaml", total_games=64, games_per_task=1024)
    trainer = Trainer(config, tmp_path / "run", progress=False)
    monkeypatch.setattr(trainer, "_start_actors", lambda: 1)
    monkeypatch.setattr(ray, "wait", lambda *args, **kwargs: ([], []))
    trainer.train(max_seconds=0.0)
    assert ("warning: tasks are played whole (games_per_task=1,024), so the run ends at 1,024 games, 960 past "
            "total_games=64") in capsys.readouterr().err
    trainer.close()
    # A task a little smaller than the run also ends it far past total_games: two tasks, not one.
    config = load_config(ROOT / "configs/smoke.yaml", total_games=1000, games_per_task=999)
    trainer = Trainer(config, tmp_path / "run2", progress=False)
    monkeypatch.setattr(trainer, "_start_actors", lambda: 1)
    trainer.train(max_seconds=0.0)
    assert "so the run ends at 1,998 games, 998 past total_games=1,000" in capsys.readouterr().err
    trainer.close()
    # A run a part-task from its end (total_games not a multiple of the task: quick.yaml's) is no slip.
    config = load_config(ROOT / "configs/quick.yaml")
    trainer = Trainer(config, tmp_path / "quick", progress=False)
    trainer.games = config.total_games - config.games_per_task // 2
    monkeypatch.setattr(trainer, "_start_actors", lambda: 1)
    trainer.train(max_seconds=0.0)
    assert "warning" not in capsys.readouterr().err
    trainer.close()


def test_the_local_ray_stays_on_a_loopback_address_the_machine_has(monkeypatch):
    """127.0.0.2 keeps the embedded Ray off the network (Ray swaps 127.0.0.1 for the machine's
    address); macOS's loopback holds only 127.0.0.1 unless aliased, so there it falls back."""
    import socket

    from train import trainer as trainer_module

    if sys.platform.startswith("linux"):  # all of 127.0.0.0/8 is loopback
        assert trainer_module.local_node_ip() == "127.0.0.2"
    real = socket.socket

    class OnlyOneLoopback(real):
        def bind(self, address):
            if address[0] != "127.0.0.1":
                raise OSError(49, "Can't assign requested address")
            return super().bind(address)

    monkeypatch.setattr(trainer_module.socket, "socket", OnlyOneLoopback)
    assert trainer_module.local_node_ip() == "127.0.0.1"


def test_a_run_under_a_club_variant_names_its_rules_where_it_starts(tmp_path, capsys):
    from train.cli import main

    for name, rules, said in (("club", {"block_rule": "home"}, ', rules {"block_rule": "home"}, resuming from'),
                              ("code", {}, " games, resuming from")):
        run = tmp_path / name
        _trained(run, steps=1, total_games=256, rules=rules, final_eval_games=0)
        assert main(["train", "--resume", str(run), "--quiet"]) == 0
        out = capsys.readouterr().out
        assert said in out.splitlines()[0], out


def test_a_new_run_can_start_from_the_weights_of_a_checkpoint_and_nothing_else(tmp_path):
    """init_from: the shipped player's weights (or a run's), with this config's optimizer, counters
    and schedules; a checkpoint of other hidden sizes or none at all is refused by name."""
    shipped, payload = load_checkpoint(ROOT / "checkpoints/default")
    config = load_config(ROOT / "configs/smoke.yaml", hidden=[128, 64], init_from="default", lr=5e-4)
    with Trainer(config, tmp_path / "run", progress=False) as trainer:
        for a, b in zip(shipped.state_dict().values(), trainer.network.state_dict().values(), strict=True):
            assert torch.equal(a, b)
        assert (trainer.games, trainer.updates, trainer.learning_rate()) == (0, 0, 5e-4)
        assert trainer.optimizer.state_dict()["state"] == {} and trainer.eval_history == []
        assert trainer.notes == [f"starting from the weights of {ROOT / 'checkpoints/default/checkpoint.pt'} "
                                 f"({payload['training']['games']:,} games trained)"]
        # The run learns from there; its checkpoint says where it started, resolved (what "default" was).
        rng = np.random.default_rng(0)
        trainer.learn(rng.integers(0, 4, size=(600, 50)).astype(np.uint8),
                      rng.dirichlet(np.ones(4), size=600).astype(np.float32))
        trainer.games = 256
        trainer.save()
        learned = {k: v.clone() for k, v in trainer.network.state_dict().items()}
    import hashlib

    saved = load_checkpoint(tmp_path / "run")[1]
    shipped_file = ROOT / "checkpoints/default/checkpoint.pt"
    assert saved["started_from"] == {"path": str(shipped_file.resolve()), "games": payload["training"]["games"],
                                     "sha256": hashlib.sha256(shipped_file.read_bytes()).hexdigest()}
    assert json.loads((tmp_path / "run" / "config.json").read_text())["init_from"] == "default"
    # A resume goes on from the run's own weights, not from init_from's again.
    with Trainer(config, tmp_path / "run", resume=True, progress=False) as resumed:
        assert all(torch.equal(learned[k], v) for k, v in resumed.network.state_dict().items())
        assert resumed.started_from == saved["started_from"]
        assert not any(note.startswith("starting from") for note in resumed.notes)
    # What a resume may not change: a new run from these weights may, when it is a learning setting.
    with pytest.raises(TrainError, match=r"not lr \(start a new run for those; --set init_from=runs/x starts one "
                                         r"from this run's weights\)$"):
        resume_with_changes(config, {"lr": 0.1}, "runs/x")
    with pytest.raises(TrainError, match=r"not hidden \(start a new run for those\)$"):
        resume_with_changes(config, {"hidden": [8]}, "runs/x")
    with pytest.raises(TrainError, match=r"--set 'init_from=runs/my run' starts one"):  # as the shell takes it
        resume_with_changes(config, {"lam": 0.5}, Path("runs/my run"))
    # An export holds no trainable weights: said so.
    (tmp_path / "export").mkdir()
    shutil.copyfile(ROOT / "checkpoints/default/policy.onnx", tmp_path / "export" / "policy.onnx")
    with pytest.raises(TrainError, match=r"^init_from: .*export is an exported policy \(policy.onnx\), which holds "
                                         "no trainable weights"):
        Trainer(load_config(ROOT / "configs/smoke.yaml", init_from=str(tmp_path / "export")), tmp_path / "d")
    # A run directory works too, and the smoke config's own sizes must match the checkpoint's.
    run = tmp_path / "small"
    _trained(run, steps=1).close()
    with Trainer(load_config(ROOT / "configs/smoke.yaml", init_from=str(run)), tmp_path / "again",
                 progress=False) as again:
        saved = load_checkpoint(run)[0].state_dict().values()
        assert all(torch.equal(a, b) for a, b in zip(saved, again.network.state_dict().values(), strict=True))
    with pytest.raises(TrainError, match=r"^init_from: .*checkpoint.pt has hidden layers \[128, 64\], this config "
                                         r"\[32, 16\]: set hidden to match"):
        Trainer(load_config(ROOT / "configs/smoke.yaml", hidden=[32, 16], init_from="default"), tmp_path / "b")
    with pytest.raises(TrainError, match=r"^init_from: no checkpoint at .*nowhere"):
        Trainer(load_config(ROOT / "configs/smoke.yaml", init_from=str(tmp_path / "nowhere")), tmp_path / "c")
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
    for bad in ("default\n", "  "):
        with pytest.raises(ValueError, match="init_from must be a checkpoint file, a run directory or default"):
            TrainConfig(init_from=bad)


def test_resuming_a_copy_of_the_shipped_checkpoint_notes_that_it_has_no_replay(tmp_path):
    """checkpoints/default ships no replay file: resuming a copy of it says so as a note (not as
    damage passed over), and the buffer starts empty."""
    run = tmp_path / "ship"
    run.mkdir()
    for name in ("checkpoint.pt", "config.json"):
        shutil.copyfile(ROOT / "checkpoints/default" / name, run / name)
    config = config_for_resume(run)
    with Trainer(config, run, resume=True, progress=False) as trainer:
        assert trainer.skipped == [] and trainer.replay.count == 0
        assert any(note.startswith("replay-000400000.npz is not in ") and "starts empty" in note
                   for note in trainer.notes)

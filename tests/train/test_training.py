"""Self-play training end to end on Ray: the smoke run, SIGKILL and resume, a dead actor."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agents.td import load_checkpoint
from train.config import load_config
from train.trainer import Trainer, TrainError

ROOT = Path(__file__).resolve().parents[2]
NARDY = Path(sys.executable).parent / "nardy"


def _env() -> dict[str, str]:
    # Read at call time: starting the session's Ray sets its auth mode in os.environ.
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}


pytestmark = pytest.mark.slow


def _nardy(*args: str) -> list[str]:
    return [str(NARDY), *args] if NARDY.exists() else [sys.executable, "-m", "train.cli", *args]


def test_smoke_training_through_the_cli_on_a_local_ray(tmp_path):
    import shutil
    import tempfile

    run = tmp_path / "smoke"
    # The address file `ray start` leaves (here a stale one): a local run starts its own Ray all the same.
    ray_tmp = Path(tempfile.mkdtemp(prefix="nr", dir="/tmp"))  # short: Ray's socket paths have a length limit
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:6391")
    try:
        out = subprocess.run(_nardy("train", "--config", str(ROOT / "configs/smoke.yaml"), "--out", str(run)),
                             capture_output=True, text=True, timeout=600,
                             env={**_env(), "RAY_TMPDIR": str(ray_tmp)}, cwd=ROOT)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "final evaluation" in out.stdout
    config = json.loads((run / "config.json").read_text())
    assert config["name"] == "smoke" and config["total_games"] == 1024
    network, payload = load_checkpoint(run)
    assert payload["training"]["games"] >= 1024
    assert payload["trainer"]["updates"] > 0
    records = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert len(records) >= 2 and {"random", "race"} <= set(records[-1])
    assert records[-1]["final"] is True and records[-1]["games_trained"] == 1024
    assert records[0]["final"] is False  # a periodic one says so too
    # keep_checkpoints: 2 older copies plus the numbered copy of the latest.
    assert sorted(p.name for p in run.glob("checkpoint-*.pt")) == [
        "checkpoint-000000512.pt", "checkpoint-000000768.pt", "checkpoint-000001024.pt"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    (text,) = events.Tensors("config/text_summary")  # the settings, in TensorBoard's Text tab
    shown = text.tensor_proto.string_val[0].decode()
    assert shown.startswith("```json\n") and json.loads(shown.strip("`\n").removeprefix("json\n")) == config
    for tag in ("train/loss", "train/fit_error", "selfplay/games", "selfplay/games_per_s", "selfplay/mean_game_plies",
                "selfplay/mars_rate", "learner/updates", "learner/updates_per_s", "learner/learning_rate", "calibration/expected_error",
                "calibration/equity_expected_error", "eval/win_rate_vs_random", "eval/win_rate_vs_race",
                "eval/mars_rate_vs_race", "final/win_rate_vs_race", "final/points_per_game_vs_random"):
        assert tag in tags, tag
    loss = [e.value for e in events.Scalars("train/loss")]
    fit = [e.value for e in events.Scalars("train/fit_error")]
    assert all(0 <= f <= value for f, value in zip(fit, loss, strict=True))  # the loss less the targets' entropy
    # The rate the latest steps used: set before that task's games were counted, so one task behind.
    for e in events.Scalars("learner/learning_rate"):
        used_at = e.step - config["games_per_task"]
        expected = config["lr"] + (config["lr_final"] - config["lr"]) * used_at / config["total_games"]
        assert e.value == pytest.approx(expected, rel=1e-5), (e.step, e.value, expected)
    assert events.Scalars("learner/updates")[-1].value == payload["trainer"]["updates"]
    assert any(re.fullmatch(r"calibration/actual_points_pred_[-+]\d\.\d_[-+]\d\.\d", t) for t in tags)
    assert any(re.fullmatch(r"calibration/actual_win_rate_pred_0\.\d-[01]\.\d", t) for t in tags)
    # The closing evaluation continues the eval/ curve as well.
    assert 1024 in {e.step for e in events.Scalars("eval/win_rate_vs_race")}
    # A reliability picture at each evaluation: predicted vs actual, per band of predictions.
    pictures = events.Images("calibration/reliability")
    assert [p.step for p in pictures] == [512, 1024] and pictures[-1].width > pictures[-1].height > 100
    assert re.search(r"this session \d+ games/s and \d+ updates/s \(evaluations excluded\)", out.stdout)
    from tools.scaling import parse_trained  # tools/scaling.py reads this line

    assert parse_trained(out.stdout)["games"] == payload["training"]["games"]
    # Progress on a pipe: plain lines, the closing one with the last window's rate (as logged) and
    # the latest periodic evaluation.
    closing = [line for line in out.stderr.splitlines() if line.startswith("train smoke: ")][-1]
    last_rate = events.Scalars("selfplay/games_per_s")[-1].value
    assert re.search(rf"games/s {last_rate:.0f}\b", closing), (closing, last_rate)
    periodic = [r for r in records if not r["final"]][-1]
    assert f"random {periodic['random']['win_rate']:.0%}" in closing


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no SIGKILL or process groups")
def test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint(tmp_path, ray_cluster):
    run = tmp_path / "killed"
    proc = subprocess.Popen(
        _nardy("train", "--config", str(ROOT / "configs/smoke.yaml"), "--out", str(run), "--quiet",
               "--address", ray_cluster),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=ROOT, start_new_session=True)
    try:
        deadline = time.time() + 300
        games = 0
        while time.time() < deadline:
            if (run / "checkpoint.pt").exists():
                games = load_checkpoint(run)[1]["training"]["games"]
                if games >= 256:
                    break
            if proc.poll() is not None:
                pytest.fail(f"training ended before it could be killed: {proc.stdout.read()[-2000:]}")
            time.sleep(0.5)
        assert games >= 256, "no checkpoint within the time limit"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = load_checkpoint(run)[1]  # the file on disk is whole: written atomically
    # Whatever the kill interrupted, the checkpoint and its replay agree.
    assert (run / f"replay-{before['training']['games']:09d}.npz").is_file()
    out = subprocess.run(_nardy("train", "--resume", str(run), "--quiet", "--address", ray_cluster),
                         capture_output=True, text=True, timeout=600, env=_env(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert f"resuming from {before['training']['games']} games in checkpoint.pt" in out.stdout
    assert f"joined the Ray cluster at {ray_cluster}: 1 node, " in out.stdout  # the session's cluster, by address
    assert "replay buffer starts empty" not in out.stderr
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    # TensorBoard keeps every evaluation the resumed run kept, the one at the checkpoint's step too.
    records = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    logged = {e.step for e in events.Scalars("eval/win_rate_vs_random")}
    assert {r["games_trained"] for r in records if not r.get("final")} <= logged
    after = load_checkpoint(run)[1]
    assert after["training"]["games"] >= 1024
    assert after["trainer"]["updates"] > before["trainer"]["updates"]
    assert after["trainer"]["tasks_submitted"] > before["trainer"]["tasks_submitted"]


def test_resume_without_a_checkpoint_and_reuse_of_a_run_are_refused(tmp_path):
    config = load_config(ROOT / "configs/smoke.yaml")
    with pytest.raises(TrainError, match="nothing to resume"):
        Trainer(config, tmp_path / "empty", resume=True, progress=False)
    t = Trainer(config, tmp_path / "run", progress=False)
    t.save()
    with pytest.raises(TrainError, match="already holds a run"):
        Trainer(config, tmp_path / "run", progress=False)


def test_more_actors_than_cpus_are_named_when_they_start(tmp_path, ray_cluster, capsys):
    import ray

    config = load_config(ROOT / "configs/smoke.yaml", actors=3)
    trainer = Trainer(config, tmp_path / "many", progress=False, address=ray_cluster)
    assert trainer._start_actors() == 3
    for actor in trainer._actors:
        ray.kill(actor, no_restart=True)
    assert "warning: 3 actors on a Ray cluster of 2 CPUs" in capsys.readouterr().err


def test_lost_actors_workers_and_objects_count_as_a_dead_actor_and_task_errors_do_not():
    import ray.exceptions as rx

    from train.trainer import _actor_lost

    for cls in (rx.ActorDiedError, rx.ActorUnavailableError, rx.WorkerCrashedError,
                rx.ObjectReconstructionFailedError, rx.OwnerDiedError, rx.NodeDiedError):
        assert _actor_lost(cls.__new__(cls)), cls
    assert not _actor_lost(rx.RayTaskError.__new__(rx.RayTaskError))
    assert not _actor_lost(ValueError("a bug in the task"))


def test_a_task_that_raises_is_reported_in_one_line_with_its_cause():
    import ray.exceptions as rx

    from train.trainer import _task_failed

    exc = rx.RayTaskError("play", "Traceback (most recent call last):\n  File \"selfplay.py\", line 120\n"
                                  "ValueError: segment_argmax: value 0 (segment 0) is NaN", ValueError("NaN"))
    error = _task_failed(exc, 1234)
    assert isinstance(error, TrainError)
    assert str(error) == "a self-play task failed after 1,234 games: ValueError: segment_argmax: value 0 (segment 0) is NaN"


def test_training_goes_on_when_an_actor_dies(tmp_path, ray_cluster):
    config = load_config(ROOT / "configs/smoke.yaml", total_games=384, eval_every_games=0,
                         final_eval_games=0, actors=2)
    trainer = Trainer(config, tmp_path / "actor", progress=False, address=ray_cluster)
    trainer._start_actors()
    trainer.kill_actor(0)
    stats = trainer.train()
    assert trainer.actor_restarts >= 1
    assert stats["games"] >= 384
    # The dead actor's task was played by its replacement: every task submitted came back
    # (games_per_task each) or is left to play again, none was dropped.
    assert trainer.tasks_submitted == trainer.games // 64 + len(trainer._tasks_to_redo)
    assert load_checkpoint(tmp_path / "actor")[1]["trainer"]["actor_restarts"] >= 1


@pytest.mark.parametrize(("signum", "status", "word"), [
    (signal.SIGINT, 130, "interrupted"),
    # A job scheduler's SIGTERM (ray.init installs its own handler; nardy's is put back).
    pytest.param(getattr(signal, "SIGTERM", None), 143, "terminated",
                 marks=pytest.mark.skipif(sys.platform == "win32", reason="Windows has no SIGTERM to send")),
], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_saves_a_checkpoint_and_stops_cleanly(tmp_path, ray_cluster, signum, status, word):
    run = tmp_path / "interrupted"
    proc = subprocess.Popen(
        _nardy("train", "--config", str(ROOT / "configs/smoke.yaml"), "--out", str(run), "--quiet",
               "--address", ray_cluster, "--set", "total_games=100000", "--set", "eval_every_games=0"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=ROOT)
    try:
        deadline = time.time() + 300
        while not (run / "checkpoint.pt").exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert (run / "checkpoint.pt").exists(), "no checkpoint within the time limit"
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, out[-2000:]
    match = re.search(rf"{word} after (\d+) games; checkpoint saved. Continue with: nardy train --resume {run}", out)
    assert match, out[-2000:]
    games = load_checkpoint(run)[1]["training"]["games"]
    assert 0 < games < 100_000 and games == int(match.group(1))


def test_one_actor_resumes_bit_for_bit_replaying_the_task_in_flight(tmp_path, ray_cluster):
    """A run stopped at a checkpoint and resumed learns exactly what one run straight through
    learns: the task in flight at the checkpoint (its seed and exploration rate) is played again."""
    settings = dict(actors=1, games_per_task=32, eval_every_games=0, final_eval_games=0,
                    checkpoint_every_games=64, batch_size=64, log_every_seconds=1e9,
                    epsilon=0.2, epsilon_final=0.0)  # exploration decays: the task's own rate must come back
    straight = Trainer(load_config(ROOT / "configs/smoke.yaml", total_games=128, **settings), tmp_path / "a",
                       progress=False, address=ray_cluster)
    straight.train()
    first = Trainer(load_config(ROOT / "configs/smoke.yaml", total_games=128, **settings), tmp_path / "b",
                    progress=False, address=ray_cluster)
    first.train(max_seconds=0)  # nothing played: the actor's first task is in flight at the save
    assert first.games == 0
    first.save()  # a save after train() (as finish() makes) still holds the task
    saved = load_checkpoint(tmp_path / "b")[1]["trainer"]
    assert saved["pending_tasks"] == [[0, 0.2]] and saved["tasks_submitted"] == 1
    # A stop in the middle: let a second session play 64 games and stop at that checkpoint.
    middle = Trainer(first.config, tmp_path / "b", resume=True, progress=False, address=ray_cluster)
    original = middle.save

    def save_then_stop() -> object:
        path = original()
        if middle.games >= 64:
            middle.interrupted = True  # the loop saves once more and stops, as Ctrl-C does
        return path

    middle.save = save_then_stop  # type: ignore[method-assign]
    middle.train()
    (index, rate), = load_checkpoint(tmp_path / "b")[1]["trainer"]["pending_tasks"]
    assert middle.games == 64 and index == 2 and 0.0 < rate < 0.2
    resumed = Trainer(first.config, tmp_path / "b", resume=True, progress=False, address=ray_cluster)
    resumed.train()
    assert resumed.games == straight.games == 128 and resumed.updates == straight.updates
    differ = [key for key, value in straight.network.state_dict().items()
              if not torch.equal(value, resumed.network.state_dict()[key])]
    if differ:  # Say whether the resume is at fault or runs are not repeatable at all (one more run, only now).
        again = Trainer(load_config(ROOT / "configs/smoke.yaml", total_games=128, **settings), tmp_path / "again",
                        progress=False, address=ray_cluster)
        again.train()
        repeatable = all(torch.equal(value, again.network.state_dict()[key])
                         for key, value in straight.network.state_dict().items())
        pytest.fail(f"the resumed run's {differ} differ from the run straight through; a fresh run with the same "
                    f"seed is {'the same' if repeatable else 'not the same either: runs are not repeatable'}")


def test_an_error_between_steps_keeps_the_games_learned_since_the_last_checkpoint(tmp_path, ray_cluster):
    config = load_config(ROOT / "configs/smoke.yaml", total_games=256, actors=1, eval_every_games=128,
                         final_eval_games=0, checkpoint_every_games=1024)
    trainer = Trainer(config, tmp_path / "run", progress=False, address=ray_cluster)

    def broken_evaluation(games: int, final: bool = False) -> None:
        raise RuntimeError("evaluation failed")

    trainer.evaluate = broken_evaluation  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="evaluation failed"):
        trainer.train()
    payload = load_checkpoint(tmp_path / "run")[1]
    assert payload["training"]["games"] == trainer.games >= 128  # saved although no checkpoint was due
    resumed = Trainer(config, tmp_path / "run", resume=True, progress=False)
    assert resumed.games == trainer.games and not resumed.skipped
    assert resumed.next_evaluation() == 128  # the evaluation that failed is made at the first step


def test_an_error_inside_a_learning_step_saves_nothing_half_made(tmp_path, ray_cluster):
    config = load_config(ROOT / "configs/smoke.yaml", total_games=256, actors=1, eval_every_games=0,
                         final_eval_games=0, checkpoint_every_games=1024)
    trainer = Trainer(config, tmp_path / "run", progress=False, address=ray_cluster)

    def broken_learning(raw, targets) -> float:
        raise RuntimeError("learning failed")

    trainer.learn = broken_learning  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="learning failed"):
        trainer.train()
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_actors_that_never_start_stop_the_run_with_their_cause(tmp_path, ray_cluster, monkeypatch):
    """No endless replacement loop: e.g. a train.py in the working directory hides nardy's train package."""
    import train.trainer

    def broken_worker():
        class SelfPlayWorker:
            def __init__(self, *args, **kwargs) -> None:
                raise ModuleNotFoundError("No module named 'train.selfplay'; 'train' is not a package")

            def play(self, *args) -> None:
                pass

        return SelfPlayWorker

    monkeypatch.setattr(train.trainer, "SelfPlayWorker", broken_worker())
    train.trainer._remote_worker.cache_clear()  # the actor class is made once a process: make it of the broken one
    config = load_config(ROOT / "configs/smoke.yaml", actors=2, eval_every_games=0, final_eval_games=0)
    trainer = Trainer(config, tmp_path / "run", progress=False, address=ray_cluster)
    try:
        with pytest.raises(TrainError, match=r"actors keep dying before they finish a task \(each of the 2 actors 3 "
                                             r"times in a row\); the last: ModuleNotFoundError: No module named "
                                             r"'train.selfplay'.*start training from another directory"):
            trainer.train()
    finally:
        train.trainer._remote_worker.cache_clear()  # later tests get the real one
    assert trainer.games == 0 and trainer.actor_restarts >= 5
    assert not (tmp_path / "run").exists()  # nothing left behind: the same command may be given again


def test_joining_ray_keeps_the_callers_sigterm_handler(ray_cluster):
    """ray.init replaces SIGTERM's handler with one that exits with status 15; start_ray puts the
    caller's back (nardy's command relies on it during start-up and the closing evaluation)."""
    script = (
        "import signal, sys\n"
        "from train.trainer import start_ray\n"
        "def mine(signum, frame): pass\n"
        "signal.signal(signal.SIGTERM, mine)\n"
        f"start_ray({ray_cluster!r})\n"
        "print(signal.getsignal(signal.SIGTERM) is mine)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=_env(), cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"

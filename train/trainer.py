"""Self-play TD training across Ray actors, with a learner in the driver.

Each actor (``SelfPlayWorker`` inside Ray) plays ``games_per_task`` games in
lockstep with the weights it was handed and returns afterstates with their
lambda-return targets. The driver keeps one task in flight per actor; whenever
one returns it trains on the new samples (Adam on the cross-entropy between
the network's softmax and the targets, minibatches drawn from a replay of
recent positions), publishes the new weights with ``ray.put`` and hands them
to that actor's next task, so actors never wait for each other.

Without an address the run starts a local Ray sized to the machine (no
dashboard, no usage stats); with ``address`` (or ``RAY_ADDRESS``) it joins that
cluster unchanged. A dead actor is replaced and its task resubmitted; actors
that all keep dying before finishing a task stop the run with Ray's reason.

A run directory holds ``config.json``, ``checkpoint.pt`` (latest, written
atomically), ``checkpoint-<games>.pt`` (the last ``keep_checkpoints``),
TensorBoard events under ``tb/`` and ``eval.jsonl``, and ``.lock``: while a
``Trainer`` holds the run (until ``close()``), another process cannot resume it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
import weakref
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.files import compressed_entries, write_atomic
from agents.network import TDNetwork
from agents.registry import split_ply
from agents.search import SearchPlayer
from agents.td import CheckpointError, TorchEvaluator, load_checkpoint, save_checkpoint
from nardy_env import Rules, RulesError
from nardy_env.encoding import features
from nardy_env.players import load_player
from train import runlock
from train.config import ConfigError, TrainConfig
from train.selfplay import SelfPlayWorker

__all__ = ["Trainer", "TrainError", "start_ray", "check_ray_address", "resume_with_changes", "save_config",
           "RESUMABLE_KEYS"]


LOCAL_NODE_IP = "127.0.0.2"
"""Address of the embedded local Ray (loopback), where the machine has it (``local_node_ip``)."""


def local_node_ip() -> str:
    """``LOCAL_NODE_IP`` where the loopback interface takes it (Linux and Windows route all of
    127.0.0.0/8 there), else 127.0.0.1: macOS's lo0 holds only that address unless aliased,
    and Ray then uses the machine's network address, as a bare ``ray.init()`` does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOCAL_NODE_IP, 0))
        except OSError:
            return "127.0.0.1"
    return LOCAL_NODE_IP


class TrainError(RuntimeError):
    """A run that cannot start or go on."""


DIVERGING_LOSS = 10.0
"""A mean training loss above this (an untrained network's is about ln 4 = 1.4) gets one warning."""

RESUMABLE_KEYS = ("total_games", "actors", "games_per_task", "eval_every_games", "eval_games",
                  "eval_opponents", "final_eval_games", "checkpoint_every_games", "keep_checkpoints",
                  "log_every_seconds", "name")
"""Settings ``--resume`` may change with ``--set`` (length, cadence, throughput, and the
run's name, a label); the rest (network, rules, seed, learning settings) are the run's own."""


def check_ray_address(address: str | None) -> None:
    """Raise TrainError unless a cluster answers at ``address`` (``host:port``, ``ray://host:port``).

    Ray itself retries an unreachable address for minutes; a TCP probe of a few
    seconds says at once that nothing listens there. ``auto`` and ``local`` are
    left to Ray.
    """
    if not address or address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://").rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if (not sep or not (port.isascii() and port.isdigit() and len(port) <= 5) or not 0 < int(port) < 65536
            or not host.strip("[]") or "/" in host):
        raise TrainError(f"Ray address {address!r} is not host:port (or ray://host:port, or auto)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise TrainError(f"cannot reach a Ray cluster at {address}: {exc.strerror or exc}; start one with "
                         "`ray start --head` there, or leave out --address for a local Ray") from None


def _check_writable(folder: Path) -> None:
    """Raise TrainError unless ``folder`` can be made (or written) here: say which part is in the way."""
    parent = folder
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise TrainError(f"cannot make {folder}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TrainError(f"cannot make {folder}: {parent} is not writable")
    from agents.files import creation_refused

    refused = creation_refused(parent, "train", stacklevel=3)  # access() says yes to root (/proc), and on Windows
    if refused:
        raise TrainError(f"cannot make {folder}: nothing can be made in {parent} ({refused})")


@functools.cache
def _remote_worker() -> Any:
    """SelfPlayWorker as a Ray actor class, made once: Ray exports a class (pickles and
    fingerprints its code) each time one is made, which cost about 20 ms an actor."""
    import ray

    return ray.remote(num_cpus=1, max_restarts=0)(SelfPlayWorker)


def start_ray(address: str | None = None, num_cpus: int | None = None) -> dict[str, Any]:
    """Join a cluster by address (argument or RAY_ADDRESS), or start a quiet local Ray."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray

    if ray.is_initialized():
        return ray.cluster_resources()
    # ray.init puts in its own SIGTERM handler (sys.exit(15)); a caller's own handler (nardy's
    # command: SIGTERM stops like Ctrl-C) is put back once Ray has started.
    own_handler = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        return _init_ray(ray, address, num_cpus)
    finally:
        # Put back a Python handler or SIG_IGN; the default (SIG_DFL) is left to Ray's, which exits cleanly.
        if (callable(own_handler) or own_handler == signal.SIG_IGN) and signal.getsignal(signal.SIGTERM) != own_handler:
            signal.signal(signal.SIGTERM, own_handler)


def _init_ray(ray: Any, address: str | None, num_cpus: int | None) -> dict[str, Any]:
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address == "local":  # Ray's word for a new Ray of one's own: the embedded one below
        address = None
    if address:
        check_ray_address(address)
        try:
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            token = ("" if address == "auto" else " (a cluster with token authentication also needs "
                     "RAY_AUTH_MODE=token and its ~/.ray/auth_token here: docs/training.md, Ray: local or a cluster)")
            raise TrainError(f"cannot join the Ray cluster at {address}: {exc}{token}") from None
        shown = address
        if not address.startswith("ray://"):  # the cluster's own address (what auto found)
            with contextlib.suppress(Exception):
                shown = ray.get_runtime_context().gcs_address or address
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        cpus = int(ray.cluster_resources().get("CPU", 0))
        print(f"joined the Ray cluster at {shown}: {nodes} node{'' if nodes == 1 else 's'}, "
              f"{cpus} CPU{'' if cpus == 1 else 's'}", flush=True)
    else:
        from nardy_env.core import available_cpus

        # Ray turns token authentication on for a new local cluster and says so on every
        # start; it stays on (good), the notice is quieted for the embedded cluster.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        # A local cluster stays on the loopback interface (where Ray takes _node_ip_address). Ray swaps 127.0.0.1
        # for the machine's network address, but not the rest of 127.0.0.0/8.
        # address="local": a new Ray of our own, even where `ray start` has left a cluster (or its
        # stale address file) that a bare ray.init() would join.
        settings = dict(address="local", num_cpus=num_cpus or available_cpus(), include_dashboard=False,
                        object_store_memory=200 * 1024 * 1024, logging_level=logging.WARNING, log_to_driver=True)
        try:
            try:
                ray.init(**settings, _node_ip_address=local_node_ip())
            except (TypeError, RuntimeError) as exc:
                # _node_ip_address is Ray's private argument: a Ray that drops it refuses it by
                # name ("Unknown keyword argument(s)"); start that one on its own choice of address.
                if "_node_ip_address" not in str(exc):
                    raise
                print("warning: this Ray does not take _node_ip_address (a private argument of Ray's), so the "
                      "local Ray starts on the address Ray chooses, which may be this machine's network address "
                      "rather than the loopback one; to keep it on the loopback, start one with `ray start --head "
                      "--node-ip-address=127.0.0.1` and pass --address 127.0.0.1:6379", file=sys.stderr, flush=True)
                ray.init(**settings)
        except (OSError, RuntimeError, ValueError) as exc:
            raise TrainError(f"cannot start a local Ray: {str(exc).strip()}") from None
    return ray.cluster_resources()


def _opponent_identity(opponent: str) -> tuple[str | None, int | None]:
    """The SHA-256 of an evaluation opponent's file (a run, checkpoint or export; the name's
    ``@N`` aside), or None for a bot or a plugin's player, and a bot's version (None for other
    players): as ``nardy eval`` records them."""
    from train.evaluate import provenance

    said = provenance(None, opponent)
    return said["player_b_sha256"], said["player_b_bot_version"]


def _weights(network: TDNetwork) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in network.state_dict().items()}


class _Replay:
    """Ring buffer of (raw uint8 [50], target float32 [4])."""

    def __init__(self, size: int) -> None:
        self.raw = np.zeros((size, 50), dtype=np.uint8)
        self.targets = np.zeros((size, 4), dtype=np.float32)
        self.size = size
        self.count = 0
        self.head = 0

    def add(self, raw: np.ndarray, targets: np.ndarray) -> None:
        n = raw.shape[0]
        if n >= self.size:
            raw, targets, n = raw[-self.size:], targets[-self.size:], self.size
        idx = (self.head + np.arange(n)) % self.size
        self.raw[idx] = raw
        self.targets[idx] = targets
        self.head = (self.head + n) % self.size
        self.count = min(self.count + n, self.size)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, self.count, size=n)
        return self.raw[idx], self.targets[idx]


class Trainer:
    """One training run: learner state, Ray actors, logging and checkpoints."""

    def __init__(self, config: TrainConfig, run_dir: str | Path, resume: bool = False,
                 address: str | None = None, progress: bool = True) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.address = address
        self.progress = progress
        self.rules = config.rules_obj
        torch.manual_seed(config.seed)
        self.network = TDNetwork(config.hidden)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=config.lr)
        self.rng = np.random.default_rng([config.seed, 7])
        self.games = 0
        self.samples = 0
        self.updates = 0
        self.tasks_submitted = 0
        # Tasks in flight when the last checkpoint was written ([seed index, epsilon] each): a
        # resumed run plays them again first, so nothing is skipped and one actor resumes exactly.
        self._tasks_to_redo: list[list[Any]] = []
        self.actor_restarts = 0
        self.eval_history: list[dict[str, Any]] = []
        self.replay = _Replay(config.replay_size)
        self.selfplay_seconds = 0.0
        self.schedule: dict[str, Any] = {"games": 0, "total_games": config.total_games,
                                         "lr": config.lr, "epsilon": config.epsilon}
        self.started = time.perf_counter()
        self._warned_loss = False  # the one warning per session about a loss far too high
        self.last_fit_error = 0.0  # of the last learn(): its loss less the targets' entropy
        self.resumed_from: Path | None = None
        self.started_from: dict[str, Any] | None = None  # init_from's checkpoint: resolved path, games, sha256
        self.skipped: list[str] = []  # unreadable checkpoints passed over on resume
        self.notes: list[str] = []  # what a resume should tell its user (the CLI prints them once accepted)
        check_ray_address(address or os.environ.get("RAY_ADDRESS"))
        for opponent in config.eval_opponents:  # one that cannot be loaded fails now, not at the first evaluation
            here = os.path.realpath(self.run_dir)
            if os.path.realpath(split_ply(opponent)[0]) in (here, os.path.join(here, "checkpoint.pt")):
                # "easy" or "default" with --out easy: a path of that name comes first, once saved.
                raise TrainError(f"eval_opponents: {opponent} names this run's own folder ({self.run_dir}): a run "
                                 "is not evaluated against itself; name the opponent by its path, or the run "
                                 "another folder")
            try:
                load_player(opponent, self.rules)
            except Exception as exc:
                raise TrainError(f"eval_opponents: {opponent}: {exc}") from None
        self._lock: Path | None = None
        if resume:
            if not self._checkpoints():  # refused before a .lock is made in a folder that holds no run
                raise TrainError(f"nothing to resume: no checkpoint in {self.run_dir}")
            # Before anything is touched: the stray files below may be a live run's writes.
            self._hold_lock()
            try:
                # Temporary files of writes a kill interrupted (the files they were to replace are intact).
                for stray in [*self.run_dir.glob(".checkpoint*.tmp"), *self.run_dir.glob(".replay-*.tmp"),
                              *self.run_dir.glob("checkpoint-*.tmp")]:
                    stray.unlink(missing_ok=True)
                self._tb_dir()  # a link there: refused before Ray starts
                self._load_latest_good()
            except BaseException:
                self.close()
                raise
        else:
            if (self.run_dir / "checkpoint.pt").exists():
                raise TrainError(f"{self.run_dir} already holds a run; use --resume {self.run_dir} "
                                 "to continue it or --out to start a new one")
            if self.run_dir.exists() and not self.run_dir.is_dir():
                raise TrainError(f"{self.run_dir} is a file; give --out a folder")
            if self.run_dir.is_symlink() and not self.run_dir.exists():
                raise TrainError(f"{self.run_dir} is a link to {os.readlink(self.run_dir)}, which does not exist; "
                                 "make that folder or give --out another place")
            if self.run_dir.is_dir() and any(p.name != runlock.LOCK_NAME for p in self.run_dir.iterdir()):
                raise TrainError(f"{self.run_dir} is not empty but holds no checkpoint (a run that never "
                                 "saved one?); remove it or choose another --out")
            _check_writable(self.run_dir)
            if config.init_from:
                self._start_from(config.init_from)
        self._new_run = not resume  # the folder is made once Ray has started (_make_run_dir)
        self._unstarted = False
        self._made_folders: list[Path] = []  # the run folder and the parents this run made, innermost first
        self._replay_saved: tuple[int, int, int] | None = None
        self._writer: Any = None
        self._picture_from = 0  # games at the last reliability picture
        self.interrupted = False
        self.stop_signal: int | None = None  # SIGINT or SIGTERM, once one has asked a session to stop
        self._actors: list[Any] = []
        self._pending: dict[Any, tuple[int, Any, list[Any]]] = {}
        self._take_one_thread()  # last: a Trainer refused above leaves the process as it was

    def _start_from(self, spec: str) -> None:
        """A new run's weights from ``init_from`` (a checkpoint, a run directory, or the shipped player)."""
        from agents.registry import SHIPPED_PLAYER

        path = SHIPPED_PLAYER if spec == "default" and not Path(spec).exists() else Path(spec)
        if path.is_dir() and (path / "policy.onnx").is_file() and not (path / "checkpoint.pt").is_file():
            raise TrainError(f"init_from: {spec} is an exported policy (policy.onnx), which holds no trainable "
                             "weights: name the run or checkpoint it was exported from")
        from agents.files import file_sha256

        try:
            # Hashed as read: the weights below are compared with these bytes (a run still training
            # may replace its checkpoint.pt in between).
            file = path / "checkpoint.pt" if path.is_dir() else path
            digest = file_sha256(file) if file.is_file() else None
            network, payload = load_checkpoint(path)
            if digest != file_sha256(payload["path"]):
                raise CheckpointError(f"{payload['path']} changed while it was read (a run still writing it?); "
                                      "try again, or name one of its numbered checkpoints")
        except (CheckpointError, OSError) as exc:
            shadow = (" (a folder named default here comes before the shipped player: name the shipped one by its path)"
                      if spec == "default" and path == Path(spec) else "")
            raise TrainError(f"init_from: {exc}{shadow}") from None
        if tuple(network.hidden) != tuple(self.config.hidden):
            raise TrainError(f"init_from: {payload['path']} has hidden layers {list(network.hidden)}, this config "
                             f"{list(self.config.hidden)}: set hidden to match, or start from random weights")
        self.network.load_state_dict(network.state_dict())
        trained = (payload.get("training") or {}).get("games")
        self.started_from = {"path": str(Path(payload["path"]).resolve()),
                             "games": trained if isinstance(trained, int) else None, "sha256": digest}
        theirs = Rules.from_dict(payload["rules"])
        self.notes.append(f"starting from the weights of {payload['path']}"
                          + (f" ({trained:,} games trained)" if isinstance(trained, int) else "")
                          + ("" if theirs == self.rules else ", trained under other rules than this run's"))

    # The Trainers holding torch at one thread (weakly: one dropped unclosed lets go too), and the
    # process's own count, given back by the last to close.
    _threads_held: weakref.WeakSet[Trainer] = weakref.WeakSet()
    _threads_before = 1

    def _take_one_thread(self) -> None:
        """One torch thread for the learner while the run is open (the actors have the other CPUs);
        when the last open Trainer closes, the process gets its own count back."""
        if self not in Trainer._threads_held:
            if not Trainer._threads_held:
                Trainer._threads_before = torch.get_num_threads()
            Trainer._threads_held.add(self)
        torch.set_num_threads(1)

    def _make_run_dir(self) -> None:
        """A new run's folder and config.json, written once the run is sure to start."""
        if self._new_run:
            text = self.config.to_json()
            taken = TrainError(f"{self.run_dir} was taken by another run while this one started; "
                               "choose another --out")
            try:
                here = Path(os.path.normpath(self.run_dir))  # no "a/.." among the folders made
                self._made_folders = [p for p in (here, *here.parents) if not p.exists()]
                self.run_dir.mkdir(parents=True, exist_ok=True)
                try:  # locked before anything is written in it
                    self._lock = runlock.acquire(self.run_dir, new=True)
                except runlock.RunInUse:
                    raise taken from None
                except runlock.LockError as exc:  # a .lock that is no lock file: its own remedy
                    raise TrainError(str(exc)) from None
                # Exclusive create claims the folder: of two runs started on one --out (or one
                # default runs/NAME) at the same moment, the second stops here instead of mixing in.
                with open(self.run_dir / "config.json", "x", encoding="utf-8", newline="\n") as fh:
                    fh.write(text)
            except FileExistsError:
                runlock.release(self._lock)
                self._lock = None
                raise taken from None
            except OSError as exc:
                runlock.release(self._lock, remove=True)
                self._lock = None
                with contextlib.suppress(OSError):  # nothing half-made stays behind (a full disk)
                    (self.run_dir / "config.json").unlink(missing_ok=True)
                    self._remove_made_folders()
                raise TrainError(f"cannot make the run folder {self.run_dir}: {exc.strerror or exc}") from None
            self._new_run = False
            self._unstarted = True  # until a game is played: a run that never starts is removed
        self._hold_lock()  # again after a close(): whoever writes the run holds it

    def _hold_lock(self) -> None:
        """The run's lock for this process (shared by its Trainers), or TrainError if another holds it."""
        if self._lock is None:
            try:
                self._lock = runlock.acquire(self.run_dir)
            except runlock.LockError as exc:
                raise TrainError(str(exc)) from None

    def close(self) -> None:
        """Let go of the run: its TensorBoard writer, its lock (another process may resume it), and
        torch's thread count (set to one for the learner) back to what it was."""
        if getattr(self, "_writer", None) is not None:
            self._writer.close()
            self._writer = None
        runlock.release(getattr(self, "_lock", None))
        self._lock = None
        if self in Trainer._threads_held:
            Trainer._threads_held.discard(self)
            if not Trainer._threads_held:
                torch.set_num_threads(Trainer._threads_before)

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:  # also at interpreter exit, when modules may be half torn down
            runlock.release(getattr(self, "_lock", None))
            self._lock = None
        except Exception:
            pass

    def _remove_made_folders(self) -> None:
        """The folders this run made (runs/ for runs/NAME too), where they are still empty."""
        for folder in self._made_folders:
            try:
                folder.rmdir()  # only an empty folder goes
            except FileNotFoundError:  # not made after all (a full disk stopped mkdir): its parent may be
                continue
            except OSError:
                break
        self._made_folders = []

    def _remove_unstarted_run(self) -> None:
        """What a new run that never played a game wrote (config.json, tb/, .lock): gone, so the
        same command can be given again."""
        if self._writer is not None:
            self._writer.close()
        shutil.rmtree(self.run_dir / "tb", ignore_errors=True)
        (self.run_dir / "config.json").unlink(missing_ok=True)
        runlock.release(self._lock, remove=True)  # its file too, unless another holder here still has it
        self._lock = None
        self._remove_made_folders()
        self._new_run, self._unstarted = True, False  # a train() after this starts the run afresh

    # -- state ------------------------------------------------------------------------------

    def _tb_dir(self) -> str:
        """RUN/tb for TensorBoard's event files, or TrainError if it is a link or no folder: a run
        folder from elsewhere must not have them written where its link points."""
        tb = self.run_dir / "tb"
        if tb.is_symlink() or (tb.exists() and not tb.is_dir()):
            raise TrainError(f"{tb} is {'a link' if tb.is_symlink() else 'not a folder'}, not the run's folder of "
                             "TensorBoard logs; remove it, then try again")
        return str(tb)

    def _checkpoints(self) -> list[Path]:
        """The run's checkpoint files, the one to resume from first: checkpoint.pt, then the
        numbered copies newest first."""
        candidates = [self.run_dir / "checkpoint.pt", *reversed(numbered_checkpoints(self.run_dir))]
        return [p for p in candidates if p.is_file()]

    def _load_latest_good(self) -> None:
        """Resume from checkpoint.pt, or from the newest numbered copy that reads if it does not."""
        candidates = self._checkpoints()
        if not candidates:
            raise TrainError(f"nothing to resume: no checkpoint in {self.run_dir}")
        unreadable: list[Path] = []
        for path in candidates:
            try:
                self._load(path)
            except CheckpointError as exc:
                self.skipped.append(f"{path.name}: {exc}")
                unreadable.append(path)
                continue
            self.resumed_from = path
            break
        else:
            raise TrainError(f"cannot resume {self.run_dir}: no readable checkpoint ("
                             + "; ".join(self.skipped) + ")")
        # Numbered copies passed over are set aside under another name: kept, but no longer
        # taken for the run's copies (a later resume would try them again, and keep_checkpoints
        # would count them).
        for bad in unreadable:
            if bad.name != "checkpoint.pt":
                aside = _unreadable_name(bad)
                bad.replace(aside)
                self.skipped.append(f"{bad.name} is kept as {aside.name}")
        if path.name != "checkpoint.pt":
            # checkpoint.pt names the run's latest state (for eval, export, play): it becomes the
            # copy resumed from; an unreadable one is kept aside, never deleted.
            latest = self.run_dir / "checkpoint.pt"
            kept = None
            if latest.exists():
                # A repair that failed before (a full disk) already gave it a second name: reuse that.
                kept = next((p for p in self.run_dir.glob("checkpoint.pt.unreadable*")
                             if os.path.samefile(p, latest)), None)
                if kept is None:
                    kept = _unreadable_name(latest)
                    try:  # a second name first, so that a repair which cannot write loses nothing
                        os.link(latest, kept)
                    except OSError:
                        latest.replace(kept)
            data = path.read_bytes()
            write_atomic(latest, lambda fh: fh.write(data))
            self.skipped.append(f"checkpoint.pt is now a copy of {path.name}"
                                + (f" (the unreadable one is kept as {kept.name})" if kept else ""))
        # eval.jsonl is rewritten from the checkpoint's history, so that it never holds
        # evaluations made after the checkpoint (they are made again).
        lines = "".join(json.dumps(r) + "\n" for r in self.eval_history)
        log = self.run_dir / "eval.jsonl"
        try:  # a regular file only: a link (to /dev/zero, say) in a folder from elsewhere is not read
            before = log.read_bytes().decode("utf-8", "replace") if log.is_file() and not log.is_symlink() else ""
        except OSError:
            before = ""
        dropped = sum(1 for line in before.splitlines() if _is_json(line)) - len(self.eval_history)
        if dropped > 0:
            self.skipped.append(f"eval.jsonl: {dropped} record(s) made after {self.resumed_from.name} "
                                "(at {:,} games) left out; those evaluations are made again".format(self.games))
        if before != lines or not log.is_file() or log.is_symlink():  # unchanged: not written again
            write_atomic(self.run_dir / "eval.jsonl", lambda fh: fh.write(lines.encode("utf-8")))
        self._load_replay()
        for stale in self.run_dir.glob("replay-*.npz"):  # left by a save that failed after its replay
            if stale != self._replay_path(self.games):
                stale.unlink(missing_ok=True)

    def _load(self, path: Path) -> None:
        network, payload = load_checkpoint(path)
        state = payload.get("trainer")
        if state is None:
            raise TrainError(f"{path} has no training state to resume from")
        own = payload.get("config") or {}  # a mapping: load_checkpoint refuses anything else
        mine = self.config.to_dict()
        differ = sorted(k for k in own if k not in RESUMABLE_KEYS and not _same_setting(k, own.get(k), mine.get(k)))
        if differ:
            raise TrainError(f"{path} was trained with other settings than {self.run_dir / 'config.json'} "
                             f"now says: {', '.join(f'{k}={own[k]!r} (now {mine.get(k)!r})' for k in differ)}")
        try:
            self.network.load_state_dict(network.state_dict())
            self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as exc:
            raise CheckpointError(f"its network does not fit this run's configuration: "
                                  f"{' '.join(str(exc).split())}") from None  # torch's is several lines
        damaged = _optimizer_damage(self.optimizer)
        if damaged:
            raise CheckpointError(f"its optimizer state is damaged: {damaged}")
        def count(key: str, default: int | None = None) -> int:
            value = state[key] if default is None else state.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} is {value!r}, not a count")
            return value

        try:
            self.games, self.samples, self.updates = count("games"), count("samples"), count("updates")
            self.tasks_submitted = count("tasks_submitted")
            self._tasks_to_redo = [[int(i), float(e)] for i, e in state.get("pending_tasks", [])]
            self.actor_restarts = count("actor_restarts", 0)
            self.eval_history = list(state.get("eval_history", []))
            from train.plots import record_fault  # a mapping with games_trained, win rates that are fractions

            wrong = next((f for f in map(record_fault, self.eval_history) if f), "")
            if wrong:  # a NaN win rate, say: eval.jsonl is written from it, and nardy plot would refuse it
                raise ValueError(f"eval_history holds a record that is no evaluation: {wrong}")
            if any(map(_not_finite, self.eval_history)):  # eval.jsonl is standard JSON (jq, JavaScript)
                raise ValueError("eval_history holds a number that is not finite")
            self.rng.bit_generator.state = state["rng"]
            torch.set_rng_state(state["torch_rng"])
            self.started_from = payload.get("started_from") if isinstance(payload.get("started_from"), dict) else None
            self.selfplay_seconds = float(state.get("selfplay_seconds", 0.0))
            # Checkpoints written before schedules were recorded decayed from the start.
            self.schedule = dict(state.get("schedule") or {
                "games": 0, "total_games": own.get("total_games", self.config.total_games),
                "lr": own.get("lr", self.config.lr), "epsilon": own.get("epsilon", self.config.epsilon)})
            if set(self.schedule) != {"games", "total_games", "lr", "epsilon"} or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                    for v in self.schedule.values()):
                raise ValueError(f"schedule is {self.schedule!r}")
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise CheckpointError(f"its training state is damaged ({type(exc).__name__}: {exc})") from None
        if self.schedule["total_games"] != self.config.total_games:
            if self.config.total_games < self.games:
                raise TrainError(f"total_games={self.config.total_games} is below the {self.games} games "
                                 f"{path} has played; give more to train further")
            # The values reached under the old length start a new segment from here.
            old_total = self.schedule["total_games"]
            self.schedule = {"games": self.games, "total_games": self.config.total_games,
                             "lr": self.learning_rate(old_total), "epsilon": self.epsilon(old_total)}
            at_end = (math.isclose(self.schedule["lr"], self.config.lr_final, rel_tol=1e-9)
                      and math.isclose(self.schedule["epsilon"], self.config.epsilon_final, rel_tol=1e-9, abs_tol=1e-12))
            if at_end and self.config.total_games > self.games:  # a second extension too
                self.notes.append(f"{self.run_dir} has reached its final learning rate and exploration (lr "
                                  f"{self.schedule['lr']:g}, epsilon {self.schedule['epsilon']:g}); it trains on to "
                                  f"{self.config.total_games:,} games at them, which is not one run of that "
                                  "length (docs/training.md)")

    def _replay_path(self, games: int) -> Path:
        return self.run_dir / f"replay-{games:09d}.npz"

    def _save_replay(self) -> None:
        """The replay buffer, for an exact resume (kept beside the run, never shipped)."""
        r = self.replay
        path = self._replay_path(self.games)
        if self._replay_saved == (self.games, r.count, r.head) and path.is_file():
            return  # unchanged since this process wrote it (saves at the end of a run, after an evaluation)

        def write(fh: Any) -> None:
            np.savez(fh, raw=r.raw[:r.count], targets=r.targets[:r.count], head=r.head, count=r.count)

        write_atomic(path, write)
        self._replay_saved = (self.games, r.count, r.head)

    def _load_replay(self) -> None:
        path = self._replay_path(self.games)
        if not path.is_file():
            if self.resumed_from is not None and self.resumed_from.name != "checkpoint.pt":
                # checkpoint.pt was passed over for an older copy, whose replay went with it: part of that damage.
                self.skipped.append(f"{path.name}: missing, so the replay buffer starts empty")
            else:  # a checkpoint copied without its replay file (checkpoints/default ships none): expected
                self.notes.append(f"{path.name} is not in {self.run_dir}, so the replay buffer starts empty "
                                  "(as with a checkpoint copied on its own, such as checkpoints/default's)")
            return
        try:
            with zipfile.ZipFile(path) as archive:  # np.savez stores; a compressed entry could unpack into gigabytes
                if compressed_entries(archive):
                    raise ValueError("it has compressed entries, which np.savez never writes")
                _check_replay_headers(archive, self.replay.size)  # before numpy allocates what a header claims
            with np.load(path) as data:
                count, head = int(data["count"]), int(data["head"])
                if not 0 <= count <= self.replay.size:
                    raise ValueError(f"{count} samples, not 0 to replay_size {self.replay.size}")
                self.replay.raw[:count] = data["raw"]
                self.replay.targets[:count] = data["targets"]
                self.replay.count, self.replay.head = count, head % self.replay.size
        except (OSError, ValueError, TypeError, KeyError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
            self.replay = _Replay(self.config.replay_size)
            self.skipped.append(f"{path.name}: unreadable ({exc}), so the replay buffer starts empty")

    def save(self) -> Path:
        """Write the replay and checkpoint.pt atomically, and keep the last few numbered copies."""
        self._make_run_dir()
        try:
            self._save_replay()
        except OSError as exc:  # the replay is large; the checkpoint (smaller) may still fit
            replay = self._replay_path(self.games)
            print(f"warning: {replay.name} not written ({exc.strerror or exc})"
                  + ("" if replay.is_file() else "; a resume from this checkpoint starts with an empty replay buffer"),
                  file=sys.stderr, flush=True)
        path = save_checkpoint(
            self.run_dir / "checkpoint.pt", self.network, self.rules,
            config=self.config.to_dict(),
            training={"games": self.games, "samples": self.samples, "updates": self.updates},
            **({"started_from": self.started_from} if self.started_from else {}),
            trainer={
                "optimizer": self.optimizer.state_dict(),
                "games": self.games, "samples": self.samples, "updates": self.updates,
                "tasks_submitted": self.tasks_submitted, "actor_restarts": self.actor_restarts,
                "pending_tasks": sorted([*self._tasks_to_redo, *(t for _, _, t in self._pending.values())]),
                "eval_history": self.eval_history, "rng": self.rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(), "selfplay_seconds": self.selfplay_seconds,
                "schedule": self.schedule,
            },
        )
        if self.config.keep_checkpoints:
            data = path.read_bytes()
            write_atomic(self.run_dir / f"checkpoint-{self.games:09d}.pt", lambda fh: fh.write(data))
        # The newest numbered copy is the latest checkpoint itself; keep that many older ones
        # (none at all with keep_checkpoints 0, also those an earlier session kept).
        numbered = numbered_checkpoints(self.run_dir)
        old = numbered[:-(self.config.keep_checkpoints + 1)] if self.config.keep_checkpoints else numbered
        for p in [*old, *self.run_dir.glob("checkpoint-*.tmp")]:
            p.unlink(missing_ok=True)
        # Only now that checkpoint.pt is written is the previous replay no longer needed.
        for p in self.run_dir.glob("replay-*.npz"):
            if p != self._replay_path(self.games):
                p.unlink(missing_ok=True)
        return path

    # -- schedule ---------------------------------------------------------------------------

    # Learning rate and exploration decay linearly from the schedule's start (games,
    # lr, epsilon) to their final values at total_games. A resume that changes
    # total_games starts a new segment from the values reached, so training further
    # in stages never raises them again.

    def _fraction(self, total_games: int | None = None) -> float:
        start = self.schedule["games"]
        total = self.config.total_games if total_games is None else total_games
        return min(1.0, max(0.0, (self.games - start) / max(total - start, 1)))

    def epsilon(self, total_games: int | None = None) -> float:
        """Exploration now: linear in games played from the segment's start to ``epsilon_final``."""
        start = self.schedule["epsilon"]
        return start + (self.config.epsilon_final - start) * self._fraction(total_games)

    def learning_rate(self, total_games: int | None = None) -> float:
        """Learning rate now: linear in games played from the segment's start to ``lr_final``."""
        start = self.schedule["lr"]
        return start + (self.config.lr_final - start) * self._fraction(total_games)

    # -- learning ---------------------------------------------------------------------------

    def learn(self, raw: np.ndarray, targets: np.ndarray) -> float:
        """Add samples to the replay and take the gradient steps they pay for; returns the mean loss."""
        self.replay.add(raw, targets)
        self.samples += raw.shape[0]
        steps = max(1, round(raw.shape[0] * self.config.updates_per_sample / self.config.batch_size))
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate()
        self.network.train()
        total = entropy = 0.0
        for _ in range(steps):
            x, y = self.replay.sample(self.rng, self.config.batch_size)
            raw = x.astype(np.float32)
            logits = self.network.logits(torch.from_numpy(raw), torch.from_numpy(features(raw)))
            loss = -(torch.from_numpy(y) * torch.log_softmax(logits, dim=-1)).sum(-1).mean()
            if not bool(torch.isfinite(loss)):
                raise self._diverged(f"the loss is {loss.item()}")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
            entropy += float(-(y * np.log(np.where(y > 0, y, 1.0))).sum(-1).mean())
        self.network.eval()
        # Checked before the weights go to the actors or into a checkpoint.
        broken = [name for name, t in self.network.state_dict().items() if not bool(torch.isfinite(t).all())]
        if broken:
            raise self._diverged(f"{', '.join(broken)} hold values that are not finite")
        self.updates += steps
        mean = total / steps
        # The loss less the targets' own entropy (the KL divergence): the part learning can still remove.
        self.last_fit_error = max(mean - entropy / steps, 0.0)
        if mean > DIVERGING_LOSS and not self._warned_loss:
            self._warned_loss = True
            _say(f"warning: the training loss is {mean:.3g} at {self.games:,} games, where an untrained network's "
                 f"is about 1.4: the learning rate ({self.learning_rate():g}) is probably too high")
        return mean

    def _diverged(self, what: str) -> TrainError:
        """The error that stops a run whose network has stopped being numbers (nothing is saved after it)."""
        latest = self.run_dir / "checkpoint.pt"
        if latest.is_file():
            kept = f"{latest} holds the last good state"
        else:  # nothing to resume; its logs (the loss that blew up) are kept for a look
            kept = (f"no checkpoint had been written yet, so there is nothing to resume ({self.run_dir} keeps "
                    "its logs; remove it to use that --out again)")
        return TrainError(f"training diverged after {self.games:,} games at learning rate "
                          f"{self.learning_rate():g}: {what}. Nothing was saved after that; {kept}. "
                          "Start a new run with a smaller lr (and lr_final).")

    # -- evaluation -------------------------------------------------------------------------

    def player(self, ply: int = 0) -> SearchPlayer:
        """The current network as a player (a frozen copy)."""
        copy = TDNetwork(self.config.hidden)
        copy.load_state_dict(self.network.state_dict())
        return SearchPlayer(TorchEvaluator(copy), ply=ply, rules=self.rules, name="learner")

    def evaluate(self, games: int, final: bool = False) -> dict[str, Any]:
        """Paired-dice matches of the current network (0-ply) against each configured bot.

        ``final``: the run's closing evaluation (marked in eval.jsonl, logged under
        ``final/`` in TensorBoard as well as ``eval/``).
        """
        import nardy_env
        from train.evaluate import evaluate

        seed = 10_000 + len(self.eval_history)  # every evaluation its own dice, the same for each opponent
        record: dict[str, Any] = {"games_trained": self.games, "time": round(time.perf_counter() - self.started, 1),
                                  "final": final}  # false too: a script need not ask whether it is there
        # What `nardy eval` needs to play a record's matches again (with the checkpoint of its games).
        record.update(seed=seed, rules=self.rules.to_dict(), nardy_version=nardy_env.__version__)
        me = self.player()
        for opponent in self.config.eval_opponents:
            result = evaluate(me, opponent, games, seed=seed, rules=self.rules, workers=1).summary()
            record[opponent] = {k: result[k] for k in ("win_rate", "win_rate_ci95", "points_per_game",
                                                      "ci95", "mars_rate_a", "mars_rate_b", "games")}
            # Which player the name stood for (a network's file; null for a bot): a retrained
            # opponent under the same name is told apart in the log and by the final evaluation.
            record[opponent]["player_sha256"] = result["player_b_sha256"]
            record[opponent]["player_bot_version"] = result["player_b_bot_version"]  # a bot made stronger
        self.eval_history.append(record)
        self._make_run_dir()
        with open(self.run_dir / "eval.jsonl", "a", encoding="utf-8", newline="\n") as fh:  # \n on Windows too
            fh.write(json.dumps(record) + "\n")
        if self._writer is not None:
            # The closing evaluation continues the eval/ curves too (a run trained further
            # after it has no hole there), and stands alone under final/.
            for tag in ("eval", "final") if final else ("eval",):
                for opponent in self.config.eval_opponents:
                    r = record[opponent]
                    self._writer.add_scalar(f"{tag}/win_rate_vs_{opponent}", r["win_rate"], self.games)
                    self._writer.add_scalar(f"{tag}/points_per_game_vs_{opponent}", r["points_per_game"],
                                            self.games)
                    self._writer.add_scalar(f"{tag}/mars_rate_vs_{opponent}", r["mars_rate_a"], self.games)
                    self._writer.add_scalar(f"{tag}/mars_rate_of_{opponent}", r["mars_rate_b"], self.games)
            self._writer.flush()
        return record

    def next_evaluation(self) -> int | None:
        """Games at which the next periodic evaluation is due: the first multiple of
        ``eval_every_games`` after the last evaluation made (a final one included), so that one
        which failed is made at the next step; None without periodic evaluations."""
        every = self.config.eval_every_games
        if not every:
            return None
        made = max((r["games_trained"] for r in self.eval_history), default=0)
        return (made // every + 1) * every

    @property
    def finished(self) -> bool:
        """All ``total_games`` played."""
        return self.games >= self.config.total_games

    @property
    def final_evaluation(self) -> dict[str, Any] | None:
        """The closing evaluation, once made."""
        last = self.eval_history[-1] if self.eval_history else None
        if not last or not last.get("final") or last["games_trained"] != self.games:
            return None
        # eval_opponents changed on resume (or an opponent's file did): the closing evaluation is
        # made again against them.
        if not all(opponent in last for opponent in self.config.eval_opponents):
            return None
        from train.evaluate import same_bot_version

        now = {opponent: _opponent_identity(opponent) for opponent in self.config.eval_opponents}
        # A record from before player_sha256 was recorded stands as it is; one from before
        # player_bot_version met version 1 of a bot (train.evaluate.BOT_VERSION_BEFORE_RECORDED).
        same = all(last[opponent].get("player_sha256", sha) == sha
                   and same_bot_version(last[opponent].get("player_bot_version"), version)
                   for opponent, (sha, version) in now.items())
        return last if same else None

    def finish(self) -> dict[str, Any] | None:
        """The final evaluation (``final_eval_games``), saved with the checkpoint; None if none is due."""
        if not self.finished or not self.config.final_eval_games:
            return None
        made = self.final_evaluation
        if made is None:
            if self._writer is None:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(self._tb_dir())
            # Returned as made: an opponent's file rewritten meanwhile (another run training it)
            # is for the next resume to notice, not a reason to report no evaluation now.
            made = self.evaluate(self.config.final_eval_games, final=True)
            self.save()
        return made

    # -- actors -----------------------------------------------------------------------------

    def _new_actor(self) -> Any:
        return _remote_worker().remote(self.config.hidden, self.config.rules, threads=1)  # one CPU each

    def _submit(self, slot: int, weights_ref: Any) -> None:
        """Give actor ``slot`` a task: one to play again (left in flight by a checkpoint or a dead
        actor), else a new one."""
        task = self._tasks_to_redo[0] if self._tasks_to_redo else [self.tasks_submitted, self.epsilon()]
        index, epsilon = task
        ref = self._actors[slot].play.remote(weights_ref, self.config.games_per_task,
                                             [self.config.seed, 1, index], epsilon, self.config.lam)
        # Taken off the list only once submitted: a failure above leaves it to play again.
        if self._tasks_to_redo:
            self._tasks_to_redo.pop(0)
        else:
            self.tasks_submitted += 1
        self._pending[ref] = (slot, weights_ref, task)

    def _start_actors(self) -> int:
        import ray

        resources = start_ray(self.address)
        cpus = int(resources.get("CPU", 0))
        n = self.config.actors or max(1, cpus)
        if n > cpus:
            print(f"warning: {n} actor{'' if n == 1 else 's'} on a Ray cluster of {cpus} CPU{'' if cpus == 1 else 's'}: "
                  f"each actor needs one, so only {cpus} play at a time and the rest wait", file=sys.stderr, flush=True)
        self._actors = [self._new_actor() for _ in range(n)]
        weights_ref = ray.put(_weights(self.network))
        for slot in range(n):
            self._submit(slot, weights_ref)
        return n

    def kill_actor(self, slot: int) -> None:
        """Kill one actor (used to test that training survives it)."""
        import ray

        ray.kill(self._actors[slot], no_restart=True)

    # -- the loop ---------------------------------------------------------------------------

    def train(self, max_seconds: float | None = None) -> dict[str, Any]:
        """Run until ``total_games`` (or ``max_seconds``); returns the last statistics."""
        import ray
        from torch.utils.tensorboard import SummaryWriter

        c = self.config
        self._take_one_thread()  # again after a close()
        # The clock starts here: Ray's start and the actors' are part of the time given.
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        # Whole tasks until total_games is reached: past it by more than a tenth is most likely a slip
        # (a task larger than the run, or a resume's few more games than a task).
        end = self.games + -(-(c.total_games - self.games) // c.games_per_task) * c.games_per_task
        if c.total_games > self.games and end - c.total_games > c.total_games / 10:
            print(f"warning: tasks are played whole (games_per_task={c.games_per_task:,}), so the run ends at "
                  f"{end:,} games, {end - c.total_games:,} past total_games={c.total_games:,}", file=sys.stderr,
                  flush=True)
        n_actors = len(self._actors) if self._actors else self._start_actors()  # Ray first: an address
        try:  # that fails leaves no half-made run folder behind
            self._make_run_dir()
        except TrainError:
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
            self._actors, self._pending = [], {}
            raise
        # purge_step drops what a killed session logged after its last checkpoint; the
        # evaluation at the checkpoint's own step was made before it was saved, so it stays.
        if self._writer is not None:  # a library caller's earlier train(): one writer (and thread) at a time
            self._writer.close()
        self._writer = SummaryWriter(self._tb_dir(), purge_step=self.games + 1 if self.games else None)
        # The settings in TensorBoard's Text tab, each session's (a resume's --set changes show there):
        # runs compared side by side say what they were.
        self._writer.add_text("config", "```json\n" + self.config.to_json() + "\n```", self.games)
        bar = None
        if self.progress:
            from .progress import progress_bar

            # One rate on the bar: the postfix's games/s of the last log window (tqdm's own
            # average would count evaluation pauses too). In a log, a line every 30 s instead.
            bar = progress_bar(c.total_games, f"train {c.name}", unit="game", initial=self.games,
                               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                          "[{elapsed}<{remaining}{postfix}]")
        next_eval = self.next_evaluation()
        next_ckpt = (self.games // c.checkpoint_every_games + 1) * c.checkpoint_every_games
        window: dict[str, Any] = {"games": 0, "plies": 0, "mars": 0, "loss": 0.0, "fit_error": 0.0, "batches": 0,
                                  "cal": np.zeros((3, 10)), "ecal": np.zeros((3, 10))}
        last_log = time.perf_counter()
        session_start, session_games, session_updates, eval_seconds = last_log, self.games, self.updates, 0.0
        rates, previous_rates = RateWindow(), None
        started_slots: set[int] = set()  # actors that have returned a task this session
        since_picture = np.zeros((2, 3, 10))  # calibration counts since the last reliability picture
        self._picture_from = self.games
        stats: dict[str, Any] = {}
        updating = False
        deaths = [0] * n_actors  # per actor slot, since its last finished task
        failed = False
        # Ctrl-C or SIGTERM: finish the step in hand, save, stop. Ray's blocking
        # wait would not let a KeyboardInterrupt through, so poll a flag instead.
        self.interrupted = False
        self.stop_signal = None

        def request_stop(signum: int, frame: Any) -> None:
            self.interrupted = True
            self.stop_signal = signum

        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)} \
            if threading.current_thread() is threading.main_thread() else {}
        try:
            while self.games < c.total_games and (deadline is None or time.perf_counter() < deadline):
                if self.interrupted:
                    if bar is not None:
                        stopped = "terminated" if self.stop_signal == signal.SIGTERM else "interrupted"
                        bar.write(f"{stopped}: saving the checkpoint")
                    break
                done, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
                if not done:
                    continue
                ref = done[0]
                slot, weights_ref, task = self._pending.pop(ref)
                try:
                    out = ray.get(ref)
                except BaseException as exc:
                    # Whatever became of it, the task is played again: by a replacement actor
                    # at once, or after a resume (from the checkpoint saved below).
                    self._tasks_to_redo = sorted([*self._tasks_to_redo, task])
                    if not _actor_lost(exc):
                        raise _task_failed(exc, self.games) from exc
                    deaths[slot] += 1
                    if min(deaths) >= 3:  # every actor fails, again and again: replacing them is futile
                        raise TrainError(_actors_keep_dying(n_actors, exc)) from None
                    self.actor_restarts += 1
                    message = f"actor {slot} died ({type(exc).__name__}: {_cause(exc)}); starting a replacement"
                    if bar is not None:
                        bar.write(message)
                    else:
                        print(message, file=sys.stderr, flush=True)
                    self._actors[slot] = self._new_actor()
                    started_slots.discard(slot)  # the replacement starts up too
                    self._submit(slot, weights_ref)
                    continue
                deaths[slot] = 0
                self._unstarted = False
                t_learn = time.perf_counter()
                rates.task_done(t_learn, out["games"], self.updates, first_of_actor=slot not in started_slots)
                started_slots.add(slot)
                updating = True  # until the counters agree with the network again
                loss = self.learn(out["raw"], out["targets"])
                rates.learn_s += time.perf_counter() - t_learn
                self._submit(slot, ray.put(_weights(self.network)))
                self.games += out["games"]
                self.selfplay_seconds += out["seconds"]
                updating = False
                for key in ("games", "plies", "mars"):
                    window[key] += out[key]
                window["loss"] += loss
                window["fit_error"] += self.last_fit_error
                window["batches"] += 1
                window["cal"] += out["calibration"]
                window["ecal"] += out["equity_calibration"]
                since_picture += (out["calibration"], out["equity_calibration"])
                if bar is not None:
                    if self.games > bar.total:  # the last tasks pass total_games: keep the bar at 100%
                        bar.total = self.games
                    bar.update(out["games"])
                now = time.perf_counter()
                # Not before as many tasks as actors have come back on the window's clock (each
                # actor's first lies partly in its start-up, and one task says little about several).
                if now - last_log >= c.log_every_seconds and rates.tasks >= n_actors:
                    stats = self._log(window, rates.measure(now, self.updates, session_start, eval_seconds, n_actors),
                                      n_actors)
                    last_log = now
                    if bar is not None:
                        bar.set_postfix(self._postfix(stats))
                    window.update(games=0, plies=0, mars=0, loss=0.0, fit_error=0.0, batches=0,
                                  cal=np.zeros((3, 10)), ecal=np.zeros((3, 10)))
                    rates, previous_rates = RateWindow(now, self.updates), rates
                # Evaluate before saving, so a checkpoint holds every evaluation made so far;
                # at the end the closing evaluation (finish) stands for the periodic one.
                closing = self.finished and c.final_eval_games > 0
                if next_eval is not None and self.games >= next_eval and not closing:
                    t_eval = time.perf_counter()
                    record = self.evaluate(c.eval_games)
                    self._reliability(since_picture)
                    eval_seconds += time.perf_counter() - t_eval
                    rates.eval_s += time.perf_counter() - t_eval
                    next_eval = self.next_evaluation()
                    if bar is not None:
                        bar.set_postfix(self._postfix(stats, record))
                if self.games >= next_ckpt:
                    updating = True
                    self.save()
                    updating = False
                    next_ckpt += c.checkpoint_every_games
            if window["batches"]:
                now = time.perf_counter()
                # A last window much shorter than the others (the loop ended just after a log)
                # would give a rate from a task or two: measure it together with the one before.
                if previous_rates is not None and rates.seconds(now) < c.log_every_seconds / 2:
                    rates = previous_rates.merged(rates)
                stats = self._log(window, rates.measure(now, self.updates, session_start, eval_seconds, n_actors),
                                  n_actors)
                if bar is not None:  # the bar's closing line: this last window's rate, not the one before
                    bar.set_postfix(self._postfix(stats))
            self._reliability(since_picture)
            updating = True
            self.save()
        except Exception:
            failed = True
            # An error between steps (an evaluation, Ray, an actor's task) leaves a consistent
            # state: keep what was learned since the last checkpoint before passing it on.
            if not updating and not self._unstarted:
                print(f"error after {self.games} games: saving the checkpoint before stopping",
                      file=sys.stderr, flush=True)
                try:
                    self.save()
                except Exception as exc:
                    print(f"the checkpoint could not be saved either ({type(exc).__name__}: {_cause(exc)}); "
                          f"{self.run_dir / 'checkpoint.pt'} holds the last one written", file=sys.stderr, flush=True)
            raise
        finally:
            for sig, handler in previous.items():
                if handler is not None:  # None: set from C, which Python cannot put back
                    signal.signal(sig, handler)
            if bar is not None:
                bar.close()
            # Killing the actors below drops their tasks: they are played again by a later train().
            self._tasks_to_redo = sorted([*self._tasks_to_redo, *(t for _, _, t in self._pending.values())])
            self._pending.clear()
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
            self._actors = []
            self._writer.flush()
            if failed and self._unstarted:
                self._remove_unstarted_run()
        stats["games"] = self.games
        stats["actor_restarts"] = self.actor_restarts
        # Whole session, from the first task to the last, evaluations excluded.
        busy = max(time.perf_counter() - session_start - eval_seconds, 1e-9)
        stats["session_games_per_s"] = (self.games - session_games) / busy
        stats["session_updates_per_s"] = (self.updates - session_updates) / busy
        return stats

    def _reliability(self, since: np.ndarray) -> None:
        """Log the reliability picture of the calibration counts ``since`` (then cleared), if any."""
        if self._writer is None or not since[0][0].sum():
            return
        from train.plots import reliability_picture

        picture = reliability_picture(since[0], since[1], f"Self-play calibration, games {self._picture_from:,} "
                                                          f"to {self.games:,}")
        self._picture_from = self.games
        self._writer.add_image("calibration/reliability", np.asarray(picture), self.games, dataformats="HWC")
        since[:] = 0

    def _postfix(self, stats: dict[str, Any], record: dict[str, Any] | None = None) -> dict[str, str]:
        post = {}
        if "games_per_s" in stats:
            post["games/s"] = f"{stats['games_per_s']:.0f}"
        record = record or (self.eval_history[-1] if self.eval_history else None)
        if record:
            # Which evaluation the win rates are from: on a resume, one made before this session.
            if isinstance(record.get("games_trained"), int) and any(o in record for o in self.config.eval_opponents):
                post["eval at"] = f"{record['games_trained']} games"
            for opp in self.config.eval_opponents:
                if opp in record:  # an opponent added on resume has no result yet
                    post[opp] = f"{record[opp]['win_rate']:.0%}"
        return post

    def _log(self, window: dict[str, Any], rates: dict[str, float], n_actors: int) -> dict[str, Any]:
        games = max(window["games"], 1)
        cal = window["cal"]
        nonzero = cal[0] > 0
        ece = float(np.abs(cal[1][nonzero] - cal[2][nonzero]).sum() / max(cal[0].sum(), 1))
        ecal = window["ecal"]
        enonzero = ecal[0] > 0
        equity_error = float(np.abs(ecal[1][enonzero] - ecal[2][enonzero]).sum() / max(ecal[0].sum(), 1))
        stats = {
            **rates,
            "mean_game_plies": window["plies"] / games,
            "mars_rate": window["mars"] / games,
            "loss": window["loss"] / max(window["batches"], 1),
            "fit_error": window["fit_error"] / max(window["batches"], 1),
            "calibration_error": ece,
            "equity_calibration_error": equity_error,
            "epsilon": self.epsilon(),
            # The rate the latest gradient steps used (set before each task's games are counted).
            "learning_rate": float(self.optimizer.param_groups[0]["lr"]),
            "actors": n_actors,
            "actor_restarts": self.actor_restarts,
        }
        w = self._writer
        if w is not None:
            w.add_scalar("train/loss", stats["loss"], self.games)
            w.add_scalar("train/fit_error", stats["fit_error"], self.games)
            w.add_scalar("selfplay/games", self.games, self.games)
            w.add_scalar("selfplay/games_per_s", stats["games_per_s"], self.games)
            w.add_scalar("selfplay/mean_game_plies", stats["mean_game_plies"], self.games)
            w.add_scalar("selfplay/mars_rate", stats["mars_rate"], self.games)
            w.add_scalar("learner/updates", self.updates, self.games)
            w.add_scalar("learner/updates_per_s", stats["updates_per_s"], self.games)
            w.add_scalar("learner/busy_fraction", stats["learner_busy"], self.games)
            w.add_scalar("learner/learning_rate", stats["learning_rate"], self.games)
            w.add_scalar("selfplay/epsilon", stats["epsilon"], self.games)
            w.add_scalar("calibration/expected_error", ece, self.games)
            # Per band of predictions (named by its range): the outcome's mean, and in the
            # reliability picture (at each evaluation) the predictions' mean and the count too.
            for b in np.flatnonzero(nonzero):
                w.add_scalar(f"calibration/actual_win_rate_pred_{b / 10:.1f}-{(b + 1) / 10:.1f}",
                             cal[2][b] / cal[0][b], self.games)
            # Equity: mean points scored after afterstates valued in each band of [-2, 2].
            w.add_scalar("calibration/equity_expected_error", equity_error, self.games)
            for b in np.flatnonzero(enonzero):
                w.add_scalar(f"calibration/actual_points_pred_{-2 + 0.4 * b:+.1f}_{-1.6 + 0.4 * b:+.1f}",
                             ecal[2][b] / ecal[0][b], self.games)
            w.add_scalar("selfplay/actor_restarts", self.actor_restarts, self.games)
        return stats


class RateWindow:
    """Self-play and learner rates of one log window.

    Its clock runs from the window's start, or for a session's first window from the
    session's first finished task (actors start up before it: importing torch, compiling),
    and stops during evaluations (``eval_s``), so that the rates are those of training.
    """

    def __init__(self, start: float | None = None, updates: int = 0) -> None:
        self.first = start is None  # the session's first window: its clock starts at the first task back
        self.start = start
        self.games = 0  # finished on this window's clock
        self.updates = updates  # the learner's count when the clock started
        self.learn_s = 0.0
        self.eval_s = 0.0
        self.untimed = 0  # games of tasks begun before the clock ran (each actor's first)
        self.tasks = 0  # tasks timed

    def task_done(self, now: float, games: int, updates: int, first_of_actor: bool = False) -> None:
        """A task of ``games`` games came back at ``now``, before the learner's ``updates``th update.

        ``first_of_actor``: the first task of its actor this session, begun during start-up,
        so its games are not counted against the clock (the session's first also starts it)."""
        if self.start is None:
            self.start, self.updates = now, updates
        if first_of_actor:
            self.untimed += games
        else:
            self.games += games
            self.tasks += 1

    def seconds(self, now: float) -> float:
        return 0.0 if self.start is None else now - self.start - self.eval_s

    def merged(self, later: RateWindow) -> RateWindow:
        """This window and the one after it as one."""
        both = RateWindow(self.start, self.updates)
        both.first = self.first
        both.games = self.games + later.games
        both.learn_s, both.eval_s = self.learn_s + later.learn_s, self.eval_s + later.eval_s
        both.untimed = self.untimed + later.untimed
        both.tasks = self.tasks + later.tasks
        return both

    def measure(self, now: float, updates: int, session_start: float, session_eval_s: float,
                actors: int = 1) -> dict[str, float]:
        """games/s, updates/s and the learner's busy fraction.

        A session's first window that ends with fewer timed tasks than ``actors`` (a short
        session) is measured over the whole session, start-up and all: its few timed games
        against the time every actor was busy would say too little. A later window with no
        timed task (only a replacement actor's first) counts that task's games on its clock."""
        if self.first and self.tasks < actors:
            elapsed = max(now - session_start - session_eval_s, 1e-9)
            games = self.games + self.untimed
        else:
            elapsed = max(self.seconds(now), 1e-9)
            games = self.games or self.untimed
        return {"games_per_s": games / elapsed, "updates_per_s": (updates - self.updates) / elapsed,
                "learner_busy": self.learn_s / elapsed}


def _check_replay_headers(archive: zipfile.ZipFile, size: int) -> None:
    """Raise ValueError unless a replay file's arrays are what nardy writes: ``raw`` uint8 [n, 50]
    and ``targets`` float32 [n, 4] with n at most the replay size (read from their .npy headers)."""
    want = {"raw.npy": (np.dtype(np.uint8), 50), "targets.npy": (np.dtype(np.float32), 4)}
    for name, (dtype, width) in want.items():
        shape, found = _npy_header(archive, name)
        if found != dtype or len(shape) != 2 or shape[1] != width or shape[0] > size:
            raise ValueError(f"{name} is {found} {list(shape)}, not {dtype} [n <= {size}, {width}]")
    for name in ("count.npy", "head.npy"):  # one whole number each
        shape, found = _npy_header(archive, name)
        if shape != () or found.kind not in "iu":
            raise ValueError(f"{name} is {found} {list(shape)}, not one integer")


def _npy_header(archive: zipfile.ZipFile, name: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of an array in an .npz, read from its header alone."""
    with archive.open(name) as fh:
        version = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _, found = read_header(fh)
    return shape, found


def _same_setting(key: str, a: Any, b: Any) -> bool:
    """Two values of a config key that mean the same (rules by meaning: ``{}`` is the default
    rules spelt out, and the head-exception faces are a set)."""
    if key == "rules" and isinstance(a, dict) and isinstance(b, dict):
        try:
            return Rules.from_dict(a) == Rules.from_dict(b)
        except (RulesError, TypeError):
            return a == b
    return bool(a == b)


def default_run_dir(config: TrainConfig) -> Path:
    """runs/<name>, or runs/<name>-2, -3... if taken (any non-empty folder is taken)."""
    def free(path: Path) -> bool:
        return not path.exists() or (path.is_dir() and not any(p.name != runlock.LOCK_NAME for p in path.iterdir()))

    base = Path("runs") / config.name
    if free(base):
        return base
    for k in range(2, 10_000):
        cand = Path("runs") / f"{config.name}-{k}"
        if free(cand):
            return cand
    raise TrainError("no free run directory under runs/")


_NUMBERED = re.compile(r"checkpoint-(\d+)\.pt")


def numbered_checkpoints(run_dir: Path) -> list[Path]:
    """The run's numbered copies ``checkpoint-<games>.pt``, fewest games first.

    Only names the trainer writes count: a user's ``checkpoint-best.pt`` is
    neither resumed from nor deleted by the retention setting.
    """
    found = [(int(m.group(1)), p) for p in run_dir.glob("checkpoint-*.pt")
             if (m := _NUMBERED.fullmatch(p.name)) and p.is_file()]
    return [p for _, p in sorted(found)]


def config_for_resume(run_dir: str | Path) -> TrainConfig:
    """The resolved configuration a run was started with."""
    run_dir = Path(run_dir)
    path = run_dir / "config.json"
    if not run_dir.is_dir():
        raise TrainError(f"cannot resume {run_dir}: no such folder" if not run_dir.exists()
                         else f"cannot resume {run_dir}: it is a file; give the run's folder")
    if not path.is_file() or path.stat().st_size == 0:
        # Lost (deleted, or cut short by a full disk): every checkpoint holds the settings too.
        lost = "empty" if path.is_file() else "missing"
        refused: ConfigError | None = None
        for checkpoint in [run_dir / "checkpoint.pt", *reversed(numbered_checkpoints(run_dir))]:
            try:
                settings = load_checkpoint(checkpoint)[1].get("config")
                if not isinstance(settings, dict):
                    continue
                config = TrainConfig.from_dict(settings, where=str(checkpoint))
            except CheckpointError:
                continue
            except ConfigError as exc:  # readable, but its settings are not accepted: say why at the end
                refused = refused or exc
                continue
            save_config(run_dir, config)
            print(f"note: {path} was {lost}; written again from the settings "
                  f"in {checkpoint.name}", file=sys.stderr, flush=True)
            return config
        if refused is not None:
            raise TrainError(f"cannot resume {run_dir}: no config.json there, and the settings in its "
                             f"checkpoint are refused: {refused}")
        raise TrainError(f"cannot resume {run_dir}: no config.json there and no readable checkpoint "
                         "(not a run folder?)")
    try:
        return TrainConfig.from_dict(json.loads(path.read_text(encoding="utf-8")), where=str(path))
    except UnicodeDecodeError as exc:
        raise TrainError(f"cannot resume {run_dir}: {path} is not UTF-8 text (at byte offset {exc.start}); "
                         "nardy writes it as UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise TrainError(f"cannot resume {run_dir}: {path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise TrainError(f"cannot resume {run_dir}: {path} is not a run's config: its JSON is nested too "
                         "deeply to read") from None
    except ConfigError as exc:
        raise TrainError(f"cannot resume {run_dir}: {exc} (a value this version refuses is changed in "
                         "that file, not with --set)") from None


NEW_RUN_KEYS = ("lr", "lr_final", "epsilon", "epsilon_final", "lam", "batch_size", "replay_size",
                "updates_per_sample", "seed", "rules")
"""Settings a new run started from a run's weights (``init_from``) may set anew."""


def resume_with_changes(config: TrainConfig, changes: dict[str, Any], run_dir: str | Path | None = None) -> TrainConfig:
    """The run's configuration with the ``--set`` changes a resume may make.

    Settings outside ``RESUMABLE_KEYS`` may be repeated with their current value
    but not changed. The caller writes the result to config.json once the
    resume has started (``save_config``), so a refused resume changes nothing.
    """
    from train.config import check_run_name, number_from_text, unknown_keys

    current = config.to_dict()
    numeric = {f.name for f in dataclasses.fields(TrainConfig) if f.type in ("int", "float")}
    changes = {k: number_from_text(v) if k in numeric else v for k, v in changes.items()}  # lr=1e-3: the number
    unknown = sorted(k for k in changes if k not in current)
    if unknown:
        raise TrainError(f"{unknown_keys(unknown, set(current), rules_hint=False)}; --resume can change {', '.join(RESUMABLE_KEYS)}")
    refused = sorted(k for k, v in changes.items() if k not in RESUMABLE_KEYS
                     and (k not in current or not _same_setting(k, _plain(v), current[k])))
    if refused:
        start = ("start a new run for those" if not run_dir or not set(refused) <= set(NEW_RUN_KEYS) else
                 f"start a new run for those; --set {shlex.quote(f'init_from={run_dir}')} starts one from this "
                 "run's weights")
        raise TrainError(f"--resume can change only {', '.join(RESUMABLE_KEYS)}; not {', '.join(refused)} ({start})")
    try:
        if isinstance(changes.get("name"), str):  # a new name must do for runs/NAME, as a new run's must
            check_run_name(changes["name"], "--set")
        return TrainConfig.from_dict({**current, **changes}, where="--set")
    except ConfigError as exc:
        raise TrainError(str(exc)) from None


def _actor_lost(exc: BaseException) -> bool:
    """An actor's task that failed because the actor, its worker or its node went away (replaced
    and played again), not because of an error in the task itself."""
    import ray.exceptions as rx

    return isinstance(exc, rx.RayActorError | rx.WorkerCrashedError | rx.ObjectLostError | rx.NodeDiedError)


def _unreadable_name(path: Path) -> Path:
    """A free name to keep an unreadable file under: NAME.unreadable, else NAME.unreadable-2, -3...
    (one set aside by an earlier resume stays too)."""
    aside, n = path.with_name(f"{path.name}.unreadable"), 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.unreadable-{n}")
    return aside


def _not_finite(value: Any, key: str = "") -> bool:
    """Whether a record holds NaN, or an infinity outside an interval (``...ci95``: one pair's
    interval reached infinity on 2026-11-29, a record of its time to keep)."""
    if isinstance(value, float):
        return math.isnan(value) or (math.isinf(value) and not key.endswith("ci95"))
    if isinstance(value, dict):
        return any(_not_finite(v, str(k)) for k, v in value.items())
    if isinstance(value, list):
        return any(_not_finite(v, key) for v in value)
    return False


def _optimizer_damage(optimizer: Any) -> str:
    """What is wrong with an optimizer's loaded state ('' if nothing): a tensor of another shape
    than its parameter's, or a value that is not finite (a first update would fail on the one, or
    turn the network into NaN and be taken for divergence on the other)."""
    for number, group in enumerate(optimizer.param_groups):
        for key, value in group.items():
            if isinstance(value, float) and not math.isfinite(value):
                return f"param_groups[{number}] has {key}={value}"
        for p in group["params"]:
            for key, value in optimizer.state.get(p, {}).items():
                if not torch.is_tensor(value):
                    continue
                if value.dim() and value.shape != p.shape:
                    return f"{key} has shape {list(value.shape)}, its parameter {list(p.shape)}"
                if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                    return f"{key} holds values that are not finite"
    return ""


def _is_json(line: str) -> bool:
    """Whether a line of eval.jsonl is a whole record (not blank, not cut short by a kill)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # blank lines too
        return False
    return isinstance(record, dict)


def _task_failed(exc: BaseException, games: int) -> TrainError:
    """One line for a self-play task that raised (a bug or bad numbers in it, not a lost actor)."""
    return TrainError(f"a self-play task failed after {games:,} games: {_cause(exc)}")


def _say(message: str) -> None:
    """A line on stderr that leaves a progress bar intact."""
    from tqdm import tqdm

    tqdm.write(message, file=sys.stderr)


def _cause(exc: BaseException) -> str:
    """The line of a Ray error that names its cause (``ModuleNotFoundError: ...``), else its last line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in reversed(lines) if "Error" in line.split(":")[0]), lines[-1] if lines else "")


def _actors_keep_dying(actors: int, exc: BaseException) -> str:
    """Why training stops when no actor finishes a task: Ray's cause, and a hint for the common one."""
    cause = _cause(exc)
    each = "the actor" if actors == 1 else f"each of the {actors} actors"
    message = (f"self-play actors keep dying before they finish a task ({each} 3 times in a row); "
               f"the last: {cause}")
    if "No module named 'train" in cause or "No module named 'agents" in cause:
        message += (" (Ray's workers import from the working directory: a train.py, train/, agents.py or "
                    "agents/ there hides nardy's packages; start training from another directory)")
    return message


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def save_config(run_dir: str | Path, config: TrainConfig) -> None:
    """Write a run's config.json atomically."""
    config.save(Path(run_dir) / "config.json")


def summary_line(record: dict[str, Any], opponents: tuple[str, ...]) -> str:
    parts = []
    for opp in opponents:
        r = record[opp]
        parts.append(f"vs {opp}: win {r['win_rate']:.1%} [{r['win_rate_ci95'][0]:.1%}, {r['win_rate_ci95'][1]:.1%}], "
                     f"{r['points_per_game']:+.3f} pts/game")
    return "; ".join(parts)


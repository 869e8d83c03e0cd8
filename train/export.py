"""``nardy export``: a checkpoint -> ``policy.onnx`` + ``policy.json`` (FORMATS.md), verified.

The graph takes the raw 50-number layout and computes the features, the
network and the equity itself, so a frontend needs only the rules (to list
the legal results of a roll) and the folder. Before anything is written the
export is checked: onnxruntime and torch must agree to ``tolerance`` on a
batch of real positions (afterstates from random games), at several batch
sizes; otherwise the export fails, showing the difference, and leaves the
output folder untouched.

torch and onnx are imported inside the functions that need them: importing
this module (the CLI does, to build its parser) must stay torch-free.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
import threading
import warnings
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from agents.common import unsound_row
from agents.files import creation_refused, write_atomic
from agents.onnx_policy import (
    EQUITY_WEIGHTS,
    INPUT_NAME,
    JSON_FILE,
    METADATA_KEYS,
    ONNX_FILE,
    OUTPUT_NAMES,
    POLICY_FORMAT,
    RULES_METADATA,
    OnnxEvaluator,
    PolicyError,
    contract_input,
    contract_outputs,
    import_onnxruntime,
    load_policy,
)
from agents.registry import SHIPPED_PLAYER
from nardy_env import NardyWarning, Rules, flip, format_npn, initial_states, legal_afterstates
from nardy_env._runtime import caught_warnings, not_a_file, printable
from nardy_env.core import NUM_CHECKERS, OFF_MOVER, is_whole
from nardy_env.encoding import FEATURES_VERSION, raw_positions
from nardy_env.notation import Color
from nardy_env.players import search_depth
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules
from train.export_options import DEFAULT_OPSET, EXPORTERS, add_export_arguments

__all__ = ["ExportError", "DEFAULT_OPSET", "EXPORTERS", "export_policy", "real_positions",
           "add_export_arguments", "cmd_export"]

_VERIFY_BATCHES = (1, 7)  # extra batch sizes run through the graph: the batch axis must be dynamic


class ExportError(RuntimeError):
    """An export that could not be made or did not pass its verification."""


def real_positions(count: int, seed: int = 0, rules: RulesLike | None = DEFAULT_RULES, games: int = 64) -> np.ndarray:
    """``count`` afterstates (int8 ``[count, 26]``, mover's view) sampled from random games.

    Every candidate afterstate of every turn of ``games`` random games, from
    the opening to bearing off, is a candidate; ``count`` of them are drawn
    without replacement (all of them if there are fewer).
    """
    rules = as_rules(rules)
    rng = np.random.default_rng(seed)
    states = initial_states(games)
    active = np.arange(games)
    seen = []
    while active.size:
        dice = rng.integers(1, 7, size=(active.size, 2))
        found = legal_afterstates(states[active], dice, rules, validate=False, threads=1)
        seen.append(found.states)
        counts = found.counts()
        after = found.states[found.offsets[:-1] + (rng.random(counts.size) * counts).astype(np.int64)]
        over = after[:, OFF_MOVER] == NUM_CHECKERS
        states[active] = flip(after)
        active = active[~over]
    pool = np.concatenate(seen)
    if count >= pool.shape[0]:
        return pool
    return pool[np.sort(rng.choice(pool.shape[0], size=count, replace=False))]


def _json_safe(value: Any) -> Any:
    """A checkpoint's config as plain JSON values (dataclass, ``to_dict`` or dict)."""
    if value is None:
        return None
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    return json.loads(json.dumps(value, default=str))


def _provenance(payload: dict[str, Any], path: Path, sha256: str) -> dict[str, Any]:
    """policy.json's ``training``: games played, the run's config, the source checkpoint and its hash,
    and for a run started from another's weights, that checkpoint (``started_from``)."""
    raw_training = payload.get("training")
    training: dict[str, Any] = raw_training if isinstance(raw_training, dict) else {}
    games = training.get("games", payload.get("games", 0))
    try:
        games = int(games or 0)
    except (TypeError, ValueError):
        games = 0
    config = payload.get("config", training.get("config"))
    started = payload.get("started_from")  # a run started from another's weights (init_from)
    # Its games and hash, not its path: the resolved path of the machine it was trained on says
    # nothing to a frontend (the config's init_from keeps the name it was given).
    return {"games": games, "config": _json_safe(config), "checkpoint": str(path),
            "checkpoint_sha256": sha256,
            **({"started_from": {k: _json_safe(started.get(k)) for k in ("games", "sha256")}}
               if isinstance(started, dict) else {})}


def _policy_module(network):
    """The exported function: raw positions -> (outcomes, equity)."""
    import torch

    class Policy(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            outcomes = self.net(positions)
            return outcomes, self.net.equity(outcomes)

    return Policy(network).eval()


class _QuietIn:
    """Standard output that drops what one thread writes and passes on the others' (the exporter
    prints from the thread that calls it; a program's other threads keep their output). Once
    ``done``, it passes everything on: a thread that redirected standard output during the export
    may put this object back afterwards."""

    def __init__(self, stream: Any, thread: int) -> None:
        self._stream = stream
        self._thread: int | None = thread

    def done(self) -> None:
        self._thread = None

    def _dropped(self) -> bool:
        return threading.get_ident() == self._thread or self._stream is None

    def write(self, text: str) -> int:
        return len(text) if self._dropped() else self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        if not self._dropped():
            self._stream.writelines(lines)

    def flush(self) -> None:
        if not self._dropped():
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_stream", "_thread"):  # copy/pickle probe before __init__
            raise AttributeError(name)
        return getattr(self._stream, name)


_EXPORTERS = r"(torch|onnx|onnxscript|onnx_ir|onnxruntime|copyreg|agents\.network|train\.export)(\.|$)"
"""The modules whose warnings an export silences: the exporters' own, and those they attribute
(with their stacklevel) to the line that called them: nardy's, and the pickling that torch's
export does through ``copyreg``."""


@contextlib.contextmanager
def _quiet_torch_onnx():
    """Silence the exporter's chatter (deprecations, missing torchvision ops, the version
    converter's tracebacks for an opset it cannot reach, which export_policy reports itself)
    for the duration: the exporters' warnings and loggers, and what the calling thread prints."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "onnxscript")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with caught_warnings():  # one thread at a time (nardy_env._runtime)
            warnings.filterwarnings("ignore", module=_EXPORTERS)
            quiet = _QuietIn(sys.stdout, threading.get_ident())
            try:
                with contextlib.redirect_stdout(quiet):
                    yield
            finally:
                quiet.done()
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt an error was raised while handling (its ``__context__`` chain), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__context__
    return None


def _to_onnx(network, opset: int, exporter: str):
    """The ONNX ModelProto of the policy, in memory, one file's worth (no external data)."""
    import onnx
    import torch

    module = _policy_module(network)
    sample = torch.zeros(3, 50, dtype=torch.float32)  # the contract's type, whatever torch's default
    try:
        with _quiet_torch_onnx(), torch.inference_mode(False), torch.no_grad():
            if exporter == "dynamo":
                program = torch.onnx.export(
                    module, (sample,), dynamo=True, external_data=False, opset_version=opset,
                    dynamic_shapes=({0: torch.export.Dim("N")},), verbose=False, optimize=True,
                    input_names=[INPUT_NAME], output_names=list(OUTPUT_NAMES))
                if program is None:
                    raise ExportError("torch.onnx.export returned no program")
                # optimize=True has optimized the graph: another program.optimize() made the same bytes.
                model = program.model_proto
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    file = Path(tmp) / ONNX_FILE
                    torch.onnx.export(
                        module, (sample,), str(file), dynamo=False, opset_version=opset,
                        dynamic_axes={INPUT_NAME: {0: "N"}, **{o: {0: "N"} for o in OUTPUT_NAMES}},
                        input_names=[INPUT_NAME], output_names=list(OUTPUT_NAMES))
                    model = onnx.load(str(file))
    except ExportError:
        raise
    except Exception as exc:
        stop = _interrupt_behind(exc)
        if stop is not None:  # torch's modules, half imported when Ctrl-C came, broke on the way out
            raise stop from exc
        raise ExportError(f"torch.onnx.export ({exporter}, opset {opset}) failed: "
                          f"{type(exc).__name__}: {exc}") from exc
    # The dynamo exporter annotates every node with its Python stack trace (local paths, and
    # most of the file's size); a shipped policy needs none of it.
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise ExportError("the exporter put weights in an external data file; an export must be one file")
    return _lowest_ir_version(model)


def _lowest_ir_version(model):
    """``model`` marked with the lowest ONNX IR version its opsets need (opset 18: IR 8, which
    onnxruntime reads from 1.14) instead of the exporter's own (torch 2.13 writes IR 10, which
    onnxruntime refuses before 1.18, and runtimes that lag, such as some onnxruntime-web builds,
    too), when the graph passes onnx.checker so; else as written."""
    import onnx

    written = model.ir_version
    try:
        lowest = onnx.helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True)
    except Exception:  # an onnx without the table: leave it
        return model
    if lowest < written:
        model.ir_version = lowest
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception:  # something in it needs the newer version after all
            model.ir_version = written
    return model


def _network_outputs(network, raw: np.ndarray, side_note: str) -> np.ndarray:
    """The torch network's outcomes of raw positions (float64), which the graph must reproduce;
    ExportError before any graph is made when they are no probabilities (its arithmetic overflows)."""
    import torch

    with torch.inference_mode():
        want = network.eval()(torch.from_numpy(raw)).double().numpy()
    row = unsound_row(want)
    if row is not None:
        raise ExportError(f"the network's own outputs for position {row} are not outcome probabilities "
                          f"(outcomes {want[row].tolist()}): its weights overflow float32 arithmetic or are "
                          f"damaged, and a policy of it would say nothing; {side_note}")
    return want


def _verify(model_bytes: bytes, states: np.ndarray, want: np.ndarray, tolerance: float, side_note: str) -> dict:
    """onnxruntime against torch's outcomes ``want`` of real positions; raises ExportError showing
    the worst row."""
    raw = raw_positions(states)  # as _network_outputs had them (cheap: a cast)
    want_equity = want @ np.asarray(EQUITY_WEIGHTS)
    try:  # loading it may fail too (onnxruntime's copy of the graph in a full temporary folder)
        evaluator = OnnxEvaluator(model_bytes, where="the exported graph")
        outcomes, equity = evaluator.run(raw)
        diffs = {"outcomes": np.abs(outcomes - want).max(axis=1), "equity": np.abs(equity - want_equity)}
        for size in _VERIFY_BATCHES:  # the same rows in other batch sizes give the same answer
            rows = slice(0, min(size, raw.shape[0]))
            o, e = evaluator.run(raw[rows])
            diffs["outcomes"][rows] = np.maximum(diffs["outcomes"][rows], np.abs(o - want[rows]).max(axis=1))
            diffs["equity"][rows] = np.maximum(diffs["equity"][rows], np.abs(e - want_equity[rows]))
    except PolicyError as exc:  # outputs that are not probabilities at all
        raise ExportError(f"verification failed: {exc}; {side_note}") from None
    worst = {name: float(d.max()) for name, d in diffs.items()}
    for name, d in diffs.items():
        if not worst[name] <= tolerance:  # NaN fails too
            row = int(d.argmax())
            got = outcomes[row] if name == "outcomes" else equity[row]
            ref = want[row] if name == "outcomes" else want_equity[row]
            raise ExportError(
                f"verification failed: onnxruntime and torch differ by {worst[name]:.3g} in {name!r} "
                f"(tolerance {tolerance:g}) over {raw.shape[0]} real positions; worst at "
                f"{format_npn(flip(states[row]), Color.BLACK)} (white has just moved): "
                f"onnxruntime {np.round(got, 7).tolist()}, torch {np.round(ref, 7).tolist()}; {side_note}")
    return {"positions": int(raw.shape[0]), "batch_sizes": [int(raw.shape[0]), *_VERIFY_BATCHES],
            "tolerance": tolerance, "max_abs_diff": worst}


def _write_bytes(data: bytes, fh: BinaryIO) -> None:
    fh.write(data)


def _write_pair(out: Path, files: dict[str, bytes]) -> None:
    """Write the export's files all or none: each into a temporary file beside it first, then
    renamed in one go, so a full disk leaves a previous export (or an empty place) as it was."""
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    try:
        for name, data in files.items():
            staged[name] = write_atomic(out / f".{name}.new", functools.partial(_write_bytes, data))
            with contextlib.suppress(OSError):  # a file replaced keeps its permissions (0600 stays 0600)
                final = os.lstat(out / name)
                if stat.S_ISREG(final.st_mode):
                    os.chmod(staged[name], final.st_mode & 0o777)
    except BaseException:  # a full disk, Ctrl-C: nothing staged stays behind
        for name in files:
            (out / f".{name}.new").unlink(missing_ok=True)
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    renamed = []
    try:
        for name, tmp in staged.items():
            os.replace(tmp, out / name)
            renamed.append(name)
    except BaseException:  # the files not renamed go; what is renamed stays (the hashes tell them apart)
        for name, tmp in staged.items():
            if name not in renamed:
                tmp.unlink(missing_ok=True)
        raise


def _lstat_or_none(path: Path) -> os.stat_result | None:
    """What stands at ``path`` (a link itself, not what it names), None when nothing does; any
    other failure (a name too long, a folder that may not be searched) is raised."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _writable_folder(out: Path) -> None:
    """ExportError unless ``out``, or the folder it would be made in, may be written."""
    folder = out
    try:
        if os.path.islink(out) and not out.exists():
            raise ExportError(f"cannot write the export to {out}: it is a link to {os.readlink(out)}, "
                              "which does not exist")
        while not os.path.lexists(folder) and folder.parent != folder:
            folder = folder.parent
        if not folder.is_dir():
            raise ExportError(f"cannot write the export to {out}: {folder} is not a folder; give a folder "
                              "(it is made if missing)")
    except OSError as exc:  # a folder on the way that may not be searched
        raise ExportError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ExportError(f"cannot write the export to {out}: {folder} is not writable; nothing was exported")
    refused = creation_refused(folder, "export", stacklevel=3)  # os.access may say yes wrongly
    if refused:
        raise ExportError(f"cannot write the export to {out}: no file can be made in {folder} "
                          f"({refused}); nothing was exported")


def _checkpoint_path(player: str | Path) -> Path:
    """The checkpoint file named by PLAYER, or ExportError saying why it is not one."""
    if not isinstance(player, str | os.PathLike):
        raise ExportError(f"export_policy exports a checkpoint (its file's hash goes into policy.json), not "
                          f"a {type(player).__name__}: save it first, save_checkpoint(path, network, rules), "
                          "then export_policy(path, out_dir)")
    text = str(player)
    ply = search_depth(text)[1]
    if ply is not None:
        raise ExportError(f"{text!r}: an export holds the network alone; drop '@{ply}' and choose the "
                          f"search depth when playing (DIR@{ply}, or --ply {ply})")
    path = Path(text)
    if text == "default" and not path.exists():  # the shipped player, as everywhere else
        if not (SHIPPED_PLAYER / "checkpoint.pt").is_file():
            raise ExportError(f"'default' names the shipped player, {SHIPPED_PLAYER}, whose checkpoint.pt this "
                              "installation lacks (it comes with a clone of the nardy repository and with nardy's wheel)")
        path = SHIPPED_PLAYER
    if path.is_dir() and (path / ONNX_FILE).exists() and not (path / "checkpoint.pt").is_file():
        raise ExportError(f"{path} is already an exported policy; export from a run directory or checkpoint")
    if path.is_dir():
        if not (path / "checkpoint.pt").is_file():
            odd = not_a_file(path / "checkpoint.pt")
            raise ExportError(f"{path / 'checkpoint.pt'} {odd}" if odd else
                              f"{path} is a folder without checkpoint.pt; give a run directory or a .pt file")
        return path / "checkpoint.pt"
    if not path.exists():
        from agents.bots import BOTS
        from agents.registry import is_level

        if is_level(text):
            raise ExportError(f"{text} is a level of the shipped player, not a network of its own: export default, "
                              "and draw a level from the graph's equity output (docs/policy.md, \"Easier levels\")")
        if text in BOTS or text == "random":  # a bot has no network to export
            raise ExportError(f"{text} is a bot, played by code, not a network: nothing to export (an export "
                              "is a trained network's; give a run directory, a checkpoint file or default)")
        raise ExportError(f"no checkpoint at {path}: give a run directory, a checkpoint file or default "
                          "(the shipped player)")
    return path


def export_policy(checkpoint_path: str | Path, out_dir: str | Path, *, positions: int = 4096,
                  tolerance: float = 1e-5, opset: int = DEFAULT_OPSET, exporter: str = "dynamo",
                  seed: int = 0, force: bool = False) -> dict[str, Any]:
    """Export the network of a checkpoint (or run directory) to ``out_dir``; returns policy.json's content.

    Writes ``policy.onnx`` and ``policy.json`` only after onnxruntime agreed
    with torch to ``tolerance`` on ``positions`` real positions. An existing
    export in ``out_dir`` is replaced only with ``force``.
    """
    import onnx
    import torch

    from agents.td import CheckpointError, load_checkpoint

    onnxruntime = import_onnxruntime()

    if exporter not in EXPORTERS:
        raise ExportError(f"exporter must be one of {EXPORTERS}, got {exporter!r}")
    if not is_whole(positions, 1):
        raise ExportError(f"positions must be a whole number, at least 1, got {positions!r}")
    if not is_whole(opset):
        raise ExportError(f"opset must be a whole number, got {opset!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float | np.integer | np.floating) \
            or not 0 < tolerance < float("inf"):
        raise ExportError(f"tolerance must be a positive number, got {tolerance!r}")
    if not isinstance(force, bool | np.bool_):  # "no" is true: it replaced an export
        raise ExportError(f"force must be True or False, got {force!r}")
    from train.evaluate import check_seed

    try:
        seed = check_seed(seed)
    except ValueError as exc:
        raise ExportError(f"{exc} (the seed of the check positions' games)") from None
    if not isinstance(out_dir, str | os.PathLike) or not os.fspath(out_dir):
        raise ExportError(f"out_dir must name a folder, got {out_dir!r}")
    positions, opset, tolerance = int(positions), int(opset), float(tolerance)
    source = _checkpoint_path(checkpoint_path)
    out = Path(out_dir)
    _writable_folder(out)  # found now, not after the export and its verification
    standing = {n: _lstat_or_none(out / n) for n in (ONNX_FILE, JSON_FILE)}  # links not followed
    existing = [n for n, st in standing.items() if st is not None]
    for name, st in standing.items():  # found now: a rename onto a folder fails once the other file is replaced
        if st is not None and stat.S_ISDIR(st.st_mode):  # (a link, even to a folder, is replaced itself)
            raise ExportError(f"{out / name} is a folder, where the export writes its {name}; move it away; "
                              "nothing was exported")
    if existing and not force:
        raise ExportError(f"{out} already holds {' and '.join(existing)}; pass --force (force=True in Python) "
                          f"to replace {'them' if len(existing) > 1 else 'it'}")
    if exporter == "torchscript":  # torch's own deprecation warning is among those an export quiets
        warnings.warn("torch has deprecated its TorchScript ONNX exporter and will remove it: the default "
                      "exporter, dynamo, is the one torch supports (leave --exporter out; in Python, "
                      "exporter='dynamo')", category=NardyWarning, stacklevel=2)
    from agents.files import file_sha256

    # Hash the file around the load, so the recorded hash is that of the weights exported
    # even while a training run keeps replacing checkpoint.pt.
    try:
        sha256 = file_sha256(source)
    except OSError as exc:
        raise ExportError(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        network, payload = load_checkpoint(source)
    except CheckpointError as exc:
        raise ExportError(f"{exc}; nothing was written to {out}") from None
    if file_sha256(source) != sha256:
        raise ExportError(f"{source} changed while it was read (a training run saving it?); export again")
    try:
        rules = Rules.from_dict(payload.get("rules", {}))
    except (ValueError, TypeError) as exc:
        raise ExportError(f"{source}: its rules cannot be read: {exc}") from None
    # policy.json records both rules; load_checkpoint has refused a file whose two differ.
    network.eval()
    states = real_positions(positions, seed=seed, rules=rules)
    want = _network_outputs(network, raw_positions(states), f"nothing was written to {out}")  # before the slow part

    model = _to_onnx(network, opset, exporter)
    model.doc_string = ("Long Nardy policy (nardy-policy/1): raw positions [N, 50] -> outcomes [N, 4], "
                        "equity [N]; see policy.json")
    for key, meta_key in METADATA_KEYS.items():
        value = POLICY_FORMAT if key == "format" else FEATURES_VERSION
        model.metadata_props.add(key=meta_key, value=value)
    model.metadata_props.add(key=RULES_METADATA, value=rules.to_json())
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        raise ExportError(f"the exported graph does not pass onnx.checker: {exc}") from exc
    model_bytes = model.SerializeToString()
    opsets = {o.domain or "ai.onnx": int(o.version) for o in model.opset_import}
    if opsets.get("ai.onnx", opset) != opset:  # the exporter could not convert to the opset asked for
        raise ExportError(f"opset {opset} was asked for, but the {exporter} exporter wrote opset "
                          f"{opsets.get('ai.onnx')}; nothing was written to {out} (the default, {DEFAULT_OPSET}, "
                          "works with every exporter)")

    verification = _verify(model_bytes, states, want, tolerance, f"nothing was written to {out}")
    verification["onnxruntime"] = onnxruntime.__version__

    policy = {
        "format": POLICY_FORMAT,
        # Every variant key of RULES.md, the cube and match ones with the values played (none).
        "rules": rules.to_dict(),
        "input": contract_input(),
        "outputs": contract_outputs(),
        "network": network.shape(),
        "features_version": FEATURES_VERSION,
        "features_in_graph": True,
        "known_outcomes_in_graph": True,
        "training": _provenance(payload, source, sha256),
        "onnx": {"file": ONNX_FILE, "opset": opsets.get("ai.onnx", opset), "opset_import": opsets,
                 "ir_version": int(model.ir_version),
                 "producer": f"{model.producer_name} {model.producer_version}".strip(),
                 "exporter": exporter, "torch": torch.__version__, "onnx": onnx.__version__,
                 "external_data": False, "bytes": len(model_bytes),
                 "sha256": hashlib.sha256(model_bytes).hexdigest()},
        "verification": verification,
    }
    try:
        _write_pair(out, {ONNX_FILE: model_bytes,
                          JSON_FILE: (json.dumps(policy, indent=2) + "\n").encode("utf-8")})
    except OSError as exc:
        raise ExportError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    try:
        load_policy(out)  # what was written reads back under the loader's checks
    except PolicyError as exc:
        raise ExportError(f"the export written to {out} does not read back: {exc}") from None
    return policy


def cmd_export(args: argparse.Namespace) -> int:
    """Run ``nardy export``: 0 on success, 1 when the export fails (message on stderr), 2 for
    an --out of ``-``."""
    if args.out == "-":  # not standard output: the export is a folder of two files
        print("nardy export: --out -: give a folder (the export is two files, policy.onnx and policy.json)",
              file=sys.stderr)
        return 2
    try:
        policy = export_policy(args.player, args.out, positions=getattr(args, "positions", 4096),
                               tolerance=getattr(args, "tolerance", 1e-5),
                               opset=getattr(args, "opset", DEFAULT_OPSET),
                               exporter=getattr(args, "exporter", "dynamo"),
                               force=getattr(args, "force", False))
    except ExportError as exc:
        print(printable(f"nardy export: {exc}"), file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(policy))
        return 0
    v, o = policy["verification"], policy["onnx"]
    out = Path(args.out)
    print(f"wrote {out / ONNX_FILE} ({o['bytes']:,} bytes, opset {o['opset']}, IR version {o['ir_version']}, "
          f"{o['producer']}) "
          f"and {out / JSON_FILE}")
    print(f"network {policy['network']['hidden']} on {policy['features_version']}, "
          f"rules {json.dumps(policy['rules'])}, trained on {policy['training']['games']:,} games")
    print(f"verified: onnxruntime matches torch on {v['positions']} real positions, max |difference| "
          f"{v['max_abs_diff']['outcomes']:.2g} (outcomes), {v['max_abs_diff']['equity']:.2g} (equity), "
          f"tolerance {v['tolerance']:g}")
    return 0

"""The TD agent: a torch evaluator, checkpoints and loading a player from one.

A checkpoint is one ``torch.save`` file (``checkpoint.pt``) holding the
network's shape and weights, the feature version, the rules it was trained
under and, from training, the optimizer, counters and RNG states. It is
written atomically (temporary file, then rename), so a reader never sees half
a file and a killed writer leaves the previous checkpoint intact.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nardy_env import Rules
from nardy_env._runtime import not_a_file
from nardy_env.encoding import FEATURES_VERSION, features
from nardy_env.rules import DEFAULT_RULES, RulesLike, as_rules

from .common import checked_raw
from .files import compressed_entries, file_sha256, write_atomic
from .network import TDNetwork
from .search import SearchPlayer, rules_to_play

__all__ = ["CHECKPOINT_FORMAT", "CheckpointError", "NetworkError", "TorchEvaluator", "save_checkpoint",
           "load_checkpoint", "td_player", "file_sha256"]

CHECKPOINT_FORMAT = "nardy-checkpoint/1"
"""The ``format`` key of every checkpoint nardy writes; load_checkpoint refuses others."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit this code."""


class NetworkError(ValueError):
    """A network whose outputs are not outcome probabilities (NaN or infinite: finite weights
    so large that float32 arithmetic overflows), raised by ``TorchEvaluator`` instead of
    letting a player choose by them or ``nardy hint`` report them."""


class TorchEvaluator:
    """Outcome probabilities from a ``TDNetwork`` (no gradients, float32)."""

    def __init__(self, network: TDNetwork) -> None:
        """Scores with ``network`` itself, not a copy (switched to eval mode): later training of
        it changes what this evaluator says. Pass ``copy.deepcopy(network)`` to freeze it."""
        if not isinstance(network, TDNetwork):
            raise _not_a_network("TorchEvaluator scores with", network)
        self.network = network.eval()

    def _input(self, raw: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw positions checked as the exported policy checks them (agents.common.checked_raw),
        and their features (computed in numpy: the graph's numbers, sooner)."""
        raw = checked_raw(raw)
        x = torch.from_numpy(raw if raw.flags.writeable else raw.copy())  # torch warns on read-only arrays
        f = torch.from_numpy(features(raw))
        device = next(self.network.parameters()).device
        return (x, f) if device.type == "cpu" else (x.to(device), f.to(device))  # a network on a GPU scores there

    def _run(self, raw: np.ndarray, equity: bool, outcomes: bool = True) -> list[np.ndarray]:
        """[outcomes] if ``outcomes``, then [equity] if ``equity``, from one forward pass."""
        with torch.inference_mode():
            out = self.network(*self._input(raw))
            found = ([out.float().cpu().numpy()] if outcomes else []) + \
                ([self.network.equity(out).float().cpu().numpy()] if equity else [])
            # A softmax is probabilities, and its equity a number, unless the arithmetic overflowed
            # (NaN, which either shows): all this hot path (search, at every level) checks.
            finite = np.isfinite(found[0]) if found[0].ndim == 1 else np.isfinite(found[0]).all(axis=1)
            if not finite.all():
                row = int(np.flatnonzero(~finite)[0])
                raise NetworkError(f"the network's outputs for row {row} are not outcome probabilities (outcomes "
                                   f"{out[row].float().cpu().tolist()}): its weights (hidden "
                                   f"{list(self.network.hidden)}) overflow float32 arithmetic or are damaged")
        return found

    def run(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(``outcomes``, ``equity``) of one forward pass, as an exported policy's ``run`` gives both."""
        probs, equity = self._run(raw, equity=True)
        return probs, equity

    def outcomes(self, raw: np.ndarray) -> np.ndarray:
        """float32 ``[N, 4]`` outcome probabilities [win, win mars, lose, lose mars] of raw positions
        ``[N, 50]`` (FORMATS.md), checked as the exported policy checks them; ``NetworkError`` when
        the network's outputs are not probabilities (NaN: its arithmetic overflowed)."""
        return self._run(raw, equity=False)[0]

    def equity(self, raw: np.ndarray) -> np.ndarray:
        """float32 ``[N]`` equities, by the formula of the exported graph (``TDNetwork.equity``);
        ``NetworkError`` as ``outcomes``."""
        return self._run(raw, equity=True, outcomes=False)[0]


def _not_a_network(who: str, network: Any) -> TypeError:
    """The error for a ``network`` that is no TDNetwork, naming the attribute that holds one when it
    is a wrapper (``torch.compile``'s, ``DataParallel``'s)."""
    path, inside = "", network
    for _ in range(4):  # torch.compile(DataParallel(net)), DataParallel(torch.compile(net)), ...
        name = next((n for n in ("_orig_mod", "module") if isinstance(getattr(inside, n, None), torch.nn.Module)), None)
        if name is None:
            break
        path, inside = f"{path}.{name}", getattr(inside, name)
        if isinstance(inside, TDNetwork):
            break
    hint = f"; it wraps one: pass its {path}" if isinstance(inside, TDNetwork) and path else ""
    return TypeError(f"{who} a TDNetwork (agents.network), got {type(network).__name__}{hint}")


def wrapper_prefix(names: Any) -> str | None:
    """The prefix of weights saved from a network inside wrappers (``_orig_mod.`` of
    ``torch.compile``, ``module.`` of ``DataParallel``, or several: ``_orig_mod.module.``) that all
    ``names`` share, or None."""
    names = [str(n) for n in names]
    prefix = ""
    while names:
        step = next((p for p in ("_orig_mod.", "module.") if all(n.startswith(prefix + p) for n in names)), None)
        if step is None:
            break
        prefix += step
    return prefix or None


def save_checkpoint(path: str | Path, network: TDNetwork, rules: RulesLike | None = DEFAULT_RULES,
                    **extra: Any) -> Path:
    """Write a checkpoint atomically; ``extra`` (training state) is stored alongside.

    ``extra`` may hold tensors and plain data (dicts, lists, numbers, strings), which
    ``load_checkpoint`` reads back; anything else, or a key of the checkpoint's own, is
    refused before the file at ``path`` is touched.
    """
    path = Path(path)
    if not isinstance(network, TDNetwork):
        raise _not_a_network("save_checkpoint: network must be", network)
    if path.is_dir():
        raise ValueError(f"save_checkpoint: {path} is a folder; name the file to write, such as "
                         f"{path / 'checkpoint.pt'} (nothing was written)")
    bad = _not_finite(network.state_dict())
    if bad:
        raise ValueError(f"save_checkpoint: {', '.join(bad)} hold values that are not finite (NaN or infinite): "
                         f"a diverged network is not written (nothing was written to {path})")
    payload = {
        "format": CHECKPOINT_FORMAT,
        "network": network.shape(),
        "state_dict": network.state_dict(),
        "rules": as_rules(rules).to_dict(),
        "features_version": FEATURES_VERSION,
    }
    clash = sorted(set(extra) & set(payload))
    if clash:
        raise ValueError(f"save_checkpoint: {clash} are the checkpoint's own keys; give the extra data other names")
    payload.update(extra)
    data = io.BytesIO()
    try:  # what load_checkpoint would refuse is not written (over a good checkpoint, at that)
        # Protocol 2, torch's default today, named: the checks of load_checkpoint read its opcodes.
        torch.save(payload, data, pickle_protocol=PICKLE_PROTOCOL)  # a lambda or a generator cannot be pickled at all
        loaded = torch.load(io.BytesIO(data.getvalue()), map_location="cpu", weights_only=True)
    except (pickle.PicklingError, pickle.UnpicklingError, TypeError, AttributeError):
        refused = {key: _refused_type(value) for key, value in extra.items()}
        named = ", ".join(f"{key!r} ({kind})" for key, kind in refused.items() if kind is not None)
        raise ValueError(f"save_checkpoint: the extra data {named or sorted(extra)} holds objects other than "
                         "tensors and plain data (dicts, lists, numbers, strings), which load_checkpoint does "
                         f"not load; store a numpy array as torch.from_numpy(a) or a.tolist() "
                         f"(nothing was written to {path})") from None
    try:  # and what it says must be what load_checkpoint takes: the network it records, one game
        if not _pickle_unfolds_within(_data_pickle(io.BytesIO(data.getvalue())), MAX_PLAIN_NODES):
            raise CheckpointError(f"its data unfolds into more than {MAX_PLAIN_NODES:,} values (shared references "
                                  "nested deep)")
        _checked(path, loaded)
    except CheckpointError as exc:
        raise ValueError(f"save_checkpoint: load_checkpoint would refuse this file ({exc}); nothing was written "
                         f"to {path}") from None
    # Written whole or not at all; a full disk is the OSError the write raises (ENOSPC).
    write_atomic(path, lambda fh: fh.write(data.getbuffer()))
    return path


def load_checkpoint(path: str | Path) -> tuple[TDNetwork, dict[str, Any]]:
    """Read a checkpoint file (or a run directory's ``checkpoint.pt``): the network and everything saved."""
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.pt"
    if not path.is_file():
        odd = not_a_file(path)
        raise CheckpointError(f"{path} {odd}" if odd else f"no checkpoint at {path}")
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":  # torch.save writes a zip archive
            raise CheckpointError(f"{path} is not a checkpoint (not a zip archive as torch.save writes; "
                                  "nardy train writes checkpoint.pt)")
    _check_archive(path)
    if not _pickle_unfolds_within(_data_pickle(path), MAX_PLAIN_NODES):
        raise CheckpointError(f"{path} is not a checkpoint nardy wrote: its data unfolds into more than "
                              f"{MAX_PLAIN_NODES:,} values (shared references nested deep, which loading "
                              "or writing out as JSON would take forever), or is not plain data")
    try:
        # weights_only: a checkpoint named on the command line may come from anyone, and
        # ours hold only tensors and plain data, so nothing in it may run code on load.
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "global" in str(exc).lower():  # torch names the class it refused to import
            raise CheckpointError(f"{path} is not a nardy checkpoint: it holds objects other than tensors "
                                  "and plain data, which nardy does not load") from None
        raise CheckpointError(f"{path} is not a readable checkpoint (damaged?): {_first_line(exc)}") from None
    except Exception as exc:  # a truncated or damaged file
        raise CheckpointError(f"{path} is not a readable checkpoint (damaged or cut short?): "
                              f"{_first_line(exc)}") from None
    return _checked(path, payload)


def _checked(path: Path, payload: Any) -> tuple[TDNetwork, dict[str, Any]]:
    """The network and data of a loaded checkpoint, or the CheckpointError saying what is wrong."""
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else None
        newer = " (written by a newer nardy?)" if isinstance(found, str) and found.startswith("nardy-checkpoint/") else ""
        weights_alone = (isinstance(payload, dict) and bool(payload)
                         and all(isinstance(v, torch.Tensor) for v in payload.values()))
        how = ("; it holds weights alone (a state_dict?): write checkpoints with "
               "agents.td.save_checkpoint(path, network, rules)" if weights_alone else "")
        raise CheckpointError(f"{path} is not a {CHECKPOINT_FORMAT} file{newer}"
                              + (f": its format is {found!r}" if found is not None else "") + how)
    if payload.get("features_version") != FEATURES_VERSION:
        raise CheckpointError(
            f"{path} was trained on features {payload.get('features_version')!r}; "
            f"this code computes {FEATURES_VERSION!r}"
        )
    if "rules" not in payload:
        raise CheckpointError(f"{path} records no rules (every {CHECKPOINT_FORMAT} file does: damaged or "
                              "hand-made?), so nothing says which game it was trained for")
    try:
        rules = Rules.from_dict(payload["rules"])
    except ValueError as exc:
        raise CheckpointError(f"{path}: its rules cannot be read: {exc}") from None
    config = payload.get("config")
    if config is not None and not isinstance(config, dict):
        raise CheckpointError(f"{path}: its training config is a {type(config).__name__}, not a mapping of "
                              "settings (damaged or hand-made?)")
    if config is not None and config.get("rules") is not None:
        # Both are recorded (an export copies both into policy.json): they must be one game.
        try:
            same = Rules.from_dict(config["rules"]) == rules
        except (ValueError, TypeError, AttributeError):
            same = False
        if not same:
            raise CheckpointError(f"{path} contradicts itself: it records rules {rules.to_json()}, but its "
                                  f"config {json.dumps(config['rules'], default=str)} (damaged or hand-made?)")
    network = _network_for(path, payload)
    hidden = config.get("hidden") if config is not None else None
    if hidden is not None and (not isinstance(hidden, list | tuple) or list(hidden) != network.hidden):
        raise CheckpointError(f"{path} contradicts itself: its network has hidden layers {network.hidden}, but its "
                              f"config says hidden {json.dumps(hidden, default=str)} (damaged or hand-made?)")
    payload["path"] = str(path)
    return network, payload


PICKLE_PROTOCOL = 2
"""The pickle protocol checkpoints are written with (torch's default). torch 2.13's safe loader
reads 2 and 3 and refuses 4 and 5; load_checkpoint's size check reads the opcodes of all four, so
that a torch that reads the later ones finds it no obstacle."""

MAX_PLAIN_NODES = 5_000_000
"""The most values a checkpoint's plain data (config, history, training state) may unfold into,
counting a value once for every place it is referenced from (as JSON would write it out): a
long run's stays in the tens of thousands."""


def _pickle_unfolds_within(pickled: bytes, limit: int) -> bool:
    """Whether the pickle ``pickled`` builds data that unfolds into at most ``limit`` values, found
    by reading its opcodes without running them (unpickling shared references nested deep, say
    as a dict key, could take hours by itself). False for cycles and opcodes nardy never writes."""
    import pickletools

    class Node:
        __slots__ = ("kids",)

        def __init__(self, kids: list | None = None) -> None:
            self.kids = kids if kids is not None else []

    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[Any, Any] = {}

    def take_mark() -> list:
        at = marks.pop()
        items = stack[at:]
        del stack[at:]
        return items

    try:
        for op, arg, _ in pickletools.genops(pickled):
            name = op.name
            if name in ("PROTO", "FRAME"):
                continue
            if name == "STOP":
                break
            if name == "MARK":
                marks.append(len(stack))
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[arg])
            elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"):
                stack.append(Node())
            elif name in ("LIST", "TUPLE", "DICT", "FROZENSET"):
                stack.append(Node(take_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                items = stack[-n:]
                del stack[-n:]
                stack.append(Node(items))
            elif name == "APPEND":
                item = stack.pop()
                stack[-1].kids.append(item)
            elif name == "SETITEM":
                value, key = stack.pop(), stack.pop()
                stack[-1].kids.extend([key, value])
            elif name in ("APPENDS", "SETITEMS", "ADDITEMS"):
                items = take_mark()
                stack[-1].kids.extend(items)
            elif name in ("REDUCE", "NEWOBJ"):
                args, func = stack.pop(), stack.pop()
                stack.append(Node([func, args]))
            elif name == "NEWOBJ_EX":  # protocol 4 and later
                kwargs, args, cls = stack.pop(), stack.pop(), stack.pop()
                stack.append(Node([cls, args, kwargs]))
            elif name == "STACK_GLOBAL":  # protocol 4's GLOBAL: module and name from the stack
                del stack[-2:]
                stack.append(Node())
            elif name == "BUILD":
                state = stack.pop()
                stack[-1].kids.append(state)
            elif name == "BINPERSID":
                stack.append(Node([stack.pop()]))
            elif name == "POP":
                stack.pop()
            elif name == "DUP":
                stack.append(stack[-1])
            elif not op.stack_before and len(op.stack_after) == 1:  # a constant (int, float, str,
                stack.append(Node())  # bytes...) or a GLOBAL, which names its class in its argument
            else:
                return False  # nothing else is in nardy's files
    except (ValueError, IndexError, KeyError, AttributeError):  # not a pickle this reading follows
        return False
    # Unfolded sizes, each node's computed once (so this walk is small), capped past the limit.
    sizes: dict[int, int] = {}
    for root in stack:
        todo = [(root, False)]
        busy: set[int] = set()
        while todo:
            node, done = todo.pop()
            key = id(node)
            if key in sizes:
                continue
            if done:
                busy.discard(key)
                sizes[key] = min(limit + 1, 1 + sum(sizes[id(k)] for k in node.kids))
                if sizes[key] > limit:
                    return False
                continue
            if key in busy:
                return False  # a cycle
            busy.add(key)
            todo.append((node, True))
            todo.extend((k, False) for k in node.kids if id(k) not in sizes)
    return True


def _data_pickle(path: Path | io.BytesIO) -> bytes:
    """The pickle inside a torch.save archive (``<name>/data.pkl``; empty when there is none)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.endswith("data.pkl")]
            if len(names) != 1:
                return b""
            with archive.open(names[0]) as fh:
                if archive.getinfo(names[0]).CRC == 0:  # none recorded (see _check_archive): read as torch does
                    fh._expected_crc = None  # type: ignore[attr-defined]  # zipfile's own way to skip the check
                return fh.read()
    except (OSError, zipfile.BadZipFile, KeyError):
        return b""


def _check_archive(path: Path) -> None:
    """Refuse a checkpoint whose zip entries fail their checksums (torch.load does not check them)."""
    bad: str | None = None
    packed: list[str] = []
    try:
        with zipfile.ZipFile(path) as archive:
            packed = compressed_entries(archive)
            for entry in [] if packed else archive.infolist():  # a compressed file is refused unread
                # A CRC of 0 means none was recorded (torch.serialization.set_crc32_options(False)).
                if entry.CRC == 0 and entry.file_size:
                    continue
                try:
                    with archive.open(entry) as fh:
                        while fh.read(1 << 20):  # zipfile compares the CRC at the end
                            pass
                except zipfile.BadZipFile:
                    bad = entry.filename
                    break
    except Exception as exc:  # any damage to the archive's directory (bad names, sizes, offsets)
        raise CheckpointError(f"{path} is not a readable checkpoint (damaged or cut short?): "
                              f"{_first_line(exc)}") from None
    if packed:
        raise CheckpointError(f"{path} is not a checkpoint torch.save wrote: its entry {packed[0]!r} is compressed")
    if bad is not None:
        raise CheckpointError(f"{path} is damaged: its entry {bad!r} fails its checksum")


def _network_for(path: Path, payload: dict[str, Any]) -> TDNetwork:
    """The network the checkpoint describes, with its weights, or an error naming what does not fit."""
    shape, weights = payload.get("network"), payload.get("state_dict")
    if not isinstance(shape, dict) or not isinstance(weights, dict):
        raise CheckpointError(f"{path} is not a readable checkpoint (damaged?): it lacks the network's "
                              "shape or weights")
    try:
        # Its weights are loaded at once: none drawn, so that loading a player leaves torch's
        # generator (a caller's seeded run, other threads' draws) as it was.
        network = TDNetwork(shape.get("hidden"), init=False)  # type: ignore[arg-type]  # checked by TDNetwork
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: its network shape cannot be built: {_first_line(exc)}") from None
    # The rest of the shape is what this code builds: a file saying otherwise was made for another network.
    built = network.shape()
    differ = [f"{key} {shape[key]!r} (this code builds {built[key]!r})" for key in ("input", "outputs", "features_version")
              if key in shape and shape[key] != built[key]]
    if differ:
        raise CheckpointError(f"{path}: its network records {'; '.join(differ)}: made for another network "
                              "(or edited by hand)")
    expected = {name: tuple(t.shape) for name, t in network.state_dict().items()}
    stored = {name: tuple(t.shape) for name, t in weights.items() if isinstance(t, torch.Tensor)}
    problems = [f"{name} is missing" for name in expected if name not in weights]
    problems += [f"{name} is not a tensor" for name in expected if name in weights and name not in stored]
    problems += [f"{name!r} has no place in it" for name in weights if name not in expected]  # !r: a file's string
    problems += [f"{name} is {list(stored[name])}, the shape needs {list(expected[name])}"
                 for name in expected if name in stored and stored[name] != expected[name]]
    prefix = wrapper_prefix(weights)
    if prefix is not None:  # torch.compile's or DataParallel's names
        raise CheckpointError(f"{path}: its weights' names start with {prefix!r}: saved from a wrapped network; "
                              f"save the network it wraps (its .{prefix[:-1]}) instead")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise CheckpointError(f"{path}: its weights do not fit the network it records (hidden "
                              f"{list(network.hidden)}): {'; '.join(problems[:3])}{more}")
    integral = [name for name in expected if not weights[name].is_floating_point()]
    if integral:  # load_state_dict would copy them into the float weights, truncated: a network of zeros
        raise CheckpointError(f"{path}: its weights {', '.join(integral[:3])} hold "
                              f"{weights[integral[0]].dtype} values, not floating-point ones: damaged or "
                              "converted by hand")
    bad = _not_finite(weights)
    if bad:
        raise CheckpointError(f"{path} is damaged: {', '.join(bad)} holds values that are not finite (NaN or "
                              "infinite), which no trained network has")
    network.load_state_dict(weights)
    bad = _not_finite(network.state_dict())
    if bad:  # finite in the file's float64, infinite once cast to the network's float32
        raise CheckpointError(f"{path} is damaged: {', '.join(bad)} holds values too large for float32 "
                              "(infinite once loaded), which no trained network has")
    return network


def _not_finite(weights: dict[str, Any]) -> list[str]:
    """Names of the floating-point tensors holding NaN or infinity."""
    return [name for name, t in weights.items()
            if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all())]


def _unpicklable(value: Any) -> str:
    """The type of what pickle cannot write in ``value``, with where it sits in its dicts and lists
    (``function at ['fn']``): a dict of settings is not itself the trouble."""
    return _find_unpicklable(value, "", frozenset()) or type(value).__name__


def _find_unpicklable(value: Any, where: str, above: frozenset[int]) -> str | None:
    """What pickle cannot write among ``value``'s items, with where, or None. Each item is tried
    with the containers above it stood in for, so a loop back up is no failure of its own."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    above = above | {id(value)}
    for key, item in items:
        if id(item) in above or _pickles_apart_from(item, above):
            continue
        path = f"{where}[{key!r}]"
        return _find_unpicklable(item, path, above) or f"{type(item).__name__} at {path}"
    return None


def _pickles_apart_from(item: Any, above: frozenset[int]) -> bool:
    """Whether pickle writes ``item`` when the objects ``above`` (by id) are written as references."""

    class _Apart(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            return id(obj) if id(obj) in above else None

    try:
        _Apart(io.BytesIO()).dump(item)
    except Exception:  # whatever pickling raises
        return False
    return True


def _refused_type(value: Any) -> str | None:
    """The type that loading ``value`` with ``weights_only`` refuses (as torch names it), or None."""
    data = io.BytesIO()
    try:
        torch.save(value, data, pickle_protocol=PICKLE_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return f"{_unpicklable(value)}, which cannot be pickled"
    try:
        torch.load(io.BytesIO(data.getvalue()), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        name = found.group(1) if found else "not loadable"
        return "numpy data" if name.startswith("numpy") else name
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def td_player(path: str | Path, ply: int = 0, rules: RulesLike | None = None, filter_k: int = 5) -> SearchPlayer:
    """A search player over the network in a checkpoint (rules default to the checkpoint's)."""
    network, payload = load_checkpoint(path)
    trained = Rules.from_dict(payload["rules"])
    rules = rules_to_play(path, trained, rules)
    player = SearchPlayer(TorchEvaluator(network), ply=ply, rules=rules, filter_k=filter_k, name=str(path))
    player.trained_under = trained
    return player

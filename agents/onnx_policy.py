"""Exported policies (FORMATS.md, "Exported policy"): loading and checking them, without torch.

An exported policy is a folder with ``policy.onnx`` (input ``positions``
float32 ``[N, 50]``; outputs ``outcomes`` ``[N, 4]`` and ``equity`` ``[N]``,
the feature encoding inside the graph) and ``policy.json`` (format string,
rules, input and output description, network shape, features version,
training provenance). ``nardy export`` (``train/export.py``) writes it.

This module needs numpy and onnxruntime only; it must never import torch,
directly or through another module, so that a machine without torch can play
with an exported policy (``nardy hint --policy DIR``, ``nardy eval DIR ...``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from nardy_env import Rules, RulesError
from nardy_env._runtime import not_a_file, printable
from nardy_env.core import is_whole
from nardy_env.encoding import FEATURES_VERSION, RAW_SIZE
from nardy_env.rules import RulesLike

from .common import EQUITY_WEIGHTS, OUTCOMES, checked_raw, unsound_row
from .search import SearchPlayer, rules_to_play

__all__ = [
    "POLICY_FORMAT", "ONNX_FILE", "JSON_FILE", "INPUT_NAME", "OUTPUT_NAMES", "OUTCOME_NAMES",
    "EQUITY_WEIGHTS", "KNOWN_FEATURES_VERSIONS", "METADATA_KEYS", "RULES_METADATA", "PolicyError", "OnnxEvaluator",
    "read_policy_json", "load_policy", "onnx_player", "contract_input", "contract_outputs", "import_onnxruntime",
]

POLICY_FORMAT = "nardy-policy/1"
"""The ``format`` string of policy.json (and of the ONNX metadata)."""
ONNX_FILE = "policy.onnx"
JSON_FILE = "policy.json"
INPUT_NAME = "positions"
OUTPUT_NAMES = ("outcomes", "equity")
OUTCOME_NAMES = OUTCOMES
"""Columns of ``outcomes``, from the view of the side that has just moved."""
KNOWN_FEATURES_VERSIONS = (FEATURES_VERSION,)
"""Feature encodings this code computes. A policy recording another one still plays (its encoding
is inside its graph); a checkpoint recording another one is refused (its network needs the features)."""
METADATA_KEYS = {"format": "nardy.format", "features_version": "nardy.features_version"}
"""Keys of the ONNX model's metadata_props that repeat policy.json's values."""
RULES_METADATA = "nardy.rules"
"""The ONNX metadata key that repeats policy.json's rules (as ``Rules.to_json()``): the rules are
bound to the graph, not only to the file beside it. Early exports lack it, and are read without."""

_REQUIRED_KEYS = ("format", "rules", "input", "outputs", "network", "features_version", "training")


class PolicyError(ValueError):
    """An exported policy folder that is missing, incomplete or does not fit the contract."""


def contract_input() -> dict[str, Any]:
    """policy.json's ``input``: the one graph input, as FORMATS.md fixes it."""
    return {
        "name": INPUT_NAME,
        "dtype": "float32",
        "shape": ["N", RAW_SIZE],
        "layout": ("end-of-turn positions seen by the side that has just moved ('me'), the opponent "
                   "to roll next: columns 0..23 my checkers on my personal points 1..24, columns "
                   "24..47 the opponent's checkers on its personal points 1..24, column 48 my "
                   "borne-off count, column 49 the opponent's"),
    }


def contract_outputs() -> list[dict[str, Any]]:
    """policy.json's ``outputs``, in graph order."""
    return [
        {"name": "outcomes", "dtype": "float32", "shape": ["N", len(OUTCOME_NAMES)],
         "columns": list(OUTCOME_NAMES),
         "description": "probabilities, summing to 1, that the game ends as "
                        "[I win single, I win mars, I lose single, I lose mars]; exact where the "
                        "position settles it (I have borne off 15: a win; no mars against a side "
                        "with a checker off), and below certainty for an unfinished position"},
        {"name": "equity", "dtype": "float32", "shape": ["N"],
         "weights": list(EQUITY_WEIGHTS),
         "description": "win + 2*win_mars - lose - 2*lose_mars: cubeless points for me"},
    ]


def _folder(path: str | Path) -> Path:
    """The policy folder named by ``path`` (the folder, or one of its two files)."""
    path = Path(path)
    if path.is_file() and path.name in (ONNX_FILE, JSON_FILE):
        path = path.parent
    if not path.exists():
        raise PolicyError(f"no exported policy at {path}: the folder does not exist")
    if not path.is_dir():
        raise PolicyError(f"{path} is a file, not an exported policy folder "
                          f"(a folder with {ONNX_FILE} and {JSON_FILE}; `nardy export` writes one)")
    missing = [name for name in (ONNX_FILE, JSON_FILE) if not (path / name).is_file()]
    if len(missing) == 2 and (path / "checkpoint.pt").is_file():  # a run directory, not an export
        raise PolicyError(f"{path} is a run directory (it holds checkpoint.pt), not an exported policy: name "
                          f"it as a player (--player {path}; load_player in Python), or export it first with "
                          f"`nardy export {path} --out DIR`")
    odd = [f"{name} {not_a_file(path / name)}" for name in missing if not_a_file(path / name)]
    if odd:
        raise PolicyError(f"{path} is not a usable exported policy: {'; '.join(odd)} (an export writes "
                          f"{ONNX_FILE} and {JSON_FILE} as files)")
    if missing:
        raise PolicyError(f"{path} is not a complete exported policy: {' and '.join(missing)} "
                          f"{'is' if len(missing) == 1 else 'are'} missing "
                          f"(an export writes {ONNX_FILE} and {JSON_FILE} together)")
    return path


def _check_shape(file: Path, where: str, got: Any, want: list[Any]) -> None:
    """A policy.json shape: the batch dimension any name or null, the others exact."""
    if (not isinstance(got, list) or len(got) != len(want)
            or any(g != w for g, w in zip(got[1:], want[1:], strict=True))
            or isinstance(got[0], int | float)):
        raise PolicyError(f"{file}: the {where} shape is {got!r}; the contract is {want!r} "
                          "(N: any batch size)")


def read_policy_json(path: str | Path) -> dict[str, Any]:
    """Read and check the policy.json of a policy folder; PolicyError says what is wrong."""
    folder = _folder(path)
    file = folder / JSON_FILE
    try:
        info = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PolicyError(f"{file} is not valid JSON: {exc}") from None
    except RecursionError:  # [[[[...]]]]: Python's parser gives up before JSON does
        raise PolicyError(f"{file} is not a policy.json: its JSON is nested too deeply to read") from None
    if not isinstance(info, dict):
        raise PolicyError(f"{file} must hold a JSON object, got {type(info).__name__}")
    if info.get("format") != POLICY_FORMAT:
        found = info.get("format")
        newer = " (a newer export needs a newer nardy)" if isinstance(found, str) and found.startswith("nardy-policy/") else ""
        raise PolicyError(f"{file} has format {found!r}; this code reads {POLICY_FORMAT!r}{newer}")
    missing = [k for k in _REQUIRED_KEYS if k not in info]
    if missing:
        raise PolicyError(f"{file} lacks the key(s) {missing}")
    if not isinstance(info["rules"], dict):
        raise PolicyError(f"{file}: 'rules' must be an object of RULES.md variant keys")
    try:
        Rules.from_dict(info["rules"])
    except (RulesError, TypeError) as exc:
        raise PolicyError(f"{file}: rules: {exc}") from None
    version = info["features_version"]
    if not isinstance(version, str) or not version:
        raise PolicyError(f"{file}: 'features_version' must be a string, got {version!r}")
    # A version this code does not compute still plays: the encoding is inside the graph (docs/policy.md).
    network = info["network"]
    if not isinstance(network, dict):
        raise PolicyError(f"{file}: 'network' must be an object")
    if network.get("features_version", version) != version:
        raise PolicyError(f"{file}: features version mismatch: the network records "
                          f"{network.get('features_version')!r}, the file {version!r}")
    hidden = network.get("hidden", [])
    if not isinstance(hidden, list) or not all(type(h) is int and h > 0 for h in hidden):
        raise PolicyError(f"{file}: network 'hidden' must be a list of layer sizes (whole numbers above 0), "
                          f"got {hidden!r}")
    inp = info["input"]
    if not isinstance(inp, dict) or inp.get("name") != INPUT_NAME or inp.get("dtype") != "float32":
        raise PolicyError(f"{file}: 'input' must describe one float32 input named {INPUT_NAME!r}, "
                          f"got {inp!r}")
    _check_shape(file, "input", inp.get("shape"), ["N", RAW_SIZE])
    outs = info["outputs"]
    if not isinstance(outs, list) or not all(isinstance(o, dict) for o in outs):
        raise PolicyError(f"{file}: 'outputs' must be a list of output descriptions")
    names = [o.get("name") for o in outs]
    if sorted(map(str, names)) != sorted(OUTPUT_NAMES):
        raise PolicyError(f"{file}: outputs are {names}; the contract is {list(OUTPUT_NAMES)}")
    for o in outs:
        _check_shape(file, f"output {o['name']!r}", o.get("shape"),
                     ["N", len(OUTCOME_NAMES)] if o["name"] == "outcomes" else ["N"])
    training = info["training"]
    if not isinstance(training, dict) or "games" not in training or "config" not in training:
        raise PolicyError(f"{file}: 'training' must be an object with 'games' and 'config'")
    games = training["games"]
    if type(games) is not int or games < 0:
        raise PolicyError(f"{file}: training 'games' must be a whole number, 0 or more, got {games!r}")
    config = training["config"]
    if config is not None and not isinstance(config, dict):
        raise PolicyError(f"{file}: training 'config' must be the run's settings (an object) or null, got "
                          f"{type(config).__name__} {json.dumps(config)[:60]}")
    trained = config.get("rules") if isinstance(config, dict) else None
    if trained is not None:  # the run's own rules (maybe fewer keys) must be the file's
        try:
            same = Rules.from_dict(trained) == Rules.from_dict(info["rules"])
        except (RulesError, TypeError, AttributeError) as exc:
            raise PolicyError(f"{file}: training config rules: {exc}") from None
        if not same:
            raise PolicyError(f"{file} contradicts itself: its rules are {json.dumps(info['rules'])}, but the "
                              f"training config it records played {json.dumps(trained)}")
    return info


def _may_name_external_data(model: bytes) -> bool:
    """Whether a protobuf graph's bytes spell ``location``, the key onnxruntime needs to read a
    tensor's external data (protobuf keeps strings as they are, so one that names a file does)."""
    return b"location" in model


def _external_data(model: bytes) -> list[str]:
    """The files a graph's tensors name as external data (none in ours: an export is one file).

    Every tensor anywhere in the model is looked at (initializers, sparse ones, node attributes
    of every kind, subgraphs, local functions). Checked with the onnx package when it is
    installed (a dependency of nardy); a graph that spells ``location`` is also loaded from an
    empty folder (``_session``), so one the check missed still finds nothing to read.

    A graph whose bytes never spell ``location`` (the key onnxruntime requires to read external
    data: a tensor marked external without it is refused by onnxruntime itself) names none: then the onnx package, 0.6 s to import, is not loaded (a one-position ``nardy hint``
    takes about a second in all)."""
    if not _may_name_external_data(model):
        return []
    try:
        import onnx
        from google.protobuf.message import Message
    except ImportError:
        return []
    try:
        proto = onnx.load_model_from_string(model)
    except Exception:  # not a graph at all: onnxruntime says so in its own words
        return []
    found: list[str] = []
    stack: list = [proto]
    while stack:
        message = stack.pop()
        if isinstance(message, onnx.TensorProto) and (
                message.data_location == onnx.TensorProto.EXTERNAL or len(message.external_data)):
            found.append(next((e.value for e in message.external_data if e.key == "location"), "?"))
        for field, value in message.ListFields():
            if field.type != field.TYPE_MESSAGE:
                continue
            if isinstance(value, Message):
                stack.append(value)
            else:  # a repeated field of messages
                stack.extend(v for v in value if isinstance(v, Message))
    return found


def import_onnxruntime() -> Any:
    """``onnxruntime``, told first to collect no telemetry: from 1.29 its import keeps a device id
    and a usage database under ~/.cache/Microsoft and may send usage data, on every platform.
    A choice already in the environment (``ORT_DISABLE_TELEMETRY`` set to a value, not empty;
    worker processes inherit it) is left as it is; a program that imported onnxruntime itself
    decided before."""
    if not os.environ.get("ORT_DISABLE_TELEMETRY"):  # (onnxruntime takes an empty value as 0)
        os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    import onnxruntime

    return onnxruntime


MAX_THREADS = 1024
"""The most onnxruntime threads an evaluator is given (its own limit is a C int)."""


def _session(model: str | Path | bytes, threads: int, where: str | None = None):
    try:
        ort = import_onnxruntime()
    except ImportError:
        raise PolicyError("onnxruntime is not installed; an exported policy needs it "
                          "(pip install onnxruntime)") from None
    where = where or ("the model" if isinstance(model, bytes) else str(model))
    try:
        data = model if isinstance(model, bytes) else Path(model).read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read {where}: {exc.strerror or exc}") from None
    external = _external_data(data)
    if external:
        raise PolicyError(f"{where} names external data files ({printable(', '.join(external[:3]))}); "
                          "an exported policy is one self-contained file, so this one is not loaded")
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, int(threads))
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    # ONNX's protobuf only: given bytes, onnxruntime would also take its own ORT format, whose
    # tensors name external data in a way the check above cannot see.
    options.add_session_config_entry("session.load_model_format", "ONNX")
    try:
        if not _may_name_external_data(data):  # no tensor can name external data: from the bytes
            return ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
        # From a file in an empty folder of its own: onnxruntime looks for external data beside
        # the model, and finds nothing there to read (given bytes, it would look in the working
        # directory).
        with tempfile.TemporaryDirectory(prefix="nardy-policy-") as folder:
            alone = Path(folder) / "policy.onnx"
            alone.write_bytes(data)
            return ort.InferenceSession(str(alone), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own classes for unreadable graphs
        raise PolicyError(f"onnxruntime cannot load {where}: {printable(str(exc).strip())}") from None


def _check_io(session, where: str) -> None:
    """The graph's inputs and outputs against the contract."""
    inputs = session.get_inputs()
    if len(inputs) != 1 or inputs[0].name != INPUT_NAME:
        raise PolicyError(f"{where}: inputs are {[i.name for i in inputs]}; the contract is one "
                          f"input named {INPUT_NAME!r}")
    _check_graph_arg(where, inputs[0], [None, RAW_SIZE])
    outputs = {o.name: o for o in session.get_outputs()}
    if sorted(outputs) != sorted(OUTPUT_NAMES):
        raise PolicyError(f"{where}: outputs are {list(outputs)}; the contract is {list(OUTPUT_NAMES)}")
    _check_graph_arg(where, outputs["outcomes"], [None, len(OUTCOME_NAMES)])
    _check_graph_arg(where, outputs["equity"], [None])


def _check_graph_arg(where: str, arg, want: list[int | None]) -> None:
    if arg.type != "tensor(float)":
        raise PolicyError(f"{where}: {arg.name!r} has type {arg.type}; the contract is tensor(float) (float32)")
    shape = list(arg.shape)
    fits = len(shape) == len(want) and all(
        (not isinstance(s, int)) if w is None else s == w for s, w in zip(shape, want, strict=True))
    if not fits:
        wanted = ["N" if w is None else w for w in want]
        raise PolicyError(f"{where}: {arg.name!r} has shape {shape}; the contract is {wanted} "
                          "with a dynamic batch size N")


class OnnxEvaluator:
    """Outcome probabilities and equities from an exported ``policy.onnx`` (onnxruntime, CPU).

    ``threads``: onnxruntime's intra-op threads, a whole number from 1 to
    ``MAX_THREADS`` (1024; ValueError otherwise; default 1: evaluation runs one
    process per CPU, and search batches are small).
    """

    def __init__(self, model: str | Path | bytes, threads: int = 1, where: str | None = None) -> None:
        where = where or ("the model" if isinstance(model, bytes) else str(model))
        if not isinstance(model, bytes):
            try:
                model = Path(model).read_bytes()
            except OSError as exc:
                raise PolicyError(f"cannot read {where}: {exc.strerror or exc}") from None
        # The graph's bytes as loaded, so a copy runs exactly this graph, whatever happens to the file.
        self._model = model
        self.where = where
        if not is_whole(threads, 1) or threads > MAX_THREADS:  # onnxruntime took 0, -5 and 1.5 for 1, "3" for 3
            raise ValueError(f"threads must be a whole number from 1 to {MAX_THREADS} (onnxruntime's threads "
                             f"for one evaluation), got {threads!r}")
        self._threads = int(threads)
        self.session = _session(model, self._threads, where)
        _check_io(self.session, where)
        self.metadata: dict[str, str] = dict(self.session.get_modelmeta().custom_metadata_map)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    def __getstate__(self) -> dict[str, Any]:
        # An onnxruntime session cannot be pickled: a copy (deepcopy, a worker
        # process) carries the graph's bytes and builds its own session.
        return {"model": self._model, "threads": self._threads, "where": self.where}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"], state["threads"], state.get("where"))  # type: ignore[misc]

    def run(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """float32 ``[N, 50]`` raw positions -> (``outcomes`` ``[N, 4]``, ``equity`` ``[N]``)."""
        raw = checked_raw(raw)
        outcomes, equity = self.session.run(list(OUTPUT_NAMES), {INPUT_NAME: raw})
        # The contract's outputs are a softmax and its equity: anything else (a damaged or foreign graph)
        # would be played and reported as if it meant something.
        row = unsound_row(outcomes, equity)
        if row is not None:
            raise PolicyError(f"{self.where}: the graph's outputs for row {row} are not outcome probabilities "
                              f"and an equity (outcomes {outcomes[row].tolist()}, equity {float(equity[row])}); "
                              "the file is damaged or not a nardy policy")
        return outcomes, equity

    def outcomes(self, raw: np.ndarray) -> np.ndarray:
        """float32 ``[N, 50]`` -> ``[N, 4]`` probabilities [win, win mars, lose, lose mars]."""
        return self.run(raw)[0]

    def equity(self, raw: np.ndarray) -> np.ndarray:
        """float32 ``[N, 50]`` -> ``[N]`` cubeless equities, as the graph computes them."""
        return self.run(raw)[1]


def load_policy(path: str | Path, threads: int = 1) -> tuple[OnnxEvaluator, dict[str, Any]]:
    """Load and check a policy folder: the evaluator and policy.json's content.

    Raises PolicyError for a missing folder or file, a wrong format, a graph
    whose inputs or outputs break the contract, or a policy.onnx that is not the
    one policy.json describes: its SHA-256 (``onnx.sha256``, which nardy export
    records; a policy.json from elsewhere may leave it out) or the format, features
    version or rules that the graph's metadata repeats differ from policy.json's;
    ValueError for ``threads`` outside 1..``MAX_THREADS`` (as ``OnnxEvaluator``).
    """
    folder = _folder(path)
    info = read_policy_json(folder)
    onnx_path = folder / ONNX_FILE
    recorded = info.get("onnx", {}).get("sha256") if isinstance(info.get("onnx"), dict) else None
    try:
        model = onnx_path.read_bytes()  # hashed and run from the same bytes, whatever happens to the file
    except OSError as exc:
        raise PolicyError(f"cannot read {onnx_path}: {exc.strerror or exc}") from None
    if recorded is not None and recorded != hashlib.sha256(model).hexdigest():
        raise PolicyError(f"{onnx_path} does not match {folder / JSON_FILE}: its SHA-256 differs from the "
                          "one recorded at export (the two files come from different exports)")
    evaluator = OnnxEvaluator(model, threads=threads, where=str(onnx_path))
    meta = evaluator.metadata
    for key, meta_key in METADATA_KEYS.items():
        if meta_key in meta and meta[meta_key] != info[key]:
            raise PolicyError(f"{onnx_path} does not match {folder / JSON_FILE}: the model's "
                              f"{key} is {meta[meta_key]!r}, policy.json's {info[key]!r}")
    if RULES_METADATA in meta:
        try:
            graph_rules = Rules.from_dict(json.loads(meta[RULES_METADATA]))
        except (ValueError, TypeError, AttributeError) as exc:
            raise PolicyError(f"{onnx_path}: its metadata {RULES_METADATA} cannot be read: {exc}") from None
        if graph_rules != Rules.from_dict(info["rules"]):
            raise PolicyError(f"{onnx_path} does not match {folder / JSON_FILE}: the model was exported for "
                              f"rules {graph_rules.to_json()}, policy.json says {json.dumps(info['rules'])}")
    return evaluator, info


def onnx_player(path: str | Path, ply: int = 0, rules: RulesLike | None = None, filter_k: int = 5,
                threads: int = 1) -> SearchPlayer:
    """A search player over an exported policy (rules default to the ones it was trained under)."""
    evaluator, info = load_policy(path, threads=threads)
    trained = Rules.from_dict(info["rules"])
    rules = rules_to_play(path, trained, rules)
    player = SearchPlayer(evaluator, ply=ply, rules=rules, filter_k=filter_k, name=str(path))
    player.trained_under = trained
    return player

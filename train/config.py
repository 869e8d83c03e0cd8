"""Training configuration: one frozen dataclass; YAML files only override it.

Every run writes its resolved configuration to ``config.json`` in its run
directory. Unknown keys and values of the wrong kind are errors that name the
key, so a typo never trains with a silent default.
"""

from __future__ import annotations

import dataclasses
import decimal
import difflib
import io
import json
import math
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.bots import BOTS
from agents.common import MAX_LAYERS, MAX_PARAMETERS, network_parameters
from agents.files import shipped_data, write_atomic
from agents.levels import LEVELS
from agents.registry import is_level, split_ply
from nardy_env import Rules, RulesError
from nardy_env._runtime import is_control
from nardy_env.players import names_code
from train.evaluate import MAX_GAMES

__all__ = ["TrainConfig", "ConfigError", "load_config", "config_file", "shipped_config_names", "SHIPPED_CONFIGS"]


EVAL_RECORD_KEYS = ("games_trained", "time", "final", "seed", "rules", "nardy_version")
"""The keys of an eval.jsonl record besides its opponents' results (docs/training.md)."""
MAX_LAYER = 65536
"""Largest hidden layer a config may ask for (a guard against typos like 1e9)."""
EVAL_BOTS = ("random", *BOTS)
"""Bots evaluated against by name; with ``default`` (the shipped player, ``@N`` allowed) and its
levels (``agents.levels.LEVELS``), the names an entry may have that are not paths of players."""


MAX_UPDATES_PER_SAMPLE = 1000
"""The largest replay ratio a config may ask for (each new position sampled this many times on average)."""


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything a self-play TD training run needs."""

    name: str = "default"
    """Run name: the default run directory is runs/<name>."""
    seed: int = 0
    """Seeds the network's initial weights, the learner and every self-play task."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Rule variant keys of RULES.md (empty: the defaults, the 2026 sports code played cubeless)."""
    hidden: tuple[int, ...] = (128, 64)
    """Hidden layer sizes of the network."""
    init_from: str = ""
    """Weights a new run starts from instead of random ones: a checkpoint file, a run directory, or
    ``default`` (the shipped player); its hidden sizes must be ``hidden``. Only the weights are
    taken: optimizer, counters, learning rate and exploration start as this config says ("": none)."""
    total_games: int = 100_000
    """Self-play games to train on; the run stops once it has played this many. Games come
    in whole tasks of ``games_per_task``, so the count reached may pass it by less than
    one task. ``--resume --set total_games=N`` trains a run further: the
    schedules go on from the values reached."""
    actors: int = 0
    """Self-play actors (Ray workers); 0 = one per CPU of the Ray cluster. The one learner caps the
    pace: on a 16-CPU machine near 2,000 games/s, reached with about 15 actors (docs/training.md)."""
    games_per_task: int = 128
    """Games one actor plays in lockstep per task; weights are refreshed between tasks."""
    lam: float = 0.7
    """TD(lambda): weight of later positions in the forward-view lambda-return."""
    epsilon: float = 0.05
    """Chance of a uniformly random play instead of the greedy one, at the start."""
    epsilon_final: float = 0.0
    """Exploration at the end of the run (linear in games played from ``epsilon``: a decay, or a rise if higher)."""
    lr: float = 1e-3
    """Adam learning rate at the start."""
    lr_final: float = 1e-4
    """Learning rate at the end of the run (linear in games played from ``lr``: a decay, or a rise if higher)."""
    batch_size: int = 512
    """Samples per gradient step."""
    replay_size: int = 200_000
    """Most recent positions kept for minibatches."""
    updates_per_sample: float = 1.0
    """Gradient-step samples per new position (replay ratio; at most 1,000)."""
    eval_every_games: int = 20_000
    """Evaluate against the bots every this many games (0: only at the end); the final
    evaluation stands for the one due at the end."""
    eval_games: int = 200
    """Games per periodic evaluation against each opponent (paired dice, even)."""
    eval_opponents: tuple[str, ...] = ("random", "race", "heuristic")
    """Players to evaluate against: bot names or paths of players (docs/training.md)."""
    final_eval_games: int = 1000
    """Games of the final evaluation against each opponent, printed at the end."""
    checkpoint_every_games: int = 10_000
    """Write checkpoint.pt every this many games (and at the end)."""
    keep_checkpoints: int = 3
    """Older checkpoints kept as checkpoint-<games>.pt (0: only the latest)."""
    log_every_seconds: float = 10.0
    """TensorBoard scalars at most this often."""

    def __post_init__(self) -> None:
        def need(cond: bool, key: str, what: str, got: bool = True) -> None:
            """ConfigError ``KEY must be WHAT, got VALUE`` (``got``: unless WHAT names the bad items)."""
            if not cond:
                value = getattr(self, key)
                shown = list(value) if isinstance(value, tuple) else value  # as written: a list
                raise ConfigError(f"{key} must be {what}" + (f", got {shown!r}" if got else ""))

        def is_int(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        # Types first (TrainConfig(...) and dataclasses.replace() come here without from_dict):
        # an integer setting takes only whole numbers, a number setting any real number.
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                if isinstance(value, np.integer):
                    value = int(value)
                    object.__setattr__(self, f.name, value)
                if not is_int(value):
                    raise ConfigError(f"{f.name} must be an integer, got {value!r}")
            elif f.type == "float":
                if isinstance(value, np.integer | np.floating):
                    value = float(value)
                    object.__setattr__(self, f.name, value)
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f"{f.name} must be a number, got {value!r}")
            elif f.type == "str" and not isinstance(value, str):
                raise ConfigError(f"{f.name} must be a string, got {value!r}")

        need(isinstance(self.name, str) and self.name.strip() != "" and not any(map(is_control, self.name)),
             "name", "a non-empty string without control characters")
        sizes = (self.hidden.strip("()[] ") if isinstance(self.hidden, str)
                 and re.fullmatch(r"[ (\[]*\d+( *, *\d+)*[ )\]]*", self.hidden)
                 else str(self.hidden) if is_int(self.hidden) else "")
        if not all(0 < int(n) <= MAX_LAYER for n in re.findall(r"\d+", sizes)):
            sizes = ""  # the list would be refused too: the plain message
        listed = f" (a list in brackets: --set 'hidden=[{sizes}]')" if sizes else ""
        if listed:
            raise ConfigError(f"hidden must be a list of layer sizes, integers 1..{MAX_LAYER}, got "
                              f"{self.hidden!r}{listed}")
        need(isinstance(self.hidden, list | tuple) and len(self.hidden) > 0
             and all(is_int(h) and 0 < h <= MAX_LAYER for h in self.hidden),
             "hidden", f"a list of layer sizes, integers 1..{MAX_LAYER}")
        object.__setattr__(self, "hidden", tuple(self.hidden))
        need(not any(map(is_control, self.init_from)) and (self.init_from == "" or self.init_from.strip() != ""),
             "init_from",
             "a checkpoint file, a run directory or default, without control characters")
        need(len(self.hidden) <= MAX_LAYERS and network_parameters(self.hidden) <= MAX_PARAMETERS, "hidden",
             f"at most {MAX_LAYERS} layers and {MAX_PARAMETERS:,} parameters in all (these layers make "
             f"{network_parameters(self.hidden):,})")
        need(isinstance(self.eval_opponents, list | tuple) and len(self.eval_opponents) > 0
             and all(isinstance(o, str) for o in self.eval_opponents),
             "eval_opponents", "a list of player names (at least one), e.g. [random, heuristic]")
        object.__setattr__(self, "eval_opponents", tuple(self.eval_opponents))
        twice = sorted({o for o in self.eval_opponents if self.eval_opponents.count(o) > 1})
        need(not twice, "eval_opponents", f"players named once each ({twice} given more than once: the same "
             "games again)", got=False)
        taken = sorted(set(self.eval_opponents) & set(EVAL_RECORD_KEYS))
        need(not taken, "eval_opponents", f"player names other than eval.jsonl's own keys {list(EVAL_RECORD_KEYS)} "
             f"({taken} are taken)", got=False)
        # No code players: a config travels with a run directory (config.json, the checkpoint's copy),
        # and resuming someone's run must not run a file it names. Measure yours with nardy eval.
        code = [o for o in self.eval_opponents if names_code(o)]
        need(not code, "eval_opponents", f"bots or network players (a run, checkpoint or export), not code "
             f"(FILE.py:NAME, module:NAME: a run's config must not name code to run; measure such a player "
             f"with nardy eval): {code} would run code", got=False)
        # A bare name must be a bot (a typo like "heurstic" fails here, not hours into the run);
        # anything with a path in it is checked when it is loaded.
        try:
            depths = {o: split_ply(o) for o in self.eval_opponents}
        except ValueError as exc:  # "race@-1: the search depth after '@' is a whole number, 0 or more"
            raise ConfigError(f"eval_opponents must be player names whose '@N' is a whole number, 0 or more: "
                              f"{exc}") from None
        unknown = [o for o, (base, _) in depths.items()
                   if base not in (*EVAL_BOTS, "default", *LEVELS) and "/" not in o and os.sep not in o
                   and not Path(o).exists()]
        need(not unknown, "eval_opponents",
             f"bots ({', '.join(EVAL_BOTS)}), the shipped player (default) and its levels "
             f"({', '.join(LEVELS)}), or paths of players (from the folder the command runs in); "
             f"unknown {unknown}", got=False)
        searching = [o for o, (base, ply) in depths.items() if base in EVAL_BOTS and ply]
        need(not searching, "eval_opponents", f"bot names without '@N' (bots do not search: {searching})", got=False)
        drawn = [o for o, (base, ply) in depths.items() if is_level(base) and ply]
        need(not drawn, "eval_opponents", f"levels without '@N' (a level draws its plays by the shipped player's "
             f"0-ply equities: {drawn})", got=False)
        need(isinstance(self.rules, dict), "rules", "a mapping of rule variant keys")
        need(0 <= self.seed < 2**64, "seed", "a whole number from 0 to 2**64 - 1")
        need(self.total_games > 0, "total_games", "a positive number")
        need(self.actors >= 0, "actors", "0 (one per CPU) or more")
        need(self.games_per_task > 0, "games_per_task", "a positive number")
        need(0.0 <= self.lam <= 1.0, "lam", "a number in [0, 1]")
        need(0.0 <= self.epsilon <= 1.0, "epsilon", "a probability")
        need(0.0 <= self.epsilon_final <= 1.0, "epsilon_final", "a probability")
        need(0 < self.lr < math.inf, "lr", "a positive learning rate")
        need(0 < self.lr_final < math.inf, "lr_final", "a positive learning rate")
        need(self.batch_size > 0, "batch_size", "a positive number")
        need(self.replay_size >= self.batch_size, "replay_size", f"at least batch_size ({self.batch_size})")
        need(0 < self.updates_per_sample <= MAX_UPDATES_PER_SAMPLE, "updates_per_sample",  # 1e300: a step count no run ends
             f"a positive number up to {MAX_UPDATES_PER_SAMPLE:,}")
        need(self.eval_every_games >= 0, "eval_every_games", "0 or more")
        need(2 <= self.eval_games <= MAX_GAMES and self.eval_games % 2 == 0, "eval_games",
             f"an even number from 2 to {MAX_GAMES:,}")
        need(0 <= self.final_eval_games <= MAX_GAMES and self.final_eval_games % 2 == 0, "final_eval_games",
             f"an even number up to {MAX_GAMES:,} (0: none)")
        need(self.checkpoint_every_games > 0, "checkpoint_every_games", "a positive number")
        need(self.keep_checkpoints >= 0, "keep_checkpoints", "0 or more")
        need(0 <= self.log_every_seconds < math.inf, "log_every_seconds", "0 or more, a finite number of seconds")
        try:
            # Resolved: every variant key with its value (config.json then names the rules in full,
            # as eval results and policy.json do; {} and the defaults spelt out are the same rules).
            object.__setattr__(self, "rules", Rules.from_dict(self.rules).to_dict())
        except (RulesError, TypeError) as exc:
            raise ConfigError(f"rules: {exc}") from None

    @property
    def rules_obj(self) -> Rules:
        """The rules as a Rules value."""
        return Rules.from_dict(self.rules)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        d = dataclasses.asdict(self)
        d["hidden"] = list(self.hidden)
        d["eval_opponents"] = list(self.eval_opponents)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> TrainConfig:
        """Build from keys, rejecting unknown ones by name."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known, key=str)
        if unknown:
            raise ConfigError(f"{where}: {unknown_keys(unknown, known)}; known keys: {sorted(known)}")
        types = {f.name: f.type for f in fields(cls)}
        clean = {}
        for key, value in data.items():
            expected = types[key]
            value = number_from_text(value) if expected in ("int", "float") else value
            if expected in ("int", "float") and isinstance(value, np.integer | np.floating):
                value = value.item()  # numpy's numbers, as the other APIs take them (np.bool_ stays no number)
            if expected == "int" and isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                value = int(value)  # 1000.0, as 1e3 already is
            if expected in ("int",) and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(f"{where}: {key} must be an integer, got {value!r}")
            if expected in ("float",) and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ConfigError(f"{where}: {key} must be a number, got {value!r}")
            if expected == "str" and not isinstance(value, str):
                quoted = " (it is text: quote it in a YAML file)" if isinstance(value, int | float) else ""
                raise ConfigError(f"{where}: {key} must be a string, got {value!r}{quoted}")
            clean[key] = value
        try:
            return cls(**clean)
        except (TypeError, ConfigError) as exc:  # a value out of range: say where it came from too
            raise ConfigError(f"{where}: {exc}") from None

    def to_json(self) -> str:
        """The resolved settings as a run's config.json holds them."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path`` atomically."""
        text = self.to_json().encode("utf-8")
        write_atomic(Path(path), lambda fh: fh.write(text))


_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def number_from_text(value: Any) -> Any:
    """``1e-4`` as a number: YAML 1.1 (PyYAML) reads exponents without a dot as strings.
    An integer setting takes one only when it is whole (``4e5``)."""
    if not isinstance(value, str) or not _NUMBER.fullmatch(value.strip()):
        return value
    exact = decimal.Decimal(value.strip())
    if exact == exact.to_integral_value() and abs(exact.adjusted()) <= 100:  # 1e16: exactly 10**16
        return int(exact)
    return float(exact)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently, so an edit to the first copy would do nothing)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *anchor": its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base class says so
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice (line {key_node.start_mark.line + 1})",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """YAML 1.1's integers, less its surprises: ``010`` (octal, 8) and ``1:30`` (base 60, 90) are
        refused; a number is written plainly, or quoted to be text."""
        text = str(self.construct_scalar(node)).replace("_", "")  # type: ignore[no-untyped-call]
        digits = text.lstrip("+-")
        if ":" in text or (len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()):
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is a number in base {60 if ':' in text else 8} to YAML 1.1 "
                f"({super().construct_yaml_int(node)}): write it without {'the colon' if ':' in text else 'the leading 0'}, "
                "or quote it to mean text", node.start_mark)
        return super().construct_yaml_int(node)  # type: ignore[no-any-return]

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        """YAML 1.1's floats, less base 60 (``1:30.5``)."""
        text = str(self.construct_scalar(node))  # type: ignore[no-untyped-call]
        if ":" in text:
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is a number in base 60 to YAML 1.1: write it without the colon, "
                "or quote it to mean text", node.start_mark)
        return super().construct_yaml_float(node)  # type: ignore[no-any-return]


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", _UniqueKeyLoader.construct_yaml_float)


def unknown_keys(unknown: list[Any], known: set[str], rules_hint: bool = True) -> str:
    """``unknown key(s) [...]``, with the known key each one most likely meant; ``rules_hint``:
    say that a rule variant key goes under ``rules`` (not where rules cannot change: a resume)."""
    by_lower = {k.lower(): k for k in known}
    guesses = []
    for key in unknown:
        close = difflib.get_close_matches(str(key).lower(), list(by_lower), n=1, cutoff=0.6)
        if close:
            guesses.append(f"{key} -> {by_lower[close[0]]}")
    meant = f" (did you mean: {', '.join(guesses)}?)" if guesses else ""
    # A rule variant key written as a setting: it belongs under rules.
    from nardy_env.rules import Rules

    variants = [str(key) for key in unknown if str(key) in Rules().to_dict() and "rules" in known]
    if variants and rules_hint:
        meant += (f" ({', '.join(variants)} {'is a rule variant key' if len(variants) == 1 else 'are rule variant keys'}:"
                  f" put {'it' if len(variants) == 1 else 'them'} under rules: rules: {{{variants[0]}: ...}} in a "
                  f"config file, --set 'rules={{{variants[0]}: ...}}' on the command line)")
    return f"unknown key(s) {unknown}{meant}"


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` texts as settings: VALUE is read as YAML (``[64, 32]``, ``1e-3``,
    ``{block_rule: home}``), except that a text setting (``name``) takes VALUE as written unless
    it is quoted. A key given twice, or without a value, is refused."""
    texts = {f.name for f in fields(TrainConfig) if f.type == "str"}
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set takes KEY=VALUE, got {pair!r}")
        if key in out:
            raise ConfigError(f"--set {key} is given twice ({written[key]!r}, then {value.strip()!r}): "
                              "give each setting once")
        if key in texts:  # name=2024, name=12:30, name=run #1: the text as written, less quotes around it
            text = value.strip()
            unquoted = text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text
            parsed = unquoted or None
        else:
            try:
                parsed = yaml.load(value, Loader=_UniqueKeyLoader)  # a SafeLoader
            except yaml.constructor.ConstructorError as exc:  # 010, a key twice: say why
                raise ConfigError(f"--set {key}: {exc.problem}") from None
            except yaml.YAMLError:
                parsed = value  # not YAML: the config check says what the key needs
            except ValueError as exc:  # PyYAML's own date check: 2024-13-45
                raise ConfigError(f"--set {key}: {value.strip()!r} is no value YAML can read ({exc})") from None
        if parsed is None:
            raise ConfigError(f"--set {pair.strip()!r}: {key} needs a value")
        out[key], written[key] = parsed, value.strip()
    return out


SHIPPED_CONFIGS = shipped_data(__file__, "configs", "configs")  # a wheel's train/configs, or the checkout's
"""The folder of the shipped configs (smoke, quick, default): ``load_config("quick")`` reads its quick.yaml."""


def shipped_config_names() -> list[str]:
    """The names of the shipped configs, as ``--config NAME`` takes them."""
    return sorted(p.stem for p in SHIPPED_CONFIGS.glob("*.yaml"))


def config_file(spec: str | Path) -> Path:
    """The YAML file ``spec`` names: a path, or the bare name of a shipped config (``quick``), which
    a file of that name in the working directory comes before (a folder does not)."""
    path = Path(spec)
    if not path.is_file() and re.fullmatch(r"[A-Za-z0-9_-]+", str(spec)):
        shipped = SHIPPED_CONFIGS / f"{spec}.yaml"
        if shipped.is_file():
            return shipped
    return path


def load_config(path: str | Path | None, overrides_from: str = "overrides", **overrides: Any) -> TrainConfig:
    """Defaults, overridden by a YAML file (if given: a path, or a shipped config's name such as
    ``"quick"``), then by ``overrides``.

    ``overrides_from`` names where the overrides came from in error messages
    (the CLI passes ``"--set"``).
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = config_file(path)
        if not path.is_file():
            names = ", ".join(shipped_config_names()) or "none in this installation"
            raise ConfigError(f"no config file at {path} (the shipped configs go by name: {names}; a YAML "
                              "file of your own works too: docs/training.md lists every key and its default)")
        try:
            text = io.StringIO(path.read_text(encoding="utf-8"))  # decoded whole: a bad byte's offset is the file's
            text.name = str(path)  # named: YAML's messages say which file
            loaded = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): "
                              "is it a YAML config?") from None
        except ValueError as exc:  # PyYAML's own date check (2024-13-45) raises no YAMLError
            dated = any(word in str(exc) for word in ("month", "day", "year"))
            raise ConfigError(f"{path} holds a value YAML cannot read: {exc}"
                              + (" (YAML reads it as a date: quote it to mean text)" if dated else "")) from None
        if loaded is None:  # an empty file (or comments only): a truncated copy, a wrong file
            raise ConfigError(f"{path} holds no settings (it is empty, or comments only); a config gives the "
                              "settings it changes, and {} on its own line takes every default "
                              "(docs/training.md lists them)")
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level")
        data.update(loaded)
        data.setdefault("name", path.stem)
    given = {k: v for k, v in overrides.items() if v is not None}
    data.update(given)
    where = str(path) if path else "config"
    if given:  # a bad value may come from the command line rather than the file: say so
        where += f" with {overrides_from} {', '.join(sorted(given))}"
    config = TrainConfig.from_dict(data, where=where)
    check_run_name(config.name, where)
    return config


def check_run_name(name: str, where: str) -> None:
    """ConfigError unless ``name`` can name runs/NAME: no path in it. For names given now (a new run,
    a resume's --set name=...); a saved run resumes whatever its name."""
    if "/" in name or os.sep in name or name in (".", ".."):
        raise ConfigError(f"{where}: name must be a run name without a path in it (runs/NAME is the default run "
                          f"directory; --out takes a path), got {name!r}")

"""Rule variants of Long Nardy (RULES.md, "Variants") as one frozen dataclass.

Every variant is a value passed to the rules core, never a global or a fork of
the code. The default instance is the 2026 sports code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

import numpy as np

__all__ = ["Rules", "RulesError", "RulesLike", "DEFAULT_RULES", "CUBELESS", "as_rules"]

CUBELESS: dict[str, Any] = {"cube": False, "match_length": 0}
"""RULES.md's cube and match keys with the only values implemented: no cube, single games."""

Opening = Literal["play", "reroll"]
BlockRule = Literal["ahead", "home"]

_OPENINGS = ("play", "reroll")
_BLOCK_RULES = ("ahead", "home")


class RulesError(ValueError):
    """A rules variant key or value that does not exist."""


@dataclass(frozen=True)
class Rules:
    """The variant keys of RULES.md that change how a game is played.

    The cube and match keys (``cube``, ``match_length``) belong to the cube and
    match layer, which does not exist yet: every game is a cubeless single game.
    ``from_dict`` accepts them only with the values that say so (``cube:
    false``, ``match_length: 0``, see ``CUBELESS``) and refuses the others by
    name; move generation never depends on them.
    """

    opening: Opening = "play"
    """``"play"``: the first move plays the opening dice (never a double);
    ``"reroll"``: the winner of the opening roll rolls two dice afresh."""

    head_exception: tuple[int, ...] = (3, 4, 6)
    """Double faces that let two checkers leave the head on a player's first turn."""

    block_rule: BlockRule = "ahead"
    """``"ahead"``: a six-block needs an opponent checker ahead of it (or off);
    ``"home"``: it needs an opponent checker already in its home (or off)."""

    _head_mask: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.opening not in _OPENINGS:
            raise RulesError(f"opening must be one of {list(_OPENINGS)}, got {self.opening!r}")
        if self.block_rule not in _BLOCK_RULES:
            raise RulesError(f"block_rule must be one of {list(_BLOCK_RULES)}, got {self.block_rule!r}")
        raw = self.head_exception
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (tuple, list, set, frozenset, np.ndarray)):
            raise RulesError(f"head_exception must be a list of die faces 1..6, got {raw!r}")
        items = list(raw)
        if any(isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, np.integer)) for f in items):
            raise RulesError(f"head_exception must be a list of die faces 1..6 (integers), got {items!r}")
        faces = tuple(sorted({int(f) for f in items}))
        if any(f < 1 or f > 6 for f in faces):
            raise RulesError(f"head_exception faces must be 1..6, got {items!r}")
        object.__setattr__(self, "head_exception", faces)
        mask = np.zeros(7, dtype=np.bool_)
        mask[list(faces)] = True
        mask.setflags(write=False)
        object.__setattr__(self, "_head_mask", mask)

    @property
    def head_mask(self) -> np.ndarray:
        """Boolean array indexed by die face: True where the first-turn exception applies."""
        return self._head_mask

    @property
    def block_home(self) -> bool:
        """True for the ``"home"`` block rule."""
        return self.block_rule == "home"

    def to_dict(self) -> dict[str, Any]:
        """Every key of RULES.md's variant table as plain JSON values (``cube`` and
        ``match_length`` fixed, ``CUBELESS``), so that every file naming rules names them alike."""
        d = asdict(self)
        d.pop("_head_mask", None)
        d["head_exception"] = list(self.head_exception)
        return {**d, **CUBELESS}

    def changes(self) -> dict[str, Any]:
        """The variant keys whose values differ from the 2026 sports code's (``Rules()``), as in
        ``to_dict``: ``{}`` for the sports code, ``{"block_rule": "home"}`` for that club variant."""
        code = Rules().to_dict()
        return {k: v for k, v in self.to_dict().items() if code[k] != v}

    def differences(self, other: Rules) -> tuple[str, str]:
        """The variant keys on which ``self`` and ``other`` differ, with each one's values, for
        messages: ``('block_rule "ahead"', 'block_rule "home"')``; empty strings when equal."""
        mine, theirs = self.to_dict(), other.to_dict()
        keys = [k for k in mine if mine[k] != theirs[k]]
        return (", ".join(f"{k} {json.dumps(mine[k])}" for k in keys),
                ", ".join(f"{k} {json.dumps(theirs[k])}" for k in keys))

    def to_json(self) -> str:
        """The variant keys as one line of JSON, as ``--rules`` takes them."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rules:
        """Build rules from variant keys (a dict or any mapping), rejecting unknown ones by name."""
        if not isinstance(data, Mapping):
            raise RulesError(f"rules must be a mapping of variant keys, got {type(data).__name__}")
        data = dict(data)
        known = {f.name for f in fields(cls) if f.init}  # every variant field, so a new one is read too
        named = sorted(map(str, data))
        if any(not isinstance(k, str) for k in data):
            raise RulesError(f"rules keys must be strings (variant names), got {named}")
        unknown = sorted(set(data) - known - set(CUBELESS))
        if unknown:
            raise RulesError(f"unknown rules key(s) {unknown}; known keys are {sorted(known | set(CUBELESS))}")
        for key, only in CUBELESS.items():
            if key in data and (type(data[key]) is not type(only) or data[key] != only):
                raise RulesError(
                    f"{key}={data[key]!r}: the cube and match play are not implemented yet; every game "
                    f"is a cubeless single game, so {key} can only be {json.dumps(only)} (or left out)")
        kwargs = {k: v for k, v in data.items() if k in known}
        if isinstance(kwargs.get("head_exception"), list):
            kwargs["head_exception"] = tuple(kwargs["head_exception"])
        return cls(**kwargs)


DEFAULT_RULES = Rules()

RulesLike = Rules | Mapping[str, Any]
"""What the public functions take as ``rules``: a ``Rules`` or a dict of variant keys."""


def as_rules(rules: RulesLike | None, what: str = "rules") -> Rules:
    """A Rules object from a Rules object or a dict of variant keys (None: the default rules)."""
    if isinstance(rules, Rules):
        return rules
    if rules is None:
        return DEFAULT_RULES
    if isinstance(rules, Mapping):
        return Rules.from_dict(rules)
    raise TypeError(f"{what} must be a Rules object or a dict of variant keys, got {type(rules).__name__}")


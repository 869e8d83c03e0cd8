"""The TD network: raw positions -> features -> MLP -> softmax over four outcomes.

Outcomes, from the view of the side that has just moved ("me"), in this order:
``[I win single, I win mars, I lose single, I lose mars]``. Equity is derived
from them: ``win + 2 * win_mars - lose - 2 * lose_mars`` (cubeless points).

The feature encoding runs inside the module (``RawFeatures``) so the network
and its ONNX export start from the same 50-number raw layout of FORMATS.md.
``nardy_env.encoding.features`` computes the same features (bit for bit, in
float32 on the CPU, for whole checker counts, the only valid input) compiled, several times faster for self-play's large batches; the
network takes them precomputed (``forward(raw, features)``) where they are.

The probabilities also respect what the position itself settles
(``known_outcomes``): a position where I have borne off all 15 is a win for
certain (mars when the opponent has none off); no mars is possible against a
side that has borne off a checker, so that mass goes to the single result.
The training loss works on the raw ``logits``; its TD targets, playing,
search and the exported graph all see the settled probabilities (``forward``),
so an immediate win is worth exactly its points and every unfinished position
strictly less.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from nardy_env.core import HOME_SIZE, NUM_CHECKERS, NUM_POINTS, is_whole
from nardy_env.encoding import FEATURES_VERSION, NUM_FEATURES, RAW_SIZE

from .common import EQUITY_WEIGHTS, MAX_LAYERS, MAX_PARAMETERS, OUTCOMES, network_parameters

__all__ = ["RawFeatures", "TDNetwork", "OUTCOMES", "EQUITY_WEIGHTS", "known_outcomes"]


_POINTS = NUM_POINTS


def _one_thread_after_fork() -> None:
    """torch's CPU threads (OpenMP) do not survive fork: in a child forked from a process whose
    network has run, the first forward pass would wait for them forever. With one thread it
    needs none (a server's forked workers, a ``fork`` multiprocessing pool). Registered on
    import, so every child forked after that gets one thread."""
    torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_thread_after_fork)
_NEVER_CERTAIN = 1.0 - 2.0**-20
"""The most probability an unfinished position gives its best outcome (``known_outcomes``)."""
_CHECKERS = float(NUM_CHECKERS)
_START_PIPS = float(NUM_CHECKERS * NUM_POINTS)  # as nardy_env.encoding scales pips: the start's count


class RawFeatures(nn.Module):
    """Torch twin of ``nardy_env.encoding.features`` (version ``nardy-features/1``)."""

    version = FEATURES_VERSION
    personal: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("personal", torch.arange(1, _POINTS + 1, dtype=torch.float32), persistent=False)

    def _side(self, counts: torch.Tensor, off: torch.Tensor, held_route: torch.Tensor) -> list[torch.Tensor]:
        dtype = counts.dtype  # the network's (float32; float64 or bfloat16 after .double(), .bfloat16())
        units = torch.stack([
            (counts >= 1).to(dtype),
            (counts >= 2).to(dtype),
            (counts >= 3).to(dtype),
            torch.clamp(counts - 3, min=0) / 2,
        ], dim=-1).reshape(counts.shape[0], _POINTS * 4)
        pips = counts @ self.personal.to(dtype)
        home = counts[:, :HOME_SIZE].sum(-1)
        run = torch.zeros_like(off)
        best = torch.zeros_like(off)
        for k in range(_POINTS):
            run = (run + 1) * held_route[:, k]
            best = torch.maximum(best, run)
        return [
            units,
            (off / _CHECKERS)[:, None],
            (pips / _START_PIPS)[:, None],
            (counts[:, _POINTS - 1] / _CHECKERS)[:, None],
            (home / _CHECKERS)[:, None],
            (torch.clamp(best, max=6) / 6)[:, None],
            ((home + off) == _CHECKERS).to(dtype)[:, None],
        ]

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        """Features ``[N, NUM_FEATURES]`` of raw positions ``[N, 50]``, as nardy_env.encoding computes them."""
        mine = raw[:, :_POINTS]
        theirs = raw[:, _POINTS:2 * _POINTS]
        mine_route = torch.roll((mine > 0).to(raw.dtype), -12, dims=1)
        theirs_route = torch.roll((theirs > 0).to(raw.dtype), -12, dims=1)
        parts = self._side(mine, raw[:, 48], mine_route) + self._side(theirs, raw[:, 49], theirs_route)
        return torch.cat(parts, dim=1)


def known_outcomes(raw: torch.Tensor, outcomes: torch.Tensor) -> torch.Tensor:
    """``outcomes`` [N, 4] with what the raw positions [N, 50] settle made exact.

    - I have borne off 15: I have won, ``[0, 1, 0, 0]`` if the opponent has
      none off (mars), else ``[1, 0, 0, 0]``; the opponent with 15 off
      likewise for the loss.
    - The opponent has borne off a checker: I cannot win a mars, so
      ``win_mars`` moves into ``win``; I have borne off one: ``lose_mars``
      moves into ``lose``.
    - An unfinished position is never quite a certain win: its best outcome
      (``win_mars``, or ``win`` once no mars is possible) is capped at
      ``1 - 2**-20`` (the rest moves one step down). So its equity stays
      strictly below that of winning now even where float32 saturates, and a
      plain argmax over a roll's results plays the win, whatever the order of
      the results (FORMATS.md breaks exact ties by that order).

    Element-wise ops only (``torch.where``, ``clamp``), so the ONNX export carries it.
    """
    win, win_mars, lose, lose_mars = outcomes.unbind(dim=-1)
    mine, theirs = raw[..., 48], raw[..., 49]
    zero = torch.zeros_like(win)
    one = torch.ones_like(win)
    win, win_mars = torch.where(theirs > 0, win + win_mars, win), torch.where(theirs > 0, zero, win_mars)
    lose, lose_mars = torch.where(mine > 0, lose + lose_mars, lose), torch.where(mine > 0, zero, lose_mars)
    capped = win_mars.clamp(max=_NEVER_CERTAIN)
    win, win_mars = win + (win_mars - capped), capped
    capped = win.clamp(max=_NEVER_CERTAIN)
    win, lose = capped, lose + (win - capped)
    i_won = mine >= _CHECKERS
    they_won = (theirs >= _CHECKERS) & ~i_won
    win = torch.where(i_won, torch.where(theirs > 0, one, zero), torch.where(they_won, zero, win))
    win_mars = torch.where(i_won, torch.where(theirs > 0, zero, one), torch.where(they_won, zero, win_mars))
    lose = torch.where(they_won, torch.where(mine > 0, one, zero), torch.where(i_won, zero, lose))
    lose_mars = torch.where(they_won, torch.where(mine > 0, zero, one), torch.where(i_won, zero, lose_mars))
    return torch.stack([win, win_mars, lose, lose_mars], dim=-1)


class TDNetwork(nn.Module):
    """Raw positions ``[N, 50]`` -> outcome probabilities ``[N, 4]`` (softmax, then ``known_outcomes``)."""

    def __init__(self, hidden: list[int] | tuple[int, ...] = (128, 64), *, init: bool = True) -> None:
        """``init=False`` leaves the layers' weights uninitialised, for weights loaded at once
        (``load_state_dict``): no random number is drawn, so torch's generator is left as it was."""
        super().__init__()
        sizes = list(hidden) if isinstance(hidden, list | tuple) else None
        if not sizes or not all(is_whole(h, 1) for h in sizes):
            raise ValueError(f"hidden must be a list of layer sizes, positive integers, got {hidden!r}")
        if len(sizes) > MAX_LAYERS or network_parameters(sizes) > MAX_PARAMETERS:
            raise ValueError(f"hidden {sizes[:8]}{' ...' if len(sizes) > 8 else ''} makes a network of "
                             f"{len(sizes)} layers and {network_parameters(sizes):,} parameters; nardy builds at most "
                             f"{MAX_LAYERS} layers and {MAX_PARAMETERS:,} parameters")
        self.hidden = [int(h) for h in sizes]
        self.features = RawFeatures()
        layers: list[nn.Module] = []
        width = NUM_FEATURES
        def linear(n_in: int, n_out: int) -> nn.Linear:  # float32 whatever torch's default dtype
            return (nn.Linear(n_in, n_out, dtype=torch.float32) if init
                    else torch.nn.utils.skip_init(nn.Linear, n_in, n_out, dtype=torch.float32))

        for h in self.hidden:
            layers += [linear(width, h), nn.ReLU()]
            width = h
        layers.append(linear(width, len(OUTCOMES)))
        self.body = nn.Sequential(*layers)
        self.register_buffer("equity_weights", torch.tensor(EQUITY_WEIGHTS, dtype=torch.float32), persistent=False)

    equity_weights: torch.Tensor

    def logits(self, raw: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """Unnormalised outcome scores (the training loss works on these).

        ``features``: the same positions' features, ``nardy_env.encoding.features(raw)``, when
        they are at hand; equal bit for bit to what the graph computes (``RawFeatures``) in
        float32 on the CPU for whole checker counts, and several times cheaper to compute that way for the large batches of
        self-play. A network in another precision (``.double()``, ``.bfloat16()``) computes its own from
        ``raw``. A network is built in float32 (the exported graph's type) even where
        ``torch.set_default_dtype`` says otherwise.
        """
        if not isinstance(raw, torch.Tensor) or raw.dim() != 2 or raw.shape[1] != RAW_SIZE:
            shape = list(raw.shape) if hasattr(raw, "shape") else type(raw).__name__
            raise ValueError(f"the network takes raw positions, a float tensor [N, {RAW_SIZE}] "
                             f"(nardy_env.encoding.raw_positions), got {shape}")
        dtype = self.equity_weights.dtype  # the weights' (float32, or what .double() made them)
        if features is not None and (not isinstance(features, torch.Tensor)
                                     or features.shape != (raw.shape[0], NUM_FEATURES)):
            shape = list(features.shape) if hasattr(features, "shape") else type(features).__name__
            raise ValueError(f"features must be a float tensor [N, {NUM_FEATURES}] for the N = {raw.shape[0]} "
                             f"positions (nardy_env.encoding.features of them), got {shape}")
        if features is not None and features.dtype == dtype == torch.float32:
            return self.body(features)
        if raw.dtype == torch.bool:  # a mask such as raw > 0 would be scored as one checker per point
            raise ValueError("the network takes raw positions, checker counts, not a bool tensor (raw > 0?)")
        if raw.dtype != dtype:  # float64 or uint8 positions: as the weights are
            raw = raw.to(dtype)
        return self.body(self.features(raw))

    def forward(self, raw: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """Outcome probabilities of raw positions ``[N, 50]`` (``features``: see ``logits``); a
        network in bfloat16 or float16 settles them in float32 (where ``1 - 2**-20`` is not 1)."""
        probabilities = torch.softmax(self.logits(raw, features), dim=-1)
        if probabilities.dtype in (torch.bfloat16, torch.float16):
            probabilities, raw = probabilities.float(), raw.float()
        return known_outcomes(raw, probabilities)

    def equity(self, outcomes: torch.Tensor) -> torch.Tensor:
        """Cubeless equity of outcome probabilities (the exported graph computes it by this
        same formula, so the torch and ONNX players agree)."""
        return (outcomes * self.equity_weights).sum(dim=-1)

    def shape(self) -> dict[str, Any]:
        """What is needed to rebuild this network."""
        return {"input": RAW_SIZE, "features": NUM_FEATURES, "hidden": list(self.hidden),
                "outputs": list(OUTCOMES), "features_version": FEATURES_VERSION}

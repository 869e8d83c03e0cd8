"""The options of ``nardy export`` and their defaults, apart from the export itself, so that
building the command's parser (``nardy --help``) loads neither the rules core nor onnx."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["DEFAULT_OPSET", "EXPORTERS", "add_export_arguments"]

DEFAULT_OPSET = 18
"""ONNX opset of exports (onnxruntime has run it since 1.14)."""
EXPORTERS = ("dynamo", "torchscript")
"""torch's exporters: ``dynamo`` (torch.export, the default) and the older TorchScript one."""


def add_export_arguments(parser: argparse.ArgumentParser, text: Callable[[str], str] = str,
                         count: Callable[[str], int] = int, positive: Callable[[str], float] = float) -> None:
    """The ``nardy export`` arguments (the caller sets the handler to ``cmd_export``); ``text``,
    ``count``, ``positive``: the argparse types of the names and paths, of counts (1 or more) and
    of positive numbers, so that a bad value is a usage error before anything is loaded."""
    parser.add_argument("player", metavar="PLAYER", type=text,
                        help="a run directory (holding checkpoint.pt), a checkpoint file, or default (the shipped player)")
    parser.add_argument("--out", required=True, metavar="DIR", type=text,
                        help="folder to write policy.onnx and policy.json into (created if missing)")
    parser.add_argument("--force", action="store_true", help="replace an export already in DIR")
    parser.add_argument("--positions", type=count, default=4096,
                        help="real positions on which onnxruntime must match torch (default 4096)")
    parser.add_argument("--tolerance", type=positive, default=1e-5,
                        help="largest allowed |onnxruntime - torch| (default 1e-5)")
    parser.add_argument("--opset", type=count, default=DEFAULT_OPSET, help=f"ONNX opset (default {DEFAULT_OPSET})")
    parser.add_argument("--exporter", choices=EXPORTERS, default="dynamo",
                        help="torch exporter: dynamo (torch.export, default) or torchscript (legacy, deprecated by torch)")
    parser.add_argument("--json", action="store_true", help="print policy.json's content as one JSON line")

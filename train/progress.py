"""Progress on the terminal: a live bar when stderr is a terminal, plain lines in a log.

tqdm redraws its bar with carriage returns, which a log file or a CI console keeps as
one long garbled line; there a line now and then (and one at the end) says the same.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

__all__ = ["progress_bar", "LineProgress", "on_terminal"]


def on_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (default: stderr) is a terminal; False for a replaced stream without
    ``isatty``, a closed one, or None (pythonw)."""
    stream = stream if stream is not None else sys.stderr
    try:
        isatty = getattr(stream, "isatty", None)
        return bool(callable(isatty) and isatty())
    except ValueError:  # closed
        return False


def in_notebook(stream: Any = None) -> bool:
    """Whether ``stream`` (default: stderr) is a Jupyter kernel's output, which redraws a bar's
    carriage returns in place as a terminal does (though it is no terminal to ``isatty``)."""
    stream = stream if stream is not None else sys.stderr
    return type(stream).__module__.split(".")[0] == "ipykernel"


def progress_bar(total: int, desc: str, unit: str = "game", initial: int = 0, leave: bool = True,
                 bar_format: str | None = None, stream: TextIO | None = None, every: float = 30.0) -> Any:
    """A tqdm bar on a terminal or in a Jupyter notebook, else a ``LineProgress`` writing a line
    every ``every`` seconds (a log). ``TQDM_DISABLE`` set to anything turns both off (tqdm's own
    variable, which tqdm reads as true whatever its value); messages (``write``) still show."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("TQDM_DISABLE"):
        return LineProgress(total, desc, unit, initial, stream, every, lines=False)
    if on_terminal(stream) or in_notebook(stream):
        from tqdm import tqdm

        extra = {"bar_format": bar_format} if bar_format else {}
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave, dynamic_ncols=True,
                    file=stream, **extra)
    return LineProgress(total, desc, unit, initial, stream, every)


class LineProgress:
    """The parts of tqdm's interface nardy uses, as whole lines: ``desc: n/total units (p%),
    rate units/s, postfix``, at most one per ``every`` seconds, and a last one on ``close``
    (none with ``lines=False``: only what ``write`` is given)."""

    def __init__(self, total: int, desc: str, unit: str = "game", initial: int = 0,
                 stream: TextIO | None = None, every: float = 30.0, lines: bool = True) -> None:
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.lines = lines
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self._initial = initial
        self._postfix: dict[str, Any] = {}
        self._shown_postfix: dict[str, Any] = {}  # the postfix of the last line
        self._closed = False
        self._start = self._last = time.monotonic()
        self._shown = initial

    def update(self, n: int = 1) -> None:
        """Count ``n`` more; a line if ``every`` seconds have passed."""
        self.n += n
        if time.monotonic() - self._last >= self.every:
            self._line()

    def set_postfix(self, postfix: dict[str, Any] | None = None, **more: Any) -> None:
        """What the next lines end with (``key=value``, as tqdm's)."""
        self._postfix = {**(postfix or {}), **more}

    def write(self, text: str) -> None:
        """A message on a line of its own."""
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """The last line, if anything was counted or a new postfix set since the one before."""
        if not self._closed and (self.n != self._shown or self._postfix != self._shown_postfix):
            self._line()
        self._closed = True  # as tqdm's: nothing more after it

    def _line(self) -> None:
        now = time.monotonic()
        rate = (self.n - self._initial) / max(now - self._start, 1e-9)
        share = f" ({self.n / self.total:.0%})" if self.total else ""
        if not self.lines:
            self._last, self._shown, self._shown_postfix = now, self.n, dict(self._postfix)
            return
        own_rate = "" if any(str(key).endswith("/s") for key in self._postfix) else f", {rate:.0f} {self.unit}s/s"
        extra = "".join(f", {key} {value}" for key, value in self._postfix.items())
        self.write(f"{self.desc}: {self.n}/{self.total} {self.unit}s{share}{own_rate}{extra}")
        self._last, self._shown = now, self.n
        self._shown_postfix = dict(self._postfix)


def stop_behind(exc: BaseException) -> BaseException | None:
    """The stop (KeyboardInterrupt, or a signal's exception such as the command line's SIGTERM: a
    BaseException that is no Exception) that ``exc`` is; None for an error. Inside compiled code
    (the numba rules core) a stop comes out as a SystemError caused by it, which counts as the stop;
    any other error stays an error, even one raised while a stop was handled."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while isinstance(current, SystemError) and id(current) not in seen:
        seen.add(id(current))
        current = current.__cause__
    if current is None or isinstance(current, Exception | SystemExit | GeneratorExit):
        return None
    return current

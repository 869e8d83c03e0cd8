"""Pictures made from a run's own records (Pillow only, imported when drawing)."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agents.files import write_atomic

__all__ = ["training_curve", "compare_curves", "evaluation_points", "opponents_met", "MAX_RUNS", "ladder_chart", "elo_bound", "reliability_picture", "NoRecords"]


def _warn(message: str, stacklevel: int) -> None:
    """A ``NardyWarning`` (imported only now: the rules core's package is not otherwise needed to draw)."""
    from nardy_env import NardyWarning

    warnings.warn(message, category=NardyWarning, stacklevel=stacklevel)


class NoRecords(ValueError):
    """An evaluation log with no record in it yet."""

_COLORS = {"random": (120, 120, 120), "race": (40, 110, 200), "heuristic": (210, 70, 40)}
_OTHER = [(40, 160, 90), (150, 60, 170), (200, 150, 20)]


def evaluation_points(eval_jsonl: str | Path) -> list[dict]:
    """A run's evaluation records, one per games_trained (the final one standing for the periodic
    one at its count), in order; NoRecords if there is none, ValueError for a line that is no JSON."""
    records = []
    content = Path(eval_jsonl).read_text(encoding="utf-8")
    lines = content.splitlines()
    for number, text in enumerate(lines, 1):
        if text.strip():
            try:
                record = json.loads(text)
            except RecursionError:
                raise ValueError(f"line {number} is nested too deeply to read") from None
            except json.JSONDecodeError as exc:  # a line cut short: say which one
                if number == len(lines) and not content.endswith("\n"):
                    # The run is writing it now, or was killed while writing it (a resume repairs it).
                    _warn(f"{eval_jsonl}: the last line is cut short (a run writing it, or killed "
                          "while writing it); drawn without it", stacklevel=3)
                    continue
                raise ValueError(f"line {number} is not JSON ({exc.msg} at column {exc.colno})") from None
            wrong = record_fault(record)
            if wrong:
                raise ValueError(f"line {number} is no evaluation record: {wrong}")
            records.append(record)
    if not records:
        raise NoRecords(f"{eval_jsonl} holds no evaluation records")
    # Keep the last record per games_trained (the final evaluation replaces the periodic one).
    by_games: dict[int, dict] = {}
    for r in records:  # a redone final evaluation adds to the record it replaces, opponent by opponent
        by_games[r["games_trained"]] = {**by_games.get(r["games_trained"], {}), **r}
    return [by_games[g] for g in sorted(by_games)]


def record_fault(record: Any) -> str:
    """What keeps one line of eval.jsonl from being an evaluation record ('' if nothing)."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    games = record.get("games_trained")
    if isinstance(games, bool) or not isinstance(games, int) or not 0 <= games < 2**53:  # drawn as a float
        return f"games_trained is {games!r}, not a count of games"
    for opponent, result in record.items():
        if not (isinstance(result, dict) and "win_rate" in result):
            continue
        rate, ci = result["win_rate"], result.get("win_rate_ci95", [])
        numbers = [rate, *ci] if isinstance(ci, list) else None
        # An interval may reach past 0 or 1, to infinity even (of one pair, on 2026-11-29): drawn cut at 0 and 1.
        if numbers is None or len(numbers) not in (1, 3) or any(
                isinstance(x, bool) or not isinstance(x, int | float) or math.isnan(x) for x in numbers) \
                or not 0 <= rate <= 1:
            return (f"{opponent}'s win_rate {rate!r} (95% CI {result.get('win_rate_ci95')!r}) is not a fraction "
                    "from 0 to 1 (with two numbers for its interval)")
    return ""


def opponents_met(points: list[dict]) -> list[str]:
    """Every opponent a run was ever evaluated against (eval_opponents may change on resume), in
    order of appearance."""
    return list(dict.fromkeys(k for r in points for k in r if isinstance(r[k], dict) and "win_rate" in r[k]))


def _rules_of(points: list[dict], source: str | Path | None = None) -> list[str]:
    """The rules (one line of JSON, all keys) a run's records were played under, in order. A
    record from before records carried them is read under the rules of the run's config.json
    (beside ``source``, its eval.jsonl), when that says."""
    from nardy_env.rules import Rules

    run_rules = None
    if source is not None and any("rules" not in r for r in points):
        try:
            config = json.loads((Path(source).parent / "config.json").read_text(encoding="utf-8"))
            run_rules = config["rules"] if isinstance(config, dict) else None
        except (OSError, ValueError, KeyError, RecursionError):
            run_rules = None
    found = []
    for r in points:
        said = r.get("rules", run_rules)
        if not isinstance(said, dict):  # no rules said, or not a mapping of them
            continue
        try:
            found.append(Rules.from_dict(said).to_json())
        except (TypeError, ValueError):  # unreadable ones
            continue
    return list(dict.fromkeys(found))


def _files_of(points: list[dict], opponent: str) -> list[str]:
    """Which player ``opponent`` was, record by record, in order: the SHA-256 values recorded for
    its file (a network), or ``version N`` for one of nardy's bots (``player_bot_version``; a
    record from before versions were recorded met version 1)."""
    from train.evaluate import BOT_VERSION_BEFORE_RECORDED, bot_version

    is_bot = bot_version(opponent) is not None
    found = []
    for r in points:
        said = r.get(opponent)
        if not isinstance(said, dict):
            continue
        version = said.get("player_bot_version", BOT_VERSION_BEFORE_RECORDED if is_bot else None)
        if isinstance(said.get("player_sha256"), str):
            found.append(said["player_sha256"])
        elif is_bot:
            found.append(f"version {version}")  # a version that is not a whole number is another player too
    return list(dict.fromkeys(found))


def _what_changed(identities: Iterable[str]) -> str:
    """``file`` when the identities are networks' hashes, ``version`` when they are a bot's."""
    return "version" if all(i.startswith("version ") for i in identities) else "file"


def _warn_changed(name: str, points: list[dict], opponents: Iterable[str]) -> None:
    """A warning for an opponent whose file changed during a run: its curve joins two players."""
    for opponent in opponents:
        files = _files_of(points, opponent)
        if len(files) > 1:
            _warn(f"{name}: {opponent} is not the same player all along (its {_what_changed(files)} changed "
                  f"{len(files) - 1} time{'s' if len(files) > 2 else ''} during the run): the curve "
                  "against it joins different players", stacklevel=4)


MAX_RUNS = 12
"""The most runs one comparison draws: six colours and four markers tell twelve lines apart."""


def training_curve(eval_jsonl: str | Path, out_png: str | Path, title: str | None = None,
                   follow: bool = False) -> Path:
    """Win rate (with its 95% interval) against each bot vs games trained, from ``eval.jsonl``.

    ``follow``: ``out_png`` is the user's own choice, written through a link or to a stream
    (``agents.files.write_atomic``)."""
    points = evaluation_points(eval_jsonl)
    opponents = opponents_met(points)
    if not opponents:
        raise NoRecords(f"{eval_jsonl}: no record holds a win rate against anyone")
    _warn_changed(str(eval_jsonl), points, opponents)

    against = "the bots" if set(opponents) <= set(_COLORS) else "each opponent"
    lines = [(f"vs {label}", _COLORS.get(opp, _OTHER[n % len(_OTHER)]), opp, points)
             for n, (opp, label) in enumerate(zip(opponents, _labels(opponents, 12), strict=True))]
    return _curves(lines, title or f"Win rate against {against} (paired dice, 0-ply{_variant(points, eval_jsonl)})",
                   out_png, follow)


def _variant(points: list[dict], source: str | Path) -> str:
    """``; block_rule home`` for a run played under a club variant (its keys that differ from the
    2026 code's), for a picture's title; empty for the code, or rules that changed or are unknown."""
    from nardy_env.rules import Rules

    found = _rules_of(points, source)
    if len(found) != 1:
        return ""
    changes = Rules.from_dict(json.loads(found[0])).changes()
    return "".join(f"; {key} {value if isinstance(value, str) else json.dumps(value)}"
                   for key, value in changes.items())


def compare_curves(runs: Mapping[str, str | Path], opponent: str, out_png: str | Path, follow: bool = False) -> Path:
    """Several runs' win rates against one ``opponent`` vs games trained, one line a run:
    ``runs`` maps each run's label to its ``eval.jsonl``. ValueError if a run never met it."""
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(f"runs must map each run's label to its eval.jsonl (at least one), got {runs!r}"[:300])
    if len(runs) > MAX_RUNS:
        raise ValueError(f"{len(runs)} runs are more than one picture tells apart ({MAX_RUNS} at most)")
    lines = []
    palette = [_COLORS["race"], _COLORS["heuristic"], *_OTHER, _COLORS["random"]]
    for n, ((name, source), label) in enumerate(zip(runs.items(), _labels(list(runs), 14), strict=True)):
        points = evaluation_points(source)
        if opponent not in opponents_met(points):
            met = ", ".join(opponents_met(points)) or "no one"
            raise ValueError(f"{name} was never evaluated against {opponent} (it met {met})")
        lines.append((label, palette[n % len(palette)], opponent, points))
        _warn_changed(name, points, [opponent])
    # The runs' club variant in the title when they share one (one run's too).
    variants = {_variant(points, runs[name]) for name, (_, _, _, points) in zip(runs, lines, strict=True)}
    title = f"Win rate against {opponent} (paired dice, 0-ply{variants.pop() if len(variants) == 1 else ''})"
    if len(lines) < 2:  # one run: _warn_changed has said what there is to say
        return _curves(lines, title, out_png, follow)
    rules = {name: _rules_of(points, runs[name]) for name, (_, _, _, points) in zip(runs, lines, strict=True)}
    if len({json for found in rules.values() for json in found}) > 1:
        listed = "; ".join(f"{name}: {' then '.join(found)}" for name, found in rules.items() if found)
        _warn(f"the runs were evaluated under different rules ({listed}): their win rates against "
              f"{opponent} are not of the same game", stacklevel=3)
    files = [set(_files_of(points, opponent)) for _, _, _, points in lines]
    # Two runs that never met the same file met different players (one whose opponent changed on
    # the way, but met the other's too, has been named above).
    if any(a and b and not a & b for i, a in enumerate(files) for b in files[i + 1:]):
        _warn(f"the runs met different players named {opponent} (their {_what_changed(set().union(*files))}s "
              "differ): their win rates against it do not compare", stacklevel=3)
    return _curves(lines, title, out_png, follow)


def _curves(lines: list[tuple[str, Any, str, list[dict]]], title: str, out_png: str | Path, follow: bool) -> Path:
    """Lines (legend label, colour, opponent, records) of win rate vs games trained, with intervals."""
    w, h = 900, 520
    left, right, top, bottom = 80, 170, 50, 70
    img, draw, font, small = _canvas(w, h, 15, 13, [title, *(label for label, *_ in lines)])
    max_games = max(max(points[-1]["games_trained"] for *_, points in lines), 1)
    span = max_games * 1.03  # the last points clear of the frame

    def xy(games: float, rate: float) -> tuple[float, float]:
        return (left + (w - left - right) * games / span, top + (h - top - bottom) * (1 - rate))

    for k in range(11):
        y = xy(0, k / 10)[1]
        draw.line([(left, y), (w - right, y)], fill=(230, 230, 230) if k % 5 else (200, 200, 200))
        draw.text((left - 10, y), f"{k * 10}%", fill="black", font=small, anchor="rm")
    step = _nice_step(max_games / 5)
    for k in range(int(max_games // step) + 1):
        x = xy(k * step, 0)[0]
        draw.line([(x, top), (x, h - bottom)], fill=(235, 235, 235))
        draw.text((x, h - bottom + 8), _games_label(k * step, step), fill="black", font=small, anchor="mt")
    draw.rectangle([left, top, w - right, h - bottom], outline="black")
    draw.text(((left + w - right) / 2, h - 25), "self-play games trained", fill="black", font=font, anchor="mm")
    draw.text((left - 45, top - 14), "win rate (bars: 95% intervals)", fill="black", font=font, anchor="lm")
    draw.text(((left + w - right) / 2, 16), title, fill="black", font=font, anchor="mm")
    finals = False
    for n, (label, color, opp, points) in enumerate(lines):
        line = [xy(r["games_trained"], r[opp]["win_rate"]) for r in points if opp in r]
        dodge = _dodge(n, len(lines))  # the lines' bars side by side at a shared count, not on top of each other
        for r in points:
            if opp in r and "win_rate_ci95" in r[opp]:
                lo, hi = r[opp]["win_rate_ci95"]
                x = xy(r["games_trained"], 0)[0] + dodge
                y_hi, y_lo = xy(0, min(hi, 1))[1], xy(0, max(lo, 0))[1]
                draw.line([(x, y_hi), (x, y_lo)], fill=color, width=1)
                for y in (y_hi, y_lo):  # caps: where a bar ends is seen beside another line
                    draw.line([(x - 2, y), (x + 2, y)], fill=color, width=1)
        if len(line) > 1:
            draw.line(line, fill=color, width=3)
        shape = _MARKERS[n % len(_MARKERS)]  # each line its own marker: told apart without colour
        closing = [r.get("final") is True for r in points if opp in r]
        for (x, y), final in zip(line, closing, strict=True):
            _marker(draw, x, y, shape, color, outline="black" if final else None)
            finals = finals or final
        ly = top + 20 + 26 * n
        draw.line([(w - right + 15, ly), (w - right + 45, ly)], fill=color, width=3)
        _marker(draw, w - right + 30, ly, shape, color)
        draw.text((w - right + 52, ly), _fit(label, font, right - 56), fill="black", font=font, anchor="lm")
    if finals:  # a closing evaluation plays more games (final_eval_games): its interval is narrower
        ly = top + 20 + 26 * len(lines) + 6
        _marker(draw, w - right + 30, ly, "circle", (255, 255, 255), outline="black")
        draw.text((w - right + 52, ly), _fit("closing evaluation", small, right - 56), fill="black", font=small,
                  anchor="lm")
    return _save_png(img, out_png, follow)


def _dodge(n: int, count: int, step: float = 4) -> float:
    """Line ``n`` of ``count``'s horizontal offset, in pixels, for its interval bars."""
    return (n - (count - 1) / 2) * step


_MARKERS = ("circle", "square", "triangle", "diamond")


def _marker(draw: Any, x: float, y: float, shape: str, color: Any, r: float = 5, outline: Any = None) -> None:
    """One data point's marker, centred on (x, y); ``outline``: a ring around it (a closing
    evaluation's point), drawn a pixel larger."""
    if outline is not None:
        r += 1
    if shape == "square":
        draw.rectangle([x - r + 1, y - r + 1, x + r - 1, y + r - 1], fill=color, outline=outline)
    elif shape == "triangle":
        draw.polygon([(x, y - r - 1), (x - r, y + r - 1), (x + r, y + r - 1)], fill=color, outline=outline)
    elif shape == "diamond":
        draw.polygon([(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)], fill=color, outline=outline)
    else:
        draw.ellipse([x - r + 1, y - r + 1, x + r - 1, y + r - 1], fill=color, outline=outline)


def _fit(text: str, font: Any, width: float) -> str:
    """``text`` as drawn in ``font`` within ``width`` pixels: whole if it fits, else its end, marked
    as cut (labels are shortened by characters first; a wider font's may still be too long)."""
    if font.getlength(text) <= width:
        return text
    keep = len(text)
    while keep > 1 and font.getlength("..." + text[-keep:]) > width:
        keep -= 1
    return "..." + text[-keep:]


def _short(name: str, most: int = 24) -> str:
    """A label of at most ``most`` characters: a long path keeps its end, marked as cut."""
    return name if len(name) <= most else "..." + name[-(most - 3):]


def _labels(names: list[str], most: int = 24) -> list[str]:
    """Labels of at most ``most`` characters that tell the names apart: each keeps its end
    (``_short``); names whose ends read alike (two runs' checkpoint-000400000.pt) show the part
    in which they differ instead, and failing that their place in the list."""
    labels = [_short(n, most) for n in names]
    for label in {lab for lab in labels if labels.count(lab) > 1}:
        group = [k for k, lab in enumerate(labels) if lab == label]
        alike = [names[k] for k in group]
        prefix = os.path.commonprefix(alike)
        prefix = prefix[:max(prefix.rfind("/"), prefix.rfind(os.sep)) + 1]  # whole folders
        suffix = os.path.commonprefix([n[len(prefix):][::-1] for n in alike])[::-1]
        for k, name in zip(group, alike, strict=True):
            middle = name[len(prefix):len(name) - len(suffix)]
            head = ("..." if prefix else "") + middle
            room = most - len(head) - 3
            tail = ("..." + suffix[-room:] if room > 0 else "...") if suffix else ""
            fits = most - len(tail)  # where they differ is nearest the common end: keep that
            labels[k] = (head if len(head) <= fits else "..." + middle[-(fits - 3):]) + tail
    numbered: set[int] = set()
    while repeated := [k for k, label in enumerate(labels) if labels.count(label) > 1 and k not in numbered]:
        for k in repeated:  # still alike: numbered by their place in the list, the number kept whole
            number = f"{k + 1}: "
            labels[k] = number + _short(names[k], most - len(number))
            numbered.add(k)
    return labels


def _signed(value: float) -> str:
    """A rating as shown: +12, -3, and +0 for anything that rounds to zero (never -0)."""
    return f"{round(value) + 0:+d}"


# Fonts with Cyrillic (and more) that systems commonly have, by the file names Pillow looks for
# in the system's font folders: Linux's DejaVu, Noto, Liberation and FreeFont, then macOS's and
# Windows's Arial. Pillow's own default font has Latin letters only.
_WIDE_FONTS = ("DejaVuSans.ttf", "NotoSans-Regular.ttf", "LiberationSans-Regular.ttf", "FreeSans.ttf",
               "Arial Unicode.ttf", "arial.ttf", "Arial.ttf")


def _canvas(w: int, h: int, size: int, small_size: int, texts: Iterable[str] = ()) -> tuple[Any, Any, Any, Any]:
    """A white picture, its drawing handle, and a font at two sizes: Pillow's default, or where
    ``texts`` (names the picture will show) hold letters beyond ASCII, a system font that has
    them (Pillow's default draws a Cyrillic name as boxes), with a warning if none is found."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (w, h), "white")
    wide = sorted({c for text in texts for c in text if not c.isascii() and c.isprintable()})
    if wide:
        best: tuple[Any, str, list[str]] | None = None  # the font that has the most of them
        for name in _WIDE_FONTS:
            try:
                font = ImageFont.truetype(name, size)
            except OSError:  # not on this system
                continue
            box = bytes(font.getmask("\U0010fffd"))  # what the font draws for a letter it lacks
            lacks = [c for c in wide if bytes(font.getmask(c)) == box]  # DejaVu has Cyrillic, not Chinese
            if best is None or len(lacks) < len(best[2]):
                best = (font, name, lacks)
            if not lacks:
                break
        if best is None or best[2]:
            lacking = "".join((best[2] if best else wide)[:8])
            _warn(f"no font with {lacking!r} found (looked for {', '.join(_WIDE_FONTS)}): the picture "
                  "draws those letters as boxes; install one that has them, e.g. DejaVu Sans "
                  "(fonts-dejavu) for Cyrillic, Noto Sans CJK for Chinese", stacklevel=4)
        if best is not None:
            return img, ImageDraw.Draw(img), best[0], ImageFont.truetype(best[1], small_size)
    try:
        default, small = ImageFont.load_default(size=size), ImageFont.load_default(size=small_size)
    except TypeError:  # Pillow < 10.1
        default = small = ImageFont.load_default()
    return img, ImageDraw.Draw(img), default, small


def _save_png(img: Any, out_png: str | Path, follow: bool = False) -> Path:
    """Write the picture atomically: a full disk leaves no empty or half-written file."""
    if not os.fspath(out_png) or Path(out_png).is_dir():
        raise ValueError(f"{out_png!r} is {'a folder' if os.fspath(out_png) else 'empty'}: name the picture's file")
    return write_atomic(Path(out_png), lambda fh: img.save(fh, format="PNG"), follow=follow)


def elo_bound(rating: dict, ratings: list[dict]) -> str:
    """``>=`` / ``<=`` before an Elo that only a clean sweep bounds (another sweep group than
    the anchor, the first player; see ``train.evaluate._sweep_groups``), else nothing."""
    anchor = next((r.get("group", 0) for r in ratings if r["elo"] == 0.0 and r["elo_ci95"] == [0.0, 0.0]), 0)
    group = rating.get("group", 0)
    return "" if group == anchor else (">=" if group < anchor else "<=")


def _games_label(games: float, step: float) -> str:
    """Tick text: 1,500 below a thousand's step, else 25k / 2.5k."""
    if step < 1000 or games == 0:
        return f"{games:,.0f}"
    return f"{games / 1000:g}k"


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``raw``: readable tick spacing."""
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def ladder_chart(ladder: dict, out_png: str | Path, follow: bool = False) -> Path:
    """Elo ratings of a ``nardy ladder`` result as horizontal bars with their 95% intervals."""
    ratings = sorted(ladder["ratings"], key=lambda r: -r["elo"])
    if len(ratings) < 2 or not all(math.isfinite(x) for r in ratings for x in (r["elo"], *r["elo_ci95"])):
        raise ValueError("ladder_chart needs a ladder's ratings: two players or more, with finite Elo ratings "
                         "and intervals")
    w, row_h = 800, 44
    from .evaluate import ladder_provenance

    footer = ladder_provenance(ladder)  # what reproduces the chart: the seed, rules and version
    left, top, bottom = 190, 50, 72 if footer else 50
    h = top + bottom + row_h * len(ratings)
    img, draw, font, small = _canvas(w, h, 15, 13, [footer, *(str(r["player"]) for r in ratings)])
    right = max(70, round(font.getlength(">=+999")) + 14)  # room for a value past an open end
    # The axis spans what the games support: a clean sweep's open end (a pseudo-win's value,
    # which grows with the games and bounds nothing) is drawn to the edge, not measured.
    bounds = [elo_bound(r, ratings) for r in ratings]
    lo = min([0.0, *(r["elo_ci95"][0] for r, b in zip(ratings, bounds, strict=True) if b != "<="),
              *(r["elo_ci95"][1] for r, b in zip(ratings, bounds, strict=True) if b == "<=")])
    hi = max([0.0, *(r["elo_ci95"][1] for r, b in zip(ratings, bounds, strict=True) if b != ">="),
              *(r["elo_ci95"][0] for r, b in zip(ratings, bounds, strict=True) if b == ">=")])
    room = (hi - lo) * 0.15 or 100.0  # an open end shows past its bar, up to the edge
    lo, hi = lo - room * ("<=" in bounds), hi + room * (">=" in bounds)
    step = _nice_step((hi - lo) / 5 or 100.0)
    lo, hi = step * math.floor(lo / step), step * math.ceil(hi / step)
    span = hi - lo

    def x(v: float) -> float:
        return left + (w - left - right) * (v - lo) / span

    players = [str(r["player"]) for r in ratings]
    most = 24
    names = _labels(players, most)
    while most > 8 and max(font.getlength(name) for name in names) > left - 14:  # a wider font's letters
        most -= 1
        names = _labels(players, most)
    first = names[ratings.index(ladder["ratings"][0])]  # the anchor, labelled as in its row
    draw.text((w / 2, 18), f"Elo ratings against {first} ({ladder['games_per_pair']} games = {ladder['games_per_pair'] // 2} dice pairs a match, 95% CI)",
              fill="black", font=font, anchor="mm")
    for k in range(round(span / step) + 1):
        v = lo + step * k
        draw.line([(x(v), top - 8), (x(v), h - bottom + 8)], fill=(225, 225, 225) if v else (150, 150, 150))
        draw.text((x(v), h - bottom + 20), f"{v:+.0f}", fill="black", font=font, anchor="mm")
    for k, r in enumerate(ratings):
        y = top + row_h * k + row_h / 2
        bound = bounds[k]  # an open end (a clean sweep) runs to the edge, without a cap
        # A sweep's bar ends at the end of its interval that the games support.
        value = {">=": r["elo_ci95"][0], "<=": r["elo_ci95"][1]}.get(bound, r["elo"])
        draw.rectangle([min(x(0), x(value)), y - 12, max(x(0), x(value)), y + 12], fill=(70, 130, 190))
        ends = [lo if bound == "<=" else r["elo_ci95"][0], hi if bound == ">=" else r["elo_ci95"][1]]
        draw.line([(x(ends[0]), y), (x(ends[1]), y)], fill="black", width=2)
        for end, is_open in zip(ends, (bound == "<=", bound == ">="), strict=True):
            if not is_open:
                draw.line([(x(end), y - 6), (x(end), y + 6)], fill="black", width=2)
        draw.text((left - 10, y), names[k], fill="black", font=font, anchor="rm")
        # The value goes past the interval's end, so the error bar never covers it.
        draw.text((x(max(value, ends[1], 0.0)) + 8, y), bound + _signed(value),
                  fill="black", font=font, anchor="lm")
    if footer:
        draw.text((w / 2, h - 14), footer, fill=(90, 90, 90), font=small, anchor="mm")
    return _save_png(img, out_png, follow)


def reliability_picture(win: Any, points: Any, title: str = "") -> Any:
    """Calibration of the network's predictions as a reliability diagram (a Pillow image).

    ``win`` and ``points``: ``[3, bins]`` arrays of (count, sum of predictions, sum of
    outcomes) per bin, for the chance of winning (bins over [0, 1]) and the equity (bins
    over [-2, 2]). Each bin is a dot at (mean prediction, mean outcome), its area by its
    count; a well-calibrated network keeps its dots on the diagonal.
    """
    panel, gap, top, bottom, left = 330, 70, 46, 56, 62
    pad = 18  # inside each frame, so that the largest dot at an end stays in it
    w, h = left + 2 * panel + gap + 20, top + panel + bottom
    img, draw, font, small = _canvas(w, h, 14, 12, [title])
    draw.text((w / 2, 14), title or "Calibration: predicted vs actual", fill="black", font=font, anchor="mm")
    panels: list[tuple[Any, float, float, str, list[float]]] = [
        (win, 0.0, 1.0, "chance of winning", [0, 0.25, 0.5, 0.75, 1]),
        (points, -2.0, 2.0, "equity (points)", [-2, -1, 0, 1, 2])]
    for k, (data, lo, hi, what, ticks) in enumerate(panels):
        x0 = left + k * (panel + gap)

        def xy(pred: float, actual: float, x0: float = x0, lo: float = lo, hi: float = hi) -> tuple[float, float]:
            span = panel - 2 * pad
            return (x0 + pad + span * (pred - lo) / (hi - lo), top + pad + span * (1 - (actual - lo) / (hi - lo)))

        for t in ticks:
            (tx, ty) = xy(t, t)
            draw.line([(tx, top), (tx, top + panel)], fill=(235, 235, 235))
            draw.line([(x0, ty), (x0 + panel, ty)], fill=(235, 235, 235))
            draw.text((tx, top + panel + 6), f"{t:g}", fill="black", font=small, anchor="mt")
            draw.text((x0 - 6, ty), f"{t:g}", fill="black", font=small, anchor="rm")
        draw.line([xy(lo, lo), xy(hi, hi)], fill=(160, 160, 160), width=1)
        draw.rectangle([x0, top, x0 + panel, top + panel], outline="black")
        draw.text((x0 + panel / 2, top + panel + 26), f"predicted {what}", fill="black", font=small, anchor="mt")
        draw.text((x0 + 6, top + 6), f"actual {what}", fill="black", font=small, anchor="la")
        counts = data[0]
        total = max(float(counts.sum()), 1.0)
        for b in range(counts.shape[0]):
            if counts[b] <= 0:
                continue
            cx, cy = xy(float(data[1][b] / counts[b]), float(data[2][b] / counts[b]))
            r = 3 + 14 * math.sqrt(float(counts[b]) / total)
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(70, 130, 190), outline=(30, 60, 110))
        draw.text((x0 + panel - 6, top + panel - 8), f"{int(total):,} positions", fill=(90, 90, 90), font=small,
                  anchor="rb")
    return img

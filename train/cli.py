"""The ``nardy`` command line: a thin layer over the library's functions."""

from __future__ import annotations

import argparse
import difflib
import errno
import functools
import json
import os
import re
import shlex
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from train.progress import stop_behind

__all__ = ["main", "COUNT", "MATCH_GAMES", "PLY", "POSITIVE", "SECONDS", "SEED", "TEXT"]  # the argparse types: tools/ take them too


def _rules(text: str | None):
    """The rules ``--rules`` asks for; the default rules without it."""
    from nardy_env import Rules

    asked = _asked_rules(text)
    return Rules() if asked is None else asked


def _asked_rules(text: str | None):
    """The rules ``--rules`` asks for, or None when it is not given."""
    from nardy_env import Rules, RulesError

    if text is None:
        return None
    if not text.strip():
        _usage_error(f"{_WHO}: --rules is empty; give rule variants as JSON, e.g. '{{\"block_rule\": \"home\"}}', "
                     "or leave it out")
    if len(text) > MAX_RULES_TEXT:  # every key of RULES.md takes about 100
        _usage_error(f"{_WHO}: --rules is {len(text):,} characters long; rule variants take at most "
                     f"{MAX_RULES_TEXT:,}")
    twice: list[str] = []  # JSON and YAML keep the last of a key given twice: a first copy edited does nothing

    def repeated(keys: list[str]) -> list[str]:
        return [k for i, k in enumerate(keys) if k in keys[:i]]

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        twice.extend(repeated([k for k, _ in items]))
        return dict(items)

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except (json.JSONDecodeError, RecursionError) as exc:
        data = _flow_mapping(text)
        if data is not None:
            import yaml

            twice = repeated([k.value for k, _ in yaml.compose(text).value])  # safe: _flow_mapping checked it
        if data is None:
            where = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                     else "nested too deeply")
            # Shown as received: the shell may have eaten quotes ({block_rule:home}) the user typed.
            _usage_error(f"{_WHO}: --rules is not valid JSON: {where} of {text!r} (quote the whole object "
                         "for the shell: '{\"block_rule\": \"home\"}', or leave out the inner quotes: "
                         "\"{block_rule: home}\", a space after each colon)")
    if not isinstance(data, dict):
        _usage_error(f"{_WHO}: --rules must be a JSON object of variant keys")
    if twice:
        _usage_error(f"{_WHO}: --rules gives {twice[0]} twice; give each variant key once")
    try:
        return Rules.from_dict(data)
    except (RulesError, TypeError) as exc:
        _usage_error(f"{_WHO}: --rules: {exc}")


def _flow_mapping(text: str) -> dict[str, Any] | None:
    """``{block_rule: home, head_exception: [3, 4]}``, JSON without its inner quotes, as a dict; None
    when it is not one. What Windows PowerShell 5.1 passes on of '{"block_rule": "home"}' (it drops
    the inner quotes), and what cmd.exe users can type without escaping them."""
    import yaml

    try:
        # No anchors, aliases or tags: a few hundred bytes of aliases make a list of billions.
        if any(isinstance(token, yaml.AliasToken | yaml.AnchorToken | yaml.TagToken) for token in yaml.scan(text)):
            return None
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):  # deep nesting: PyYAML's constructor recurses
        return None
    if not isinstance(data, dict) or not text.lstrip().startswith("{") \
            or not all(isinstance(k, str) and v is not None for k, v in data.items()):
        return None  # {block_rule:home} is one key "block_rule:home" without a value: not meant so
    return data


MAX_RULES_TEXT = 1000
"""The longest --rules taken (all of RULES.md's keys take about 100 characters)."""

MAX_LINE = 1 << 20
"""The longest --jsonl input line read (1 MiB; a request is about 100 bytes): a longer one is
answered with an error line and skipped, not held in memory whole."""


class _TooLong(bytes):
    """A line past MAX_LINE, its rest skipped (what _jsonl answers with an error)."""


def _input_lines():
    """Standard input line by line, as bytes when it has them (decoded per line, so one bad
    line is one error line, whatever the locale), else as text."""
    if sys.stdin is None:  # closed (<&-): no lines
        return
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        yield from sys.stdin
        return
    while True:
        line = buffer.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while True:  # skip the rest of it, a piece at a time
                rest = buffer.readline(MAX_LINE)
                if not rest or rest.endswith(b"\n"):
                    break
            yield _TooLong()
            continue
        yield line


def _is_bot(name: str) -> bool:
    """A player that only scores positions and cannot search: random or a baseline bot."""
    from agents.registry import is_bot

    return is_bot(name)


def _is_level(name: str) -> bool:
    """A difficulty level of the shipped player (``easy``...): it samples, it does not search."""
    from agents.registry import is_level

    return is_level(name)


def printable(text: str) -> str:
    """``nardy_env._runtime.printable`` (imported here, not where train.cli is imported)."""
    from nardy_env._runtime import printable as escaped

    return escaped(text)


def _complain(message: str) -> None:
    """An error line on stderr, its control characters escaped: it may quote a file's strings."""
    print(printable(message), file=sys.stderr)


def _usage_error(message: str) -> NoReturn:
    """Options that contradict each other: say which, exit 2 as argparse does."""
    _complain(message)
    raise SystemExit(2)


def _too_long(exc: OSError) -> str:
    """What is said of a path the system refuses as too long, wherever it was refused."""
    shown = str(exc.filename)
    return f"{_WHO}: file name too long ({len(shown)} characters): {shown[:60]}..."


def _unreadable(exc: OSError) -> NoReturn:
    """A player's file that is there but cannot be read (no permission, a name too long): bad
    input, exit 2, in the words ``--policy`` uses."""
    if exc.errno == errno.ENAMETOOLONG and exc.filename is not None:
        _usage_error(_too_long(exc))
    _usage_error(f"{_WHO}: cannot read {exc.filename}: {exc.strerror}" if exc.filename is not None
                 else f"{_WHO}: {exc}")


def _jsonl_takes_no_position(args: argparse.Namespace, command: str) -> None:
    if args.position is not None or args.dice:
        _usage_error(f"nardy {command}: --jsonl reads positions and dice from standard input; "
                     "drop the position and dice arguments (or drop --jsonl)")


def _jsonl(answer) -> int:
    """FORMATS.md's JSON-lines loop: one answer per input line, flushed; errors as lines; exit 1 if any."""
    from nardy_env import NPNError

    failed = 0
    for number, raw in enumerate(_input_lines()):
        try:
            if isinstance(raw, _TooLong):
                raise ValueError(f"line longer than {MAX_LINE:,} bytes: not read (a request is one short JSON object)")
            if isinstance(raw, bytes):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ValueError(f"line is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
            else:
                line = raw
            if number == 0:
                line = line.removeprefix("\ufeff")  # a byte-order mark some editors write
            if not line.strip():
                # Answered, not skipped: a caller waiting line by line must never hang.
                raise ValueError("empty line: expected a JSON object with 'position' and 'dice'")
            out = answer(line)
        except (ValueError, NPNError) as exc:
            failed += 1
            out = {"error": str(exc)}
        except RecursionError:
            failed += 1
            out = {"error": "not a JSON object: nested too deeply"}
        except Exception as exc:  # a long-running server answers every line, whatever failed on it
            failed += 1
            out = {"error": f"could not answer this line: {type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 1 if failed else 0


def _for_people(args: argparse.Namespace, command: str, compute):
    """Check a position and two dice given on the command line, print the board, return ``compute()``.

    Returns None after printing what is wrong.
    """
    from nardy_env import NPNError
    from nardy_env.render import npn_board_text

    if args.position is None or len(args.dice) != 2:
        print(f'nardy {command}: give a position and two dice, e.g. nardy {command} "<NPN>" 6 5, '
              "or use --jsonl", file=sys.stderr)
        return None
    try:
        result = compute()
        board = npn_board_text(args.position, args.dice)
    except (ValueError, NPNError) as exc:
        _complain(f"nardy {command}: {exc}")
        return None
    print(board)
    return result


def _cmd_moves(args: argparse.Namespace) -> int:
    from train.moves import format_move_sequence, legal_plays, moves_record

    rules = _rules(args.rules)
    if args.jsonl:
        _jsonl_takes_no_position(args, "moves")
        return _jsonl(lambda line: moves_record(line, rules))
    plays = _for_people(args, "moves", lambda: legal_plays(args.position, args.dice, rules))
    if plays is None:
        return 2
    print()
    if len(plays) == 1 and not plays[0]["moves"]:
        print("No legal move: the turn passes.")
    else:
        print(f"{len(plays)} legal play{'' if len(plays) == 1 else 's'}:")
        width = len(str(len(plays)))
        for n, play in enumerate(plays, 1):
            print(f" {n:>{width}}. {format_move_sequence(play['moves']):<28} -> {play['result']}")
    return 0


def _saying_once(handler):
    """A command in which what loading players says is said once (``train.evaluate.saying_once``):
    when the CLI checks them and again when the match loads them."""
    @functools.wraps(handler)
    def scoped(args: argparse.Namespace) -> int:
        from train.evaluate import saying_once

        with saying_once():
            return handler(args)
    return scoped


@_saying_once
def _cmd_bench(args: argparse.Namespace) -> int:
    from train.bench import bench_core, bench_env, bench_search

    if args.env and args.search:
        _usage_error("nardy bench: choose one of --env and --search")
    misplaced = [flag for flag, value, mode in (
        ("--num-envs", args.num_envs, args.env), ("--action-mode", args.action_mode, args.env),
        ("--max-ply", args.max_ply, args.search), ("--positions", args.positions, args.search),
        ("--filter", args.filter, args.search),
    ) if value is not None and not mode]
    if misplaced:
        needs = "--env" if misplaced[0] in ("--num-envs", "--action-mode") else "--search PLAYER"
        _usage_error(f"nardy bench: {misplaced[0]} applies with {needs} only")
    if args.search and args.games is not None:
        _usage_error("nardy bench: --games does not apply to --search (use --positions)")
    games = 10000 if args.games is None else args.games
    num_envs = 256 if args.num_envs is None else args.num_envs
    action_mode = args.action_mode or "turn"
    if args.threads is not None and (args.env or args.search):
        print("nardy bench: --threads applies to the rules core benchmark only (the vector env uses every CPU "
              "this process may use; limit it with taskset)", file=sys.stderr)
        return 2
    if args.search:
        asked = _asked_rules(args.rules)
        searcher = _load_players_or_exit([args.search], asked)
        search_rules = _game_rules("bench", [args.search], searcher, asked)
        from agents.registry import split_ply
        from agents.search import SearchPlayer

        if split_ply(args.search)[0] != args.search:
            _usage_error(f"nardy bench: --search {args.search}: name the player without @N; --max-ply sets the "
                         "depths measured (0 to N)")
        if _is_level(args.search):
            _usage_error(f"nardy bench: --search {args.search}: a level of the shipped player costs what the shipped "
                         "player's 0-ply does: measure default")
        if not isinstance(searcher[0], SearchPlayer):  # a bot, your own player, a plugin's
            what = "a bot" if _is_bot(args.search) else "that player"
            _usage_error(f"nardy bench: --search {args.search}: {what} does not search; give a network player "
                         "(a run, checkpoint or exported policy folder)")
        max_ply = 2 if args.max_ply is None else args.max_ply
        if args.filter is not None and max_ply == 0:
            _usage_error(f"nardy bench: --filter {args.filter}: --max-ply 0 measures 0-ply alone, where nothing "
                         "is filtered")
        positions = 40 if args.positions is None else args.positions
        try:
            rows = bench_search(args.search, plies=tuple(range(max_ply + 1)), positions=positions,
                                seed=args.seed, rules=search_rules, filter_k=args.filter)
        except ValueError as exc:  # your own SearchPlayer object, which cannot be named @N
            _usage_error(f"nardy bench: --search {args.search}: {exc}")
        filter_k = rows[-1].get("filter_k")  # None when only 0-ply was measured
        if args.json:
            print(json.dumps({"player": args.search, "levels": rows, "filter_k": filter_k,
                              "seed": args.seed, "rules": search_rules.to_dict()}))
        else:
            print(f"search cost of {args.search} ({rows[0]['decisions']} decisions each"
                  + (f"; beyond 0-ply the best {filter_k} plays by 0-ply are searched)" if filter_k else ")"))
            print("| ply | positions evaluated per decision | ms per decision | slowest decision, ms |")
            print("| ---: | ---: | ---: | ---: |")
            for r in rows:
                print(f"| {r['ply']} | {r['positions_per_decision']:,.1f} | {r['ms_per_decision']:,.1f} "
                      f"| {r['ms_max']:,.1f} |")
        return 0
    if args.env:
        try:
            result = bench_env(games, num_envs=num_envs, action_mode=action_mode, seed=args.seed,
                               rules=_rules(args.rules))
        except MemoryError as exc:  # numpy's says what it could not allocate
            _usage_error(f"nardy bench: --num-envs {num_envs:,}: too many sub-environments for this machine's "
                         f"memory ({exc}); the default is 256")
        if args.json:
            print(json.dumps(result))
        else:
            print(f"LongNardy-v0 vector env, {num_envs} envs, {action_mode} mode: "
                  f"{result['games_per_s']:,.0f} games/s, {result['steps_per_s']:,.0f} steps/s "
                  f"({result['games']} games in {result['seconds']:.2f} s)")
        return 0
    result = bench_core(games, seed=args.seed, rules=_rules(args.rules), threads=args.threads)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['games']} random games in {result['seconds']:.2f} s "
              f"({result['threads']} threads): {result['games_per_s']:,.0f} games/s, "
              f"{result['positions_per_s']:,.0f} positions/s, "
              f"{result['plies_per_game']:.1f} plies per game")
    return 0


def _shown(name: str) -> str:
    """A player's name on one line of a report: control characters and newlines escaped (a folder
    named with an escape sequence must not drive the terminal, nor one with a newline split a line)."""
    return printable(name).replace("\n", "\\n")


def _cell(name: str) -> str:
    """A player's name in a markdown table cell: as ``_shown``, its ``|`` escaped, and a backslash
    before punctuation too (markdown would read ``\\|`` in a name as an escaped bar and drop it)."""
    return re.sub(r"\\(?=[!-/:-@[-`{-~])", r"\\\\", _shown(name)).replace("|", "\\|")


def _as_met(against: str, met: dict[str, list[str]]) -> str:
    """``--against`` as the runs' logs name it: a path given with a trailing slash, a ``./``, or
    in another Unicode normal form (a name typed on macOS) is the same opponent."""
    import unicodedata

    def key(name: str) -> str:
        return os.path.normpath(unicodedata.normalize("NFC", name))

    if all(against in opponents for opponents in met.values()):
        return against
    same = {o for opponents in met.values() for o in opponents if key(o) == key(against)}
    return same.pop() if len(same) == 1 else against


def _print_match(s: dict) -> None:
    a, b = _shown(s["player_a"]), _shown(s["player_b"])
    pairs = f"{s['pairs']} pair" + ("s" if s["pairs"] != 1 else "")
    print(f"{a} vs {b}: {s['games']} games ({pairs} of paired dice), seed {s['seed']}")
    print(f"  {'points per game':<18} {s['points_per_game']:+.3f}   95% CI [{s['ci95'][0]:+.3f}, {s['ci95'][1]:+.3f}]")
    print(f"  {'win rate':<18} {s['win_rate']:.1%}   95% CI [{s['win_rate_ci95'][0]:.1%}, {s['win_rate_ci95'][1]:.1%}]")
    print(f"  {'wins by mars':<18} {a}: {s['mars_rate_a']:.1%}   {b}: {s['mars_rate_b']:.1%}   (of all games)")
    print(f"  {'by colour':<18} {a} as white {s['points_per_game_a_white']:+.3f}, as black "
          f"{s['points_per_game_a_black']:+.3f} points per game")
    print(f"  {'game length':<18} {s['mean_plies']:.1f} plies (sd {s['sd_plies']:.1f})")
    from nardy_env import Rules

    if Rules.from_dict(s["rules"]) != Rules():
        print(f"  {'rules':<18} {json.dumps(s['rules'])}")


def _own_file(spec: str) -> bool:
    """Whether ``spec`` names your own player by its file, ``FILE.py:NAME`` (which never searches)."""
    from nardy_env.players import names_code

    return names_code(spec) and spec.rpartition(":")[0].endswith(".py")


def _load_players_or_exit(specs, rules) -> list:
    """Load each named player (None: under the rules it was trained under), or exit with why not.

    What loading them says (warnings: a plugin that failed to load or failed on a name, a
    network trained under other rules, your player file's own) is shown here, before any
    error it may explain, and once in the command: not again when the match loads them again
    (``train.evaluate.load_saying_once``, within the handler's ``_saying_once``).
    """
    from nardy_env.players import PlayerNotFound
    from train.evaluate import load_saying_once

    players = []
    for spec in specs:
        try:
            players.append(load_saying_once(spec, rules))
        except (PlayerNotFound, ValueError) as exc:
            _usage_error(f"{_WHO}: {exc}")
        except OSError as exc:  # a file that is there but cannot be read
            _unreadable(exc)
    return players


def _game_rules(command: str, specs, players, asked):
    """The rules of the games: ``--rules``, else those the players were trained under
    (``trained_rules``), said on stderr when they are not the default rules."""
    from nardy_env import Rules
    from nardy_env.players import trained_rules

    if asked is not None:
        return asked
    try:
        rules = trained_rules(dict(zip(specs, players, strict=True)))
    except ValueError as exc:
        _usage_error(f"nardy {command}: {exc} with --rules")
    if rules != Rules():
        print(f"nardy {command}: playing under the rules the players were trained under: {rules.to_json()} "
              "(--rules chooses others)", file=sys.stderr, flush=True)
    return rules


def _match_games_problem(games: int) -> str | None:
    """What is wrong with ``games`` as a match's size (an even number from 2 to
    train.evaluate.MAX_GAMES), or None: the one rule of eval's, ladder's and MATCH_GAMES's."""
    from train.evaluate import MAX_GAMES

    if games > MAX_GAMES:
        return (f"must be at most {MAX_GAMES:,} in one match, got {games:,}; for more, play several matches with "
                "different --seed")
    if games < 2 or games % 2:
        return (f"must be an even number >= 2 (games are played in pairs), got {games}"
                + (f"; {games + 1} would do" if games % 2 and games > 0 else ""))
    return None


def _match_games_or_say(command: str, games: int) -> bool:
    """``--games`` of eval and ladder (a match, each pair of players' match), checked before any
    player loads; else False, said on stderr."""
    problem = _match_games_problem(games)
    if problem:
        _complain(f"nardy {command}: --games {problem}")
    return problem is None


@_saying_once
def _cmd_eval(args: argparse.Namespace) -> int:
    from train.evaluate import evaluate

    asked = _asked_rules(args.rules)
    if not _match_games_or_say("eval", args.games):
        return 2
    if args.records and not _writable_file_or_say("eval", "--records", args.records):
        return 2
    players = _load_players_or_exit([args.a, args.b], asked)
    rules = _game_rules("eval", [args.a, args.b], players, asked)
    result = evaluate(args.a, args.b, args.games, seed=args.seed, rules=rules, workers=args.workers,
                      progress=_match_progress(args), chunk_pairs=args.chunk_pairs, records=bool(args.records))
    summary = result.summary()
    failed = None
    if args.records:  # first: records sent to /dev/stdout come before the summary, the last line
        from agents.files import write_atomic

        lines = "".join(json.dumps(r) + "\n" for r in result.records or [])
        try:
            write_atomic(args.records, lambda fh: fh.write(lines.encode("utf-8")), follow=True)
        except OSError as exc:
            failed = f"nardy eval: could not write {args.records}: {exc.strerror or exc}"
    if args.json:  # also when the records failed (a full disk): the match's result is not lost
        print(json.dumps(summary))
    else:
        _print_match(summary)
        if args.records and failed is None:
            print(f"\ngame records: {args.records} ({len(result.records or [])} games, one JSON line each)")
    if failed is not None:
        _complain(failed)
        return 1
    return 0


def _match_progress(args: argparse.Namespace) -> bool:
    """Progress for a match: always without --json; with it (a script's call) only on a terminal,
    where someone waits for the result (stderr, so the JSON on stdout stays alone); never with --quiet."""
    from train.progress import on_terminal

    return not args.quiet and (not args.json or on_terminal(sys.stderr))


def _writable_file_or_say(command: str, option: str, name: str) -> bool:
    """Whether a file may be written at ``name`` (its folder exists and is writable), else say why."""
    from pathlib import Path

    from agents.files import is_stream

    if name == "-":  # the usual "standard output", which holds the command's own output here
        print(f"nardy {command}: {option} -: give a file name (standard output holds the command's own "
              f"output; a path such as /dev/stdout writes there anyway)", file=sys.stderr)
        return False
    path = Path(os.path.realpath(name)) if Path(name).is_symlink() else Path(name)  # where it is written
    if path.is_dir() or name.endswith(("/", os.sep)):  # Path drops a trailing slash: "new/" would be a file "new"
        _complain(f"nardy {command}: {option} {name} {'is' if path.is_dir() else 'names'} a folder; give a file name")
        return False
    if os.path.exists(name) and is_stream(name):  # /dev/stdout, a pipe (links followed): written to as it is
        if not os.access(name, os.W_OK):
            _complain(f"nardy {command}: {option} {path} is not writable")
            return False
        return True
    if path.parent.exists() and not path.parent.is_dir():
        _complain(f"nardy {command}: {option} {path}: {path.parent} is a file, not a folder")
        return False
    if not path.parent.is_dir():
        _complain(f"nardy {command}: {option} {path}: folder {path.parent} does not exist")
        return False
    from agents.files import TEMP_NAME_EXTRA, creation_refused

    if not os.access(path.parent, os.W_OK):  # found now, not after all the games
        _complain(f"nardy {command}: {option} {path}: folder {path.parent} is not writable")
        return False
    refused = creation_refused(path.parent, command)  # access() says yes to root, and on Windows, wrongly
    if refused:
        _complain(f"nardy {command}: {option} {path}: no file can be made in folder {path.parent} ({refused})")
        return False
    try:
        name_max = os.pathconf(path.parent, "PC_NAME_MAX")  # POSIX only
    except (OSError, ValueError, AttributeError):
        name_max = 255
    if len(os.fsencode(path.name)) + TEMP_NAME_EXTRA > name_max:  # the file is written beside it first
        _complain(f"nardy {command}: {option} {path}: the file name is too long (at most "
                  f"{name_max - TEMP_NAME_EXTRA} bytes here)")
        return False
    return True


@_saying_once
def _cmd_ladder(args: argparse.Namespace) -> int:
    from agents.files import is_stream
    from train.evaluate import ladder

    asked = _asked_rules(args.rules)
    if not _match_games_or_say("ladder", args.games):
        return 2
    if args.png:
        from pathlib import Path

        png = Path(args.png)
        if args.png != "-" and png.suffix.lower() != ".png" and not is_stream(png):
            _complain(f"nardy ladder: --png {png}: the chart is a PNG file; give a name ending in .png")
            return 2
        if not _writable_file_or_say("ladder", "--png", args.png):
            return 2
    rules = _game_rules("ladder", args.players, _load_players_or_exit(args.players, asked), asked)
    finished: list[dict] = []
    try:
        out = ladder(args.players, args.games, seed=args.seed, rules=rules, workers=args.workers,
                     progress=_match_progress(args), chunk_pairs=args.chunk_pairs, on_match=finished.append)
    except ValueError as exc:
        _complain(f"nardy ladder: {exc}")
        return 2
    except BaseException as exc:  # Ctrl-C or SIGTERM (inside numba's code, a SystemError raised from it)
        if finished and stop_behind(exc) is not None:  # not lost: --seed plays them again exactly
            total = len(args.players) * (len(args.players) - 1) // 2
            print(f"\nnardy ladder: {len(finished)} of {total} matches had finished (seed {args.seed}):",
                  file=sys.stderr)
            for line in _match_rows(finished):
                print(line, file=sys.stderr)
        raise
    reader_gone = None
    try:
        if args.json:
            print(json.dumps(out))
        else:
            _print_ladder(out)
        sys.stdout.flush()
    except BrokenPipeError as exc:  # `| head`: the chart asked for is still drawn, then 141
        reader_gone = exc
    if args.png:
        from train.plots import ladder_chart

        try:
            ladder_chart(out, args.png, follow=True)
        except OSError as exc:
            if reader_gone is not None and isinstance(exc, BrokenPipeError):  # --png /dev/stdout: that reader
                raise reader_gone from None
            _complain(f"nardy ladder: could not write {args.png}: {exc.strerror or exc}")
            if reader_gone is not None:  # what is still buffered for the reader would fail at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    if reader_gone is not None:
        raise reader_gone
    if args.png and not args.json:
        print(f"\nchart: {args.png}")
    return 0


def _match_rows(matches: list[dict]) -> list[str]:
    """The ladder's matches as a markdown table."""
    rows = ["| A | B | games | points/game (95% CI) | A wins (95% CI) | A mars | B mars |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for s in matches:
        rows.append(f"| {_cell(s['player_a'])} | {_cell(s['player_b'])} | {s['games']} | {s['points_per_game']:+.3f} "
                    f"[{s['ci95'][0]:+.3f}, {s['ci95'][1]:+.3f}] | {s['win_rate']:.1%} "
                    f"[{s['win_rate_ci95'][0]:.1%}, {s['win_rate_ci95'][1]:.1%}] | {s['mars_rate_a']:.1%} | "
                    f"{s['mars_rate_b']:.1%} |")
    return rows


def _print_ladder(out: dict) -> None:
    from train.evaluate import ladder_provenance

    said = ladder_provenance(out)
    print(f"{len(out['ratings'])} players, {out['games_per_pair']} games a match (paired dice)"
          + (f", {said}" if said else "") + "\n")
    for line in _match_rows(out["matches"]):
        print(line)
    print()
    from train.plots import elo_bound

    first = _cell(out["ratings"][0]["player"])
    print(f"| player | linear rating (points/game scale, vs {first}) | 95% CI | Elo (vs {first}) | 95% CI |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in sorted(out["ratings"], key=lambda r: -r["elo"]):
        bound = elo_bound(r, out["ratings"])
        lo = "-inf" if bound == "<=" else f"{r['elo_ci95'][0]:+.0f}"
        hi = "+inf" if bound == ">=" else f"{r['elo_ci95'][1]:+.0f}"
        # A sweep's rating is known from one side only: show the end of its interval that the
        # games support (the pseudo-win value itself grows with the games played).
        elo = {">=": lo, "<=": hi}.get(bound, f"{r['elo']:+.0f}")
        print(f"| {_cell(r['player'])} | {r['rating']:+.3f} | [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] | "
              f"{bound}{elo} | [{lo}, {hi}] |")
    fit = out["fit"]
    notes = []
    for what, f in (("linear rating", fit["rating"]), ("Elo", fit["elo"])):
        if f["df"] > 0:
            notes.append(f"{what}: chi2 {f['chi2']:.1f} on {f['df']} df"
                         + (f", intervals widened x{f['ci_scale']:.2f} for the misfit" if f["ci_scale"] > 1 else ""))
    if notes:
        print("\nfit of the ratings to the matches: " + "; ".join(notes))
    if fit["sweep_groups"] > 1:
        print(">= / <=: some players won (or lost) every game against the others, so the games bound their "
              "Elo gap from one side only: shown is the end of the 95% interval, at least (at most) that "
              "much (--json's elo is the pseudo-win value, which grows with the games played)")


def _hint_player(args: argparse.Namespace, asked):
    """The player of ``hint`` or ``play`` and the rules of the game: ``--rules``, else the
    player's own (see ``_game_rules``)."""
    command = "play" if hasattr(args, "against") else "hint"
    spec, player = _named_hint_player(args, asked)
    return player, _game_rules(command, [spec], [player], asked)


def _named_hint_player(args: argparse.Namespace, rules):
    from agents.registry import split_ply
    from nardy_env.players import PlayerNotFound, load_player
    from train.hint import default_player_spec

    if args.policy and args.player:
        _usage_error(f"{_WHO}: give one player: --policy {args.policy} or --player {args.player}, not both")
    spec = args.policy or args.player
    if not spec:
        spec = default_player_spec()
        if spec == "heuristic":  # an installed package without the repository's checkpoints/
            from agents.registry import SHIPPED_PLAYER

            print(f"{_WHO}: no shipped player in this installation ({SHIPPED_PLAYER} comes with a clone of "
                  "the repository and with nardy's wheel): the heuristic bot plays instead; name a player to choose another",
                  file=sys.stderr)
    try:
        base, ply = split_ply(spec)
    except ValueError as exc:  # a negative depth, say
        _usage_error(f"{_WHO}: {exc}")
    if args.ply is not None and base != spec and args.ply != ply:
        _usage_error(f"{_WHO}: {spec} asks for {ply}-ply and --ply for {args.ply}; give the depth once")
    if args.ply is not None:
        if args.ply and _is_level(base):
            _usage_error(f"{_WHO}: --ply {args.ply}: {base} is a level of the shipped player, drawn by its 0-ply "
                         f"equities, and does not search (a level of a searching player: "
                         f"agents.levels.Sampling('default@{args.ply}', T) in your own FILE.py:NAME)")
        if args.ply and (_is_bot(base) or _own_file(base)):
            what = "a bot" if _is_bot(base) else "your own player"
            _usage_error(f"{_WHO}: --ply {args.ply}: {base} is {what} and does not search; "
                         "search needs a network player (a run, checkpoint or exported folder)")
        ply = args.ply
    if args.policy:
        from agents.onnx_policy import PolicyError, load_policy

        try:
            load_policy(base)  # the exported-policy loader's own, precise errors
        except PolicyError as exc:
            _usage_error(f"{_WHO}: --policy: {exc}")
    named = f"{base}@{ply}" if ply else base
    try:
        player = load_player(named, rules)
    except (PlayerNotFound, ValueError) as exc:
        _usage_error(f"{_WHO}: {exc}")
    except OSError as exc:  # a file that is there but cannot be read
        _unreadable(exc)
    if args.filter is not None:
        _set_filter(player, args.filter, base, named)
    return named, player


def _set_filter(player: Any, filter_k: int, base: str, named: str) -> None:
    """A searching player's move filter set from the command line (its ``filter_k``), by what
    the player is once loaded (your own FILE.py:NAME may be a SearchPlayer that searches)."""
    from agents.search import SearchPlayer

    said = f"{_WHO}: --filter {filter_k}: {named}"
    if isinstance(player, SearchPlayer) and player.ply > 0:
        player.filter_k = filter_k
    elif isinstance(player, SearchPlayer):
        _usage_error(f"{said} plays at 0-ply, where nothing is filtered; give --ply 1 or more "
                     f"(the move filter picks the plays a search looks at beyond 0-ply)")
    else:
        what = ("a bot" if _is_bot(base) else "a level of the shipped player" if _is_level(base)
                else "a player that does not search with nardy's SearchPlayer")
        _usage_error(f"{said} is {what}, with no move filter (only a network player searching beyond "
                     f"0-ply has one)")


def _cmd_hint(args: argparse.Namespace) -> int:
    from nardy_env.players import player_name
    from train.hint import can_rank, no_ranking, rank_plays
    from train.moves import format_move_sequence, moves_record

    player, rules = _hint_player(args, _asked_rules(args.rules))
    if not can_rank(player):
        _usage_error(f"nardy hint: {no_ranking(player)}")
    if args.jsonl:
        _jsonl_takes_no_position(args, "hint")
        name = player_name(player, args.player or args.policy or "player")

        def answer(line: str) -> dict:
            out = moves_record(line, rules, ranked=True)
            out["ranked"] = rank_plays(player, out["position"], out["dice"], rules)[:args.top]
            out["player"] = name  # whose equities (a bot's are its own score, not points)
            return out

        return _jsonl(answer)
    ranked = _for_people(args, "hint", lambda: rank_plays(player, args.position, args.dice, rules))
    if ranked is None:
        return 2
    top = 10 if args.top is None else args.top
    print()
    print(f"{player_name(player, args.player or 'the player')}'s ranking of {len(ranked)} legal play{'' if len(ranked) == 1 else 's'}:")
    has_outcomes = "outcomes" in ranked[0]
    label = "equity" if has_outcomes else "score"
    header = f"  {'#':>3}  {label:>7}  " + ("  win  win-mars   lose  lose-mars  ply  " if has_outcomes else "") + "play"
    if has_outcomes:
        print("  (for the side to move: equity in points, searched to the ply shown; win and lose: the chances\n"
              "   of winning and losing after the play, win-mars and lose-mars the parts of them by mars,\n"
              "   searched to the same ply: equity = win + win-mars - lose - lose-mars)")
        searched = sum(e["ply"] > 0 for e in ranked)
        if 0 < searched < len(ranked):  # the move filter's leftovers, valued at 0-ply
            print(f"  (the best {searched} by 0-ply were searched; the rows at ply 0 below them were not, and\n"
                  "   compare with each other only)")
    else:
        print(f"  (score: {player_name(player, args.player or 'the player')}'s own preference, higher is better; not points)")
    print(header)
    for n, e in enumerate(ranked[:top], 1):
        cols = f"  {n:>3}  {e['equity']:+7.3f}  " if has_outcomes else f"  {n:>3}  {e['equity']:+7.1f}  "
        if has_outcomes:
            win, win_mars, lose, lose_mars = e["outcomes"]
            cols += (f"{win + win_mars:5.3f} {win_mars:9.3f}  {lose + lose_mars:5.3f} {lose_mars:10.3f}  "
                     f"{e['ply']:>3}  ")
        print(cols + format_move_sequence(e["moves"]))
    if len(ranked) > top:
        print(f"  ... {len(ranked) - top} more (--top N shows more)")
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from nardy_env import Color
    from train.play import play_session

    args.player, args.policy = args.against, None
    opponent, rules = _hint_player(args, _asked_rules(args.rules))
    human = None if args.color == "random" else (Color.WHITE if args.color == "white" else Color.BLACK)
    play_session(opponent, human=human, rules=rules, seed=args.seed, games=args.games)
    return 0


def _continue_with(run_dir: Any, address: str | None) -> str:
    """The command that resumes a run, with the cluster it ran on (given by --address or by
    RAY_ADDRESS, which a later shell may not have)."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    return f"nardy train --resume {shlex.quote(str(run_dir))}" + (f" --address {shlex.quote(address)}"
                                                                   if address else "")


_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM}
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO}


def _is_storage_error(exc: OSError) -> bool:
    """What the storage refused (no space, read-only, no permission), not an error Ray passes on
    from a task (its exceptions may subclass the task's own OSError)."""
    return type(exc).__module__.split(".")[0] != "ray" and exc.errno in _STORAGE_ERRNOS


def _storage_error(exc: OSError, run_dir: Any, continue_with: str) -> int:
    """Storage that failed (no space, read-only): one line, and what is left on disk."""
    where = f" ({exc.filename})" if exc.filename else ""
    saved = any(run_dir.glob("checkpoint*.pt"))
    remedy = "make room" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else (
        "make it writable" if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else "fix the storage")
    after = (f"The run's checkpoints on disk are whole (each is written to a temporary file, then renamed); "
             f"{remedy}, then: {continue_with}") if saved and continue_with else "No checkpoint was written."
    _complain(f"nardy train: {exc.strerror}{where}. {after}")
    return 1


def trained_line(games: int, stats: dict[str, Any], restarts: int) -> str:
    """The line ``nardy train`` ends a session with (tools/scaling.py reads it)."""
    actors = stats.get("actors", 0)
    return (f"trained {games} games; this session {stats.get('session_games_per_s', 0):.0f} games/s "
            f"and {stats.get('session_updates_per_s', 0):.0f} updates/s (evaluations excluded) with {actors} "
            f"actor{'' if actors == 1 else 's'}; last window "
            f"{stats.get('games_per_s', 0):.0f} games/s, {stats.get('updates_per_s', 0):.0f} updates/s, "
            f"learner busy {stats.get('learner_busy', 0):.0%}; actor restarts {restarts}")


def _cmd_train(args: argparse.Namespace) -> int:
    from pathlib import Path

    from train import runlock

    key = None
    if args.resume:  # before anything reads or repairs the run (config.json written again, say)
        try:
            key = runlock.acquire(Path(args.resume))
        except runlock.LockError as exc:
            _complain(f"nardy train: {exc}")
            return 2
    try:
        return _train(args)
    finally:
        runlock.release(key)


def _train(args: argparse.Namespace) -> int:
    from pathlib import Path

    from train.config import ConfigError, load_config, parse_overrides
    from train.trainer import (
        Trainer,
        TrainError,
        config_for_resume,
        default_run_dir,
        resume_with_changes,
        save_config,
        summary_line,
    )

    try:
        if args.resume:
            run_dir = Path(args.resume)
            config = config_for_resume(run_dir)
            if args.config:  # refused like --out: a file that differs (or is missing) would mislead
                print(f"nardy train: --resume continues {run_dir} with its own config.json; drop --config "
                      f"(the settings that may change go in --set KEY=VALUE)", file=sys.stderr)
                return 2
            if args.out and Path(args.out).resolve() != run_dir.resolve():
                _complain(f"nardy train: --out cannot move a resumed run; it continues in {run_dir}")
                return 2
            if args.set:
                config = resume_with_changes(config, parse_overrides(args.set), run_dir)
        else:
            if not args.config:
                print("nardy train: give --config FILE.yaml or a shipped config's name, such as --config quick (or "
                      "--resume RUN_DIR)", file=sys.stderr)
                return 2
            config = load_config(args.config, overrides_from="--set", **parse_overrides(args.set))
            run_dir = Path(args.out) if args.out else default_run_dir(config)
        trainer = Trainer(config, run_dir, resume=bool(args.resume), address=args.address,
                          progress=not args.quiet)
        if args.resume and args.set:
            save_config(run_dir, config)  # only once the resume has been accepted
    except (ConfigError, TrainError) as exc:
        _complain(f"nardy train: {exc}")
        return 2
    except OSError as exc:  # a resume that must write (eval.jsonl, a repair) on a full disk
        if not _is_storage_error(exc):
            raise
        again = "".join(f" --set {shlex.quote(s)}" for s in args.set or [])  # not yet in config.json
        return _storage_error(exc, Path(args.resume or args.out or "."),
                              _continue_with(args.resume, args.address) + again if args.resume else "")
    with trainer:  # its lock on the run folder goes at the end
        for note in trainer.skipped:
            _complain(f"nardy train: {note}")
        for note in trainer.notes:
            _complain(f"nardy train: note: {note}")
        # A club variant is named where the run starts: the only place but config.json that says it took.
        changes = trainer.rules.changes()
        variant = f", rules {json.dumps(changes)}" if changes else ""
        if args.resume:
            print(f"run directory: {run_dir}  (config {printable(config.name)}, {config.total_games} games{variant}, "
                  f"resuming from {trainer.games} games in "
                  f"{trainer.resumed_from.name if trainer.resumed_from else '?'})", flush=True)
        else:
            print(f"run directory: {run_dir}  (config {printable(config.name)}, {config.total_games} games{variant})",
                  flush=True)
        continue_with = _continue_with(run_dir, args.address)
        if trainer.finished:
            print(f"the run has played its {config.total_games} games; to train on, resume with "
                  f"--set total_games=N (N > {trainer.games})", flush=True)
        else:
            try:
                stats = trainer.train(max_seconds=args.max_seconds)
            except TrainError as exc:
                _complain(f"nardy train: {exc}")
                return 2
            except OSError as exc:  # a full disk, a folder made read-only
                if not _is_storage_error(exc):
                    raise
                return _storage_error(exc, run_dir, continue_with)
            if trainer.interrupted:
                terminated = trainer.stop_signal == signal.SIGTERM
                print(f"{'terminated' if terminated else 'interrupted'} after {trainer.games} games; checkpoint saved. "
                      f"Continue with: {continue_with}", flush=True)
                return 143 if terminated else 130
            print(trained_line(trainer.games, stats, trainer.actor_restarts), flush=True)
            if not trainer.finished:
                print(f"stopped by --max-seconds at {trainer.games} of {config.total_games} games; checkpoint "
                      f"saved. Continue with: {continue_with}", flush=True)
        had_final = trainer.final_evaluation is not None
        try:
            record = trainer.finish()
        except TrainError as exc:
            _complain(f"nardy train: {exc}")
            return 2
        except OSError as exc:
            if not _is_storage_error(exc):
                raise
            return _storage_error(exc, run_dir, continue_with)
        if record is not None:
            again = " (made earlier)" if had_final else ""
            played = record[config.eval_opponents[0]].get("games", config.final_eval_games)
            print(f"final evaluation{again} ({played} paired games each, 0-ply): "
                  f"{summary_line(record, config.eval_opponents)}", flush=True)
        print(f"checkpoint: {run_dir / 'checkpoint.pt'}")
        return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agents.files import is_stream
    from nardy_env._runtime import not_a_file
    from train.plots import (
        MAX_RUNS,
        NoRecords,
        compare_curves,
        evaluation_points,
        opponents_met,
        training_curve,
    )

    runs: dict[Path, tuple[Path, str]] = {}  # each log once, however it was named: (its path, its label)
    for run in args.runs:
        source = Path(run) / "eval.jsonl" if Path(run).is_dir() else Path(run)
        if not source.is_file():
            odd = not_a_file(source)
            missing = ("there is no such file or folder" if not Path(run).exists() else
                       f"{source} {odd}" if odd else f"no eval.jsonl at {source}")
            _complain(f"nardy plot: {run}: {missing} (give a run directory, or its eval.jsonl)")
            return 2
        if source.resolve() in runs:
            _complain(f"nardy plot: {run} is named twice (as {runs[source.resolve()][1]} too)")
            return 2
        runs[source.resolve()] = (source, str(source.parent) if source.name == "eval.jsonl" else run)
    compare = len(runs) > 1 or args.against is not None
    if len(runs) > MAX_RUNS:
        _complain(f"nardy plot: {len(runs)} runs are more than one picture tells apart ({MAX_RUNS} at most)")
        return 2
    if compare and not args.out:
        _complain("nardy plot: a comparison (several runs, or --against) is a picture of its own: name it "
                  "with --out FILE.png")
        return 2
    source = next(iter(runs.values()))[0]
    out = Path(args.out) if args.out else source.parent / "training_curve.png"
    if args.out and not _writable_file_or_say("plot", "--out", args.out):
        return 2
    if out.suffix.lower() != ".png" and not is_stream(out):  # as ladder --png: the picture is PNG
        _complain(f"nardy plot: --out {out}: the curve is a PNG file; give a name ending in .png")
        return 2
    met: dict[str, list[str]] = {}
    for source, label in runs.values():  # every log read, and its fault named, before drawing
        try:
            with warnings.catch_warnings():  # a line cut short: said once, when the picture reads it
                warnings.simplefilter("ignore")
                met[label] = opponents_met(evaluation_points(source))
        except NoRecords:
            _complain(f"nardy plot: {source} holds no evaluation yet (a run adds one every eval_every_games "
                      "games and one at its end, unless final_eval_games is 0)")
            return 2
        except (ValueError, KeyError, TypeError) as exc:
            _complain(f"nardy plot: {source} is not a run's evaluation log: {exc!s}")
            return 2
        except OSError as exc:
            _complain(f"nardy plot: could not read {source}: {exc.strerror or exc}")
            return 2
        if not met[label]:
            _complain(f"nardy plot: {source} is not a run's evaluation log: no record holds a win rate")
            return 2
    try:
        if not compare:
            training_curve(source, out, follow=bool(args.out))  # beside the run's log: never through a link
        else:
            if args.against is not None:
                against = _as_met(args.against, met)
                lacking = [label for label, opponents in met.items() if against not in opponents]
                if lacking:
                    said = "; ".join(f"{k} met {', '.join(met[k]) or 'no one'}" for k in lacking)
                    _complain(f"nardy plot: {', '.join(lacking)} never met {against} ({said})")
                    return 2
            else:
                common = [o for o in next(iter(met.values())) if all(o in m for m in met.values())]
                if not common:
                    _complain("nardy plot: the runs share no opponent they were evaluated against")
                    return 2
                against = "heuristic" if "heuristic" in common else common[0]
            compare_curves({label: path for path, label in runs.values()}, against, out, follow=True)
    except (ValueError, KeyError, TypeError, ArithmeticError) as exc:  # a record of the wrong shape (an
        # interval of one number, an infinite games_trained)
        named = source if not compare else "one of the runs' logs"
        _complain(f"nardy plot: {named} is not a run's evaluation log: {exc!s}")
        return 2
    except OSError as exc:
        _complain(f"nardy plot: could not write {out}: {exc.strerror or exc}")
        return 1
    if not is_stream(out):  # a stream may be standard output, holding the picture itself
        print(out)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from train.export import cmd_export

    return cmd_export(args)


def _number_type(name: str, convert: Callable[[str], Any], noun: str, fits: Callable[[Any], bool],
                 wanted: str) -> Callable[[str], Any]:
    """An argparse type: ``convert(text)`` (else "is not ``noun``"), refused unless it ``fits``
    (else "must be ``wanted``"), with the reason in argparse's error; ``name`` in its usage errors."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not fits(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text}")
        return value

    parse.__name__ = name
    return parse


def _at_least(low: int) -> Callable[[str], Any]:
    """An integer >= ``low``."""
    return _number_type(f"integer >= {low}", int, "an integer", lambda v: v >= low, f"{low} or more")


def _positive(what: str) -> Callable[[str], Any]:
    """A positive, finite ``what`` ("number", "number of seconds")."""
    return _number_type(f"positive {what}", float, f"a {what}", lambda v: 0 < v < float("inf"), f"a positive {what}")


def _max_seed() -> int:
    from train.evaluate import MAX_SEED  # when a seed is read, not when the parser is built

    return MAX_SEED


# The argparse types of every command's options (and of the scripts under tools/).
SEED = _number_type("integer 0..2**32 - 1", int, "an integer", lambda v: 0 <= v <= _max_seed(),
                    "from 0 to 2**32 - 1")
"""A seed, 0 to train.evaluate.MAX_SEED: the one range of every command's --seed."""
COUNT = _at_least(1)


def PLY(text: str) -> int:
    """An argparse type for a search depth: 0 to agents.search.MAX_PLY."""
    from agents.search import MAX_PLY  # when a depth is read, not when the parser is built

    return _number_type(f"integer 0..{MAX_PLY}", int, "an integer", lambda v: 0 <= v <= MAX_PLY,
                        f"from 0 to {MAX_PLY} (each ply beyond 2 costs about 100 times more; "
                        f"{MAX_PLY}-ply takes days a move)")(text)


POSITIVE = _positive("number")
SECONDS = _positive("number of seconds")


def MATCH_GAMES(text: str) -> int:
    """An argparse type for a match's games: in pairs (paired dice), at most train.evaluate.MAX_GAMES."""
    try:
        games = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    problem = _match_games_problem(games)
    if problem:
        raise argparse.ArgumentTypeError(problem)  # it names the count given
    return games


def DICE(text: str) -> list[int]:
    """An argparse type for the dice: a die (``6``), or both as gnubg and the play prompt write
    them (``65``, ``6-5``, ``6,5``); the list of ``dice`` arguments is flattened after parsing."""
    both = re.fullmatch(r"\s*(\d)\s*[-,]?\s*(\d)\s*", text, re.ASCII)  # 75 too: two dice, one of them no die
    if both:
        return [int(both.group(1)), int(both.group(2))]
    if re.fullmatch(r"\s*[-+]?\d+\s*", text, re.ASCII):  # a number: the rules say which are dice (1 to 6)
        return [int(text)]
    raise argparse.ArgumentTypeError(f"the dice are two numbers 1..6, e.g. 6 5 (or 65, 6-5), got {text!r}")


def TEXT(text: str) -> str:
    """An argparse type for a name or path: refuses an empty one (an unset shell variable), which
    would otherwise mean the current folder or the default player."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty or blank")
    return text


def _match_options(parser: argparse.ArgumentParser, json_help: str) -> None:
    """Options shared by the commands that play matches."""
    parser.add_argument("--seed", type=SEED, default=0, help="dice seed, 0 to 2**32 - 1 (default 0)")
    parser.add_argument("--workers", type=COUNT, default=None, help="processes (default: one per CPU, at most one per 1,000 games)")
    parser.add_argument("--chunk-pairs", type=COUNT, default=None, metavar="N",
                        help="pairs played in one lockstep batch (default 100); a randomising player's draws "
                             "depend on it: to reproduce a result, give the chunk_pairs it records")
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--quiet", action="store_true", help="no progress bar or progress lines on stderr "
                                                             "(TQDM_DISABLE=1 does the same)")
    parser.add_argument("--rules", help=RULES_HELP +
                                        "(default: those the network players were trained under, else the defaults)")


FILTER_HELP = ("the move filter of a search beyond 0-ply: the plays searched deeper, the best K by 0-ply, at "
               "every level (default 5)")
RULES_HELP = ("rule variants as a JSON object (without its inner quotes too: \"{block_rule: home}\"); keys "
              "left out take the 2026 code's values, except that every game is "
              "cubeless (the cube is not implemented yet) ")
"""The start of every --rules help but ``moves``'s."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nardy")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``nardy`` command."""
    parser = argparse.ArgumentParser(
        prog="nardy", description="Train, measure and ship players of Long Nardy."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    moves = sub.add_parser("moves", help="list the legal plays of a position and roll",
                           description="List the legal plays of a position (NPN) and two dice.")
    moves.add_argument("position", nargs="?", help="position as an NPN string")
    moves.add_argument("dice", nargs="*", type=DICE, help="the two dice, e.g. 6 5 (or 65, 6-5)")
    moves.add_argument("--jsonl", action="store_true",
                       help="read JSON lines from stdin, write JSON lines (docs/formats.md)")
    moves.add_argument("--rules", help='rule variants as a JSON object, e.g. \'{"block_rule": "home"}\' '
                                        "(or without its inner quotes: \"{block_rule: home}\")")
    moves.set_defaults(func=_cmd_moves)

    bench = sub.add_parser("bench", help="measure the rules core with random games",
                           description="Play random games through the batched rules core and time them. "
                                       "--json prints one object: games, seconds, games_per_s, positions_per_s "
                                       "(positions whose legal afterstates were generated, one per turn, per "
                                       "second), plies_per_game, max_results (the most afterstates one position "
                                       "had), mars_rate (share of games won by mars), threads, seed, rules; with "
                                       "--env: games, seconds, games_per_s, steps_per_s (sub-env steps), "
                                       "cpu_seconds, num_envs, action_mode, seed, rules; with --search: the "
                                       "player, filter_k (its move filter beyond 0-ply; null with --max-ply "
                                       "0), seed, rules and per level ply, filter_k beyond 0-ply, decisions, positions_per_decision (afterstates "
                                       "the network evaluated), ms_per_decision (the mean) and ms_max (the slowest decision).")
    bench.add_argument("--games", type=COUNT, default=None, help="games to play (default 10000)")
    bench.add_argument("--seed", type=SEED, default=0, help="random seed, 0 to 2**32 - 1 (default 0)")
    bench.add_argument("--threads", type=COUNT, default=None, help="threads for move generation (default: all CPUs)")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--rules", help=RULES_HELP +
                                       "(with --search, default: those the player was trained under)")
    bench.add_argument("--env", action="store_true",
                       help="random legal play through gymnasium.make_vec('LongNardy-v0') instead")
    bench.add_argument("--num-envs", type=COUNT, default=None, help="sub-environments for --env (default 256)")
    bench.add_argument("--action-mode", choices=["turn", "checker"], default=None,
                       help="action mode for --env (default turn)")
    bench.add_argument("--search", metavar="PLAYER", type=TEXT, help="cost of 0..--max-ply search with this network player")
    bench.add_argument("--max-ply", type=PLY, default=None, help="deepest search level for --search, 0..5 (default 2)")
    bench.add_argument("--filter", metavar="K", type=COUNT, default=None,
                       help=FILTER_HELP.replace(" (default 5)", "") + " for --search (default 5)")
    bench.add_argument("--positions", type=COUNT, default=None,
                       help="decisions per level for --search (default 40)")
    bench.set_defaults(func=_cmd_bench)

    player_help = ("a bot (random, race, heuristic), default (the shipped player) or a level of it (easy, medium, "
                   "hard, expert), a run directory or checkpoint, or an exported policy folder; "
                   "append @N to search N plies; your own player as FILE.py:NAME or module:NAME; or a plugin's name")
    ev = sub.add_parser("eval", help="play two players against each other with paired dice",
                        description="Paired-dice match: every game is played twice with the same dice and sides swapped.")
    ev.add_argument("a", metavar="A", type=TEXT, help=player_help)
    ev.add_argument("b", metavar="B", type=TEXT, help=player_help)
    ev.add_argument("--games", type=int, default=2000, help="games to play, an even number (default 2000)")
    _match_options(ev, "print one JSON object as the last line")
    ev.add_argument("--records", metavar="FILE", type=TEXT,
                    help="also write every game's record to FILE, one JSON line per game (players, opening roll, "
                         "each ply's dice and moves, result), when the match ends; an existing FILE is replaced")
    ev.set_defaults(func=_cmd_eval)

    ld = sub.add_parser("ladder", help="round robin between players, with ratings",
                        description="Round robin of paired matches; a markdown table and ratings with intervals.")
    ld.add_argument("players", nargs="+", metavar="PLAYER", type=TEXT, help=player_help)
    ld.add_argument("--games", type=int, default=2000, help="games per pair of players (default 2000)")
    _match_options(ld, "print one JSON object")
    ld.add_argument("--png", metavar="FILE", type=TEXT, help="also draw the ratings as a PNG chart")
    ld.set_defaults(func=_cmd_ladder)

    hint = sub.add_parser("hint", help="rank the legal plays of a position with a player",
                          description="Rank the legal plays of a position and roll, best first.")
    hint.add_argument("position", nargs="?", help="position as an NPN string")
    hint.add_argument("dice", nargs="*", type=DICE, help="the two dice, e.g. 6 5 (or 65, 6-5)")
    hint.add_argument("--player", type=TEXT, help=player_help + " (default: the shipped player, else heuristic)")
    hint.add_argument("--policy", metavar="DIR", type=TEXT, help="an exported policy folder (same as --player DIR)")
    hint.add_argument("--ply", type=PLY, default=None,
                      help="search depth, 0..5 (0 = the network alone; default: the @N of the player's name, else 0)")
    hint.add_argument("--filter", metavar="K", type=COUNT, default=None, help=FILTER_HELP)
    hint.add_argument("--top", type=COUNT, default=None,
                      help="plays to show (default 10; with --jsonl every play unless given)")
    hint.add_argument("--jsonl", action="store_true", help="JSON lines in and out (docs/formats.md)")
    hint.add_argument("--rules", help=RULES_HELP +
                                      "(default: those the player was trained under)")
    hint.set_defaults(func=_cmd_hint)

    play = sub.add_parser(
        "play", help="play a game in the terminal against any player",
        description="Play Long Nardy in the terminal. On your turn type a play as moves in common point "
                    "numbers, the ones the board shows ('24/18 18/13'; '6/off' or '6/0' bears off; as black, whose "
                    "head is 12: '12/6 6/1', '18/off') or the number of a play from the list, "
                    "then confirm it (y or Enter), undo it or type another. Commands: list, hint (the opponent's "
                    "ranking of your plays, or the shipped player's when the opponent does not tell them apart), read (the "
                    "position in words, for a screen reader), npn (the position), resign, quit, help. Resigning "
                    "concedes a single game when you have borne a checker off or your escape from mars is certain "
                    "whatever is rolled (RULES.md 50.7; judged over this roll, and once the sides can no longer "
                    "meet over your next turns, three at most), else the mars. A game won is an oin "
                    "(1 point) when the loser has borne off a checker, a mars (2 points) when not. The score "
                    "is kept over the games of the session.")
    play.add_argument("--against", type=TEXT, help=player_help + " (default: the shipped player, else heuristic)")
    play.add_argument("--ply", type=PLY, default=None,
                      help="the opponent's search depth, 0..5 (default: the @N of its name, else 0)")
    play.add_argument("--filter", metavar="K", type=COUNT, default=None, help=FILTER_HELP)
    play.add_argument("--color", choices=["white", "black", "random"], default="random",
                      help="your colour (default random: drawn for each game)")
    play.add_argument("--seed", type=SEED, default=None,
                      help="seed of the dice, of a random colour and of a randomising opponent's plays, "
                           "0 to 2**32 - 1 (default: fresh each session, and said at its start)")
    play.add_argument("--games", type=COUNT, default=None, help="stop after this many games (default: ask)")
    play.add_argument("--rules", help=RULES_HELP +
                                      "(default: those the player was trained under)")
    play.set_defaults(func=_cmd_play)

    tr = sub.add_parser("train", help="train a player by self-play TD learning on Ray",
                        description="Self-play TD(lambda) training across Ray actors (a local Ray unless --address).")
    tr.add_argument("--config", type=TEXT, help="YAML file of settings overriding the defaults, or a shipped config's name (smoke, quick, default: configs/NAME.yaml); "
                                     "required, and refused with --resume (a resumed run keeps its config.json)")
    tr.add_argument("--out", type=TEXT, help="run directory (default runs/<config name>, or runs/<config name>-2, -3, ... "
                                  "when that one is taken)")
    tr.add_argument("--address", type=TEXT, help="join this Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    tr.add_argument("--resume", metavar="RUN_DIR", type=TEXT, help="continue a run from its last checkpoint, with its own config.json "
                         "(--set KEY=VALUE changes what may change)")
    tr.add_argument("--max-seconds", type=SECONDS, default=None,
                    help="stop (with a checkpoint) after this many seconds; --resume continues")
    tr.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override one setting of the config file (repeatable), e.g. --set actors=1")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.set_defaults(func=_cmd_train)

    pl = sub.add_parser("plot", help="draw a run's training curve (win rate vs games) as a PNG, or compare runs",
                        description="Draw win rate against each bot vs games trained, from RUN/eval.jsonl; with "
                                    "several runs (or --against), one line a run against one opponent.")
    pl.add_argument("runs", nargs="+", metavar="RUN", type=TEXT, help="a run directory (or its eval.jsonl); "
                    "several to compare them")
    pl.add_argument("--against", type=TEXT, help="compare the runs against this opponent, one line a run "
                    "(default with several runs: heuristic where every run met it, else the first opponent of the "
                    "first run's log that they all met)")
    pl.add_argument("--out", type=TEXT, help="PNG file (default RUN/training_curve.png; a comparison needs one)")
    pl.set_defaults(func=_cmd_plot)

    from train.export_options import add_export_arguments  # not train.export: it loads the rules core

    ex = sub.add_parser("export", help="export a trained player to ONNX for other frontends",
                        description="Write DIR/policy.onnx and DIR/policy.json (docs/formats.md, docs/policy.md), "
                                    "verified against torch.")
    add_export_arguments(ex, text=TEXT, count=COUNT, positive=POSITIVE)
    ex.set_defaults(func=_cmd_export)
    # No prefixes of options (--game for --games): an option added later would break a script using one.
    for command in (parser, *sub.choices.values()):
        command.allow_abbrev = False
    return parser


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN = tuple(os.path.join(_ROOT, name) + os.sep for name in ("nardy_env", "agents", "train"))
"""nardy's own packages, where they are installed: the warnings raised there are nardy's."""


def _plain_warnings(show):
    """A ``warnings.showwarning`` that prints the user warnings raised in nardy's packages (its own,
    ``nardy_env.NardyWarning``, among them) as one plain line ("nardy COMMAND: warning: ..."),
    and hands every other warning to ``show`` unchanged (a numpy overflow keeps its file and line)."""
    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        ours = issubclass(category, UserWarning)
        if not (ours and os.path.abspath(filename).startswith(_OWN)):
            show(message, category, filename, lineno, file, line)
            return
        stream = file if file is not None else sys.stderr
        if stream is None:
            return
        try:
            stream.write(printable(f"{_WHO}: warning: {message}") + "\n")
        except OSError:
            pass

    return show_warning


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nardy`` console script: returns the exit status (from Python, for
    every outcome: a usage error or ``--help`` too, which argparse ends with ``SystemExit``)."""
    import warnings

    if sys.stdout is None:  # started with standard output closed (>&-): output goes nowhere, as print's does
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    if sys.stderr is None:  # 2>&-: messages go nowhere, never into the output (print(file=None) writes there)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    for fd in (1, 2):  # closed descriptors point nowhere, so that no file opened later takes them
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    # A name or path the output's encoding cannot show (Cyrillic on a cp1252 or C-locale
    # stdout) is printed escaped, not a traceback after the work is done.
    errors = getattr(sys.stdout, "errors", None)
    escaping = errors == "strict" and callable(getattr(sys.stdout, "reconfigure", None))
    if escaping:
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        with warnings.catch_warnings():  # the plain format lasts for this command only
            warnings.showwarning = _plain_warnings(warnings.showwarning)
            return _main(argv)
    except SystemExit as exc:  # argparse's and _usage_error's: one way of saying a status to a caller
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        raise
    finally:
        global _WHO
        _WHO = "nardy"  # for what is said outside a command (a test calling main again)
        if escaping:
            sys.stdout.reconfigure(errors=errors)  # type: ignore[union-attr]


_NPN_ARG = re.compile(r"-\d+(,-?\d+)*:")


def _npn_args_kept_positional(argv: Sequence[str]) -> list[str]:
    """An NPN whose first point is black's (``-1,0,...``) starts with '-', which argparse takes
    for an option; a leading space keeps it a positional (the NPN reader ignores the space)."""
    return [f" {a}" if _NPN_ARG.match(a) else a for a in argv]


_WHO = "nardy"
"""Who speaks in messages: ``nardy <command>`` once the command is known."""


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [name for action in parser._actions for name in action.option_strings]


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The command parsers of ``nardy``, by name."""
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _refuse_options_before_the_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``nardy --games 4 eval ...``: argparse would take ``4`` for the command; say where options go."""
    if not argv or not argv[0].startswith("-") or argv[0].split("=")[0] in _options(parser):
        return
    commands = _commands(parser)
    command = next((a for a in argv if a in commands), None)
    if command is not None:
        commands[command].error(f"{argv[0]} comes before the command's name: options go after it, "
                                f"nardy {command} ... {argv[0]}")


def _refuse_unknown_options_first(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``nardy hint --plyer x NPN 6 5``: an option the command lacks, refused before parsing (the
    parser would take its value for the position, and the position for a die, and say that)."""
    commands = _commands(parser)
    if not argv or argv[0] not in commands:
        return
    known = _options(commands[argv[0]])
    end = argv.index("--") if "--" in argv else len(argv)
    if {"-h", "--help"} & set(argv[1:end]):  # help comes first, typos or not
        return
    # A token with a space in it is a value to argparse ("--player '--x y'"), as it is here.
    extra = [a for a in argv[1:end] if a.startswith("--") and a != "--" and " " not in a
             and a.split("=")[0] not in known]
    if extra:
        _refuse_unrecognized(parser, argparse.Namespace(command=argv[0]), extra, argv)


def _refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str],
                         argv: list[str]) -> None:
    """Arguments no parser took: said by the command's own parser (its usage, ``nardy eval:``),
    with the option most likely meant, or the commands that have one it lacks."""
    commands = _commands(parser)
    command = getattr(args, "command", None)
    who = commands.get(command, parser) if command else parser
    message = f"unrecognized arguments: {' '.join(extra)}"
    token = next((a for a in extra if a.startswith("--")), None)
    option = token.split("=")[0] if token is not None else None
    at = argv.index(token) if token in argv else len(argv)  # where the option was given
    if option is not None and command and option in _options(who):  # (before the command: refused already)
        if "--" in argv and argv.index("--") < at:
            message += " (after '--' every argument is a positional one)"
    elif option == "--version" and command:
        message += " (the version is nardy --version's)"
    elif option is not None and command:
        close = difflib.get_close_matches(option, _options(who), n=1, cutoff=0.7)
        elsewhere = [f"nardy {name}" for name, p in commands.items() if name != command and option in _options(p)]
        if close:
            message += f" (did you mean {close[0]}?)"
        elif elsewhere:
            message += f" ({option} is an option of {', '.join(elsewhere)}, not of nardy {command})"
    who.error(message)


def _main(argv: Sequence[str] | None) -> int:
    global _WHO
    parser = build_parser()
    given = _npn_args_kept_positional(sys.argv[1:] if argv is None else argv)
    _refuse_options_before_the_command(parser, given)
    _refuse_unknown_options_first(parser, given)
    args, extra = parser.parse_known_args(given)
    if extra:
        _refuse_unrecognized(parser, args, extra, given)
    _WHO = f"nardy {args.command}" if getattr(args, "command", None) else "nardy"
    if isinstance(getattr(args, "position", None), str):
        args.position = args.position.strip()
    if isinstance(getattr(args, "dice", None), list):  # DICE gives a list for each argument
        args.dice = [die for given_dice in args.dice for die in given_dice]
    # SIGTERM (a job scheduler's time limit, kill) unwinds like Ctrl-C, so that a match stops
    # its worker processes instead of leaving them running; nardy train installs its own.
    import threading

    main_thread = threading.current_thread() is threading.main_thread()  # where handlers may be set
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        return int(args.func(args) or 0)
    except Terminated:
        print(f"{_fresh_line(args)}{_WHO}: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # The reader went away (``nardy ... | head``): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print(f"{_fresh_line(args)}{_WHO}: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        evaluation = sys.modules.get("train.evaluate")  # loaded if a match ran
        if evaluation is None or not isinstance(exc, evaluation.WorkerDied):
            raise
        _complain(f"{_WHO}: a worker process of the match stopped abruptly (killed, perhaps for want of "
                  "memory, or crashed in a player's native code); try fewer --workers, or --workers 1 to see "
                  "a player's error")
        return 2
    except ValueError as exc:
        # A player that failed while playing (its code raised, or it answered with no legal
        # choice): the message names it, where its code raised and where in the match.
        players = sys.modules.get("nardy_env.players")  # loaded if one was raised
        if players is None or not isinstance(exc, players.PlayerFailed):
            raise
        _complain(f"nardy {args.command}: {exc}")
        return 2
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG and exc.filename is not None:  # a path given: bad input
            _complain(_too_long(exc))
            return 2
        # A write that failed for want of room or a working device (stdout on a full disk, say):
        # one line, as the commands say for the files they name. Only these errnos, without a
        # file name (writes to an open file or stream have none); permissions and the like
        # (a semaphore refused, a process not ours) stay tracebacks.
        if exc.filename is not None or exc.errno not in _WRITE_ERRNOS or type(exc).__module__.startswith("ray"):
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered would fail again at exit
        _complain(f"{_WHO}: a write failed: {exc.strerror}")
        return 1
    except SystemError as exc:
        # Ctrl-C or SIGTERM inside compiled code (the numba rules core) comes out as a SystemError
        # ("returned a result with an exception set") caused by the interruption.
        cause = stop_behind(exc)
        if cause is None:
            raise
        print(f"{_fresh_line(args)}{_WHO}: {'terminated' if isinstance(cause, Terminated) else 'interrupted'}",
              file=sys.stderr)
        return 143 if isinstance(cause, Terminated) else 130
    finally:
        if main_thread and previous is not None:  # None: a handler set from C, which Python cannot put back
            signal.signal(signal.SIGTERM, previous)


def _fresh_line(args: argparse.Namespace) -> str:
    """What puts the stop message on a line of its own: a newline after a progress bar or a prompt;
    nothing after nardy play, whose session has ended its line with the score."""
    return "" if getattr(args, "command", None) == "play" else "\n"


class Terminated(BaseException):
    """Raised by SIGTERM while a command runs (a BaseException, like KeyboardInterrupt)."""


def _terminated(signum: int, frame: Any) -> NoReturn:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())

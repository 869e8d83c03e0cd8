"""Plain reference move generator for Long Nardy, written from RULES.md alone.

This module is deliberately slow and literal.  It was written from
/work/shared/RULES.md (the rules contract) and /work/shared/FORMATS.md (the
NPN position string) without looking at the project's engine, so that the two
can be cross-checked against each other.  It uses the standard library only.

How a turn is generated:

1. Every ordering of the dice is tried (both orders of a non-double; a double
   is four dice of one face).
2. For each ordering, every sequence of single-checker, single-die moves is
   enumerated by plain recursion, applying every rule of RULES.md to each
   single move (direction, no stopping on an opponent checker, head rule,
   block rule after every single-die move, bearing off).  A sequence ends
   when no remaining die can be played, or when the last checker has been
   borne off.
3. Only the plays that use the largest number of dice are kept; then, for a
   non-double where only one die can be used, the larger die is required if
   it can be played.
4. The end positions are deduplicated and written as NPN with the other side
   to move.

Public API:

- ``parse_npn(npn) -> Position`` / ``format_npn(pos) -> str``
- ``reference_results(npn, d1, d2, head_exception=(3, 4, 6),
  block_rule="ahead") -> set[str]``
- ``reference_plays(npn, d1, d2, ...) -> dict[str, list[tuple[int, int]]]``
  (one legal move sequence per result, common point numbers, 0 = borne off)
- ``reference_dice_used(npn, d1, d2, ...) -> int`` (dice the legal plays use;
  a play that bears off the last checker counts as using all of them)
- ``reference_terminal(npn) -> None | tuple[str, int]``
- ``reference_illegal_block(npn, block_rule="ahead") -> bool``: whether the
  side to move already holds an illegal block (impossible in legal play; see
  the note on the block rule below)
- ``parse_rules("head_exception=;block_rule=home") -> dict`` of keyword
  arguments, for perft_variants.tsv

Readings chosen where RULES.md leaves room:

- Block rule: the test is on the position after each single-die move ("the
  mover may not hold an illegal block"), not on which move created it.  The
  two readings differ only for a position in which the mover already holds an
  illegal block at the start of the turn; that cannot arise in legal play (an
  opponent checker ahead of a block, or in its home, or borne off, stays so),
  so such positions are left out of the perft tables.
- A block is any six consecutive points of the opponent's personal route
  1..24 (not wrapping from its 1 to its 24) that the mover holds with at
  least one checker each; longer runs are checked window by window.
- Larger-die rule: applied when the most dice any play uses is one; then, if
  some play uses the larger die, only those plays are kept.
- A play that bears off the mover's last checker counts as using every die,
  even though the game ended before the remaining dice were played.
- The head exception needs only that all 15 of the mover's checkers stand on
  its head (FORMATS.md); the colour and who moved first do not matter.
"""

from dataclasses import dataclass

WHITE = "w"
BLACK = "b"
HEAD = 24  # a player's own head is personal point 24


def other(side: str) -> str:
    return BLACK if side == WHITE else WHITE


# ---------------------------------------------------------------------------
# Numbering
# ---------------------------------------------------------------------------
# RULES.md: "White's personal number equals the common one; black's personal
# number is c + 12 for common c <= 12, else c - 12."


def to_personal(side: str, common: int) -> int:
    if side == WHITE:
        return common
    return common + 12 if common <= 12 else common - 12


def to_common(side: str, personal: int) -> int:
    # The map for black is its own inverse (a shift by half the circle).
    if side == WHITE:
        return personal
    return personal + 12 if personal <= 12 else personal - 12


# ---------------------------------------------------------------------------
# Position and NPN
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    # points[c - 1] is common point c: > 0 white checkers, < 0 black checkers.
    points: tuple
    white_off: int
    black_off: int
    side: str

    def off(self, side: str) -> int:
        return self.white_off if side == WHITE else self.black_off

    def count(self, side: str, common: int) -> int:
        """Number of `side`'s checkers on common point `common` (1..24)."""
        v = self.points[common - 1]
        if side == WHITE:
            return v if v > 0 else 0
        return -v if v < 0 else 0

    def count_personal(self, side: str, personal: int) -> int:
        return self.count(side, to_common(side, personal))


def parse_npn(npn: str) -> Position:
    """Parse `<c1>,...,<c24>:<white off>,<black off>:<side>` (FORMATS.md)."""
    if not isinstance(npn, str):
        raise ValueError("position: not a string")
    parts = npn.strip().split(":")
    if len(parts) != 3:
        raise ValueError(f"position: expected 3 ':'-separated fields, got {len(parts)}")
    point_fields = parts[0].split(",")
    if len(point_fields) != 24:
        raise ValueError(f"points: expected 24 comma-separated points, got {len(point_fields)}")
    points = []
    for i, f in enumerate(point_fields, start=1):
        try:
            v = int(f.strip())
        except ValueError:
            raise ValueError(f"point {i}: not an integer: {f!r}") from None
        if not -15 <= v <= 15:
            raise ValueError(f"point {i}: count {v} out of range -15..15")
        points.append(v)
    off_fields = parts[1].split(",")
    if len(off_fields) != 2:
        raise ValueError(f"off: expected 2 comma-separated counts, got {len(off_fields)}")
    offs = []
    for name, f in zip(("white off", "black off"), off_fields, strict=True):
        try:
            v = int(f.strip())
        except ValueError:
            raise ValueError(f"{name}: not an integer: {f!r}") from None
        if not 0 <= v <= 15:
            raise ValueError(f"{name}: count {v} out of range 0..15")
        offs.append(v)
    side = parts[2].strip()
    if side not in (WHITE, BLACK):
        raise ValueError(f"side to move: unknown side letter {side!r}")
    white_total = sum(v for v in points if v > 0) + offs[0]
    black_total = sum(-v for v in points if v < 0) + offs[1]
    if white_total != 15:
        raise ValueError(f"white: on-board plus off is {white_total}, not 15")
    if black_total != 15:
        raise ValueError(f"black: on-board plus off is {black_total}, not 15")
    return Position(tuple(points), offs[0], offs[1], side)


def format_npn(pos: Position) -> str:
    return (
        ",".join(str(v) for v in pos.points)
        + f":{pos.white_off},{pos.black_off}:{pos.side}"
    )


# ---------------------------------------------------------------------------
# Rules applied to single moves
# ---------------------------------------------------------------------------


def holds_illegal_block(pos: Position, mover: str, block_rule: str) -> bool:
    """RULES.md, Block rule: "a player may not hold six points in a row of the
    opponent's route unless at least one opponent checker is ahead of that
    block (strictly past it along the opponent's route, or already borne
    off). 'In a row' is along the opponent's route: six consecutive points
    that straddle the opponent's own head/home seam (common 12|13 for a block
    against black, common 1|24 against white) block nothing and are allowed."

    Variant block_rule="home": the block "needs an opponent checker already
    in its home (or off)".
    """
    opp = other(mover)
    # Six points in a row along the opponent's route, in the opponent's
    # personal numbering: low..low+5 with 1 <= low and low+5 <= 24.  Windows
    # that would wrap from the opponent's personal 1 to 24 straddle the seam
    # and are never blocks.
    # held[q]: the mover holds the opponent's personal point q (index 0 unused).
    mine = [(v > 0) if mover == WHITE else (v < 0) for v in pos.points]  # by common point - 1
    held = [False] + [mine[to_common(opp, q) - 1] for q in range(1, 25)]
    for low in range(1, 20):
        if not all(held[low:low + 6]):
            continue
        if pos.off(opp) > 0:
            continue  # "or already borne off" (both variants)
        if block_rule == "ahead":
            # "strictly past it along the opponent's route": the opponent
            # moves from personal 24 down to 1, so past = personal < low.
            ok = any(pos.count_personal(opp, q) > 0 for q in range(1, low))
        elif block_rule == "home":
            # "an opponent checker already in its home": personal 1..6.
            ok = any(pos.count_personal(opp, q) > 0 for q in range(1, 7))
        else:
            raise ValueError(f"block_rule: unknown value {block_rule!r}")
        if not ok:
            return True
    return False


def all_in_home(pos: Position, side: str) -> bool:
    """RULES.md, Bearing off: "Allowed only while all of the player's
    remaining checkers are in home (personal 1-6)"."""
    return all(pos.count_personal(side, p) == 0 for p in range(7, 25))


def apply_move(pos: Position, side: str, from_personal: int, to_personal_point: int) -> Position:
    """Move one checker of `side`; to_personal_point 0 means bear off."""
    pts = list(pos.points)
    sign = 1 if side == WHITE else -1
    pts[to_common(side, from_personal) - 1] -= sign
    wo, bo = pos.white_off, pos.black_off
    if to_personal_point == 0:
        if side == WHITE:
            wo += 1
        else:
            bo += 1
    else:
        pts[to_common(side, to_personal_point) - 1] += sign
    return Position(tuple(pts), wo, bo, pos.side)


def single_moves(pos: Position, side: str, die: int, heads_moved: int, head_limit: int,
                 block_rule: str):
    """All legal single-checker moves of one die, as
    (from_personal, to_personal or 0, new_position, new_heads)."""
    out = []
    opp = other(side)
    for p in range(24, 0, -1):
        if pos.count_personal(side, p) == 0:
            continue
        # Head rule: "at most one checker leaves the head per turn" (two on
        # the first turn with a double listed in head_exception).
        leaves_head = p == HEAD
        if leaves_head and heads_moved >= head_limit:
            continue
        target = p - die  # both sides move down their personal route
        if target >= 1:
            # "A checker may never stop on a point that holds any opponent
            # checker.  There is no hitting and no bar.  Passing over
            # occupied points is allowed."  (Only the landing point matters.)
            if pos.count(opp, to_common(side, target)) > 0:
                continue
            dest = target
        else:
            # Bearing off.
            if not all_in_home(pos, side):
                continue  # "Allowed only while all ... remaining checkers are in home"
            if target == 0:
                pass  # "A die of n bears off a checker from personal point n."
            else:
                # The die is larger than p.  "If point n is empty and a checker
                # stands on a higher point, the die must be used to move inside
                # home (if it can be) and cannot bear off.  If no checker stands
                # on point n or higher, the die bears off a checker from the
                # highest occupied point."
                if any(pos.count_personal(side, q) > 0 for q in range(p + 1, 25)):
                    continue  # p is not the highest occupied point
            dest = 0
        new = apply_move(pos, side, p, dest)
        # Block rule: "The test applies after every single-die move, not only
        # at the end of the turn: a move that would create an illegal block
        # even for a moment is illegal."
        if holds_illegal_block(new, side, block_rule):
            continue
        out.append((p, dest, new, heads_moved + (1 if leaves_head else 0)))
    return out


# ---------------------------------------------------------------------------
# Whole turns
# ---------------------------------------------------------------------------


def _enumerate_turn(npn: str, d1: int, d2: int, head_exception, block_rule):
    """Return (max_dice_used, {result_npn: sorted list of move sequences})."""
    for name, d in (("d1", d1), ("d2", d2)):
        if not isinstance(d, int) or not 1 <= d <= 6:
            raise ValueError(f"{name}: die {d!r} out of range 1..6")
    pos = parse_npn(npn)
    side = pos.side

    # "A double is played four times."
    if d1 == d2:
        orderings = [(d1, d1, d1, d1)]
    else:
        orderings = [(d1, d2), (d2, d1)]
    n_dice = len(orderings[0])

    # Head rule exception: "on a player's first turn of the game, a roll of
    # 3-3, 4-4 or 6-6 lets two checkers leave the head" (the faces are the
    # head_exception variant).  FORMATS.md: "A player whose 15 checkers all
    # stand on its own head is on its first turn".
    first_turn = pos.count_personal(side, HEAD) == 15
    head_limit = 2 if (first_turn and d1 == d2 and d1 in tuple(head_exception)) else 1

    # Each finished play: (dice used, first die used or None, moves, end position)
    plays = []

    def recurse(cur: Position, dice_left: tuple, heads_moved: int, moves: list, used: list):
        # "Bearing off the last checker ends the game at once; dice left over
        # are void" -- such a play counts as having used every die.
        if used and cur.off(side) == 15:
            plays.append((n_dice, used[0] if used else None, list(moves), cur))
            return
        if not dice_left:
            plays.append((len(used), used[0] if used else None, list(moves), cur))
            return
        die = dice_left[0]
        options = single_moves(cur, side, die, heads_moved, head_limit, block_rule)
        if not options:
            # The next die of this ordering cannot be played; the dice after
            # it belong to the same ordering, so the play ends here.  (For a
            # double all dice are equal, so nothing later could be played
            # either; for a non-double the other ordering is tried separately.)
            plays.append((len(used), used[0] if used else None, list(moves), cur))
            return
        for frm, dest, new, new_heads in options:
            moves.append((to_common(side, frm), 0 if dest == 0 else to_common(side, dest)))
            used.append(die)
            recurse(new, dice_left[1:], new_heads, moves, used)
            moves.pop()
            used.pop()

    for order in orderings:
        recurse(pos, order, 0, [], [])

    # "Use as many dice as possible: among all legal ways to play, only those
    # that use the largest number of dice are allowed."
    best = max(p[0] for p in plays)
    kept = [p for p in plays if p[0] == best]
    # "If both numbers of a non-double can be played separately but not both
    # together, the larger one must be played; if only one of them can be
    # played at all, that one is played."
    if d1 != d2 and best == 1:
        larger = max(d1, d2)
        if any(p[1] == larger for p in kept):
            kept = [p for p in kept if p[1] == larger]

    # "If nothing can be played, the turn passes." (best == 0: the only play
    # is the empty one, ending in the same checkers.)
    results = {}
    for _, _, moves, end in kept:
        flipped = Position(end.points, end.white_off, end.black_off, other(side))
        results.setdefault(format_npn(flipped), []).append(moves)
    for key in results:
        results[key].sort()
    return best, results


def reference_results(npn: str, d1: int, d2: int, head_exception=(3, 4, 6),
                      block_rule: str = "ahead") -> set:
    """Every distinct position (NPN, other side to move) the side to move may
    end its turn in with dice d1, d2."""
    return set(_enumerate_turn(npn, d1, d2, head_exception, block_rule)[1])


def reference_plays(npn: str, d1: int, d2: int, head_exception=(3, 4, 6),
                    block_rule: str = "ahead") -> dict:
    """Map each result to one legal move sequence (the smallest one, as a list
    of (from, to) in common point numbers, 0 = borne off)."""
    _, res = _enumerate_turn(npn, d1, d2, head_exception, block_rule)
    return {k: [tuple(m) for m in v[0]] for k, v in res.items()}


def reference_dice_used(npn: str, d1: int, d2: int, head_exception=(3, 4, 6),
                        block_rule: str = "ahead") -> int:
    """Number of dice every legal play uses (0 for a pass; a play that bears
    off the last checker counts as using all dice)."""
    return _enumerate_turn(npn, d1, d2, head_exception, block_rule)[0]


def reference_turn(npn: str, d1: int, d2: int, head_exception=(3, 4, 6),
                   block_rule: str = "ahead") -> tuple[set, int]:
    """``reference_results`` and ``reference_dice_used`` of one roll, from one enumeration."""
    used, res = _enumerate_turn(npn, d1, d2, head_exception, block_rule)
    return set(res), used


def reference_terminal(npn: str):
    """None while nobody has borne off all 15; else (winner, points):
    RULES.md "Oin: the loser has borne off at least one checker -- 1 point.
    Mars: the loser has borne off none -- 2 points." (Cube not applied.)"""
    pos = parse_npn(npn)
    if pos.white_off == 15 and pos.black_off == 15:
        raise ValueError("off: both sides have borne off 15")
    for side in (WHITE, BLACK):
        if pos.off(side) == 15:
            loser_off = pos.off(other(side))
            return (side, 1 if loser_off > 0 else 2)
    return None


def reference_illegal_block(npn: str, block_rule: str = "ahead") -> bool:
    """Whether the side to move holds an illegal block already (before it
    moves).  Never true in a position reached by legal play."""
    pos = parse_npn(npn)
    return holds_illegal_block(pos, pos.side, block_rule)


def parse_rules(text: str) -> dict:
    """Parse a perft_variants.tsv `rules` cell such as
    `head_exception=;block_rule=home` into keyword arguments."""
    kwargs = {}
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        key = key.strip()
        value = value.strip()
        if key == "head_exception":
            kwargs[key] = tuple(int(v) for v in value.split(",") if v.strip())
        elif key == "block_rule":
            kwargs[key] = value
        else:
            raise ValueError(f"rules: unknown key {key!r}")
    return kwargs

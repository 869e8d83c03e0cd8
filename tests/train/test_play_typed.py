"""``nardy play`` in process: plays typed as moves, bad plays, undo, and games that end by themselves."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from nardy_env import Color, Rules, flip, format_npn, initial_states, parse_npn
from nardy_env.players import RandomPlayer
from nardy_env.render import board_text
from tests.helpers import npn as npn_of
from train.moves import format_move_sequence, legal_plays
from train.play import play_session

_DICE = re.compile(r"to move, dice (\d)-(\d)")
_END = re.compile(r"(You|random) wins? by (oin|mars): (\d) points? \((white|black) (bore off no checker|had borne off a checker)")
_SCORE = re.compile(r"Score: you (\d+), random (\d+) after 1 game\.")


@pytest.fixture(autouse=True)
def _an_80_column_terminal(monkeypatch):
    """Messages are wrapped to the terminal: these tests read them at 80 columns, whatever runs them
    (a test that wants another width sets COLUMNS itself)."""
    monkeypatch.setenv("COLUMNS", "80")


class Recorder:
    """A random opponent that remembers the positions it was given and the afterstates it chose."""

    name = "random"

    def __init__(self) -> None:
        self.inner = RandomPlayer()
        self.seen: list[np.ndarray] = []
        self.chosen: list[np.ndarray] = []

    def choose(self, states, found, rng, colors=None):
        picks = self.inner.choose(states, found, rng)
        self.seen.append(states[0].copy())
        self.chosen.append(found.states[found.offsets[0] + picks[0]].copy())
        return picks


def _flat(text: str) -> str:
    """The session's output with its line breaks as spaces: long messages are wrapped to the terminal."""
    return " ".join(text.split())


def typed(moves, off="off") -> str:
    """Moves as a person types them, written here rather than with the program's formatter."""
    return " ".join(f"{a}/{off if b == 0 else b}" for a, b in moves)


class Human:
    """Answers the prompts of a white human; ``turn(plays, npn, dice)`` returns the lines to type."""

    def __init__(self, out: io.StringIO, opponent: Recorder, turn) -> None:
        self.out, self.opponent, self.turn = out, opponent, turn
        self.pending: list[str] = []
        self.prompts: list[str] = []
        self.turns = 0

    def position(self) -> np.ndarray:
        """White's position now: the start, or the board after the opponent's last play."""
        return initial_states(1)[0] if not self.opponent.chosen else flip(self.opponent.chosen[-1])

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        assert len(self.prompts) < 5000, "the session keeps asking"
        if not self.pending:
            assert prompt.startswith("your play ("), prompt
            dice = [int(x) for x in _DICE.findall(self.out.getvalue())[-1]]
            npn = format_npn(self.position(), Color.WHITE)
            self.turns += 1
            self.pending = list(self.turn(legal_plays(npn, dice), npn, dice))
        return self.pending.pop(0) + "\n"


def _empty_source(npn: str, die: int) -> str:
    """A move of ``die`` pips from a point where white has no checker."""
    cells = [int(x) for x in npn.split(":")[0].split(",")]
    src = next(p for p in range(24, die, -1) if cells[p - 1] <= 0)
    return f"{src}/{src - die}"


def test_typed_plays_bad_plays_and_undo():
    out = io.StringIO()
    opponent = Recorder()
    tested = {}

    def turn(plays, npn, dice):
        results = {p["result"] for p in plays}
        if tested:  # the play after the tested one: done
            tested["next_npn"] = npn
            return ["resign", "y"]
        if len(results) < 2:  # type the only play and confirm it
            return [typed(plays[0]["moves"]), "y"]
        first, second = plays[0], plays[-1]
        tested.update(npn=npn, dice=dice, first=first, second=second, bad=_empty_source(npn, dice[0]),
                      seen_before=len(opponent.seen))
        return [tested["bad"], "25/19", "24:18", typed(first["moves"]), "undo",
                typed(second["moves"], off="0"), "yes"]

    human = Human(out, opponent, turn)
    score = play_session(opponent, human=Color.WHITE, seed=7, games=1, read=human, out=out)
    text = out.getvalue()

    assert tested, "no white turn had two different plays before the game ended"
    white_off = int(tested["next_npn"].split(":")[1].split(",")[0])
    assert score == {"you": 0, "opponent": 2 if white_off == 0 else 1}
    d1, d2 = tested["dice"]
    # The move from an empty point is refused with the reason, then the syntax errors.
    assert f"{tested['bad']} is not a legal play with {d1}-{d2}" in text
    assert "'25/19': points are numbered 1..24" in text
    assert "'24:18' is not a move" in text
    # Undo before confirming: the turn starts again from the same position ...
    assert "Undone; the turn starts again." in text
    # The first typed play is shown for confirming, then undone.
    shown = board_text(parse_npn(tested["first"]["result"])[0], Color.BLACK,
                       caption=f"After your play {typed(tested['first']['moves'])} (black rolls next)")
    assert f"{shown}\nUndone; the turn starts again." in text
    start_board = board_text(parse_npn(tested["npn"])[0], Color.WHITE, [d1, d2])
    assert f"Undone; the turn starts again.\n{start_board}\n" in text
    # ... and the second typed play is the one applied: the opponent gets exactly its result.
    faced = opponent.seen[tested["seen_before"]]
    assert format_npn(faced, Color.BLACK) == tested["second"]["result"]
    assert tested["second"]["result"] != tested["first"]["result"]
    assert sum(p.startswith("your play (") for p in human.prompts) >= 5
    assert sum(p.startswith("play ") for p in human.prompts) >= 2
    assert "You resign and lose" in text and "Score: you 0, random" in text


def _ending(text: str, score: dict[str, int]) -> tuple[str, str, int]:
    """(winner, kind, points) from the game's last lines, checked against the returned score."""
    ends = _END.findall(text)
    assert len(ends) == 1, text[-2000:]
    winner, kind, points = ends[0][0], ends[0][1], int(ends[0][2])
    assert points == (2 if kind == "mars" else 1)
    assert _SCORE.search(text).groups() == (str(score["you"]), str(score["opponent"]))
    assert score == ({"you": points, "opponent": 0} if winner == "You" else {"you": 0, "opponent": points})
    assert "resign" not in text
    return winner, kind, points


def test_a_game_chosen_by_number_ends_by_itself_with_the_result_and_score():
    out = io.StringIO()
    opponent = Recorder()
    human = Human(out, opponent, lambda plays, npn, dice: ["1", ""])  # an empty answer confirms
    score = play_session(opponent, human=Color.WHITE, seed=3, games=1, read=human, out=out)
    winner, _, _ = _ending(out.getvalue(), score)
    # The loser has the winner's 15 checkers off on the last board.
    last_board = out.getvalue().rsplit("off: white", 1)[1].splitlines()[0]
    white_off = int(last_board.split(",")[0])
    assert (white_off == 15) == (winner == "You")
    assert human.turns > 10


def test_a_game_typed_move_by_move_ends_by_itself():
    # Every play is typed as moves (bearing off as 'N/0'); the best for white by pips is taken,
    # so that white bears off and the typed bearing-off moves are used.
    out = io.StringIO()
    opponent = Recorder()

    def pips(npn):
        cells = [int(x) for x in npn.split(":")[0].split(",")]
        return sum(p * c for p, c in enumerate(cells, 1) if c > 0)

    expected = []  # (index of the opponent's next call, the result white typed)

    def turn(plays, npn, dice):
        best = min(plays, key=lambda p: (pips(p["result"]), p["result"]))
        expected.append((len(opponent.seen), best["result"]))
        return [typed(best["moves"], off="0"), "y"]

    human = Human(out, opponent, turn)
    score = play_session(opponent, human=Color.WHITE, seed=11, games=1, read=human, out=out)
    text = out.getvalue()
    _ending(text, score)
    assert "is not a legal play" not in text and "is not a move" not in text
    # Each typed play reached the opponent exactly: the next position it faced is that play's result.
    assert len(expected) >= 10
    for k, result in expected:
        if k < len(opponent.seen):
            assert format_npn(opponent.seen[k], Color.BLACK) == result
    assert any(re.match(r"play .*\d+/off", p) for p in human.prompts), "no bearing off was typed"


def test_a_move_whose_every_stop_on_the_way_is_held_says_so():
    from train.play import why_not_legal

    # 14/8 with 4-2 stops on 10 or 12; black holds both (this was blamed on the block rule).
    white = "3,-1,0,1,0,0,0,0,-2,-1,0,-7,-2,1,-1,-1,0,1,0,0,0,0,0,9:0,0:w"
    reason = why_not_legal(white, [4, 2], [(14, 8)])
    assert reason == ("14/8 takes more than one die, so the checker stops on the way, on 12 or 10, "
                      "and the opponent holds both")
    assert why_not_legal(white, [3, 1], [(18, 14)]) is None  # 15 is held, but 18 -> 17 -> 14 is open
    # The colours swapped, black to move: the same refusal in black's numbers (its 14 is common 2).
    black = format_npn(parse_npn(white)[0], Color.BLACK)
    assert why_not_legal(black, [4, 2], [(2, 20)]).endswith("on 24 or 22, and the opponent holds both")
    # Two dice of a double: one way, one stop.
    assert why_not_legal("0,0,0,0,0,0,0,0,0,0,-14,0,0,0,0,0,0,-1,0,0,0,0,0,15:0,0:w", [6, 6],
                         [(24, 12)]).endswith("on 18, and the opponent holds it")


def test_a_game_won_by_mars_scores_two_points(monkeypatch):
    import train.play

    # White, the human, moves first with 6-1 and bears off its last two; black has none off.
    last_two = parse_npn(npn_of({6: 1, 1: 1}, {12: 15}, off=(13, 0)))[0]
    monkeypatch.setattr(train.play, "initial_states", lambda n: np.stack([last_two] * n))
    monkeypatch.setattr(train.play, "opening_roll",
                        lambda rng, n, rules: (np.full(n, int(Color.WHITE), np.int8), np.tile([6, 1], (n, 1))))
    out = io.StringIO()
    answers = iter(["6/off 1/off", ""])
    score = play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(answers) + "\n",
                         out=out)
    assert "You win by mars: 2 points (black bore off no checker)." in out.getvalue()
    assert score == {"you": 2, "opponent": 0}


def test_moves_are_written_as_people_write_them():
    from train.moves import format_move_sequence

    assert format_move_sequence([(24, 18), (18, 13)]) == "24/18 18/13"
    assert format_move_sequence([(3, 0), (1, 0)]) == "3/off 1/off"
    assert format_move_sequence([]) == "(no move)"


def test_typed_play_notation_and_the_reasons_a_play_is_refused():
    from train.play import parse_play, why_not_legal

    assert parse_play("24/18/13") == [(24, 18), (18, 13)]
    assert parse_play("13/7(2) 6/off") == [(13, 7), (13, 7), (6, 0)]
    # The '/' key of the Russian layout types '.'; clubs write '-'.
    assert parse_play("24.18 18.13") == parse_play("24-18 18-13") == [(24, 18), (18, 13)]
    assert parse_play("24 - 18 18 -13") == [(24, 18), (18, 13)]
    assert parse_play("24- 18, 6 - off") == parse_play("24-18 6-OFF") == parse_play("24/18 6 / Off") == [(24, 18), (6, 0)]
    with pytest.raises(ValueError, match="'XYZ' is not a move"):  # quoted as typed
        parse_play("24/18 XYZ")
    assert parse_play("13.7(2) 6.off") == [(13, 7), (13, 7), (6, 0)]
    # Dashes a phone types for '-', and spaces around '/'.
    assert parse_play("24\u201318 18\u201413") == parse_play("24\u221218 18 / 13") == [(24, 18), (18, 13)]
    for typed in ("24/18*", "bar/18"):  # backgammon habits
        with pytest.raises(ValueError, match="long nardy has no hitting and no bar"):
            parse_play(typed)
    start = format_npn(initial_states(1)[0], Color.WHITE)
    assert why_not_legal(start, [6, 5], [(24, 18), (18, 13)]) is None
    assert why_not_legal(start, [6, 5], [(24, 13)]) is None
    assert "no white checker on 13" in why_not_legal(start, [6, 5], [(13, 7)])
    assert "goes backwards" in why_not_legal(start, [6, 5], [(24, 18), (18, 20)])
    assert "is 4 points; with 6-5 a checker moves 5, 6, 11" in why_not_legal(start, [6, 5], [(24, 20)])
    assert "all your checkers are home (14 are still outside)" in why_not_legal(
        format_npn(parse_npn("1,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,14:0,0:w")[0], Color.WHITE),
        [6, 1], [(1, 0)])
    # Black's route: 12 -> 1, then 24 -> 13.
    black = "0,0,0,0,0,0,0,0,0,0,0,-14,0,0,0,0,0,0,0,-1,0,0,0,15:0,0:b"
    assert why_not_legal(black, [6, 5], [(12, 6), (6, 1)]) is None
    assert why_not_legal(black, [6, 5], [(20, 14)]) is None
    assert "goes backwards: Black moves 12 -> 1" in why_not_legal(black, [6, 2], [(20, 22)])
    assert "is 18 points" in why_not_legal(black, [6, 5], [(12, 18)])  # forward round the board, too far
    assert parse_play("24/18 (2)") == [(24, 18), (24, 18)]
    with pytest.raises(ValueError, match="'6/off/3': a checker borne off goes no further"):
        parse_play("6/off/3")
    assert "ends on 12, which the opponent holds" in why_not_legal(start, [6, 6], [(24, 12)])
    assert "24/24 does not move the checker" in why_not_legal(start, [6, 5], [(24, 24)])
    # One checker's start and end, home and off with both dice: 7/3 3/off typed as 7/off.
    near_home = "9,1,4,0,0,0,1,0,0,0,0,0,-5,0,0,0,0,0,0,0,0,0,0,0:0,10:w"
    assert why_not_legal(near_home, [4, 3], [(7, 0)]) is None
    # With 2-2 a typo that happens to end on a legal position is refused, not corrected.
    assert why_not_legal(start, [2, 2], [(24, 13), (13, 16)]) is not None


def test_hint_at_the_prompt_numbers_the_plays_and_the_final_board_says_who_won():
    from agents.bots import RaceBot

    out = io.StringIO()
    race = RaceBot()
    lines = iter(["hint", "1", "y"] * 400)
    score = play_session(race, human=Color.WHITE, seed=4, games=1, read=lambda prompt: next(lines) + "\n", out=out)
    text = out.getvalue()
    assert ("race's ranking, best first (score, higher is better for you; each play keeps its number in "
            "the list: type it to choose the play):") in _flat(text)
    # Each ranked play shows its number in the list (what typing it chooses), never a rank of its own.
    listed = dict(re.findall(r"(\d+)\. (\S+(?: \S+)*)", text.split("race's ranking")[0].rsplit("legal play", 1)[1]))
    ranked = re.findall(r"\n  #(\d+) +(\S.*?\S) +[-+]\d+\.\d+\n", text.split("race's ranking")[1])
    assert len(ranked) >= 2 and all(listed[n] == moves for n, moves in ranked), (listed, ranked)
    winner = "White" if score["you"] else "Black"
    assert f"Game over: {winner} wins\n" in text


def test_whole_turn_rules_are_named_when_a_typed_play_breaks_one():
    from train.play import _playable_order, why_not_legal, why_not_whole_turn

    start = format_npn(initial_states(1)[0], Color.WHITE)

    def reason(npn, dice, moves):
        assert why_not_legal(npn, dice, moves) is None  # each move alone is possible
        plays = legal_plays(npn, dice)
        return why_not_whole_turn(npn, dice, moves, plays)

    assert "takes 2 checkers from the head (24); one may leave it a turn (two on a first turn's 3-3, 4-4, 6-6)" \
        in reason(start, [5, 5], [(24, 14), (24, 14)])
    # On a first turn's 3-3 the exception applies: the message says the limit of this turn.
    assert reason(start, [3, 3], [(24, 21), (24, 21), (24, 21)]) == (
        "it takes 3 checkers from the head (24); at most 2 may leave it this turn (a first turn's 3-3)")
    assert "plays 1 die where 2 can be played" in reason(start, [6, 2], [(24, 18)])
    # Black's first turn with 6-6 and no head exception: one checker leaves the head and cannot go on,
    # so the play uses one die; two checkers off the head are refused for the head rule, not the dice.
    black_first = "0,0,0,0,0,0,0,0,0,0,0,-15,1,0,0,0,0,0,0,0,0,0,0,14:0,0:b"
    plays = legal_plays(black_first, [6, 6], {"head_exception": []})
    assert why_not_whole_turn(black_first, [6, 6], [(12, 6), (12, 6)], plays, {"head_exception": []}) == (
        "it takes 2 checkers from the head (12); one may leave it a turn (no exception under these rules)")
    assert "6-2 cannot make all of 24/18 24/18: each die moves once" in why_not_legal(
        start, [6, 2], [(24, 18), (24, 18)])
    # More moves than dice is said before any single move is judged (here 13/1 alone would be refused too).
    assert why_not_legal(start, [6, 2], [(24, 18), (18, 16), (16, 10)]) == (
        "that is 3 moves; 6-2 plays 2 dice, so 2 moves at most")
    assert why_not_legal(start, [3, 3], [(24, 21), (24, 21), (21, 18), (18, 15), (15, 1)]).startswith(
        "that is 5 moves; 3-3 plays 4 dice")
    # One white checker on 10, black on 2: 5-3 plays one die only (either way then lands on 2), the 5.
    lone = "0,-15,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0:14,0:w"
    assert [p["moves"] for p in legal_plays(lone, [5, 3])] == [[[10, 5]]]
    assert "must be the larger one, the 5" in reason(lone, [5, 3], [(10, 7)])
    # Bearing off with a larger die than the point needs, while a checker stands higher.
    home = "0,0,0,0,1,1,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0:13,0:w"
    assert "a die larger than 5 bears off from 5 only when no checker of yours stands higher" \
        in why_not_legal(home, [6, 4], [(5, 0)])
    assert "(15 are still outside)" in why_not_legal(start, [6, 5], [(24, 0)])
    # The same, when the exact die goes to the play's other move: in either order, not the block rule.
    three = "1,0,0,2,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0:12,0:w"
    for moves in ([(1, 0), (4, 3)], [(4, 3), (1, 0)]):
        assert reason(three, [5, 1], moves) == (
            f"5-1 cannot make all of {format_move_sequence(moves)} in any order of the dice; the nearest way "
            "breaks a rule: 1/off would bear off from 1 by a die larger than it needs, which it may only when no checker of yours stands higher "
            "in your home (one is on 4)")
    assert "one is on 15" in reason("9,1,1,0,0,0,0,0,0,0,0,0,-5,-5,-1,0,0,0,0,0,0,0,0,0:4,4:b", [1, 3],
                                    [(13, 0), (13, 0)])  # black's home, 13 to 18
    # The move to blame is the one that breaks the rule (2/off is exact; 5/3/1 then overshoots from 1).
    assert "5/off would bear off from 1 by a die larger than it needs" in reason(
        "0,1,0,1,1,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0:12,0:w", [2, 2], [(2, 0), (5, 0)])
    # A checker moved by both dice overshoots from where the first leaves it, with a checker above.
    assert "6/off would bear off from 4 by a die larger than it needs" in reason(
        "0,0,0,0,4,2,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0:9,0:w", [2, 5], [(6, 0)])
    assert "7/off would bear off from 3 by a die larger" in reason(
        "4,1,0,0,4,2,1,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0:3,0:w", [6, 4], [(7, 0)])
    # A stop on a point the opponent holds, on the way off.
    assert reason("-1,0,1,3,5,0,0,0,0,0,0,-14,0,0,0,0,0,0,0,0,0,0,0,0:6,0:w", [4, 4], [(5, 0), (4, 0)]) == (
        "4-4 cannot make all of 5/off 4/off in any order of the dice; the nearest way breaks a rule: 5/off "
        "would stop on 1, which the opponent holds")
    # Each die moves once: two 6s from a 6-5 are refused as such, not blamed on another rule.
    assert "6-5 cannot make all of 13/7 13/7: each die moves once" in why_not_legal(
        "0,0,0,0,0,0,0,0,0,0,0,-15,2,0,0,0,0,0,0,0,0,0,0,13:0,0:w", [6, 5], [(13, 7), (13, 7)])
    # A long typo is not tried in every order (a turn has four moves at most).
    long = [(24 - k, 23 - k) for k in range(11)]
    assert _playable_order(start, [1, 1], long) == long
    # One checker's moves typed in another order are put in order.
    assert _playable_order(start, [6, 5], [(18, 13), (24, 18)]) == [(24, 18), (18, 13)]


def test_the_block_reason_names_the_variant_in_play():
    from nardy_env import Rules
    from train.play import why_not_legal, why_not_whole_turn

    # 8/2 8/7 with 6-1 makes white's c2..c7 a six-block; black's checker on c20 is ahead of it
    # but none is in black's home, so only the "home" variant refuses it.
    npn = "0,2,2,2,2,2,0,5,0,0,0,-14,0,0,0,0,0,0,0,-1,0,0,0,0:0,0:w"
    moves = [(8, 2), (8, 7)]
    home = Rules(block_rule="home")
    plays = legal_plays(npn, [6, 1], rules=home)
    assert [[8, 2], [8, 7]] not in [p["moves"] for p in plays]
    assert why_not_legal(npn, [6, 1], moves) is None
    reason = why_not_whole_turn(npn, [6, 1], moves, plays, rules=home)
    assert "no opponent checker in its home yet" in reason and "ahead" not in reason
    assert "no opponent checker ahead of them" in why_not_whole_turn(
        npn, [6, 1], moves, legal_plays(npn, [6, 1]))


def _hint_then_quit(opponent: Recorder) -> str:
    """A game in which white asks for a hint at the first turn with a choice, then quits."""
    out = io.StringIO()

    def turn(plays, npn, dice):
        return ["1", "y"] if len(plays) < 2 else ["hint", "quit", "y"]

    play_session(opponent, human=Color.WHITE, seed=3, games=1, read=Human(out, opponent, turn), out=out)
    return out.getvalue()


def test_hint_against_a_player_that_cannot_rank_shows_the_shipped_players_ranking():
    text = _hint_then_quit(Recorder())  # a random player, which scores nothing
    assert "random chooses plays without scoring them; the shipped player ranks them instead." in _flat(text)
    assert "\nThe shipped player's ranking, best first (equity, higher is better for you;" in text
    assert re.search(r"\n  #\d+ +\S.*\S +[-+]\d\.\d{3}\n", text)
    assert "Bye. Score: you 0, random 0." in text


def test_hint_when_the_opponent_rates_every_play_the_same_asks_the_shipped_player(monkeypatch):
    import train.hint

    class Flat(Recorder):
        def equities(self, found):
            return np.zeros(len(found.states))

    text = _hint_then_quit(Flat())
    assert "random rates every play the same; the shipped player ranks them instead." in _flat(text)
    # Without the shipped player, the heuristic bot ranks them.
    monkeypatch.setattr(train.hint, "default_player_spec", lambda: "heuristic")
    text = _hint_then_quit(Flat())
    assert "random rates every play the same; heuristic ranks them instead." in _flat(text)
    assert "heuristic's ranking, best first (score," in _flat(text)
    # A shipped player that cannot be loaded: said, and the heuristic bot ranks the plays instead.
    monkeypatch.setattr(train.hint, "default_player_spec", lambda: "/nonexistent/nardy-player")
    text = _hint_then_quit(Flat())
    assert "(The shipped player could not be loaded:" in text and "/nonexistent/nardy-player" in _flat(text)
    assert "heuristic ranks them instead." in _flat(text) and "Bye. Score" in text


def test_hint_against_a_player_whose_equities_are_not_numbers_says_why_and_the_game_goes_on():
    class Careless(Recorder):
        def equities(self, found):
            values = np.zeros(len(found.states))
            values[-1] = np.nan
            return values

    text = _hint_then_quit(Careless())
    assert "No hint: player 'random' returned equity nan for play" in text
    assert "Bye. Score: you 0, random 0." in text


def test_confirm_prompt_takes_another_play_and_npn_shows_the_position():
    out = io.StringIO()
    opponent = Recorder()
    chosen = {}

    def turn(plays, npn, dice):
        if chosen:
            return ["resign", "y"]
        if len({p["result"] for p in plays}) < 2:
            return ["1", "y"]
        chosen.update(npn=npn, result=plays[1]["result"], seen=len(opponent.seen))
        # At the confirm prompt of play 1: an unknown answer asks again, a command runs and asks
        # again, a declined resign asks again, and another play number chooses that one instead.
        return ["npn", "1", "ok", "list", "resign", "n", "2", "y"]

    play_session(opponent, human=Color.WHITE, seed=7, games=1, read=Human(out, opponent, turn), out=out)
    text = out.getvalue()
    assert f"{chosen['npn']}  (dice " in text
    assert "Answer y (or Enter) to play it, undo to choose again, another play, or resign / quit." in _flat(text)
    assert "Undone" not in text
    assert format_npn(opponent.seen[chosen["seen"]], Color.BLACK) == chosen["result"]


def test_another_game_asks_again_on_an_answer_it_does_not_know():
    out = io.StringIO()
    lines = iter(["resign", "y", "maybe", "n"])
    score = play_session(RandomPlayer(), human=Color.WHITE, seed=5, read=lambda prompt: next(lines) + "\n", out=out)
    assert "Answer y or n." in out.getvalue() and score["opponent"] in (1, 2)


def test_the_board_is_not_drawn_again_right_after_the_play_just_shown():
    def transcript(answers):
        out = io.StringIO()
        lines = iter(answers)
        play_session(RandomPlayer(), human=Color.WHITE, seed=4, games=1, read=lambda prompt: next(lines) + "\n",
                     out=out)
        return out.getvalue()

    # seed 4: black opens, then white's 6-6 has one play; after it, black's turn.
    plain = transcript(["1", "y", "quit", "y"])
    assert "Black to move, dice 6-1 (the board as above)" in plain
    # A list typed at the confirm prompt comes between: the board is drawn again in full.
    listed = transcript(["1", "list", "y", "quit", "y"])
    assert "(the board as above)" not in listed and " Black to move, dice 6-1\n" in listed


def test_a_line_far_too_long_is_refused_without_being_echoed():
    out = io.StringIO()
    huge = "24/18 " * 20_000 + "9" * 5000  # also a number past Python's digit limit for int()
    lines = iter([huge, "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=5, games=1, read=lambda prompt: next(lines) + "\n", out=out)
    text = out.getvalue()
    assert "That line is 125,000 characters long" in text and len(text) < 10_000


def test_the_help_and_the_opening_lines_fit_an_80_column_terminal(monkeypatch):
    from nardy_env.players import load_player
    from train.play import help_text

    monkeypatch.setenv("COLUMNS", "80")
    for side in (Color.WHITE, Color.BLACK):
        lines = help_text(side).splitlines()
        assert max(len(line) for line in lines) <= 79 and "Commands: list" in help_text(side)
    out = io.StringIO()
    play_session(load_player("race"), Color.BLACK, seed=1, games=1, read=lambda prompt: "quit" if "play" in prompt
                 else "y", out=out)
    opening = out.getvalue().split("Opening roll")[0]
    assert max(len(line) for line in opening.splitlines()) <= 79 and "Black moves 12 -> 1" in " ".join(opening.split())


def test_read_says_the_position_in_words_for_a_screen_reader():
    from nardy_env.render import board_words

    bear_off = "7,4,2,0,0,0,0,0,0,0,0,0,-8,-3,0,0,0,0,0,0,0,0,0,0:2,4:w"  # README's picture
    state, side = parse_npn(bear_off)
    assert board_words(state, side, [2, 6]) == (
        "White: 7 on 1, 4 on 2, 2 on 3; 2 off; 21 pips. Black: 8 on 13, 3 on 14; 4 off; 14 pips. "
        "White to move, dice 2-6.")
    # The same position seen from black's side reads the same.
    assert board_words(flip(state[None])[0], Color.BLACK).startswith("White: 7 on 1, 4 on 2, 2 on 3; 2 off; 21 pips.")
    out = io.StringIO()
    answers = iter(["read", "quit", "y"])
    play_session(RandomPlayer(), Color.WHITE, seed=1, games=1, read=lambda prompt: next(answers), out=out)
    assert "White: 15 on 24; 0 off; 360 pips." in out.getvalue()


def test_a_number_out_of_range_at_the_confirm_prompt_says_the_play_was_not_made():
    out = io.StringIO()
    opponent = Recorder()
    done = {}

    def turn(plays, npn, dice):
        if done:
            return ["resign", "y"]
        done["n"] = len(plays)
        return ["1", str(len(plays) + 5), "1", "y"]  # chose 1, then typed a number no play has

    play_session(opponent, human=Color.WHITE, seed=7, games=1, read=Human(out, opponent, turn), out=out)
    text = out.getvalue()
    assert f"choose 1..{done['n']}. The play you were confirming is not played either." in _flat(text)


def test_read_at_the_confirm_prompt_describes_the_position_after_the_play():
    out = io.StringIO()
    lines = iter(["read", "1", "read", "y"] + ["quit", "y"] * 5)
    play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    text = _flat(out.getvalue())
    said = re.search(r"After your play (\S+(?: \S+)*) \((?:black rolls next|this play wins[^)]*)\): (White: .*?\.) ", text)
    assert said, text
    before = re.findall(r"White: [^.]*\.", text.split("After your play")[0])
    assert before and said.group(2) not in before  # the words describe the new position, not the old one


def test_a_byte_order_mark_and_control_characters_typed_are_handled():
    out = io.StringIO()
    lines = iter(["\ufeff\x1b[7mnonsense", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    text = out.getvalue()
    assert "\x1b" not in text and "\ufeff" not in text
    assert "'\\x1b[7mnonsense' is not a move" in text
    out = io.StringIO()
    lines = iter(["\ufeff1", "y", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    assert "is not a move" not in out.getvalue() and "After your play" in out.getvalue()


def test_long_messages_are_wrapped_to_a_narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    out = io.StringIO()
    lines = iter(["24/18 bogus", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    text = out.getvalue()
    message = [line for line in text.splitlines() if "not a move" in line]
    assert message and all(len(line) <= 39 for line in message)
    assert "'bogus' is not a move; write moves as FROM/TO" in _flat(text)
    # A position string wider than the terminal stays whole, to be copied into nardy hint.
    out = io.StringIO()
    lines = iter(["npn", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    shown = [word for line in out.getvalue().splitlines() for word in line.split() if word.count(",") > 20]
    assert shown and parse_npn(shown[0])


@pytest.mark.parametrize("rules", [Rules(), Rules(block_rule="home"), Rules(head_exception=())],
                         ids=["sports-code", "block-home", "no-head-exception"])
def test_every_legal_play_typed_as_listed_or_reversed_is_accepted_as_its_own_result(rules):
    """The game checks a typed play with its own reasons (why_not_legal) before it looks the result
    up among the core's: a reason given wrongly would refuse a legal play, so every play the core
    lists, on every turn of random games, must come through, in its order and reversed."""
    from tests.nardy_env.test_against_reference import random_game_positions
    from train.play import _apply_common, _playable_order, parse_play, why_not_legal

    checked = 0
    for state, side, dice in random_game_positions(4, seed=11)[::3]:
        npn = format_npn(state, side)
        for play in legal_plays(npn, list(dice), rules):
            for moves in (play["moves"], play["moves"][::-1]):
                if not moves:
                    continue
                typed_moves = _playable_order(npn, list(dice), parse_play(typed(moves)))
                assert why_not_legal(npn, list(dice), typed_moves) is None, (npn, dice, moves)
                assert _apply_common(npn, typed_moves) == play["result"], (npn, dice, moves)
                checked += 1
    assert checked > 1000


def test_the_list_of_plays_fits_the_width_messages_are_wrapped_to(monkeypatch):
    # Output that is no terminal (a pipe, a notebook) once had its list drawn 100 columns wide and
    # then each line wrapped at 79: a play's moves split over two lines.
    from train.play import _Session

    npn = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,2,2,2,0,2,2,2,3:0,0:w"
    plays = sorted(legal_plays(npn, [1, 1]), key=lambda p: p["moves"])
    for columns in (None, "60", "80", "130"):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        width = min(int(columns or 80), 100) - 1
        out = io.StringIO()
        _Session(RandomPlayer(), Color.WHITE, Rules(), 1, read=input, out=out).list_plays(plays)
        rows = out.getvalue().splitlines()[1:]
        numbers = [int(n) for row in rows for n in re.findall(r"(?:^|\s)(\d+)\. ", row)]
        assert all(re.match(r"^ +\d+\. ", row) and len(row) <= width for row in rows), (columns, rows)
        assert sorted(numbers) == list(range(1, len(plays) + 1)) and len(plays) > 20
        assert len(rows) < len(plays) or width < 62  # in columns, where two fit


def test_messages_for_typed_plays_fit_the_side_and_the_count():
    from train.play import parse_play, why_not_legal

    with pytest.raises(ValueError, match=r"e\.g\. 12/6, 12/6/1, 24/18\(2\) or 15/off$"):
        parse_play("exit now", Color.BLACK)  # black's moves, forward for black
    with pytest.raises(ValueError, match=r"e\.g\. 13/7, 13/7/1, 13/7\(2\) or 3/off$"):
        parse_play("exit now")
    one_on_18 = "0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,1,0,0,0,0,0,14:0,0:w"
    assert why_not_legal(one_on_18, [1, 1], parse_play("18/17(4)")) == (
        "18/17 needs another white checker on 18: the one there is moved already by the moves before it")
    assert "24/23 is 1 point; with 6-5 a checker moves 5, 6, 11" in why_not_legal(one_on_18, [6, 5], [(24, 23)])


def test_npn_gives_the_nardy_hint_command_to_copy_with_the_rules_in_play(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    for rules, option in ((Rules(), ""), (Rules(block_rule="home"), " --rules '{\"block_rule\": \"home\"}'")):
        out = io.StringIO()
        lines = iter(["npn", "quit", "y"])
        play_session(RandomPlayer(), human=Color.WHITE, rules=rules, seed=1, games=1,
                     read=lambda prompt, lines=lines: next(lines) + "\n", out=out)
        text = out.getvalue()
        npn, d1, d2 = re.search(r"\n(\S+)  \(dice (\d)-(\d)\); to see your plays ranked:\n", text).groups()
        assert parse_npn(npn)
        assert f'\n  nardy hint "{npn}" {d1} {d2}{option}\n' in text  # one line, never wrapped


def test_undo_lists_the_plays_again_and_the_result_says_what_oin_and_mars_mean():
    out = io.StringIO()
    lines = iter(["1", "undo", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=5, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    after_undo = out.getvalue().split("Undone; the turn starts again.")[1]
    assert re.search(r"\d+ legal plays?:\n +1\. ", after_undo)
    out = io.StringIO()
    play_session(RandomPlayer(), human=Color.WHITE, seed=5, games=1,
                 read=lambda prompt: "1\n" if prompt.startswith("your play") else "y\n", out=out)
    assert re.search(r"wins? by (oin: 1 point \((white|black) had borne off a checker; with none, a mars "
                     r"scores 2\)|mars: 2 points \((white|black) bore off no checker\))\.", _flat(out.getvalue()))


@pytest.mark.parametrize("word", ["exit", "q"])
def test_exit_and_q_quit_like_quit(word):
    out = io.StringIO()
    lines = iter([word, "y"])
    score = play_session(RandomPlayer(), human=Color.WHITE, seed=1, games=1, read=lambda prompt: next(lines) + "\n",
                         out=out)
    assert "To quit abandons the game in progress" in _flat(out.getvalue()) and score == {"you": 0, "opponent": 0}


def test_the_y_key_on_a_russian_keyboard_is_not_taken_for_no():
    # 'н' is what y types on a Russian layout, and the first letter of нет: asked again, never
    # read as no (which would end the session or undo the play).
    out = io.StringIO()
    lines = iter(["resign", "y", "н", "да", "resign", "y", "нет"])
    score = play_session(RandomPlayer(), human=Color.WHITE, seed=5, read=lambda prompt: next(lines) + "\n", out=out)
    assert "н is the y key on a Russian keyboard, and the start of нет: answer y or n (да or нет)." in _flat(
        out.getvalue())
    assert "after 2 games" in out.getvalue() and score["opponent"] >= 2
    out = io.StringIO()
    lines = iter(["1", "н", "y", "quit", "y"])
    play_session(RandomPlayer(), human=Color.WHITE, seed=5, games=1, read=lambda prompt: next(lines) + "\n",
                 out=out)
    text = out.getvalue()
    assert "н is the y key" in text and "Undone" not in text and "random plays" in text
    # Nor at the questions before a resignation or quitting.
    out = io.StringIO()
    lines = iter(["resign", "н", "y"])
    score = play_session(RandomPlayer(), human=Color.WHITE, seed=5, games=1, read=lambda prompt: next(lines) + "\n",
                         out=out)
    assert "н is the y key" in out.getvalue() and "You resign and lose" in out.getvalue() and score["opponent"]


def test_the_resign_reason_says_over_which_turns_the_mars_was_judged():
    from train.play import _Session

    rest = ",0,0,0,0,0,0,0,0,0,0,0"
    cases = [
        (format_npn(initial_states(1)[0], Color.WHITE), [6, 5], "lose 2 points (mars: you have borne off nothing and "
         "no play of 6-5 bears a checker off; while the sides can still meet, only this roll counts)."),
        (f"0,0,7,4,0,4,0,0,0,0,0,0,-4{rest}:0,11:w", [5, 5], "lose 2 points (mars: you have borne off nothing, no "
         "play of 5-5 bears a checker off, and your opponent could finish in its next turn)."),
        (f"0,0,0,0,0,15,0,0,0,0,0,0,-15{rest}:0,0:w", [5, 4], "lose 2 points (mars: you have borne off nothing "
         "and no play of 5-4 makes a checker off certain within this turn and your next 2 (as many as your "
         "opponent could need to finish, three turns in all at most))."),
        (f"0,0,7,4,0,4,0,0,0,0,0,0,-15{rest}:0,0:w", [5, 5], "lose 1 point (a single game: your escape from mars "
         "is secured)."),
        (f"0,0,7,4,0,3,0,0,0,0,0,0,-15{rest}:1,0:w", [5, 5], "lose 1 point (a single game: you have borne a "
         "checker off, so no mars is possible)."),
    ]
    home_rule = ("0,0,0,0,0,15,0,0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0:0,0:w", [5, 4], "lose 2 points (mars: you have "
                 "borne off nothing and no play of 5-4 bears a checker off; while the sides can still meet (under "
                 "the home block rule, until one of the opponent's checkers is home), only this roll counts).")
    for position, dice, said in [*cases, home_rule]:
        rules = Rules(block_rule="home") if (position, dice, said) == home_rule else Rules()
        out = io.StringIO()
        session = _Session(RandomPlayer(), Color.WHITE, rules, 1, read=lambda prompt: "n\n", out=out)
        assert session.resign_or_quit("resign", parse_npn(position)[0], np.array(dice)) is False
        assert said in _flat(out.getvalue()), out.getvalue()


def test_black_typing_its_own_numbering_is_shown_the_play_it_meant():
    """Black's own numbering counts from its head as 24; the board and the plays use the common
    one (black's head is 12). A play typed the first way is refused, with the play it meant."""
    from train.play import _apply_common, _own_numbering_hint, _Session

    start = format_npn(initial_states(1)[0], Color.BLACK)
    lines = iter(["24/18 18/13", "12/6 6/1", "y"])
    out = io.StringIO()
    session = _Session(RandomPlayer(), Color.BLACK, Rules(), 1, read=lambda prompt: next(lines) + "\n", out=out)
    after = session.human_turn(parse_npn(start)[0], Color.BLACK, np.array([6, 5]))
    text = _flat(out.getvalue())
    assert ("24/18 18/13 is not a legal play with 6-5: there is no black checker on 24 for 24/18. Points are "
            "numbered as on the board (black's head is 12, its home 13-18), not counted from black's own head: "
            "did you mean 12/6 6/1?") in text
    assert after is not None and "After your play 12/6 6/1" in text
    # White's own numbering is the common one: no such note; nor for black when the other reading is no play.
    white = format_npn(initial_states(1)[0], Color.WHITE)
    results = {p["result"]: p for p in legal_plays(white, [6, 5])}
    assert _own_numbering_hint(white, [6, 5], [(12, 6), (6, 1)], results, Color.WHITE) == ""
    black_results = {p["result"]: p for p in legal_plays(start, [6, 5])}
    assert _own_numbering_hint(start, [6, 5], [(20, 14)], black_results, Color.BLACK) == ""
    # Moves typed in the board's numbers, refused only by the head rule: no note, though 24/18 24/19 is legal.
    heads = "0,0,15,0,0,0,0,0,0,0,0,-10,0,0,0,0,0,0,0,0,0,0,0,-5:0,0:b"
    head_results = {p["result"]: p for p in legal_plays(heads, [6, 5])}
    assert _apply_common(heads, [(24, 18), (24, 19)]) in head_results
    assert _own_numbering_hint(heads, [6, 5], [(12, 6), (12, 7)], head_results, Color.BLACK) == ""
    # Typed in the board's numbers and refused because the point is held: no note either, though
    # the other reading (8/2 8/3) is a legal play.
    cells = [0] * 24
    cells[13], cells[23], cells[19], cells[7], cells[11] = 13, 2, -2, -2, -11
    held = ",".join(map(str, cells)) + ":0,0:b"
    held_results = {p["result"]: p for p in legal_plays(held, [6, 5])}
    assert _apply_common(held, [(8, 2), (8, 3)]) in held_results
    assert _own_numbering_hint(held, [6, 5], [(20, 14), (20, 15)], held_results, Color.BLACK) == ""


def test_black_sees_its_plays_listed_in_its_own_point_order():
    """White's list runs from its home to its head (common 1..24); black's runs the same way along
    its own route (13..24, then 1..12): a checker on 22 comes before one on 1, the head (12) last."""
    from train.play import _Session

    cells = [0] * 24
    cells[0], cells[11], cells[21], cells[23] = -1, -13, -1, 15
    black = ",".join(map(str, cells)) + ":0,0:b"
    lines = iter(["1", "y"])
    out = io.StringIO()
    session = _Session(RandomPlayer(), Color.BLACK, Rules(), 1, read=lambda prompt: next(lines) + "\n", out=out)
    session.human_turn(parse_npn(black)[0], Color.BLACK, np.array([6, 5]))
    listed = re.findall(r"\b\d+\. (\d+)/", out.getvalue())
    firsts = list(dict.fromkeys(int(p) for p in listed))
    assert firsts == [22, 1, 12], firsts
    assert "After your play 22/" in out.getvalue()


def test_a_stopped_session_gives_the_score_and_says_whether_a_game_was_cut_short():
    """Ctrl-C, the command line's SIGTERM, or either inside compiled code (numba's SystemError caused
    by it): the score so far, and whether the game in progress is left out of it."""
    from train.cli import Terminated

    def stopped(raised, answers=()):
        out = io.StringIO()
        lines = iter(answers)

        def read(prompt):
            line = next(lines, None)
            if line is None:
                raise raised
            return line + "\n"
        with pytest.raises(BaseException) as stop:
            play_session(RandomPlayer(), human=Color.WHITE, seed=5, read=read, out=out)
        assert stop.value is raised
        return _flat(out.getvalue())

    said = stopped(KeyboardInterrupt())
    assert "Interrupted. Score: you 0, random 0 (the game in progress is not counted)." in said
    assert "Stopped. Score: you 0, random 0 (the game in progress is not counted)." in stopped(Terminated())
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        compiled = SystemError("returned a result with an exception set")
        compiled.__cause__ = exc
    assert "Interrupted. Score:" in stopped(compiled)
    # At "another game?", after a resigned game: nothing was cut short.
    between = stopped(KeyboardInterrupt(), ["resign", "y"])
    assert re.search(r"Interrupted\. Score: you 0, random [12]\.", between) and "not counted" not in between
    with pytest.raises(ValueError, match="a bug"):  # an error is no stop: no score line, raised as it is
        play_session(RandomPlayer(), human=Color.WHITE, seed=5, out=io.StringIO(),
                     read=lambda prompt: (_ for _ in ()).throw(ValueError("a bug")))

    def failing_while_stopping(prompt):  # an error raised while a Ctrl-C was handled is an error
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            return {}["x"]
    out = io.StringIO()
    with pytest.raises(KeyError):
        play_session(RandomPlayer(), human=Color.WHITE, seed=5, out=out, read=failing_while_stopping)
    assert "Interrupted" not in out.getvalue() and "Score:" not in out.getvalue()

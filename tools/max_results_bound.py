"""The proven bound on afterstates of one roll (docs/rules.md, "How many results").

A double's afterstate is fixed by the multiset of checker journeys (start
point, steps >= 1) whose steps add up to the dice played. From a point holding
n checkers, the journeys starting there form a partition of their total steps
into at most n parts. The count of multisets is therefore the coefficient of
x^k in the product over points of P_n(x) = sum_t p(t, <= n parts) x^t. This
script maximises it over every way to spread 15 checkers over at most 23
points (the opponent holds at least one) and prints the maximum for k = 0..4.

A non-double's afterstate is one checker moved by both dice (at most one
result per occupied point: the order of the dice does not change where it
ends) or two single-die moves of checkers on points p (first die) and q
(second die), at most m * m for m occupied points; one-die plays are kept only
when no two-die play exists. So at most m + m * m <= 15 + 225 = 240.

    python tools/max_results_bound.py

tests/nardy_env/test_perft.py runs it and holds ``MAX_RESULTS`` to its answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

CHECKERS = 15
MAX_POINTS = 23  # the opponent's checkers hold at least one of the 24 points
MAX_DICE = 4


@cache
def partitions_at_most(total: int, parts: int, largest: int) -> int:
    """Partitions of ``total`` into at most ``parts`` parts, none above ``largest``."""
    if total == 0:
        return 1
    if parts == 0:
        return 0
    return sum(partitions_at_most(total - s, parts - 1, s) for s in range(1, min(total, largest) + 1))


def journeys_polynomial(checkers: int) -> list[int]:
    """Coefficients of P_n(x) up to x^MAX_DICE: ways n checkers on one point share t steps."""
    return [partitions_at_most(t, checkers, t) for t in range(MAX_DICE + 1)]


def multiply(a: list[int], b: list[int]) -> list[int]:
    """Product of two polynomials, cut after x^MAX_DICE."""
    c = [0] * (MAX_DICE + 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            if i + j <= MAX_DICE:
                c[i + j] += x * y
    return c


def spreads(n: int, largest: int, points: int) -> Iterator[list[int]]:
    """Every way to put ``n`` checkers on at most ``points`` points (checkers per point, descending)."""
    if n == 0:
        yield []
        return
    if points == 0:
        return
    for p in range(min(n, largest), 0, -1):
        for rest in spreads(n - p, p, points - 1):
            yield [p, *rest]


def double_bound() -> dict[int, tuple[int, list[int]]]:
    """For k = 0..4 single-die moves of a double: the most afterstates, and a spread reaching it."""
    best: dict[int, tuple[int, list[int]]] = {}
    for spread in spreads(CHECKERS, CHECKERS, MAX_POINTS):
        product = [1] + [0] * MAX_DICE
        for n in spread:
            product = multiply(product, journeys_polynomial(min(n, MAX_DICE)))
        for k in range(MAX_DICE + 1):
            if product[k] > best.get(k, (0, []))[0]:
                best[k] = (product[k], spread)
    return best


def non_double_bound() -> int:
    """The most afterstates of a non-double: m + m * m for m occupied points, m <= 15."""
    return max(m + m * m for m in range(1, CHECKERS + 1))


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0]).parse_args()
    for k, (count, spread) in sorted(double_bound().items()):
        print(f"double, {k} dice: at most {count} positions (checkers per point {spread})")
    print(f"non-double: at most {non_double_bound()} positions")


if __name__ == "__main__":
    main()

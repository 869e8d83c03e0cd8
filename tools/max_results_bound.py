"""The proven bound on afterstates of one double (docs/rules.md, "How many results").

A double's afterstate is fixed by the multiset of checker journeys (start
point, steps >= 1) whose steps add up to the dice played. From a point holding
n checkers, the journeys starting there form a partition of their total steps
into at most n parts. The count of multisets is therefore the coefficient of
x^k in the product over points of P_n(x) = sum_t p(t, <= n parts) x^t. This
script maximises it over every way to spread 15 checkers over at most 23
points (the opponent holds at least one) and prints the maximum for k = 0..4.

    python tools/max_results_bound.py
"""
from functools import lru_cache
import itertools
def parts_atmost(t, n):
    # partitions of t into at most n parts
    @lru_cache(None)
    def f(t, n, mx):
        if t == 0: return 1
        if n == 0: return 0
        return sum(f(t-s, n-1, s) for s in range(1, min(t, mx)+1))
    return f(t, n, t)
def poly(n, K=4):
    return [parts_atmost(t, n) for t in range(K+1)]
def mul(a, b, K=4):
    c=[0]*(K+1)
    for i,x in enumerate(a):
        for j,y in enumerate(b):
            if i+j<=K: c[i+j]+=x*y
    return c
# enumerate partitions of 15 into at most 23 parts (mover points; opponent holds >=1 point)
def partitions(n, maxpart, maxlen):
    if n == 0: yield []; return
    if maxlen == 0: return
    for p in range(min(n,maxpart),0,-1):
        for rest in partitions(n-p, p, maxlen-1):
            yield [p]+rest
best = {}
for part in partitions(15, 15, 23):
    pr=[1,0,0,0,0]
    for n in part: pr = mul(pr, poly(min(n,4)))
    for k in range(5):
        if pr[k] > best.get(k,(0,))[0]: best[k]=(pr[k], part)
for k, (count, spread) in sorted(best.items()):
    print(f"{k} dice: at most {count} positions (checkers per point {spread})")
# non-double: ordered pairs of moves: (p with a, q with b) p!=q or same point if n>=2, plus one checker both: m + m*m

# SPDX-License-Identifier: BSD-2-Clause
"""Multiprocessing: a fork-started Pool of two workers maps a CPU-bound
function over chunks of numbers; the parent waits in pool.map and then
combines the results.  Exercises following forked children.
"""
import multiprocessing

import benchclock


def sieve_count(bounds):
    lo, hi = bounds
    flags = bytearray([1]) * (hi - lo)
    p = 2
    while p * p < hi:
        start = max(p * p, ((lo + p - 1) // p) * p)
        for m in range(start, hi, p):
            flags[m - lo] = 0
        p += 1
    return sum(flags) - (1 if lo <= 1 < hi else 0) - (1 if lo == 0 else 0)


def count_primes(limit, chunks):
    step = limit // chunks
    ranges = [(i * step, limit if i == chunks - 1 else (i + 1) * step) for i in range(chunks)]
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(2)
    try:
        counts = pool.map(sieve_count, ranges, chunksize=1)
    finally:
        pool.close()
        pool.join()
    return sum(counts)


if __name__ == "__main__":
    benchclock.run(count_primes, max(10_000, int(7_000_000 * benchclock.scale())), 32)

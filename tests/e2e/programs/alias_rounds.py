"""Rounds exactly one sampling period long (997 Hz, the default rate): each
spins on the clock for 0.3 of the period on one line, then up to the end of
the period on the next, on a fixed schedule.  A timer that fires at a fixed
period falls at the same point of every round, and one line takes nearly
every sample; the truth is 30:70 (what the thread measured of itself).

argv[1]: rounds.  Writes to argv[2] (JSON) the CPU time spent on each line.
"""
import json
import sys
import time

PERIOD_NS = 1e9 / 997
clock = time.perf_counter_ns
cpu = time.thread_time


def main(rounds):
    spent = {"short": 0.0, "long": 0.0}
    t0 = clock()
    for k in range(rounds):
        start = t0 + k * PERIOD_NS
        c = cpu()
        while clock() < start + 0.3 * PERIOD_NS: pass  # LINE: short
        c2 = cpu()
        while clock() < start + PERIOD_NS: pass  # LINE: long
        spent["short"] += c2 - c
        spent["long"] += cpu() - c2
    return spent


with open(sys.argv[2], "w") as f:
    json.dump(main(int(sys.argv[1])), f)

"""Pure-Python work split 20/30/50 over three lines.

Each of the three lines runs the same loop (spin_helper.spin, left out of
the profile so that its time lands on the calling line), so every iteration
costs the same; only the iteration counts differ, 2:3:5.  The lines take
turns in short rounds (about 10 ms), so that a slower or faster stretch of a
busy machine falls on all three alike.  The work is calibrated at start-up to
take about argv[1] CPU seconds in all, whatever the interpreter's speed.  The
CPU time each line really took (time.thread_time around it) goes to argv[2]
(JSON), so the test can compare the profile with both the design and what
happened.
"""
import json
import sys
import time

from spin_helper import spin


def calibrate():
    n = 300_000
    t = time.thread_time()
    spin(n)  # LINE: calibrate
    return (time.thread_time() - t) / n


def work(unit, rounds):
    clock = time.thread_time
    twenty = thirty = fifty = 0.0
    for _ in range(rounds):
        t0 = clock()
        spin(2 * unit)  # LINE: twenty
        t1 = clock()
        spin(3 * unit)  # LINE: thirty
        t2 = clock()
        spin(5 * unit)  # LINE: fifty
        t3 = clock()
        twenty += t1 - t0
        thirty += t2 - t1
        fifty += t3 - t2
    return {"twenty": twenty, "thirty": thirty, "fifty": fifty}


seconds = float(sys.argv[1])
per_iter = calibrate()
unit = max(1000, int(0.010 / per_iter / 10))  # a round: about 10 ms
rounds = max(10, int(seconds / (10 * unit * per_iter)))
spent = work(unit, rounds)
with open(sys.argv[2], "w") as f:
    json.dump(spent, f)

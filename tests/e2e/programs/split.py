"""Pure-Python work split 20/30/50 over three lines.

Each of the three lines runs the same loop (spin_helper.spin, left out of
the profile so that its time lands on the calling line), so every iteration
costs the same; only the iteration counts differ, 2:3:5.  The lines take
turns in short rounds, so that a slower or faster stretch of a busy machine
falls on all three alike.  The rounds last 5 to 15 ms, drawn from a seeded
generator: rounds of one fixed length near a multiple of the sampling period
(1.003 ms at 997 Hz) would put the samples at the same place in every round,
and the test would measure that phase rather than the attribution.  A
calibration at start-up sizes the rounds, whatever the interpreter's speed;
the work goes on until the three lines have had argv[1] CPU seconds in all.
The CPU time each line really took (time.thread_time around it) goes to
argv[2] (JSON), with the cost of an iteration when calibrated and during the
work, so the test can compare the profile with both the design and what
happened.
"""
import json
import random
import sys
import time

from spin_helper import calibrate, spin


def work(unit, seconds):
    clock = time.thread_time
    rng = random.Random(20)
    twenty = thirty = fifty = 0.0
    iters = 0
    # Until the lines have had `seconds` of CPU, as measured: a calibration
    # that came out slow (or fast) changes the rounds' length, not how many
    # samples the test gets.
    while twenty + thirty + fifty < seconds:
        n = int(unit * rng.uniform(0.5, 1.5))
        t0 = clock()
        spin(2 * n)  # LINE: twenty
        t1 = clock()
        spin(3 * n)  # LINE: thirty
        t2 = clock()
        spin(5 * n)  # LINE: fifty
        t3 = clock()
        twenty += t1 - t0
        thirty += t2 - t1
        fifty += t3 - t2
        iters += 10 * n
    return {"twenty": twenty, "thirty": thirty, "fifty": fifty,
            "iterations": iters, "work_s_per_iter": (twenty + thirty + fifty) / iters}


seconds = float(sys.argv[1])
per_iter = calibrate()
unit = max(1000, int(0.010 / per_iter / 10))  # a round: about 10 ms on average
spent = work(unit, seconds)
spent["calibrated_s_per_iter"] = per_iter
with open(sys.argv[2], "w") as f:
    json.dump(spent, f)

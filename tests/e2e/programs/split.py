"""Pure-Python work split 20/30/50 over three lines.

Each of the three lines is a whole loop with the same body, so every
iteration costs the same; only the iteration counts differ, 2:3:5.  The
amount of work is calibrated at start-up so that the three lines take about
the number of seconds given as argv[1] whatever the interpreter's speed.
"""
import sys
import time


def calibrate():
    n = 300_000
    t = time.perf_counter()
    acc = 0
    for i in range(n): acc ^= i  # LINE: calibrate
    return (time.perf_counter() - t) / n


def work(unit):
    acc = 0
    for i in range(2 * unit): acc ^= i  # LINE: twenty
    for i in range(3 * unit): acc ^= i  # LINE: thirty
    for i in range(5 * unit): acc ^= i  # LINE: fifty
    return acc


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.2
unit = max(50_000, int(seconds / calibrate() / 10))
work(unit)

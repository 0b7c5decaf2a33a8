"""One hot line for about argv[1] seconds of CPU (0.4 by default).

CPU time, not wall time: on a machine shared with other work the wall clock
says little about how long the program ran.  Also runs as a module:
python -m busy.
"""
import sys
import time


def main(seconds):
    end = time.thread_time() + seconds
    acc = 0
    while time.thread_time() < end:
        for i in range(10_000): acc ^= i  # LINE: hot
    return acc


main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.4)

"""One hot line for about argv[1] seconds of CPU (0.4 by default).

CPU time, not wall time: on a machine shared with other work the wall clock
says little about how long the program ran.  Also runs as a module:
python -m busy.  argv[2], if given: a JSON file to write the loop's own CPU
and wall seconds to.
"""
import json
import sys
import time


def main(seconds):
    w0 = time.monotonic()
    c0 = time.thread_time()
    end = c0 + seconds
    acc = 0
    while time.thread_time() < end:
        for i in range(10_000): acc ^= i  # LINE: hot
    return acc, time.thread_time() - c0, time.monotonic() - w0


_, cpu_s, wall_s = main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.4)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        json.dump({"cpu_s": cpu_s, "wall_s": wall_s}, f)

"""The loop of the attach-memory benchmark: builds a three-item list and a
str an iteration, as fast as it can, until a stop file appears (argv[1]);
every 0.1 s appends (time.time(), iterations, process_time) to argv[2]."""
import os
import sys
import time


def main(stop, side):
    n = 0
    nxt = 0.0
    print("ready", flush=True)
    with open(side, "w") as out:
        while not os.path.exists(stop):
            for i in range(10000):
                x = [i, str(i), None]
            n += 10000
            now = time.time()
            if now >= nxt:
                out.write(f"{now} {n} {time.process_time()}\n")
                out.flush()
                nxt = now + 0.1
    return n


print("done", main(sys.argv[1], sys.argv[2]), flush=True)

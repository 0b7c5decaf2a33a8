"""A process to attach to with --memory: allocates 4 MiB and 1 MiB blocks on
two lines, 4:1 in bytes, in rounds with a short sleep between, until a stop file appears (argv[1]).  Says "ready"
once it runs and "done N" when it stops."""
import os
import sys
import time

MiB = 1 << 20


def main(stop):
    rounds = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        for _ in range(20):
            big = bytearray(4 * MiB)  # LINE: big
            small = bytearray(MiB)  # LINE: small
        rounds += 1
        time.sleep(0.005)  # a service's pace, not a flood of page-free blocks
    return rounds


print("done", main(sys.argv[1]), flush=True)

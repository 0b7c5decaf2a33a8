"""A process to attach to: spins on one line until a stop file appears
(argv[1]) or, with a number instead, for that many seconds.  Says "ready" on
stdout once it spins and "done N" when it stops on its own."""
import os
import sys
import time


def main(arg):
    limit = time.monotonic() + (float(arg) if arg[0].isdigit() else 60.0)
    acc = rounds = 0
    print("ready", flush=True)
    while time.monotonic() < limit and not os.path.exists(arg):
        for i in range(20_000): acc ^= i  # LINE: hot
        rounds += 1
    return rounds


print("done", main(sys.argv[1]), flush=True)

"""A process to attach to with --memory: one line makes small objects in a
tight loop (a string through Python's allocator, a 600-byte bytes object that
it passes on to malloc: the probes fire hundreds of thousands of times a
second on every build), another spins without allocating.  Runs until a stop
file appears (argv[1]).  Says "ready" once it runs and "done N" when it
stops."""
import itertools
import os
import sys


def main(stop):
    rounds = acc = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        for i in range(2000):
            s = [str(i), bytes(600)]  # LINE: churn
        for _ in itertools.repeat(None, 2000):
            acc ^= 1  # LINE: spin
        rounds += 1
    return rounds


print("done", main(sys.argv[1]), flush=True)

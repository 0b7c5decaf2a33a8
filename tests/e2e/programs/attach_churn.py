"""A process to attach to with --memory: one line makes many small objects
in a tight loop (every iteration calls the allocators: the probes fire
hundreds of thousands of times a second), another spins without allocating.
Runs until a stop file appears (argv[1]).  Says "ready" once it runs and
"done N" when it stops."""
import os
import sys


def main(stop):
    rounds = acc = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        for i in range(2000):
            s = [str(i), str(i + 1)]  # LINE: churn
        for i in range(2000):
            acc ^= i  # LINE: spin
        rounds += 1
    return rounds


print("done", main(sys.argv[1]), flush=True)

"""Removes or rewrites its own source file (argv[1]: remove | rewrite),
then works: the profile keeps the lines' numbers and times."""
import os
import sys
import time

me = os.path.abspath(__file__)
if sys.argv[1] == "remove":
    os.unlink(me)
else:
    with open(me, "w") as f:
        f.write("# rewritten while running\n" * 3)


def work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += sum(range(200))  # LINE: work
    return x


work(0.8)

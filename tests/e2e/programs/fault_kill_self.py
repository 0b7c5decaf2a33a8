"""Works for a while, then kills itself with SIGKILL: nothing of the
program's own runs at the end (no atexit, no flush)."""
import os
import signal
import time


def work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += sum(range(200))  # LINE: work
    return x


work(0.8)
os.kill(os.getpid(), signal.SIGKILL)

"""Works, then replaces itself with a program that is not Python."""
import os
import time


def work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += sum(range(200))  # LINE: work
    return x


work(0.8)
os.execv("/bin/sh", ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7"])

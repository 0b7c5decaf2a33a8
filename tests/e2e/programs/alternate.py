"""Many short calls taking turns between two functions, for argv[1] seconds
of CPU: at a high sampling rate nearly every sample is on another stack
than the one before, so the stack timeline is as long as it can get and has
to be thinned to stay bounded."""
import sys
import time


def left(n):
    acc = 0
    for i in range(n):
        acc ^= i  # LINE: left
    return acc


def right(n):
    acc = 0
    for i in range(n):
        acc += i  # LINE: right
    return acc


def main(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for _ in range(100):
            left(150)
            right(150)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)

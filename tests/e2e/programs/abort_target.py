"""Spins on one line for argv[1] seconds (1.5 by default), then crashes:
os.abort(), SIGABRT, as a failing native extension would."""
import os
import sys
import time


def main(seconds):
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        for i in range(20_000): acc ^= i  # LINE: hot
    return acc


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)
os.abort()

# SPDX-License-Identifier: BSD-2-Clause
"""A program of about 20 ms of CPU: the work is in a function of this file,
which ends as soon as the work is done.  Writes the work's thread_time to
argv[1]."""
import sys
import time


def work(seconds):
    t0 = time.thread_time()
    n = 0
    while time.thread_time() - t0 < seconds:
        for i in range(500):  # LINE: hot
            n += i
    return time.thread_time() - t0


spent = work(0.02)
with open(sys.argv[1], "w") as f:
    f.write(repr(spent))

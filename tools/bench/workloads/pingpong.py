# SPDX-License-Identifier: BSD-2-Clause
"""Context-switch heavy: two threads hand one byte back and forth through a
pair of pipes.  Each round trip is two blocking reads, so the program
switches tens of thousands of times a second while doing almost no work:
the case where a profiler that pays per context switch (rather than per
sample) shows up.  The design target is 1.05x of the unprofiled run.
"""
import os
import threading

import benchclock


def echo(rfd, wfd, trips):
    for _ in range(trips):
        b = os.read(rfd, 1)
        os.write(wfd, b)


def ping(trips):
    to_echo_r, to_echo_w = os.pipe()
    back_r, back_w = os.pipe()
    t = threading.Thread(target=echo, args=(to_echo_r, back_w, trips))
    t.start()
    total = 0
    token = b"\x01"
    for i in range(trips):
        os.write(to_echo_w, token)
        token = os.read(back_r, 1)
        total += token[0]
        token = bytes([(token[0] + i) & 0x7F or 1])
    t.join()
    for fd in (to_echo_r, to_echo_w, back_r, back_w):
        os.close(fd)
    return total


if __name__ == "__main__":
    benchclock.run(ping, max(1000, int(120_000 * benchclock.scale())))

# SPDX-License-Identifier: BSD-2-Clause
"""Code objects freed as soon as they ran: modules imported at start (their
top-level code), and a loop compiled and exec'd 30 times, each time a new
code object, dropped when it returns.  The exec'd code is compiled as this
file, padded so that its loop is the `generated` line below.  Writes the
loops' thread_time to argv[1]."""
import sys
import time
import json  # noqa: F401
import decimal  # noqa: F401
import fractions  # noqa: F401
import statistics  # noqa: F401

LOOP = 22  # the line of the comment below


def run():
    src = "\n" * (LOOP - 1) + "for i in range(60000): s += i * i\n"
    t0 = time.thread_time()
    for _ in range(30):
        exec(compile(src, __file__, "exec"), {"s": 0})
    # LINE: generated (the exec'd loop, at LOOP)
    return time.thread_time() - t0


spent = run()
with open(sys.argv[1], "w") as f:
    f.write(repr(spent))

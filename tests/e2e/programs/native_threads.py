# SPDX-License-Identifier: BSD-2-Clause
"""Known truth for threads with no Python frame: pool() calls a library that
runs 2 threads of its own for SECONDS of CPU each while the calling thread
waits, as a BLAS or OpenMP call does; own() is pure Python on the main
thread.  Argument: the library (build/tests/libnativepool.so), optionally a
side file where the thread CPU seconds actually spent are written."""
import ctypes
import json
import sys
import time

SECONDS = 0.6
lib = ctypes.CDLL(sys.argv[1])
lib.spin_threads.argtypes = [ctypes.c_int, ctypes.c_double]


def pool():
    assert lib.spin_threads(2, SECONDS) == 0  # LINE: pool


def own(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1  # LINE: own
    return x


t0 = time.process_time()
pool()
pool_cpu = time.process_time() - t0
own(0.6)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        json.dump({"pool_cpu_s": pool_cpu}, f)

# SPDX-License-Identifier: BSD-2-Clause
"""Allocations made by C code, and waits in libc, at known lines, for
--native: a line keeping zlib compressors (each is memory zlib's
deflateInit2_ asks for), with numpy importable a line keeping arrays (numpy's
C code allocates them), and a line sleeping (blocked in libc's sleep).
Each runs for about SECONDS."""
import sys
import time
import zlib

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6


def compressors():
    kept = []
    t0 = time.time()
    while time.time() - t0 < SECONDS and len(kept) < 1500:
        kept.append(zlib.compressobj(9))  # LINE: zlib
    return len(kept)


def arrays():
    try:
        import numpy
    except ImportError:
        return 0
    kept = []
    t0 = time.time()
    while time.time() - t0 < SECONDS and len(kept) < 400:
        kept.append(numpy.ones(1 << 17))  # LINE: numpy
    return len(kept)


def sleeps():
    t0 = time.time()
    while time.time() - t0 < SECONDS:
        time.sleep(0.002)  # LINE: sleep


compressors()
arrays()
sleeps()

# SPDX-License-Identifier: BSD-2-Clause
"""C code that holds the GIL and C code that lets it go, while another thread
lives: sorting a list of floats (list.sort keeps the GIL all along), then
compressing a buffer (zlib lets the GIL go around deflate).  The other thread
only waits.  Each line runs for about SECONDS of CPU time."""
import random
import sys
import threading
import time
import zlib

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5


def main():
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait)
    waiter.start()
    rng = random.Random(1)
    data = [rng.random() for _ in range(100000)]
    buf = bytes(rng.getrandbits(8) for _ in range(1 << 16)) * 16
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        sorted(data)  # LINE: sort
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        zlib.compress(buf, 6)  # LINE: compress
    stop.set()
    waiter.join()


main()

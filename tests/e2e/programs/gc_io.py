# SPDX-License-Identifier: BSD-2-Clause
"""Garbage collection and I/O with known places, for the timeline's tracks:
a line that runs the collector over 200 000 container objects for SECONDS,
a line whose allocations of containers trigger collections by themselves
(every 700 or 2000 containers allocated and kept, as the version counts;
from 3.12 the collection runs at the eval loop's next check, a call or a
loop's jump: on a line of the loop, not always the allocating one), and a line blocked 20
times for 20 ms on a socket another thread writes to."""
import gc
import socket
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.8
keep = [[[] for _ in range(50)] for _ in range(4000)]


def collect():
    t0 = time.time()
    while time.time() - t0 < SECONDS:
        gc.collect()  # LINE: collect


def churn():
    t0, x = time.time(), []
    while time.time() - t0 < SECONDS:  # LINE: churn_loop
        x.append([len(x)])  # LINE: churn
        if len(x) > 200000:
            x = []  # LINE: churn_end
    return x


def wait_io():
    a, b = socket.socketpair()

    def writer():
        for _ in range(20):
            time.sleep(0.02)
            b.send(b"x")

    th = threading.Thread(target=writer)
    th.start()
    for _ in range(20):
        a.recv(1)  # LINE: recv
    th.join()


collect()
churn()
wait_io()

# SPDX-License-Identifier: BSD-2-Clause
"""A main thread and short-lived threads that name themselves (their comm,
as a profiler sees it): one of ~50 ms of CPU, then a few of ~3 ms.  Writes
{"main": [tid, name], "threads": [[tid, name], ...]} to argv[1]."""

import json
import sys
import threading
import time


def spin(seconds):
    t0 = time.thread_time()
    n = 0
    while time.thread_time() - t0 < seconds:
        for i in range(2000):
            n += i
    return n


def set_name(name):
    tid = threading.get_native_id()
    with open(f"/proc/self/task/{tid}/comm", "w") as f:
        f.write(name)


named = []


def worker(name, seconds):
    set_name(name)
    named.append((threading.get_native_id(), name))
    spin(seconds)


spin(0.15)
for name, seconds in (("shortworker", 0.05), ("blip1", 0.003),
                      ("blip2", 0.003), ("blip3", 0.003)):
    t = threading.Thread(target=worker, args=(name, seconds))
    t.start()
    t.join()
spin(0.15)
with open("/proc/self/comm") as f:
    main_name = f.read().strip()
with open(sys.argv[1], "w") as f:
    json.dump({"main": [threading.get_native_id(), main_name],
               "threads": named}, f)

"""Two CPU-bound pure-Python threads doing work in the ratio 1:3.

Each thread runs its own one-line loop; the `heavy` one iterates three times
as often.  With the GIL only one runs at a time, so the wall time is the sum,
but each line's time is its own thread's work.  Writes the threads' native
ids and CPU times to argv[2] (JSON).
"""
import json
import sys
import threading
import time

seconds = float(sys.argv[1])  # the light thread's share of work, about
info = {}


def calibrate():
    t = time.perf_counter()
    acc = 0
    for i in range(200_000): acc ^= i  # LINE: calibrate
    return (time.perf_counter() - t) / 200_000


def light(n):
    info["light_tid"] = threading.get_native_id()
    t = time.thread_time()
    acc = 0
    for i in range(n): acc ^= i  # LINE: light
    info["light_cpu_s"] = time.thread_time() - t


def heavy(n):
    info["heavy_tid"] = threading.get_native_id()
    t = time.thread_time()
    acc = 0
    for i in range(3 * n): acc ^= i  # LINE: heavy
    info["heavy_cpu_s"] = time.thread_time() - t


n = int(seconds / calibrate())
threads = [threading.Thread(target=light, args=(n,), name="light"),
           threading.Thread(target=heavy, args=(n,), name="heavy")]
for t in threads:
    t.start()
for t in threads:
    t.join()  # LINE: join
info["main_tid"] = threading.get_native_id()
with open(sys.argv[2], "w") as f:
    json.dump(info, f)

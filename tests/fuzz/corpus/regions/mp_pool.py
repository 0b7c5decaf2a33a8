"""A multiprocessing Pool of two workers, with the start method in argv[1].

The children run `work` (one hot line); each returns the CPU time it spent
there, and the parent writes the total and the children's pids to argv[3].
argv[2]: about how many CPU seconds of work in all.
"""
import json
import multiprocessing
import os
import sys
import time


def calibrate():
    t = time.thread_time()
    acc = 0
    for i in range(200_000): acc ^= i
    return (time.thread_time() - t) / 200_000


def work(n):
    t = time.process_time()
    acc = 0
    for i in range(n): acc ^= i  # LINE: worker
    return os.getpid(), time.process_time() - t


if __name__ == "__main__":
    method, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    n = int(seconds / 4 / calibrate())
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        results = pool.map(work, [n] * 4, chunksize=1)  # LINE: map
    with open(out, "w") as f:
        json.dump({"pids": sorted({p for p, _ in results}),
                   "work_cpu_s": sum(s for _, s in results)}, f)

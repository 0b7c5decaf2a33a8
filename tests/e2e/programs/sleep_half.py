"""Busy for argv[1] seconds of CPU, then asleep for as long.

The busy half is counted in CPU time (time.thread_time), not wall time, so
that it stays half of the profile on a machine where other processes take
turns on the CPU (a thread waiting for a CPU is not sampled: it neither runs
nor waits for the program).  The clock is read only every few milliseconds:
reading a thread's CPU clock is a system call.  Writes the measured
durations to argv[2] (JSON) so the test can compare the profile with what
really happened.
"""
import json
import sys
import time


def main(seconds):
    t0 = time.perf_counter()
    c0 = time.thread_time()
    end = c0 + seconds
    acc = 0
    while time.thread_time() < end:  # LINE: check
        for i in range(20_000): acc ^= i  # LINE: busy
    c1 = time.thread_time()
    t1 = time.perf_counter()
    time.sleep(seconds)  # LINE: sleep
    t2 = time.perf_counter()
    return {"busy_s": t1 - t0, "busy_cpu_s": c1 - c0, "sleep_s": t2 - t1}


if __name__ == "__main__":
    spent = main(float(sys.argv[1]))
    with open(sys.argv[2], "w") as f:
        json.dump(spent, f)

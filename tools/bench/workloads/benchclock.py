# SPDX-License-Identifier: BSD-2-Clause
"""Timing shared by the benchmark workloads.

Each workload times only its own work, so that a profiler's start-up and
shutdown are not counted as slowdown.  It prints "BENCH-START" just before
the work (the driver notes when it arrives: the start-up delay, and the
profiler's own CPU time from there on) and one line last:

    BENCH elapsed_s=<float> cpu_s=<float> check=<str>

elapsed_s is time.perf_counter() around the work; cpu_s the CPU time of the
process and of its children that it waited for, over the same span; check a
checksum of the result, the same under every profiler.  tools/bench/run reads
that line.  An optional first argument scales the amount of work (the smoke
test uses a small one).
"""
import resource
import sys
import time


def _cpu_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def scale():
    """The work multiplier from argv[1] (1.0 when absent)."""
    return float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def run(work, *args):
    """Runs work(*args), then prints the BENCH line with its result."""
    print("BENCH-START", flush=True)
    cpu0 = _cpu_s()
    t0 = time.perf_counter()
    check = work(*args)
    elapsed = time.perf_counter() - t0
    cpu = _cpu_s() - cpu0
    print(f"BENCH elapsed_s={elapsed:.6f} cpu_s={cpu:.6f} check={check}", flush=True)

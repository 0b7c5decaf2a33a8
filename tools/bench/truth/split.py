# SPDX-License-Identifier: BSD-2-Clause
"""Python, native and sleeping time on three lines, about 40 / 30 / 30 % of
the run: a pure-Python loop, SHA-256 over 1 MiB blocks (C code inside one
call per block), and time.sleep.  Each is alone in its function (for
cProfile).  The work per round is sized by a calibration first; the program
then measures what each line really took (time.thread_time around the two
CPU lines: a thread waiting for a CPU is neither running nor sleeping;
time.perf_counter around the sleep) and writes it to argv[2] (JSON): that is
the reference the profiles are held to (the design, 40/30/30, drifts with
the calibration on a busy machine).  The clocks are read only between the
lines, never on them.

    python split.py [SCALE [TRUTH.json]]      (about 4 s at scale 1)
"""
import hashlib
import json
import sys
import time

ROUND_S = 0.1
SHARES = {"python": 0.4, "native": 0.3, "sleep": 0.3}


def python_part(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # TRUTH: python
    return acc


def native_part(h, block, n):
    for _ in range(n): h.update(block)  # TRUTH: native


def sleep_part(s):
    time.sleep(s)  # TRUTH: sleep


def calibrate(block):
    """Iterations of the Python loop and 1 MiB hashes per CPU second."""
    c0 = time.thread_time()
    python_part(200_000)
    c1 = time.thread_time()
    native_part(hashlib.sha256(), block, 20)
    c2 = time.thread_time()
    return 200_000 / (c1 - c0), 20 / (c2 - c1)


def main(rounds, out):
    block = bytes(range(256)) * 4096
    loops_per_s, hashes_per_s = calibrate(block)
    n_py = max(1, int(loops_per_s * ROUND_S * SHARES["python"]))
    n_nat = max(1, round(hashes_per_s * ROUND_S * SHARES["native"]))
    spent = {"python": 0.0, "native": 0.0, "sleep": 0.0}
    # The same in wall time: it differs from the CPU time when other work
    # takes the CPU from the program (a busy machine), and a wall-clock
    # profiler counts that wait on the line that was running.
    wall = {"python": 0.0, "native": 0.0, "sleep": 0.0}
    h = hashlib.sha256()
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.thread_time()
        python_part(n_py)
        t1, c1 = time.perf_counter(), time.thread_time()
        native_part(h, block, n_nat)
        t2, c2 = time.perf_counter(), time.thread_time()
        sleep_part(ROUND_S * SHARES["sleep"])
        t3 = time.perf_counter()
        spent["python"] += c1 - c0
        spent["native"] += c2 - c1
        spent["sleep"] += t3 - t2
        wall["python"] += t1 - t0
        wall["native"] += t2 - t1
        wall["sleep"] += t3 - t2
    spent["wall"] = wall
    if out:
        with open(out, "w") as f:
            json.dump(spent, f)
    print(h.hexdigest()[:16])


if __name__ == "__main__":
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    main(max(3, int(40 * scale)), sys.argv[2] if len(sys.argv) > 2 else None)

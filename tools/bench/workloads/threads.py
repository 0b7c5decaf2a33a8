# SPDX-License-Identifier: BSD-2-Clause
"""Threads: two pure-Python threads contend for the GIL while a third hashes
large buffers with hashlib, which releases the GIL for inputs over 2 KiB and
so runs in parallel with them on a second CPU.  Needs two CPUs to mean
anything; the driver does not pin it.
"""
import hashlib
import threading

import benchclock


def collatz_work(start, count, out, slot):
    longest = 0
    for n in range(start, start + count):
        steps = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        if steps > longest:
            longest = steps
    out[slot] = longest


def hash_work(rounds, out, slot):
    block = bytes(range(256)) * 4096  # 1 MiB
    h = hashlib.sha256()
    for i in range(rounds):
        h.update(block)
        block = block[1:] + block[:1]
    out[slot] = h.hexdigest()[:16]


def start_and_join(count, rounds):
    out = [None] * 3
    threads = [threading.Thread(target=collatz_work, args=(1, count, out, 0)),
           threading.Thread(target=collatz_work, args=(1 + count, count, out, 1)),
           threading.Thread(target=hash_work, args=(rounds, out, 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return f"{out[0]}:{out[1]}:{out[2]}"


if __name__ == "__main__":
    s = benchclock.scale()
    benchclock.run(start_and_join, max(100, int(36_000 * s)), max(2, int(720 * s)))

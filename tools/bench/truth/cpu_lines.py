# SPDX-License-Identifier: BSD-2-Clause
"""Three lines doing 20 %, 30 % and 50 % of the work: the truth is by
construction.  The lines run the same one-line loop, for 2, 3 and 5 units of
iterations per round, so the shares hold whatever one iteration costs; the
rounds are short and interleaved, so drift on a busy machine (an iteration's
cost changes with it) falls on all three alike.  Each line is alone in its
function, so a function-level profiler (cProfile) sees the same split.

    python cpu_lines.py [SCALE]      (about 4 s of CPU at scale 1)
"""
import sys

UNIT = 4_000


def twenty(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # TRUTH: twenty
    return acc


def thirty(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # TRUTH: thirty
    return acc


def fifty(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # TRUTH: fifty
    return acc


def main(rounds):
    acc = 0
    for _ in range(rounds):
        acc ^= twenty(2 * UNIT) ^ thirty(3 * UNIT) ^ fifty(5 * UNIT)
    return acc


if __name__ == "__main__":
    print(main(max(5, int(1000 * (float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)))))

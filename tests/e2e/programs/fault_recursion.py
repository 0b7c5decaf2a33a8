"""Recurses argv[1] frames deep, then works at the bottom: the innermost
line must get the time however deep the stack.  Prints the CPU time of the
bottom loop as the thread measured it (JSON)."""
import json
import sys
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
sys.setrecursionlimit(DEPTH + 1000)


def down(n):
    if n == 0:
        t0 = time.thread_time()
        x = 0
        for _ in range(30000):
            x += sum(range(200))  # LINE: bottom
        return time.thread_time() - t0
    return down(n - 1)  # LINE: recurse


print(json.dumps({"bottom_cpu_s": down(DEPTH)}))

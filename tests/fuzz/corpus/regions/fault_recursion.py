"""Recurses argv[1] frames deep, then works at the bottom: the innermost
line must get the time however deep the stack."""
import sys
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
sys.setrecursionlimit(DEPTH + 1000)


def down(n):
    if n == 0:
        end = time.monotonic() + 0.8
        x = 0
        while time.monotonic() < end:
            x += sum(range(200))  # LINE: bottom
        return x
    return down(n - 1)  # LINE: recurse


print(down(DEPTH) > 0)

"""Calls into a library (a module outside the program's folder, so not
profiled) that recurses argv[1] frames deep and works at the bottom: the
program's own calling line is at the bottom of a stack deeper than the
walker keeps whole, and must get the time.  Prints the CPU time of the work
as the thread measured it (JSON)."""
import json
import os
import sys
import tempfile

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 300
sys.setrecursionlimit(DEPTH + 1000)

LIB = '''
import time

def down(n):
    if n == 0:
        t0 = time.thread_time()
        x = 0
        for _ in range(30000):
            x += sum(range(200))
        return time.thread_time() - t0
    return down(n - 1)
'''

libdir = tempfile.mkdtemp()
with open(os.path.join(libdir, "deeplib.py"), "w") as f:
    f.write(LIB)
sys.path.insert(0, libdir)
import deeplib  # noqa: E402


def main():
    return deeplib.down(DEPTH)  # LINE: call


print(json.dumps({"work_cpu_s": main()}))

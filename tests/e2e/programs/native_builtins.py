"""C code inside the interpreter, called from bytecode, against bytecode.

`sorted` of a million floats and `re.findall` over a long string run C code
compiled into the interpreter itself (builtin_sorted and list_sort, the _sre
module); the instruction running them is a call, so their time is native, as
Scalene counts it.  The `arith` line only interprets bytecode, and the
`pycall` line calls a small Python function: entering and leaving it is the
interpreter's work (Python time), although a call instruction does it.  Each line
gets about argv[1] CPU seconds (calibrated at start-up).  The pattern finds
few matches in the text, so building and freeing the result list is a
sliver of the scan.
"""
import random
import re
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
rng = random.Random(7)
floats = [rng.random() for _ in range(1_000_000)]
letters = "abcdefghijklmnopqrstuvwxyz      "
text = "".join(rng.choice(letters) for _ in range(1 << 20)) * 4
pattern = r"[aeiou]{3}[xyz]{2}"


def arith(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) % 1000003  # LINE: arith
    return acc


def small(x):
    return x + 1


def py_calls(n):
    acc = 0
    for i in range(n): acc = small(acc)  # LINE: pycall
    return acc


def sort_floats(k):
    for _ in range(k): sorted(floats)  # LINE: sorted


def find_all(k):
    for _ in range(k): re.findall(pattern, text)  # LINE: findall


def timed(f, *args):
    t = time.thread_time()
    f(*args)
    return time.thread_time() - t


per_arith = timed(arith, 200_000) / 200_000
per_call = timed(py_calls, 200_000) / 200_000
per_sort = timed(sort_floats, 1)
per_find = timed(find_all, 1)
arith(int(seconds / per_arith))
py_calls(int(seconds / per_call))
sort_floats(max(2, round(seconds / per_sort)))
find_all(max(2, round(seconds / per_find)))

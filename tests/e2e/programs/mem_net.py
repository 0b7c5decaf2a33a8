"""Net growth against churn, one marked line each (the truth is by
construction; argv[1] gets it as JSON).

Each round a helper builds an array that its caller keeps, two helpers make
1 MiB and 4 MiB bytearrays that are kept too, a list of ints is kept, a
temporary list is built and dropped, and an integer is counted up in a
tight loop, which allocates a new int object and frees the old one each
time.

  allocator   array.array of 200,000 doubles, kept  (net = churn = kept)
  caller      the line that appends the allocator's result: no bytes
  small, big  bytearray(1 MiB) and bytearray(4 MiB), kept
  c_keep      libc malloc(2 MiB) through ctypes, kept until the end
  kept_list   list(range(...)) of 50,000 large ints, kept
  temp_list   a 20,000-int list comprehension dropped at once (0.9 MB at
              most live, under Scalene's 1 MiB window): churn only
  arith       `acc += 1` on a two-digit int: churn only; each addition asks
              for one digit more than its larger operand has (CPython's x_add),
              and normalising the result does not shrink the block

Scalene's memory fields hold net growth: the kept lines get what they keep
(less what a sampling window may still hold back), the others nothing.
The churn of `arith` is ROUNDS x ITER such blocks.
"""
import array
import ctypes
import json
import sys
from itertools import repeat

MiB = 1 << 20
ROUNDS = 100
ITER = 200_000  # per round
BASE = 1 << 40  # ints of two 30-bit digits: one allocation each
LIST_N = 50_000
TEMP_N = 20_000

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None


def keep_one():
    return array.array("d", [0]) * 200_000  # LINE: allocator


def small_alloc():
    return bytearray(MiB)  # LINE: small


def big_alloc():
    return bytearray(4 * MiB)  # LINE: big


def c_keep():
    return libc.malloc(2 * MiB)  # LINE: c_keep


def temp_list(k):
    t = [BASE + i for i in range(TEMP_N)]  # LINE: temp_list
    return t[k]


def spin(n):
    acc = BASE
    for _ in repeat(None, n):
        acc += 1  # LINE: arith
    return acc


def run():
    held, blocks = [], []
    acc = 0
    for r in range(ROUNDS):
        held.append(keep_one())  # LINE: caller
        held.append(small_alloc())
        held.append(big_alloc())
        blocks.append(c_keep())
        held.append(list(range(BASE, BASE + LIST_N)))  # LINE: kept_list
        temp_list(r)
        acc = spin(ITER)
    for b in blocks:
        libc.free(b)
    lst, n = held[3], ROUNDS
    int_block = sys.getsizeof(acc) + sys.int_info.sizeof_digit
    # Each line's blocks as [size, count]: the test derives its sampling
    # error from them.
    return {
        "allocator": [[sys.getsizeof(held[0]), n]],
        "small": [[sys.getsizeof(held[1]), n]],
        "big": [[sys.getsizeof(held[2]), n]],
        "c_keep": [[2 * MiB, n]],
        "kept_list": [[sys.getsizeof(lst), n], [sys.getsizeof(lst[-1]), n * LIST_N]],
        "arith": [[int_block, n * ITER]],
    }


truth = run()
with open(sys.argv[1], "w") as f:
    json.dump(truth, f)

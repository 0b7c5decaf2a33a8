"""Allocation oracles, one per marked line; the truth is by construction.

  py_big       N blocks of 4 MiB through Python's allocator (bytearray)
  c_big        N blocks of 4 MiB from C malloc (libc through ctypes)
  four, one    16 MiB and 4 MiB in the same loop: 4:1
  helper       4 MiB blocks made in a helper called from call_helper's loop:
               the bytes belong to the helper's line
  arith        float arithmetic between those allocations: no bytes

bytearray(n) asks for n + 1 bytes (its trailing NUL) plus its small header.

Every block is 4 MiB or more: with a mean sampling gap of 512 KiB (the
test's; the default is 1 MiB) a 4 MiB block is sampled with probability
1 - e^-8 and weighted by its inverse, so N = 150 blocks miss 0.05 samples
on average and an estimate 5 % low takes 8 misses.
"""
import ctypes
import sys

MiB = 1 << 20
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None


def helper(n):
    return bytearray(n)  # LINE: helper


def main():
    for _ in range(N):
        b = bytearray(4 * MiB)  # LINE: py_big
    for _ in range(N):
        p = libc.malloc(4 * MiB)  # LINE: c_big
        libc.free(p)
    for _ in range(N):
        a = bytearray(16 * MiB)  # LINE: four
        c = bytearray(4 * MiB)  # LINE: one
    x = 1.5
    for _ in range(N):
        h = helper(4 * MiB)  # LINE: call_helper
        for _ in range(2000):
            x = x * 0.5 + 1.25  # LINE: arith
    return b, a, c, h, x


main()

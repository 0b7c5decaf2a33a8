# SPDX-License-Identifier: BSD-2-Clause
"""Bytes allocated per line, known by construction (each block is freed
when the next one replaces it, so the bytes are allocated, not kept):

  big       N x bytearray(4 MiB)            (Python's allocator, n + 1 bytes
                                             of data plus the object header)
  huge      N / 4 x bytearray(16 MiB)
  cmalloc   N x malloc(4 MiB) from C (libc through ctypes), freed at once
  small     N x 10000 x bytes(1000)         (1000 bytes + the header: above
                                             pymalloc's 512-byte limit, so
                                             each is one malloc)

The truth of a line is the count times sys.getsizeof of its object (the
size asked of the allocator; for cmalloc the malloc size); the program
prints it as JSON on its last line of output and writes it to argv[2].

    python alloc_lines.py [SCALE [TRUTH.json]]      (N = 150 at scale 1)
"""
import ctypes
import json
import sys

MiB = 1 << 20

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None


def main(n):
    for _ in range(n):
        b = bytearray(4 * MiB)  # TRUTH: big
    for _ in range(n // 4):
        h = bytearray(16 * MiB)  # TRUTH: huge
    for _ in range(n):
        p = libc.malloc(4 * MiB)  # TRUTH: cmalloc
        libc.free(p)
    for _ in range(n * 10000):
        s = bytes(1000)  # TRUTH: small
    return {"big": n * sys.getsizeof(b), "huge": (n // 4) * sys.getsizeof(h),
            "cmalloc": n * 4 * MiB, "small": n * 10000 * sys.getsizeof(s)}


if __name__ == "__main__":
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    truth = main(max(8, int(150 * scale)))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(truth, f)
    print(json.dumps(truth))

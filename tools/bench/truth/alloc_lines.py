# SPDX-License-Identifier: BSD-2-Clause
"""Bytes per line, known by construction, in the two meanings a memory
profiler may give them:

  churn  the bytes a line allocated, freed or not: count x size
  net    Scalene's meaning of its memory fields: a threshold sampler over
         the line's allocations (up) and the frees of its blocks (down)
         fires a sample of up - down when up reaches down + WINDOW (and a
         free sample the other way), both counts restarting; the truth is
         that rule applied to the line's exact sizes in program order

  big       N x bytearray(4 MiB), each freed when the next one replaces it
            (Python's allocator; n + 1 bytes of data plus the object header):
            each block is more than a window, so each one is net growth too
  huge      N / 4 x bytearray(16 MiB), freed the same way
  cmalloc   N x malloc(4 MiB) from C (libc through ctypes), freed at once:
            net growth too, each block being more than a window
  small     N x 10000 x bytes(1000) (1000 bytes + the header: above
            pymalloc's 512-byte limit, so each is one malloc), each freed
            when the next one replaces it: churn only
  kept      N x bytearray(2 MiB) kept in a list until the end

The size of a block is sys.getsizeof of its object (the size asked of the
allocator; for cmalloc the malloc size).  The program prints
{"churn": {line: bytes}, "net": {line: bytes}} as JSON on its last line of
output and writes it to argv[2].

    python alloc_lines.py [SCALE [TRUTH.json]]      (N = 150 at scale 1)
"""
import ctypes
import json
import sys

MiB = 1 << 20
# Scalene's window: what `scalene run` passes its allocator by default
# (--allocation-sampling-window; the library's own default, 10485767, is
# not what runs).
WINDOW = 1048576

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None


def net_rule(steps):
    """Net malloc bytes of one line: steps are (size, count) runs of
    allocations (size > 0) and frees (size < 0) in program order."""
    up = down = net = 0
    for size, count in steps:
        for _ in range(count):
            if size > 0:
                up += size
            else:
                down -= size
            if up >= down + WINDOW:
                net += up - down
                up = down = 0
            elif down >= up + WINDOW:
                up = down = 0
    return net


def replaced(size, count):
    """A block made count times, each one freed when the next replaces it
    (after the new one is made), the last one at the end."""
    return [(size, 1)] + [(size, 1), (-size, 1)] * (count - 1) + [(-size, 1)]


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
    kept = []
    for _ in range(n):
        kept.append(bytearray(2 * MiB))  # TRUTH: kept
    size = {"big": sys.getsizeof(b), "huge": sys.getsizeof(h), "cmalloc": 4 * MiB,
            "small": sys.getsizeof(s), "kept": sys.getsizeof(kept[0])}
    count = {"big": n, "huge": n // 4, "cmalloc": n, "small": n * 10000, "kept": n}
    # Two small blocks live at most, far under a window: no need to walk
    # all of them.
    steps = {"big": replaced(size["big"], n), "huge": replaced(size["huge"], n // 4),
             "cmalloc": [(4 * MiB, 1), (-4 * MiB, 1)] * n,
             "small": replaced(size["small"], min(n * 10000, 1000)),
             "kept": [(size["kept"], n), (-size["kept"], n)]}
    return {"churn": {k: count[k] * size[k] for k in size},
            "net": {k: net_rule(v) for k, v in steps.items()}}


if __name__ == "__main__":
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    truth = main(max(8, int(150 * scale)))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(truth, f)
    print(json.dumps(truth))

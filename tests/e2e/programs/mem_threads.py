"""Allocations off the main thread.

  gil_free   a Python thread mallocs N x 4 MiB through ctypes, which releases
             the GIL around each call: the line still gets the bytes
  raw        threads started with pthread_create on libc's malloc itself
             (no Python thread state at all) allocate RAW x 8 MiB: they go to
             native_allocations_mb, not to any line

argv[1] (JSON): what was allocated, for the test to compare.
"""
import ctypes
import json
import sys
import threading
import time

MiB = 1 << 20
N = 200
RAW = 50

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None
libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_void_p]
libc.pthread_join.argtypes = [ctypes.c_ulong, ctypes.POINTER(ctypes.c_void_p)]


def worker():
    for _ in range(N):
        p = libc.malloc(4 * MiB)  # LINE: gil_free
        libc.free(p)


def raw_threads():
    start = ctypes.cast(libc.malloc, ctypes.c_void_p).value
    got = 0
    for _ in range(RAW):
        tid = ctypes.c_ulong()
        ret = ctypes.c_void_p()
        if libc.pthread_create(ctypes.byref(tid), None, start,
                               ctypes.c_void_p(8 * MiB)):
            raise OSError("pthread_create failed")
        libc.pthread_join(tid.value, ctypes.byref(ret))
        if ret.value:
            got += 1
            libc.free(ret.value)
    return got


t = threading.Thread(target=worker)
t.start()
t.join()
made = raw_threads()
# The allocations above take about 70 ms, less than the profiler needs to
# read a new program's code objects the first time; a program that exits
# that soon leaves its frames unreadable (counted in frames_unreadable), which
# is not what this program tests.
time.sleep(0.5)
with open(sys.argv[1], "w") as f:
    json.dump({"gil_free_mb": 4 * N, "raw_mb": 8 * made}, f)

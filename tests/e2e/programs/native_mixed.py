# SPDX-License-Identifier: BSD-2-Clause
"""Python, native and kernel frames with known places, for --native: a line
calling libc's qsort through ctypes with a Python comparator (Python -> C ->
Python), a line in zlib's deflate (native), a line reading /dev/zero
(system time, in the kernel's read), and with numpy importable, a matrix
product in BLAS (on this thread: OPENBLAS_NUM_THREADS=1).  Each runs for
SECONDS of the process's CPU time, so that a loaded machine does not cut its
samples."""
import ctypes
import ctypes.util
import os
import sys
import time
import zlib

os.environ["OPENBLAS_NUM_THREADS"] = "1"
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    s = 0
    for i in range(160):
        s += i  # LINE: callback
    return (a[0] > b[0]) - (a[0] < b[0])


def sorts():
    cmp = CMP(compare)
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        arr = (ctypes.c_int * 6)(6, 5, 4, 3, 2, 1)
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), cmp)  # LINE: qsort


def compresses():
    data = os.urandom(1 << 16) * 8
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        zlib.compress(data, 6)  # LINE: zlib


def reads():
    fd = os.open("/dev/zero", os.O_RDONLY)
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        os.read(fd, 1 << 20)  # LINE: read
    os.close(fd)


def products():
    try:
        import numpy
    except ImportError:
        return
    a = numpy.random.default_rng(1).random((300, 300))
    t0 = time.process_time()
    while time.process_time() - t0 < SECONDS:
        a @ a  # LINE: blas


sorts()
compresses()
reads()
products()

"""A process to attach to with --memory where the sampler can be put in
(Python 3.14+): allocates 4 MiB and 1 MiB blocks on two lines, 4:1 in bytes,
in rounds with a short sleep between, until a stop file appears (argv[1]).
Every tenth of a second its rounds so far go to argv[2] as "time rounds".  Reads its
own MEM and OBJ allocators (PyMem_GetAllocator) before it says "ready" and
again at its end, and says "done N same" or "done N changed"."""
import ctypes
import os
import sys
import time

MiB = 1 << 20


class Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p),
                ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


def allocators():
    get = ctypes.pythonapi.PyMem_GetAllocator
    get.argtypes = (ctypes.c_int, ctypes.POINTER(Allocator))
    get.restype = None
    out = []
    for domain in (1, 2):  # PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ
        a = Allocator()
        get(domain, ctypes.byref(a))
        out.append((a.ctx, a.malloc, a.calloc, a.realloc, a.free))
    return out


def main(stop, side):
    rounds = 0
    before = allocators()
    last = time.time()
    with open(side, "a") as log:
        print("ready", flush=True)
        while not os.path.exists(stop):
            for _ in range(20):
                big = bytearray(4 * MiB)  # LINE: big
                small = bytearray(MiB)  # LINE: small
            rounds += 1
            now = time.time()
            if now - last >= 0.1:
                log.write(f"{now} {rounds}\n")
                log.flush()
                last = now
            time.sleep(0.005)
    return rounds, "same" if allocators() == before else "changed"


print("done %d %s" % main(sys.argv[1], sys.argv[2]), flush=True)

# SPDX-License-Identifier: BSD-2-Clause
"""Allocates ~200 MB of Python objects, then ~200 MiB through libc malloc
(ctypes), each phase in a thread of its own, and prints what the preloaded
sampler's state block says about each phase as one JSON object.

    python alloc_split.py [--tracemalloc-cycle] [--scale=N]

--scale=N divides every amount by N (for slow modes such as tracemalloc).

The sampler adds a thread's counts to the shared totals at its samples and at
its exit, so a phase may hold back about one sampling mean (1 MiB) when it is
read: the checks allow for that.
"""
import ctypes
import json
import sys
import threading
import time

# Run as root from a user's clone (sudo make test): no root-owned cache there.
sys.dont_write_bytecode = True
from sampler_state import State  # noqa: E402

COUNTERS = ["alloc_bytes", "python_bytes", "malloc_samples", "python_samples",
            "sampled_bytes", "sampled_python_bytes", "free_samples",
            "freed_sampled_bytes", "freed_sampled_python_bytes", "live_sampled_bytes"]
SCALE = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--scale=")), 1)

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
state = State.in_dll(libc, "scalene_bpf_sampler_state")


def snap():
    return {k: getattr(state, k) for k in COUNTERS}


def delta(before, after):
    return {k: after[k] - before[k] for k in COUNTERS}


def phase(fn):
    """Runs fn in a thread; the counters' change while it ran."""
    before = snap()
    t = threading.Thread(target=fn)
    t.start()
    t.join()
    time.sleep(0.05)  # join returns before the OS thread's exit flush
    return delta(before, snap())


keep = []


def python_objects():
    # bytes of 1000: 1,033-byte objects from PyObject_Malloc; pairs: small
    # objects from pymalloc's own arenas (never seen by malloc).
    keep.append([bytes(1000) for _ in range(100_000 // SCALE)])
    keep.append([(i, -i) for i in range(1_000_000 // SCALE)])


def native_blocks():
    blocks = [libc.malloc(1 << 20) for _ in range(200 // SCALE)]
    for b in blocks:
        libc.free(b)


def release():
    keep.clear()


def main():
    cycle = "--tracemalloc-cycle" in sys.argv
    if cycle:
        import tracemalloc
        tracemalloc.start()
    out = {"magic": state.magic, "python_status": state.python, "hooks": state.hooks}
    out["python_phase"] = phase(python_objects)
    if cycle:
        tracemalloc.stop()
    out["native_phase"] = phase(native_blocks)
    out["release_phase"] = phase(release)
    out["live_after"] = state.live_sampled_bytes
    print(json.dumps(out))


main()

# SPDX-License-Identifier: BSD-2-Clause
"""Loads libscalene-bpf-sampler.so into this running interpreter with
ctypes.PyDLL and attaches it, as `scalene-bpf --pid N --memory` has its
target do (user/sampler/sampler.h, "Attaching"), then plays the profiler's
part (the heartbeat, the control word) in one case:

    python attach.py LIB CASE

    detach      attach_ctl = DETACH: both allocators back as they were
    beat-lost   never beats: restored after stale_ms (300 ms)
    beat-kept   beats every 100 ms for 1 s: still attached; then stops
    covered     tracemalloc started on top, then detach: covered, no samples
    fork        a fork child samples nothing; the parent goes on
    twice       a second attach: -EALREADY; after a detach, attached again
    blocked     detach while the main thread is blocked in C: the watcher
                restores (no pending call can run)
    preloaded   run under LD_PRELOAD of the same library: -EALREADY

Prints "ok"; a failed check raises.
"""
import ctypes
import errno
import os
import sys
import threading
import time
import warnings

# Run as root from a user's clone (sudo make test): no root-owned cache there.
sys.dont_write_bytecode = True
from sampler_state import State  # noqa: E402

U64 = ctypes.c_uint64
U32 = ctypes.c_uint32
KiB = 1024
SAMPLE = 64 * KiB

# user/sampler/sampler.h
PY_FOUND, PY_CTOR, PY_CHECKED, PY_LATE = 1 << 0, 1 << 1, 1 << 2, 1 << 8
ATTACHED, WATCHING, DETACH_ASKED, BEAT_LOST = 1 << 0, 1 << 1, 1 << 2, 1 << 3
RESTORED, COVERED, FORKED = 1 << 4, 1 << 5, 1 << 6
CTL_DETACH = 1
ENDED = RESTORED | COVERED


class Allocator(ctypes.Structure):
    # PyMemAllocatorEx
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


DOMAINS = (1, 2)  # PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ
get_allocator = ctypes.pythonapi.PyMem_GetAllocator
get_allocator.argtypes = [ctypes.c_int, ctypes.POINTER(Allocator)]
get_allocator.restype = None


def allocators():
    """MEM's and OBJ's allocators, as bytes."""
    out = []
    for d in DOMAINS:
        a = Allocator()
        get_allocator(d, ctypes.byref(a))
        out.append(bytes(a))
    return out


def tasks():
    return len(os.listdir("/proc/self/task"))


def snap():
    return State.from_buffer_copy(state)


def workload(n=200_000):
    """Allocates and drops n 200-byte bytes objects and n one-item lists, one
    at a time: small blocks only (a block larger than the mean may hold
    several sample points and makes one sample).  Returns a lower bound of
    the bytes requested: the bytes objects alone (getsizeof is what each one
    asks PyObject_Calloc for)."""
    for i in range(n):
        s = bytes(200)
        lst = [i]
    del lst
    return n * sys.getsizeof(s)


def check_sampled(before, after, low):
    """The Python bytes and samples between two snapshots, for a workload of
    at least `low` bytes."""
    got = after.python_bytes - before.python_bytes
    # A thread adds its bytes to the totals at its samples: the main thread
    # holds back those since its last one, an exponential amount of mean
    # SAMPLE (over 40 means: probability e^-40).
    assert got >= low - 40 * SAMPLE, (got, low)
    # The samples cut those bytes into exponential gaps of mean SAMPLE:
    # Poisson, mean got / SAMPLE (~1000 here), held to 6 standard
    # deviations (+2 for the partial gaps at either end).
    n = after.python_samples - before.python_samples
    mu = got / SAMPLE
    assert n > 0 and abs(n - mu) <= 6 * mu ** 0.5 + 2, (n, mu)
    # Each weighs about SAMPLE: the weights estimate the bytes, with a
    # standard deviation of about sqrt(SAMPLE * got).
    w = after.sampled_python_bytes - before.sampled_python_bytes
    assert abs(w - got) <= 6 * (SAMPLE * got) ** 0.5 + 2 * SAMPLE, (w, got)


def check_off():
    """Allocations add no samples (sampling is off, or nothing of ours is in
    the chain)."""
    before = snap()
    workload()
    after = snap()
    assert after.python_samples == before.python_samples, (before.python_samples,
                                                           after.python_samples)
    assert after.malloc_samples == before.malloc_samples


def wait_for(cond, limit, how="spin"):
    """Runs bytecode without letting go of the GIL ("spin"), bytecode and
    short sleeps ("mixed") or sleeps ("sleep") until cond() holds.  On
    3.9-3.12 only a main thread that takes the GIL again runs a pending call
    queued by the watcher: a spinning one waits for the watcher's rescue."""
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < limit, \
            f"still waiting after {limit:.2f} s: attach_state {state.attach_state:#x}"
        if how != "sleep":
            sum(range(1000))
        if how != "spin":
            time.sleep(0.001 if how == "mixed" else 0.01)
    return time.monotonic() - t0


def attach(stale_ms):
    rc = lib.scalene_bpf_sampler_attach(SAMPLE, stale_ms)
    return rc


def attached(stale_ms=60_000):
    """Attaches, checks the wrap and that it samples."""
    n0 = tasks()
    rc = attach(stale_ms)
    assert rc == 0, rc
    now = allocators()
    assert now[0] != ORIGINAL[0] and now[1] != ORIGINAL[1]
    assert state.attach_state == ATTACHED | WATCHING, hex(state.attach_state)
    assert state.sample_bytes == SAMPLE
    assert tasks() == n0 + 1
    before = snap()
    low = workload()
    check_sampled(before, snap(), low)
    return n0


def check_restored(why, n0):
    assert allocators() == ORIGINAL
    st = state.attach_state
    assert st & (ATTACHED | RESTORED | why) == ATTACHED | RESTORED | why, hex(st)
    assert not st & (COVERED | FORKED | ((DETACH_ASKED | BEAT_LOST) & ~why)), hex(st)
    wait_for(lambda: not state.attach_state & WATCHING, 2, "sleep")
    wait_for(lambda: tasks() == n0, 2, "sleep")
    check_off()


def case_detach():
    n0 = attached()
    state.attach_ctl = CTL_DETACH
    wait_for(lambda: state.attach_state & ENDED, 5)
    check_restored(DETACH_ASKED, n0)


def case_beat_lost():
    t0 = time.monotonic()
    n0 = attached(300)
    wait_for(lambda: state.attach_state & ENDED, 2 - (time.monotonic() - t0), "mixed")
    assert time.monotonic() - t0 >= 0.3
    check_restored(BEAT_LOST, n0)


def case_beat_kept():
    last = [0.0]

    def beat():
        for _ in range(10):
            state.attach_beat += 1
            last[0] = time.monotonic()
            time.sleep(0.1)

    n0 = attached(300)
    t = threading.Thread(target=beat)
    t.start()
    while t.is_alive():
        assert not state.attach_state & (ENDED | BEAT_LOST), hex(state.attach_state)
        time.sleep(0.02)
    t.join()
    assert state.attach_state == ATTACHED | WATCHING, hex(state.attach_state)
    wait_for(lambda: state.attach_state & ENDED, 2, "mixed")
    # The watcher sees the last beat within a poll, then waits stale_ms.
    assert time.monotonic() - last[0] >= 0.29
    check_restored(BEAT_LOST, n0)


def case_covered():
    import tracemalloc

    attached()
    ours = allocators()
    tracemalloc.start()
    state.attach_ctl = CTL_DETACH
    wait_for(lambda: state.attach_state & ENDED, 5)
    st = state.attach_state
    assert st & (ATTACHED | DETACH_ASKED | COVERED) == ATTACHED | DETACH_ASKED | COVERED, hex(st)
    assert not st & (RESTORED | BEAT_LOST | FORKED), hex(st)
    top = allocators()
    assert top[0] not in (ORIGINAL[0], ours[0]) and top[1] not in (ORIGINAL[1], ours[1])
    check_off()
    assert tracemalloc.get_traced_memory()[0] > 0
    tracemalloc.stop()
    # tracemalloc puts back what it found: our wrappers, which stay and
    # pass calls through.
    assert allocators() == ours
    check_off()
    # Ours still in the chains: never wrapped twice.
    assert attach(0) == -errno.EALREADY


def case_fork():
    attached()
    warnings.simplefilter("ignore", DeprecationWarning)  # fork with a thread running
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            st = state.attach_state
            assert st & (ATTACHED | FORKED) == ATTACHED | FORKED, hex(st)
            assert not st & (WATCHING | ENDED), hex(st)
            assert state.pid == os.getpid()
            check_off()
            code = 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    assert state.attach_state == ATTACHED | WATCHING, hex(state.attach_state)
    before = snap()
    low = workload()
    check_sampled(before, snap(), low)


def case_twice():
    """A second attach while attached: -EALREADY.  Once a detach gave the
    allocators back, an attach works as the first did (a profiler that comes
    back to the same process), and so does its detach."""
    n0 = attached()
    assert attach(0) == -errno.EALREADY
    assert state.attach_state == ATTACHED | WATCHING
    state.attach_ctl = CTL_DETACH
    wait_for(lambda: state.attach_state & ENDED, 5, "mixed")
    check_restored(DETACH_ASKED, n0)
    attached()
    assert state.attach_ctl == 0
    state.attach_ctl = CTL_DETACH
    wait_for(lambda: state.attach_state & ENDED, 5, "mixed")
    check_restored(DETACH_ASKED, n0)
    assert allocators() == ORIGINAL


def case_blocked():
    n0 = attached()
    done = threading.Event()

    def watch():
        try:
            wait_for(lambda: state.attach_state & ENDED, 5, "sleep")
        finally:
            done.set()

    threading.Thread(target=watch, daemon=True).start()
    state.attach_ctl = CTL_DETACH
    t0 = time.monotonic()
    done.wait()
    # The pending call cannot run while this thread waits: the watcher
    # restores after RESCUE_MS (1 s).
    assert time.monotonic() - t0 < 4
    check_restored(DETACH_ASKED, n0)


def case_preloaded():
    assert state.python & PY_CTOR and not state.python & PY_LATE, hex(state.python)
    assert attach(0) == -errno.EALREADY
    assert allocators() == ORIGINAL
    assert state.attach_state == 0


ORIGINAL = allocators()
lib = ctypes.PyDLL(sys.argv[1])
lib.scalene_bpf_sampler_attach.argtypes = [U64, U32]
lib.scalene_bpf_sampler_attach.restype = ctypes.c_int
state = State.in_dll(lib, "scalene_bpf_sampler_state")
assert state.magic == 0x53424D53 and state.abi == 1 and state.size == 248
CASE = sys.argv[2]
if CASE != "preloaded":
    # Loaded late: nothing wrapped before attach.
    assert state.python & (PY_FOUND | PY_LATE) == PY_FOUND | PY_LATE, hex(state.python)
    assert not state.python & (PY_CTOR | PY_CHECKED), hex(state.python)
    assert allocators() == ORIGINAL
globals()["case_" + CASE.replace("-", "_")]()
print("ok")

# SPDX-License-Identifier: BSD-2-Clause
"""Exercises the process events the preloaded sampler must survive: threads
allocating through interpreter shutdown, fork, multiprocessing workers, a
subprocess, and a library loaded at run time.  Exits 0 when everything
worked; the sampler's report lines (one per process that exits normally)
are checked by the caller.

LIFECYCLE_CHURN_SO names a library with churn_forever() (the test's
build/tests/libchurn.so): two threads run it, allocating through libc
without the GIL until the process is gone, through exit() and the
sampler's destructor.

CPython 3.10 (3.10.8 and later) has a use after free at exit: a daemon
thread that asked for the GIL before finalisation resets that request on
the freed interpreter when its wait times out, and crashes the process if
exit() takes longer than that wait (5 ms).  Any destructor that takes its
time exposes it, with or without the sampler, so on 3.10 the Python churn
threads are stopped before the end and only the native ones stay.
"""
import ctypes
import ctypes.util
import multiprocessing
import os
import subprocess
import sys
import threading
import time


STOP = threading.Event()
# Without a GIL the four churn threads run at once and, on 2 CPUs, starve
# the main thread's pools (48 s a run on 3.13t, 5 s elsewhere): there each
# pauses a millisecond between rounds, still allocating through the exit.
FREE_THREADED = not getattr(sys, "_is_gil_enabled", lambda: True)()


def churn():
    while not STOP.is_set():
        x = [bytearray(5000) for _ in range(50)]
        y = {i: str(i) for i in range(200)}
        del x, y
        if FREE_THREADED:
            time.sleep(0.001)


def square(n):
    return len([bytes(100) for _ in range(n)])


def main():
    python_churn = [threading.Thread(target=churn, daemon=True) for _ in range(4)]
    for t in python_churn:
        t.start()
    native = os.environ.get("LIFECYCLE_CHURN_SO")
    if native:
        churn_forever = ctypes.CDLL(native).churn_forever
        for _ in range(2):
            threading.Thread(target=churn_forever, daemon=True).start()

    pid = os.fork()
    if pid == 0:
        data = [bytearray(1 << 16) for _ in range(200)]
        os._exit(0 if len(data) == 200 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status

    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        assert pool.map(square, [1000] * 8) == [1000] * 8
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(square, [1000] * 4) == [1000] * 4

    out = subprocess.run([sys.executable, "-c", "print(len(bytes(10**6)))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1000000", out

    name = ctypes.util.find_library("z") or "libz.so.1"
    zlib = ctypes.CDLL(name)
    assert zlib.zlibVersion

    if sys.version_info[:2] == (3, 10):
        STOP.set()
        for t in python_churn:
            t.join()
    # Leave with the daemon threads still allocating.
    print("ok")


if __name__ == "__main__":
    main()

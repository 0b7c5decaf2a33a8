# SPDX-License-Identifier: BSD-2-Clause
"""Exercises the process events the preloaded sampler must survive: threads
allocating through interpreter shutdown, fork, multiprocessing workers, a
subprocess, and a library loaded at run time.  Exits 0 when everything
worked; the sampler's report lines (one per process that exits normally)
are checked by the caller.
"""
import ctypes
import ctypes.util
import multiprocessing
import os
import subprocess
import sys
import threading


def churn():
    while True:
        x = [bytearray(5000) for _ in range(50)]
        y = {i: str(i) for i in range(200)}
        del x, y


def square(n):
    return len([bytes(100) for _ in range(n)])


def main():
    for _ in range(4):
        threading.Thread(target=churn, daemon=True).start()

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

    # Leave with the daemon threads still allocating.
    print("ok")


if __name__ == "__main__":
    main()

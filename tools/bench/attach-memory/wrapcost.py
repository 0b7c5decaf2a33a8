#!/usr/bin/env python3
"""What wrapping Python's allocator costs a program that allocates flat out
(listloop.py's loop: a three-item list and a str an iteration), in one
process, phases alternating round by round: nothing wrapped, then either a
wrapper that only forwards each call (passthrough.c) or the sampler attached
as `--pid --memory` loads it (scalene_bpf_sampler_attach, then detached by
its own control word; no profiler, so its probes are empty functions).  CPU
time an iteration, each wrapped phase against the unwrapped one before it.

    PYTHON wrapcost.py SAMPLER_LIB [ROUNDS]    (tools/bench/attach-memory/)
"""
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N = 2_000_000
RESTORED = 1 << 4  # user/sampler/sampler.h: SBS_AT_RESTORED
CTL_DETACH = 1


def loop(n):
    t0 = time.process_time()
    for i in range(n):
        x = [i, str(i), None]  # noqa: F841
    return (time.process_time() - t0) / n


class Words(ctypes.Structure):
    # struct scalene_bpf_sampler_state from attach_beat on
    _fields_ = [("head", ctypes.c_char * 184), ("beat", ctypes.c_uint64),
                ("ctl", ctypes.c_uint32), ("state", ctypes.c_uint32)]


def main():
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tmp = tempfile.mkdtemp()
    so = os.path.join(tmp, "passthrough.so")
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", so,
                    os.path.join(HERE, "passthrough.c")], check=True)
    pt = ctypes.PyDLL(so)
    lib = ctypes.PyDLL(sys.argv[1])
    lib.scalene_bpf_sampler_attach.argtypes = [ctypes.c_uint64, ctypes.c_uint32]
    words = Words.from_address(ctypes.addressof(
        ctypes.c_char.in_dll(lib, "scalene_bpf_sampler_state")))

    def sampler_on():
        assert lib.scalene_bpf_sampler_attach(1 << 20, 600_000) == 0

    def sampler_off():
        words.ctl = CTL_DETACH
        while not words.state & RESTORED:
            sum(range(100))
        time.sleep(0.3)  # the watcher's end

    kinds = {"passthrough": (pt.passthrough_on, pt.passthrough_off),
             "sampler": (sampler_on, sampler_off)}
    ratios = {k: [] for k in kinds}
    base = []
    for _ in range(rounds):
        for kind, (on, off) in kinds.items():
            plain = loop(N)
            on()
            wrapped = loop(N)
            off()
            base.append(plain)
            ratios[kind].append(wrapped / plain)
    print(f"{sys.version.split()[0]} ({sys.executable}), {rounds} rounds of {N:,} iterations: "
          f"unwrapped {statistics.median(base) * 1e9:.1f} ns an iteration")
    for kind, r in ratios.items():
        print(f"  {kind}: {statistics.median(r):.3f}x CPU time an iteration "
              f"({min(r):.3f}-{max(r):.3f})")


if __name__ == "__main__":
    main()

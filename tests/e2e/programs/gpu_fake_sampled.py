"""Many CUDA calls from two lines, played through the fake CUPTI (see
gpu_fake_cuda.py), for sampled probing (--gpu-call-sample N): each call at
the `short` line launches a kernel of 1 ms, each at the `long` line one of
3 ms, CALLS of each, interleaved.  The device records of every call reach
the library; only the probed calls have a known line, so the lines' kernel
counts and times are estimates that should come out near CALLS and 1:3.

argv[1]: the fake libcupti.so.13; argv[2]: where to write the truth (JSON).
"""
import ctypes
import json
import os
import sys
import time

CALLS = 1000
RUNTIME, LAUNCH = 2, 211
ENTER, EXIT = 0, 1
MS = 1_000_000

fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_api.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                ctypes.c_uint32]
fake.fake_cupti_kernel.argtypes = [ctypes.c_uint32, ctypes.c_uint64,
                                   ctypes.c_uint64]
gpu = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
gpu.InitializeInjection()
api, kernel = fake.fake_cupti_api, fake.fake_cupti_kernel
corr = 0
t = time.monotonic_ns()
for i in range(CALLS):
    corr += 1
    api(RUNTIME, LAUNCH, ENTER, corr)  # LINE: short
    api(RUNTIME, LAUNCH, EXIT, corr)
    kernel(corr, t, t + MS)
    t += MS
    corr += 1
    api(RUNTIME, LAUNCH, ENTER, corr)  # LINE: long
    api(RUNTIME, LAUNCH, EXIT, corr)
    kernel(corr, t, t + 3 * MS)
    t += 3 * MS
with open(sys.argv[2], "w") as f:
    json.dump({"calls": CALLS, "short_s": CALLS * 0.001, "long_s": CALLS * 0.003},
              f)

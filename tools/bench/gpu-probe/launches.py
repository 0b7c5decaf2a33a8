"""Times traced CUDA calls played through the fake CUPTI (no GPU): each
call's entry callback fires the GPU library's gpu_api probe, as a kernel
launch would.  argv: fake libcupti.so.13, calls per round, rounds, output
JSON, and the GPU library when CUDA_INJECTION64_PATH does not name it (as
the driver would load it).  Writes the nanoseconds per call of each
round."""
import ctypes
import json
import os
import sys
import time

fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_api.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                ctypes.c_uint32]
gpu = ctypes.CDLL(os.environ.get("CUDA_INJECTION64_PATH") or sys.argv[5])
gpu.InitializeInjection()
api = fake.fake_cupti_api
n, rounds = int(sys.argv[2]), int(sys.argv[3])
per_call = []
corr = 0
for r in range(rounds):
    t0 = time.perf_counter_ns()
    for i in range(n):
        corr += 1
        api(2, 211, 0, corr)  # cudaLaunchKernel entry: the probe fires
        api(2, 211, 1, corr)
    per_call.append((time.perf_counter_ns() - t0) / n)
with open(sys.argv[4], "w") as f:
    json.dump({"ns_per_call": per_call, "calls": corr}, f)

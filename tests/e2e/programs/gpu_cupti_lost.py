"""CUPTI taken away mid-run, played without a GPU: a kernel launched and
delivered, then another CUPTI client finalizes CUPTI (as torch.profiler's
teardown may), so the library's next flush fails; a launch after that is
not followed.  The program itself runs to its end.

As in gpu_fake_cuda.py, the program loads the GPU library itself over a
fake libcupti.so.13 (argv[1]) and plays CUDA's part.  Writes to argv[2]
(JSON) what the test needs to know.
"""
import ctypes
import json
import os
import sys
import time

RUNTIME = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
LAUNCH = 211  # cudaLaunchKernel
ENTER, EXIT = 0, 1
INVALID_OPERATION = 7  # CUPTI_ERROR_INVALID_OPERATION

fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_api.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                ctypes.c_uint32]
fake.fake_cupti_kernel.argtypes = [ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64]
fake.fake_cupti_flush_result.argtypes = [ctypes.c_int]
gpu = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
gpu.InitializeInjection()


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


spin(0.2)
fake.fake_cupti_api(RUNTIME, LAUNCH, ENTER, 1)  # LINE: before
fake.fake_cupti_api(RUNTIME, LAUNCH, EXIT, 1)
now = time.monotonic_ns()
fake.fake_cupti_kernel(1, now, now + 3_000_000)
spin(0.5)  # three flushes: the kernel's record is in
started = time.monotonic()
fake.fake_cupti_flush_result(INVALID_OPERATION)
spin(0.5)  # the next flush fails
fake.fake_cupti_api(RUNTIME, LAUNCH, ENTER, 2)  # LINE: after
fake.fake_cupti_api(RUNTIME, LAUNCH, EXIT, 2)
spin(0.2)
with open(sys.argv[2], "w") as f:
    json.dump({"lost_after_s_at_least": 0.7, "lost_within_s": 1.6,
               "kernel_s": 0.003}, f)

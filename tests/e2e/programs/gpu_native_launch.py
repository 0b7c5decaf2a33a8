"""A training step's GPU side played without a GPU: the forward kernel is
launched by the main thread on its own line; the backward kernel by a thread
with no Python frame (as PyTorch's autograd threads launch every backward
kernel) while the main thread waits for it in one line (loss.backward()).

As in gpu_fake_cuda.py, the program loads the GPU library itself over a
fake libcupti.so.13 (argv[1]) and plays CUDA's part; the native thread is
the fake's own (fake_cupti_api_on_native_thread), which makes the call,
queues its kernel's record and then keeps its CPU busy for BACKWARD_MS
while the main thread joins it: the record comes before the main thread's
next record says where it waited.

Writes to argv[2] (JSON) what the test needs to know.
"""
import ctypes
import json
import os
import sys
import time

RUNTIME = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
LAUNCH = 211  # cudaLaunchKernel
FORWARD = b"_Z7forwardPf"
BACKWARD = b"_Z8backwardPf"
# Longer than three of the library's flush periods (200 ms): the backward
# kernel's record is delivered while the main thread still waits.
BACKWARD_MS = 700
ENTER, EXIT = 0, 1

fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_api.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                ctypes.c_uint32]
fake.fake_cupti_api_on_native_thread.argtypes = [ctypes.c_uint32] * 4 + [
    ctypes.c_uint64, ctypes.c_char_p]
fake.fake_cupti_kernel_named.argtypes = [ctypes.c_uint32, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_char_p]
gpu = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
gpu.InitializeInjection()


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


spin(0.2)
fake.fake_cupti_api(RUNTIME, LAUNCH, ENTER, 1)  # LINE: forward
fake.fake_cupti_api(RUNTIME, LAUNCH, EXIT, 1)
now = time.monotonic_ns()
fake.fake_cupti_kernel_named(1, now, now + 2_000_000, FORWARD)
spin(0.1)
rc = fake.fake_cupti_api_on_native_thread(RUNTIME, LAUNCH, 2, BACKWARD_MS, 5_000_000, BACKWARD)  # LINE: backward
spin(0.2)  # LINE: after
with open(sys.argv[2], "w") as f:
    json.dump({"thread_rc": rc, "calls": 2, "forward_s": 0.002, "backward_s": 0.005}, f)

"""A CUDA program's GPU side played without a GPU.

The CUDA driver would load the library named by CUDA_INJECTION64_PATH and
call its InitializeInjection() at the first cuInit(); here the program does
both itself, with a fake libcupti.so.13 (tests/gpu/fake_cupti.c, argv[1])
loaded first in its place.  The fake answers the library's CUPTI calls and
lets the program play CUDA's part: an API call's entry and exit callbacks
(the library fires its launch probe there, on this thread, under the marked
line) and the activity records CUPTI would write for the work (handed to
the library at its next flush).  Nothing here models a GPU's behaviour; the
records say what the test wants the profile to contain.

  alloc:  cudaMalloc of 256 MiB
  launch: cudaLaunchKernel of one kernel that runs for the next BUSY_S
  sync:   Python spins on the CPU while that kernel runs (Scalene's GPU %:
          the GPU was busy while this line ran)
  idle:   Python spins with nothing on the GPU
  copy:   cudaMemcpy of 64 MiB host to device
  free:   cudaFree of the 256 MiB
  graph:  cudaGraphLaunch of a graph of three kernels (two of them the same
          kernel), all carrying the graph launch's correlation id

Writes to argv[2] (JSON) the kernel's interval and what each call moved.
"""
import ctypes
import json
import os
import sys
import time

RUNTIME = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CBID = {"malloc": 20, "free": 22, "memcpy": 31, "launch": 211, "graph": 311}
# Kernel names as CUPTI gives them (mangled); CUPTI owns them for the
# process's life, so these bytes objects stay alive to the end.
BUSY = b"_Z9busy_spinPfi"
SCALE = b"_Z5scalePff"
AXPY = b"_Z4axpyfPKfPf"
HTOD = 1
MIB = 1 << 20
BUSY_S = 0.6

fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
for name, args in (("fake_cupti_api", [ctypes.c_uint32] * 3 + [ctypes.c_int]),
                   ("fake_cupti_kernel_named", [ctypes.c_uint32, ctypes.c_uint64,
                                                ctypes.c_uint64, ctypes.c_char_p]),
                   ("fake_cupti_memcpy", [ctypes.c_uint32, ctypes.c_uint32] +
                    [ctypes.c_uint64] * 3),
                   ("fake_cupti_memory", [ctypes.c_uint32, ctypes.c_int] +
                    [ctypes.c_uint64] * 3)):
    getattr(fake, name).argtypes = args
fake.fake_cupti_api.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                ctypes.c_uint32]
gpu = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
gpu.InitializeInjection()
ENTER, EXIT = 0, 1


# Each call's entry callback (where the library's probe fires) is on the
# marked line itself: the innermost profiled frame is the launch site.
truth = {}
fake.fake_cupti_api(RUNTIME, CBID["malloc"], ENTER, 1)  # LINE: alloc
fake.fake_cupti_api(RUNTIME, CBID["malloc"], EXIT, 1)
fake.fake_cupti_memory(1, 1, 0x7000000000, 256 * MIB, time.monotonic_ns())
fake.fake_cupti_api(RUNTIME, CBID["launch"], ENTER, 2)  # LINE: launch
fake.fake_cupti_api(RUNTIME, CBID["launch"], EXIT, 2)
start = time.monotonic_ns()
fake.fake_cupti_kernel_named(2, start, start + int(BUSY_S * 1e9), BUSY)
truth["kernel_s"] = BUSY_S
# The spins are one line each: their samples are at the marked line.
end, n = time.monotonic() + BUSY_S, 0
while time.monotonic() < end: n += 1  # LINE: sync  # noqa: E701
time.sleep(0.05)
end = time.monotonic() + 0.6
while time.monotonic() < end: n += 1  # LINE: idle  # noqa: E701
fake.fake_cupti_api(RUNTIME, CBID["memcpy"], ENTER, 3)  # LINE: copy
fake.fake_cupti_api(RUNTIME, CBID["memcpy"], EXIT, 3)
now = time.monotonic_ns()
fake.fake_cupti_memcpy(3, HTOD, 64 * MIB, now, now + 5_000_000)
fake.fake_cupti_api(RUNTIME, CBID["free"], ENTER, 4)  # LINE: free
fake.fake_cupti_api(RUNTIME, CBID["free"], EXIT, 4)
fake.fake_cupti_memory(4, 0, 0x7000000000, 256 * MIB, time.monotonic_ns())
fake.fake_cupti_api(RUNTIME, CBID["graph"], ENTER, 5)  # LINE: graph
fake.fake_cupti_api(RUNTIME, CBID["graph"], EXIT, 5)
now = time.monotonic_ns()
for i, name in enumerate((SCALE, AXPY, SCALE)):
    fake.fake_cupti_kernel_named(5, now + i * 1_000_000, now + (i + 1) * 1_000_000,
                                 name)
truth.update(alloc_mb=256, copy_mb=64, calls=5,
             graph={"scale(float*, float)": 2,
                    "axpy(float, float const*, float*)": 1})
with open(sys.argv[2], "w") as f:
    json.dump(truth, f)

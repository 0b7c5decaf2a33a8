"""Memory of CUDA's virtual memory management, played without a GPU (as
gpu_fake_cuda.py plays CUDA): cuMemCreate and cuMemRelease, as PyTorch's
expandable segments call them, with the parameters and results the driver
would pass CUPTI's callbacks.  CUPTI writes no activity record for these:
the library makes them from the calls.

  create:  cuMemCreate of 20 MiB on device 0
  pinned:  cuMemCreate of 2 MiB of host memory (pinned: not the device's)
  held:    Python spins while the 20 MiB are held
  release: cuMemRelease of the 20 MiB

argv[1]: the fake libcupti.so.13; writes what it did to argv[2] (JSON).
"""
import ctypes
import json
import os
import sys
import time

DRIVER = 1  # CUPTI_CB_DOMAIN_DRIVER_API
CU_MEM_CREATE, CU_MEM_RELEASE = 549, 550  # CUPTI_DRIVER_TRACE_CBID_*
LOCATION_DEVICE, LOCATION_HOST = 1, 2  # CUmemLocationType
MIB = 1 << 20
ENTER, EXIT = 0, 1


class Prop(ctypes.Structure):  # CUmemAllocationProp, as far as it is read
    _fields_ = [("type", ctypes.c_int), ("handle_types", ctypes.c_int),
                ("location_type", ctypes.c_int), ("location_id", ctypes.c_int),
                ("win32", ctypes.c_void_p), ("alloc_flags", ctypes.c_uint8 * 8)]


class CreateParams(ctypes.Structure):  # cuMemCreate_params
    _fields_ = [("handle", ctypes.POINTER(ctypes.c_uint64)), ("size", ctypes.c_size_t),
                ("prop", ctypes.POINTER(Prop)), ("flags", ctypes.c_ulonglong)]


class ReleaseParams(ctypes.Structure):  # cuMemRelease_params
    _fields_ = [("handle", ctypes.c_uint64)]


fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_api_call.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int,
                                     ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
gpu = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
gpu.InitializeInjection()
ok = ctypes.c_int(0)  # CUDA_SUCCESS


def at(params):
    return ctypes.addressof(params)


# Each call's entry (where the library's probe fires) is on its marked line.
on_dev = Prop(type=1, location_type=LOCATION_DEVICE, location_id=0)
on_host = Prop(type=1, location_type=LOCATION_HOST)
dev, host = ctypes.c_uint64(0), ctypes.c_uint64(0)
create_dev = CreateParams(ctypes.pointer(dev), 20 * MIB, ctypes.pointer(on_dev), 0)
create_host = CreateParams(ctypes.pointer(host), 2 * MIB, ctypes.pointer(on_host), 0)
api = fake.fake_cupti_api_call
api(DRIVER, CU_MEM_CREATE, ENTER, 1, at(create_dev), at(ok))  # LINE: create
dev.value = 0x7f00a0000000  # the handle, written by the driver before it returns
api(DRIVER, CU_MEM_CREATE, EXIT, 1, at(create_dev), at(ok))
api(DRIVER, CU_MEM_CREATE, ENTER, 2, at(create_host), at(ok))  # LINE: pinned
host.value = 0x7f00b0000000
api(DRIVER, CU_MEM_CREATE, EXIT, 2, at(create_host), at(ok))
end, n = time.monotonic() + 0.5, 0
while time.monotonic() < end: n += 1  # LINE: held  # noqa: E701
release = ReleaseParams(dev.value)
api(DRIVER, CU_MEM_RELEASE, ENTER, 3, at(release), at(ok))  # LINE: release
api(DRIVER, CU_MEM_RELEASE, EXIT, 3, at(release), at(ok))
with open(sys.argv[2], "w") as f:
    json.dump({"device_mb": 20, "pinned_mb": 2, "calls": 3}, f)

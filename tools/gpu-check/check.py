"""GPU work of known size for tools/gpu-check, from marked lines.

  check.py probe LIB OUT.json          initialise CUDA; write the device and
                                       the driver's and runtime's versions
  check.py work LIB OUT.json           the marked lines below, once each;
                                       write what they asked the GPU to do
  check.py launches LIB M ROUNDS OUT.json
                                       ROUNDS rounds of M empty-kernel
                                       launches; write the time of each

LIB is tools/gpu-check/out/libgputest_{static,shared}.so (gputest.cu).  Each
marked line (`# LINE: name`) makes one CUDA call of the library, so that the
profile should credit exactly that call's work to it.  Exits 77 where there
is nothing to check (no driver, a driver too old, no device), with one line
saying which, and 1 where a CUDA call fails.
"""
import ctypes
import json
import os
import sys
import time

NOTHING_TO_CHECK = 77
MIB = 1 << 20
MS = 1_000_000
# cudaError_t values that mean "this machine cannot run CUDA 13 programs".
STUB_LIBRARY, INSUFFICIENT_DRIVER, NO_DEVICE = 34, 35, 100

# Durations differ per path so that work credited to the wrong line shows.
BUSY_NS = {"chevron": 100 * MS, "runtime": 120 * MS, "driver": 140 * MS}
GRAPH_NS = 60 * MS  # each of the graph's 3 kernels
SYNC_NS = 1000 * MS  # the kernel the `sync` line waits for
ALLOC = 256 * MIB
COPY = 64 * MIB
MEMSET = 128 * MIB
TINY = 2000  # empty kernels launched by the `tiny` line


def nothing_to_check(why, detail):
    print(f"{why}: nothing to check ({detail})", file=sys.stderr)
    sys.exit(NOTHING_TO_CHECK)


def load(path):
    # gputest links libcuda.so.1, which only a driver installs.
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        nothing_to_check("no NVIDIA driver", e)
    gt = ctypes.CDLL(path)
    u64, vp, ip = ctypes.c_ulonglong, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)
    sig = {
        "gt_error_string": ([ctypes.c_int], ctypes.c_char_p),
        "gt_versions": ([ip, ip], ctypes.c_int),
        "gt_init": ([ctypes.c_char_p, ctypes.c_int, ip, ip,
                     ctypes.POINTER(ctypes.c_uint)], ctypes.c_int),
        "gt_busy_chevron": ([u64], ctypes.c_int),
        "gt_busy_runtime": ([u64], ctypes.c_int),
        "gt_busy_driver": ([u64], ctypes.c_int),
        "gt_graph_create": ([u64], ctypes.c_int),
        "gt_graph_launch": ([], ctypes.c_int),
        "gt_graph_destroy": ([], ctypes.c_int),
        "gt_malloc": ([u64, ctypes.POINTER(vp)], ctypes.c_int),
        "gt_free": ([vp], ctypes.c_int),
        "gt_htod": ([vp, vp, u64], ctypes.c_int),
        "gt_dtoh": ([vp, vp, u64], ctypes.c_int),
        "gt_memset": ([vp, ctypes.c_int, u64], ctypes.c_int),
        "gt_sync": ([], ctypes.c_int),
        "gt_tiny_loop": ([ctypes.c_int, ctypes.POINTER(u64),
                          ctypes.POINTER(u64)], ctypes.c_int),
    }
    for name, (args, res) in sig.items():
        fn = getattr(gt, name)
        fn.argtypes, fn.restype = args, res
    return gt


def init(gt):
    """Initialise CUDA (the driver loads CUDA_INJECTION64_PATH's library
    here); the device and versions, or exit 77 where CUDA cannot run."""
    drv, rt = ctypes.c_int(0), ctypes.c_int(0)
    err = gt.gt_versions(ctypes.byref(drv), ctypes.byref(rt))
    name = ctypes.create_string_buffer(256)
    major, minor, flags = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_uint(0)
    if not err:
        err = gt.gt_init(name, len(name), ctypes.byref(major),
                         ctypes.byref(minor), ctypes.byref(flags))
    ver = f"driver's CUDA {drv.value // 1000}.{drv.value % 1000 // 10}, " \
          f"runtime {rt.value // 1000}.{rt.value % 1000 // 10}"
    why = {STUB_LIBRARY: "no NVIDIA driver (only the toolkit's stub libcuda.so.1)",
           INSUFFICIENT_DRIVER: "NVIDIA driver too old for this CUDA runtime",
           NO_DEVICE: "no CUDA device"}.get(err)
    if why:
        nothing_to_check(why, f"{ver}; CUDA error {err}: "
                              f"{gt.gt_error_string(err).decode()}")
    if err:
        fail("CUDA initialisation", err, gt)
    return {"device": name.value.decode(), "sm": f"{major.value}.{minor.value}",
            "driver_cuda": drv.value, "runtime_cuda": rt.value,
            "device_flags": flags.value}


def fail(what, err, gt):
    print(f"check.py: {what} failed: CUDA error {err} "
          f"({gt.gt_error_string(err).decode()})", file=sys.stderr)
    sys.exit(1)


def work(gt, out):
    truth = {"program": os.path.realpath(__file__), "lib": os.path.realpath(sys.argv[2])}
    truth.update(init(gt))
    marks = truth["marks"] = {}
    # When each marked line ran (CLOCK_MONOTONIC ns): what the GPU library
    # probed then is that line's, for the check without BPF (probelog.c).
    win = truth["windows"] = {}
    now = time.monotonic_ns

    def ok(err, what):
        if err:
            fail(what, err, gt)

    # The busy kernel through each launch path, each waited for alone.
    t = now()
    ok(gt.gt_busy_chevron(BUSY_NS["chevron"]), "<<<>>>")  # LINE: chevron
    win["chevron"] = (t, now())
    ok(gt.gt_sync(), "sync")
    t = now()
    ok(gt.gt_busy_runtime(BUSY_NS["runtime"]), "cudaLaunchKernel")  # LINE: runtime
    win["runtime"] = (t, now())
    ok(gt.gt_sync(), "sync")
    t = now()
    ok(gt.gt_busy_driver(BUSY_NS["driver"]), "cuLaunchKernel")  # LINE: driver
    win["driver"] = (t, now())
    ok(gt.gt_sync(), "sync")
    for name, ns in BUSY_NS.items():
        marks[name] = {"calls": 1, "kernels": 1, "kernel_s": ns / 1e9}
    ok(gt.gt_graph_create(GRAPH_NS), "graph creation")
    t = now()
    ok(gt.gt_graph_launch(), "cudaGraphLaunch")  # LINE: graph
    win["graph"] = (t, now())
    ok(gt.gt_sync(), "sync")
    ok(gt.gt_graph_destroy(), "graph destruction")
    marks["graph"] = {"calls": 1, "kernels": 3, "kernel_s": 3 * GRAPH_NS / 1e9}

    dev = ctypes.c_void_p()
    host = ctypes.create_string_buffer(COPY)  # pageable, zeroed (touched)
    t = now()
    ok(gt.gt_malloc(ALLOC, ctypes.byref(dev)), "cudaMalloc")  # LINE: alloc
    win["alloc"] = (t, now())
    t = now()
    ok(gt.gt_htod(dev, host, COPY), "cudaMemcpy HtoD")  # LINE: htod
    win["htod"] = (t, now())
    t = now()
    ok(gt.gt_memset(dev, 7, MEMSET), "cudaMemset")  # LINE: memset
    win["memset"] = (t, now())
    ok(gt.gt_sync(), "sync")
    t = now()
    ok(gt.gt_dtoh(host, dev, COPY), "cudaMemcpy DtoH")  # LINE: dtoh
    win["dtoh"] = (t, now())
    if ctypes.string_at(host, 16) != b"\x07" * 16:
        print("check.py: the copy back did not return the memset's bytes", file=sys.stderr)
        sys.exit(1)
    marks["alloc"] = {"calls": 1, "alloc_mb": ALLOC / MIB}
    marks["htod"] = {"calls": 1, "copies": 1, "copy_mb": {"htod": COPY / MIB}}
    marks["memset"] = {"calls": 1, "memsets": 1, "memset_mb": MEMSET / MIB}
    marks["dtoh"] = {"calls": 1, "copies": 1, "copy_mb": {"dtoh": COPY / MIB}}

    # Scalene's GPU %: this line waits while the GPU runs a long kernel.
    t = now()
    ok(gt.gt_busy_chevron(SYNC_NS), "<<<>>>")  # LINE: sync_launch
    win["sync_launch"] = (t, now())
    t0 = time.monotonic()
    t = now()
    ok(gt.gt_sync(), "cudaDeviceSynchronize")  # LINE: sync
    win["sync"] = (t, now())
    truth["sync_wait_s"] = time.monotonic() - t0
    marks["sync_launch"] = {"calls": 1, "kernels": 1, "kernel_s": SYNC_NS / 1e9}
    marks["sync"] = {"n_gpu_percent_min": 80}

    t = now()
    ok(gt.gt_free(dev), "cudaFree")  # LINE: free
    win["free"] = (t, now())
    marks["free"] = {"calls": 1, "free_mb": ALLOC / MIB}

    issue, total = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    t = now()
    err = gt.gt_tiny_loop(TINY, ctypes.byref(issue), ctypes.byref(total))  # LINE: tiny
    win["tiny"] = (t, now())
    ok(err, "empty-kernel launches")
    marks["tiny"] = {"calls": TINY, "kernels": TINY}
    truth["tiny_issue_ns_per_launch"] = issue.value / TINY
    with open(out, "w") as f:
        json.dump(truth, f, indent=1)


def launches(gt, m, rounds, out):
    res = init(gt)
    res.update(m=m, issue_ns_per_launch=[], total_ns_per_launch=[],
               injection=os.environ.get("CUDA_INJECTION64_PATH", ""))
    issue, total = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    for _ in range(rounds):
        err = gt.gt_tiny_loop(m, ctypes.byref(issue), ctypes.byref(total))
        if err:
            fail("empty-kernel launches", err, gt)
        res["issue_ns_per_launch"].append(issue.value / m)
        res["total_ns_per_launch"].append(total.value / m)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def main():
    argv = sys.argv
    if len(argv) == 4 and argv[1] in ("probe", "work"):
        gt = load(argv[2])
        if argv[1] == "probe":
            with open(argv[3], "w") as f:
                json.dump(init(gt), f, indent=1)
        else:
            work(gt, argv[3])
    elif len(argv) == 6 and argv[1] == "launches":
        launches(load(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
